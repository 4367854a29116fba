//! The contract every workload implements, in its own file so that the workloads and the
//! registry in `mod.rs` both import it and neither imports the other.

use super::ctx::Ctx;
use super::error::WorkloadError;
use super::harness::Harness;
use super::initial;
use super::options;
use super::outcome::Outcome;
use super::point::Point;
use super::spec::WorkloadSpec;

/// The contract every workload implements: a [`WorkloadSpec`] of what it declares, and
/// the behaviour that needs its options, a point or the target (as fio's `ioengine_ops` is
/// a name and flags beside its functions).
pub trait Workload: Send + Sync {
    /// What it declares as data: its name, key metric, tables, charts, what its cells
    /// start from and what it can do.
    fn spec(&self) -> WorkloadSpec;
    /// Checks the `[workload.NAME]` table — keys *and* values — before anything is
    /// provisioned, so a bad option is bad input (exit 2), not a failed cell mid-run. A
    /// workload with options parses them into its own serde struct (`deny_unknown_fields`)
    /// with [`options::parse`]; the default accepts no options at all.
    fn check_options(&self, table: &toml::Table) -> Result<(), String> {
        options::parse::<options::NoOptions>(self.spec().name, table).map(|_| ())
    }
    /// Writes its own state under `ctx.root` (unmeasured), for a workload whose cells
    /// start from one ([`super::spec::StartState::OwnState`]), exactly as `run` does on a
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
    /// (its [`WorkloadSpec::start`] is not [`super::spec::StartState::Empty`]); the other
    /// points get a freshly made, empty file system. Asked of `Point::default()` for the
    /// file system the points themselves are asked of.
    fn point_wants_populated(&self, _point: &Point) -> bool {
        true
    }
    /// What in it drops the page cache under these options (`sys::drop_caches`, which
    /// needs root), and the option that avoids it if there is one; `None` when nothing
    /// does. Asked before a run, so a host that cannot drop caches is refused up front
    /// instead of failing cells mid-run.
    fn drops_caches(&self, _options: &toml::Table) -> Option<&'static str> {
        None
    }
    /// The threads a cell runs when `options` fix them rather than `--threads` (a replay
    /// runs its trace's recorded threads), so `--cpus auto` places the cell, and its FUSE
    /// daemon, as it places a cell of that many `--threads`; `None`: not fixed by them.
    fn own_threads(&self, _options: &toml::Table) -> Option<usize> {
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
    /// must be [`super::prepare::prepare`].
    fn follows_on_same_fs(&self, _done: &Point, _next: &Point) -> bool {
        false
    }
    /// Whether `point` is read-only passes over a tree it lays down (or finds on a copy of
    /// the populated image) the same way on any file system, so that a candidate's cell
    /// can measure it in turn with the baseline's: a copy of the baseline's file system
    /// mounted beside it, the workload's tree laid down there too, and the passes
    /// alternating between the two in one phase ([`super::passes`], [`super::Ctx::in_turn`]).
    /// The default, no: the point is measured on its own file system alone.
    fn in_turn(&self, _point: &Point) -> bool {
        false
    }
    /// The seconds a cell spends in phases whose length `options` fix (a point's
    /// `duration` or `runtime`, an auto-tuning search's trials) at data-set `scale`: the
    /// dry run's coarse model prices the rest from the files, and a database cell's ten
    /// seconds a point are no file count. Options the run would refuse: 0.
    fn fixed_seconds(&self, _options: &toml::Table, _scale: f64) -> f64 {
        0.0
    }
    /// How many times a cell moves the bytes it starts from through the target in phases
    /// whose length the bytes set, not the file count (written, or read back from a cold
    /// cache): the dry run's coarse model prices each such pass from the bytes
    /// ([`crate::cost::model::model_bytes`]), since a tree of a few large files costs what its
    /// bytes cost. The default, none: the file count prices the cell.
    fn byte_passes(&self, _options: &toml::Table) -> f64 {
        0.0
    }
    /// Refuses, before anything is provisioned, a per-measurement `timeout` that a
    /// measurement under `options` cannot fit whatever the file system (a replay at its
    /// recorded pace waits for the recorded pauses): one line saying both figures.
    fn check_timeout(
        &self,
        _options: &toml::Table,
        _timeout: std::time::Duration,
    ) -> Result<(), String> {
        Ok(())
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
