//! Workloads: each one does real work on a target, measures it, and checks its own result.
//!
//! A workload is one file here, like fio's engines. It gets a [`Ctx`] (where to work, how many
//! threads, which data set) and a [`Harness`] from the runner. It does its unmeasured
//! preparation itself, wraps exactly the measured part in [`Harness::measure`] (the runner
//! starts the monitor, runs the closure, ends with `syncfs`, stops the monitor), then verifies
//! its own work so that it can never be fast by being wrong.

pub mod db;
pub mod io;
pub mod options;
pub mod passes;
pub mod pg;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use rustix::io::Errno;

use crate::dataset::DatasetSpec;
use crate::results::Status;

pub mod chmod;
pub mod cold_read;
pub mod copy;
pub mod copy_verify;
pub mod create;
pub mod delete;
mod dirfd;
pub mod dupes;
pub mod initial;
pub mod launch;
pub mod mix;
pub mod prepare;
pub mod replay;
pub mod scan;
pub mod search;
pub mod source;
pub mod sync;
pub mod tool;
pub mod touch;
pub mod tree_copy;
pub mod untar;
pub mod verify;

/// Everything a workload may know about where and how it runs.
pub struct Ctx<'a> {
    /// A fresh, empty directory on the target file system. The workload owns it.
    pub root: &'a Path,
    /// A warm scratch directory *outside* the target (for copy sources). Fresh per cell.
    pub scratch: &'a Path,
    /// The run's directory of read-only source trees made once and shared by its cells
    /// ([`source`]); `None` outside a run (they are then made in `scratch`).
    pub sources: Option<&'a Path>,
    /// Worker threads for this measurement (`--threads`).
    pub threads: usize,
    /// The data set to generate or use.
    pub dataset: &'a DatasetSpec,
    /// Workload-specific options from the plan (`[workload.NAME]` table), raw.
    pub options: &'a toml::Table,
    /// Set by the runner on SIGINT/SIGTERM or timeout; long loops should poll [`Ctx::check`].
    pub cancel: &'a AtomicBool,
    /// The time after which the runner records a timeout.
    pub deadline: Option<Instant>,
    /// The data set is already under `root`: the runner gave this point a copy of an image
    /// populated once for the run, so [`prepare::prepare`] plans it and writes nothing.
    pub populated: bool,
    /// A fresh, empty directory on a second file system, the plan's `log_target`, for a
    /// database workload's log (WAL); `None` when the log stays beside the data.
    pub log_root: Option<&'a Path>,
}

impl Ctx<'_> {
    /// Returns an error once the run is cancelled or past its deadline, so long loops stop.
    pub fn check(&self) -> Result<(), WorkloadError> {
        if self.cancel.load(Ordering::Relaxed) {
            return Err(WorkloadError::Interrupted);
        }
        if self.deadline.is_some_and(|d| Instant::now() > d) {
            return Err(WorkloadError::Timeout);
        }
        Ok(())
    }
}

/// One point of a workload. Most workloads have a single point with an empty variant;
/// an `io` sweep has one per (rw, bs, jobs, depth, size).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Point {
    pub variant: String,
    pub params: BTreeMap<String, serde_json::Value>,
}

/// What a measured phase produced. The runner derives rates and amplification from it.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Wall-clock seconds of the measured work, as the workload timed it.
    pub seconds: f64,
    /// Files (or entries, or transactions) the phase processed.
    pub files: u64,
    /// Bytes the workload read through the file system API.
    pub logical_read_bytes: u64,
    /// Bytes the workload wrote through the file system API (the denominator of write
    /// amplification).
    pub logical_write_bytes: u64,
    /// Workload-specific numbers (snake_case): `copy_seconds`, `iops`, `p99_latency_us`, …
    pub metrics: BTreeMap<String, f64>,
    /// Facts worth showing (e.g. "reflink used").
    pub notes: Vec<String>,
    /// The phase read with O_DIRECT, so its reads should reach the device: when the device
    /// read next to nothing, something beneath the file (a FUSE daemon's cache of its block
    /// device) served them from memory, and the runner says so beside the figure.
    pub direct_reads: bool,
}

/// A measured phase's work, as a workload hands it to [`Harness::measure`].
pub type Phase<'a> = dyn FnMut() -> Result<Outcome, WorkloadError> + 'a;

