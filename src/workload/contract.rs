//! The contract every workload implements, in its own file so that the workloads and the
//! registry in `mod.rs` both import it and neither imports the other.

use super::ctx::Ctx;
use super::error::WorkloadError;
use super::harness::Harness;
use super::initial;
use super::options;
use super::outcome::Outcome;
use super::point::Point;
use super::spec::{Chart, FILE_COLUMNS};

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
