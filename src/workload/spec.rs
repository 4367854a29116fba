//! What a workload declares as data, in the spirit of fio's `struct ioengine_ops`: its
//! [`WorkloadSpec`] (name, key metric, tables and charts, what its cells start from, what
//! it can do), read by the runner, the cost model and every report without running any of
//! its code.

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

/// Everything the rest of the program needs to know about a workload that is a fact rather
/// than behaviour. A workload's `spec` builds it with [`WorkloadSpec::new`] and overrides
/// the fields where it differs from the defaults.
#[derive(Debug, Clone, Copy)]
pub struct WorkloadSpec {
    /// The name used on the command line and in results (`create`, `io-quick`, …).
    pub name: &'static str,
    /// One line for `--help` and the report.
    pub description: &'static str,
    /// The headline metric for tables and the decision summary, and whether higher is
    /// better.
    pub key_metric: (&'static str, bool),
    /// The side metrics its report tables show beside the key metric. Declared here so the
    /// report never has to know workload names.
    pub columns: &'static [&'static str],
    /// Short column headers for its own metrics, where `name.replace('_', " ")` reads badly.
    pub metric_headers: &'static [(&'static str, &'static str)],
    /// Charts its results call for beyond the report's standard ones (bars, thread
    /// scaling, monitor series).
    pub charts: &'static [Chart],
    /// What study.md groups this workload's points by, read from a point's variant: one
    /// table per group, a row per point (a sweep of a hundred points reads like the seeds'
    /// one chart per block size); `None` keeps a section per point.
    pub study_group: fn(&str) -> Option<String>,
    /// What its cells' file systems start from.
    pub start: StartState,
    /// How many data-set-sized trees outside the target it keeps in the run's `sources`
    /// (`workload::source`) for the whole run, for the disk-space check: the dated data
    /// set counts once however many workloads read it.
    pub source_trees: u64,
    /// Whether `--threads` applies. Workloads that ignore it run once with `threads = 1`.
    pub uses_threads: bool,
    /// Whether it runs correctly when the ranks of an MPI job share one directory tree
    /// (`--rank-dirs shared`, `ctx.dataset.shared`): it touches only this rank's tagged
    /// files, or walks the whole tree and checks it against every rank's files. A
    /// workload that says no is refused in that mode before anything is made.
    pub shares_dirs: bool,
    /// Whether a cell of it that ran to the end on an empty file system leaves exactly the
    /// data set as [`super::prepare::prepare`] lays it down, checked file by file: that file
    /// system can then be kept as the target's populated image (`golden::populate`) instead
    /// of writing the data set a second time for the cells that copy it.
    pub leaves_dataset: bool,
}

impl WorkloadSpec {
    /// A workload named `name` with the defaults: files per second, the file columns, no
    /// headers, charts or groups of its own, an empty file system to start from, no
    /// source trees, `--threads` applying, and not safe in a shared rank directory.
    pub const fn new(name: &'static str, description: &'static str) -> WorkloadSpec {
        WorkloadSpec {
            name,
            description,
            key_metric: ("files_per_s", true),
            columns: FILE_COLUMNS,
            metric_headers: &[],
            charts: &[],
            study_group: no_group,
            start: StartState::Empty,
            source_trees: 0,
            uses_threads: true,
            shares_dirs: false,
            leaves_dataset: false,
        }
    }
}

/// The default [`WorkloadSpec::study_group`]: a section per point.
fn no_group(_variant: &str) -> Option<String> {
    None
}

/// What a workload's cells start from: which populated image, if any, the runner builds once
/// per target and data set and hands each cell a copy of (`golden::layout::Layout`). The
/// points that start from it are those [`super::contract::Workload::point_wants_populated`] names;
/// the others get a freshly made, empty file system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartState {
    /// A freshly made, empty file system: the workload writes what it needs itself.
    Empty,
    /// The data set, exactly as `workload::prepare::prepare` writes it; `run` must start
    /// with `prepare`, which plans the copy and writes nothing when `Ctx::populated` says
    /// the tree is already there.
    DataSet,
    /// The data set dated in `workload::prepare::DATED_DIR`, exactly as
    /// `prepare::dated_on_target` writes it (`copy`'s `within`, `sync`).
    DatedDataSet,
    /// A state of its own, laid down by `Workload::lay_down` unless `Ctx::populated` says a
    /// copy of an image that holds it was handed over (`replay`'s initial state).
    OwnState,
}

impl StartState {
    /// Whether its cells may copy a populated image rather than start empty.
    pub fn has_image(self) -> bool {
        self != StartState::Empty
    }
}