/// Services the runner gives a workload.
pub trait Harness {
    /// `sync`, then drop the page cache, dentries and inodes, so the next phase starts cold.
    fn drop_caches(&mut self) -> std::io::Result<()>;
    /// Runs the measured phase under the monitor and ends it with `syncfs` on the target so
    /// buffered writes are counted. Call it exactly once per point.
    fn measure(&mut self, work: &mut Phase<'_>) -> Result<Outcome, WorkloadError>;
    /// The shortest phase a key metric may come from (`--phase-floor`): warm read-only
    /// passes repeat until they reach it ([`passes::measure_passes`]). Zero outside a run.
    fn phase_floor(&self) -> std::time::Duration {
        std::time::Duration::ZERO
    }
    /// The cache drop that cold passes make between passes, inside the measured phase
    /// ([`passes::measure_cold_passes`]): a plain function, because `measure` holds the
    /// harness while the passes run. The runner's is [`crate::sys::drop_caches`].
    fn pass_dropper(&self) -> fn() -> std::io::Result<()> {
        crate::sys::drop_caches
    }
    /// The file system whose writes a cold pass leaves dirty (under `relatime` a first walk
    /// gives every directory it reads a new access time) and which [`passes::measure_cold_passes`]
    /// writes back with `syncfs` after every pass but the last, inside the measured time: the
    /// cache drop before the next pass would otherwise write them outside it, and a phase of
    /// several passes would not pay for what a phase of one pays for in its final `syncfs`.
    /// The runner's is the target's root; `None` (the default) syncs nothing.
    fn pass_writeback(&self) -> Option<std::path::PathBuf> {
        None
    }
    /// The handle through which work inside the measured phase that is not the phase's own
    /// (the cache drop between cold passes, a pass's check) is left out of the monitor's
    /// figures ([`crate::monitor::Aside`]). Take it before `measure`; inert by default.
    fn aside(&self) -> crate::monitor::Aside {
        crate::monitor::Aside::default()
    }
}

/// A harness without a monitor, for unit tests and for tools that only need timing.
#[derive(Debug, Default)]
pub struct PlainHarness {
    pub measured: usize,
    pub dropped: usize,
}

impl Harness for PlainHarness {
    fn drop_caches(&mut self) -> std::io::Result<()> {
        self.dropped += 1;
        crate::sys::drop_caches()
    }
    fn measure(&mut self, work: &mut Phase<'_>) -> Result<Outcome, WorkloadError> {
        self.measured += 1;
        work()
    }
}

/// The contract every workload implements.
pub trait Workload: Send + Sync {
    /// The name used on the command line and in results (`create`, `io-quick`, …).
    fn name(&self) -> &'static str;
    /// One line for `--help` and the report.
    fn describe(&self) -> &'static str;
    /// The headline metric for tables and the decision summary, and whether higher is better.
    fn key_metric(&self) -> (&'static str, bool) {
        ("files_per_s", true)
    }
    /// Checks the `[workload.NAME]` table — keys *and* values — before anything is
    /// provisioned, so a bad option is bad input (exit 2), not a failed cell mid-run. A
    /// workload with options parses them into its own serde struct (`deny_unknown_fields`)
    /// with [`options::parse`]; the default accepts no options at all.
    fn check_options(&self, table: &toml::Table) -> Result<(), String> {
        options::parse::<options::NoOptions>(self.name(), table).map(|_| ())
    }
    /// The side metrics its report tables show beside the key metric. Declared here so the
    /// report never has to know workload names.
    fn columns(&self) -> &'static [&'static str] {
        FILE_COLUMNS
    }
    /// Short column headers for its own metrics, where `name.replace('_', " ")` reads badly.
    fn metric_headers(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }
    /// Charts its results call for beyond the report's standard ones (bars, thread
    /// scaling, monitor series).
    fn charts(&self) -> &'static [Chart] {
        &[]
    }
    /// What study.md groups this workload's points by, read from a point's variant: one
    /// table per group, a row per point (a sweep of a hundred points reads like the seeds'
    /// one chart per block size); `None` keeps a section per point.
    fn study_group(&self, _variant: &str) -> Option<String> {
        None
    }
    /// Whether `--threads` applies. Workloads that ignore it run once with `threads = 1`.
    fn uses_threads(&self) -> bool {
        true
    }
    /// Whether its `run` starts with [`prepare::prepare`] on the target, so the runner may
    /// hand it a copy of a file system already holding the data set instead of an empty
    /// one. Only workloads whose preparation is exactly `prepare` may say yes.
    fn wants_populated_target(&self) -> bool {
        false
    }
    /// Whether the points that run on a populated target (see
    /// [`Workload::point_wants_populated`]) want the data set *dated* in
    /// [`prepare::DATED_DIR`] ([`prepare::dated_on_target`]) rather than as `prepare` writes
    /// it: the runner then copies a populated image of that layout for them. Only workloads
    /// whose preparation of those points is exactly `dated_on_target` may say yes.
    fn wants_dated_target(&self) -> bool {
        false
    }
    /// Whether its `run` starts from a state of its own rather than the data set — laid
    /// down by [`Workload::lay_down`] unless `Ctx::populated` says a copy of an image that
    /// holds it was handed over — so the runner builds that image once per target and
    /// data set, and every cell copies it (`replay`'s initial state).
    fn lays_down_own_state(&self) -> bool {
        false
    }
    /// Writes that own state under `ctx.root` (unmeasured), exactly as `run` does on a
    /// target that has no image of it.
    fn lay_down(&self, _ctx: &Ctx) -> Result<(), WorkloadError> {
        Ok(())
    }
    /// What its cells start from under these options at data-set `scale`: the data set,
    /// or its own state with its size ([`initial::Starts`] asks it for the space check,
    /// the dry run, the cost estimate and the report's header). A workload that never
    /// reads the data set says what it works on instead, so a report does not state the
    /// data set's size as the size its answer holds for.
    fn initial_state(&self, _options: &toml::Table, _scale: f64) -> initial::Start {
        initial::Start::DataSet
    }
    /// Whether `point` runs on a copy of the workload's populated image, when it has one
    /// (`wants_populated_target` or `wants_dated_target`); the other points get a freshly
    /// made, empty file system. Asked of `Point::default()` for the file system the points
    /// themselves are asked of.
    fn point_wants_populated(&self, _point: &Point) -> bool {
        true
    }
    /// How many data-set-sized trees outside the target it keeps in the run's `sources`
    /// ([`source`]) for the whole run, for the disk-space check: the dated data set counts
    /// once however many workloads read it.
    fn source_trees(&self) -> u64 {
        0
    }
    /// Whether it runs correctly when the ranks of an MPI job share one directory tree
    /// (`--rank-dirs shared`, `ctx.dataset.shared`): it touches only this rank's tagged
    /// files, or walks the whole tree and checks it against every rank's files. A
    /// workload that says no is refused in that mode before anything is made.
    fn shares_dirs(&self) -> bool {
        false
    }
    /// What in it drops the page cache under these options (`sys::drop_caches`, which
    /// needs root), and the option that avoids it if there is one; `None` when nothing
    /// does. Asked before a run, so a host that cannot drop caches is refused up front
    /// instead of failing cells mid-run.
    fn drops_caches(&self, _options: &toml::Table) -> Option<&'static str> {
        None
    }
    /// Why it cannot run with the run's directories under `work_root` (a server that runs
    /// as another user and could not reach them), in one line; checked before a run.
    fn check_work_dir(&self, _work_root: &std::path::Path) -> Result<(), String> {
        Ok(())
    }
    /// Why this host cannot run it at all (a program it needs is not installed), or `None`.
    /// Asked before a run: its cells are then skipped with this reason, like a target whose
    /// file system the kernel lacks, instead of each failing after its target was made.
    fn unavailable(&self) -> Option<String> {
        None
    }
    /// Whether point `next` may be measured on the file system point `done` of the same
    /// cell was just measured on, instead of a fresh one: only where `done` is a read-only
    /// pass (it changes nothing `next` could see but access times) and `next` starts from
    /// the state `done` leaves anyway (a warm cache). Spares a clone, a mount and a check
    /// per point; the default, no, gives every point its own file system. The next point
    /// is then told the data set is in place (`Ctx::populated`), so both points' preparation
    /// must be [`prepare::prepare`].
    fn follows_on_same_fs(&self, _done: &Point, _next: &Point) -> bool {
        false
    }
    /// The seconds a cell spends in phases whose length `options` fix (a point's
    /// `duration` or `runtime`, an auto-tuning search's trials) at data-set `scale`: the
    /// dry run's coarse model prices the rest from the files, and a database cell's ten
    /// seconds a point are no file count. Options the run would refuse: 0.
    fn fixed_seconds(&self, _options: &toml::Table, _scale: f64) -> f64 {
        0.0
    }
    /// The points to measure; the default is one point.
    fn points(&self, _ctx: &Ctx) -> Result<Vec<Point>, WorkloadError> {
        Ok(vec![Point::default()])
    }
    /// Prepare (unmeasured), measure through `harness.measure`, verify (unmeasured).
    fn run(
        &self,
        ctx: &Ctx,
        point: &Point,
        harness: &mut dyn Harness,
    ) -> Result<Outcome, WorkloadError>;
}

/// A chart a workload declares for the HTML report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chart {
    /// One line per target: `metric` (y) against the numeric point parameter `x`, one chart
    /// for every combination of the point's other parameters. Points of one repetition
    /// that share every parameter are averaged.
    Curve {
        /// The point parameter on the x axis (a key of [`Point::params`]).
        x: &'static str,
        x_label: &'static str,
        /// The metric on the y axis (a key of the measurement's metrics).
        metric: &'static str,
        y_label: &'static str,
        /// Logarithmic x axis.
        log_x: bool,
    },
}

/// Columns of the workloads that operate on files: rate and what the device and cache saw.
pub const FILE_COLUMNS: &[&str] = &[
    "files_per_s",
    "write_amplification",
    "peak_cached_bytes",
    "cpu_system_pct",
];

/// Columns of the workloads that write a data set: throughput and what it cost on disk.
pub const WRITE_COLUMNS: &[&str] = &[
    "mb_per_s",
    "write_amplification",
    "space_amplification",
    "peak_cached_bytes",
    "cpu_system_pct",
];

/// Why a workload did not produce a result. Typed so the runner can record a status.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// The workload's own check of its work failed: the result would have been a lie.
    #[error("verification failed: {0}")]
    Verify(String),
    /// A replay did something else than the recorded program did (a call ended otherwise,
    /// or the tree differs): measured, but not a result of the program's workload.
    #[error("the replay diverged from its trace: {0}")]
    Diverged(String),
    /// An external tool (fio) failed or printed something we cannot read.
    #[error("{0}")]
    Tool(String),
    #[error("unsupported here: {0}")]
    Unsupported(String),
    #[error("bad workload option: {0}")]
    Option(String),
    #[error("interrupted")]
    Interrupted,
    #[error("timed out")]
    Timeout,
}

impl WorkloadError {
    /// Wraps an I/O error with what was being done and to which path.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        WorkloadError::Io {
            context: context.into(),
            source,
        }
    }

    /// The status this error is recorded with.
    pub fn status(&self) -> Status {
        match self {
            WorkloadError::Io { source, .. } => status_of_io(source),
            WorkloadError::Interrupted => Status::Interrupted,
            WorkloadError::Timeout => Status::Timeout,
            WorkloadError::Diverged(_) => Status::Invalid,
            _ => Status::Error,
        }
    }
}

/// An fsops error (operation and path) as a workload error with that context; fsops sits
/// below workloads and so cannot name this type itself.
impl From<crate::fsops::FsError> for WorkloadError {
    fn from(e: crate::fsops::FsError) -> Self {
        WorkloadError::Io {
            context: format!("{} {}", e.op, e.path.display()),
            source: e.source,
        }
    }
}

/// Maps an OS error to the status users care about: a full file system or a failing device.
pub fn status_of_io(e: &std::io::Error) -> Status {
    match e.raw_os_error() {
        Some(c)
            if [Errno::NOSPC, Errno::DQUOT]
                .map(Errno::raw_os_error)
                .contains(&c) =>
        {
            Status::Enospc
        }
        Some(c)
            if [Errno::IO, Errno::ROFS, Errno::UCLEAN]
                .map(Errno::raw_os_error)
                .contains(&c) =>
        {
            Status::Eio
        }
        _ => Status::Error,
    }
}

/// Adds `.with_path(...)`-style context to `std::io::Result`s inside workloads.
pub trait IoContext<T> {
    fn ctx(self, what: impl FnOnce() -> String) -> Result<T, WorkloadError>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn ctx(self, what: impl FnOnce() -> String) -> Result<T, WorkloadError> {
        self.map_err(|e| WorkloadError::io(what(), e))
    }
}

/// Every workload fsarena knows, in the order the default run uses them.
pub fn all() -> Vec<Box<dyn Workload>> {
    vec![
        Box::new(create::Create),
        Box::new(scan::Scan),
        Box::new(search::Search),
        Box::new(touch::Touch),
        Box::new(chmod::Chmod),
        Box::new(delete::Delete),
        Box::new(copy::CopyTree),
        Box::new(sync::SyncMirror),
        Box::new(dupes::Dupes),
        Box::new(copy_verify::CopyVerify),
        Box::new(cold_read::ColdRead),
        Box::new(io::IoWorkload::quick()),
        Box::new(io::IoWorkload::sweep()),
        Box::new(db::Db),
        Box::new(pg::Pg),
        Box::new(mix::FILESERVER),
        Box::new(mix::VARMAIL),
        Box::new(mix::WEBSERVER),
        Box::new(untar::Untar),
        Box::new(mix::Mix),
        Box::new(replay::Replay),
    ]
}

/// The short header a workload declares for `metric`, if any does.
pub fn metric_header(metric: &str) -> Option<&'static str> {
    all().iter().find_map(|w| {
        w.metric_headers()
            .iter()
            .find(|(m, _)| *m == metric)
            .map(|(_, h)| *h)
    })
}

/// Looks a workload up by name.
pub fn by_name(name: &str) -> Option<Box<dyn Workload>> {
    all().into_iter().find(|w| w.name() == name)
}

/// Names of every workload, for error messages.
pub fn names() -> Vec<&'static str> {
    all().iter().map(|w| w.name()).collect()
}
