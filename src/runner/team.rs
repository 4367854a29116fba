//! The processes a run's cells are measured by, as one strategy the walk, the cell and the
//! harness are handed: a run [`Alone`], whose every step is the identity, or an MPI job's
//! ranks ([`super::ranks::Ranks`]), which meet at each step and agree.
//!
//! Each step carries a label (the same on every rank: [`super::cell::CellRun::step`]), so
//! ranks that fell out of step are caught instead of pairing the wrong phases.

use super::budget::{BudgetError, Group};
use super::failure::Failure;
use super::phase::{Figures, Observed};
use crate::dataset::DatasetSpec;
use crate::plan::TargetConfig;
use crate::provision::{Instance, InstanceSpec, WorkDir};
use crate::results::Measurement;
use crate::workload::Outcome;

/// What a cell's steps ask of the processes that run it together.
pub trait Team {
    /// Whether this process records into `--out` and speaks for the run (rank 0, or a
    /// run alone).
    fn is_root(&self) -> bool;

    /// Whether this process works alone: only then may it take a step on its own clock
    /// (leave a budget round's last cells out, let a point follow on the file system of
    /// the one before). Ranks of a job all take the same steps, or wait for ever.
    fn is_alone(&self) -> bool;

    /// Makes what the `targets` need before the first cell (under MPI, each rank's own
    /// subtree of a `dir:` target); `Err` is the one line that refuses the run.
    fn prepare_targets(&self, targets: &[TargetConfig], work: &WorkDir) -> Result<(), String>;

    /// Adds the team's shape to a record before it is kept.
    fn stamp(&self, m: &mut Measurement);

    /// The data set `d` as this process works with it.
    fn dataset(&self, d: DatasetSpec) -> DatasetSpec;

    /// The file system of point `step`, when the team shares one tree (made by rank 0,
    /// joined by the others, with `work_dir` inside); `None` when each process makes its
    /// own.
    fn shared_instance(
        &self,
        step: &str,
        spec: &InstanceSpec,
        work: &WorkDir,
        work_dir: &str,
    ) -> Option<Result<Instance, Failure>>;

    /// The start of a cell: whether every process has its file system and the same number
    /// of points ready; else the one failure every process records.
    fn agree_cell(&self, step: &str, mine: Result<usize, &Failure>) -> Result<(), Failure>;

    /// Before a measured phase: `Err` with why the phase runs nowhere (this process not
    /// `ready`, or another one).
    fn before_phase(&self, step: &str, ready: Result<(), String>) -> Result<(), String>;

    /// After a measured phase: this process's figures (or why it has none) against the
    /// others'. With `phase` (the workload's outcome and what the harness saw), a phase
    /// every process measured becomes the team's; `Err` is the first failure.
    fn after_phase(
        &self,
        step: &str,
        mine: Result<Figures, String>,
        phase: Option<(&mut Outcome, &mut Observed)>,
    ) -> Result<(), String>;

    /// The end of a point: a failure anywhere becomes the record of every process
    /// (`echoed`: this process's failure was only another's, seen in a phase).
    fn agree_point(&self, step: &str, m: &mut Measurement, echoed: bool);

    /// The groups of a budget round as the root decided them (`decided` is read on the
    /// root only); empty ends the budget, an error ends the run, on every process.
    fn round_from_root(
        &self,
        decided: Option<Result<Vec<Group>, BudgetError>>,
    ) -> Result<Vec<Group>, BudgetError>;
}

/// A run by one process: every step is what this process says.
#[derive(Debug, Clone, Copy, Default)]
pub struct Alone;

impl Team for Alone {
    fn is_root(&self) -> bool {
        true
    }

    fn is_alone(&self) -> bool {
        true
    }

    fn prepare_targets(&self, _: &[TargetConfig], _: &WorkDir) -> Result<(), String> {
        Ok(())
    }

    fn stamp(&self, _: &mut Measurement) {}

    fn dataset(&self, d: DatasetSpec) -> DatasetSpec {
        d
    }

    fn shared_instance(
        &self,
        _: &str,
        _: &InstanceSpec,
        _: &WorkDir,
        _: &str,
    ) -> Option<Result<Instance, Failure>> {
        None
    }

    fn agree_cell(&self, _: &str, mine: Result<usize, &Failure>) -> Result<(), Failure> {
        mine.map(|_| ()).map_err(Clone::clone)
    }

    fn before_phase(&self, _: &str, ready: Result<(), String>) -> Result<(), String> {
        ready
    }

    fn after_phase(
        &self,
        _: &str,
        mine: Result<Figures, String>,
        _: Option<(&mut Outcome, &mut Observed)>,
    ) -> Result<(), String> {
        mine.map(|_| ())
    }

    fn agree_point(&self, _: &str, _: &mut Measurement, _: bool) {}

    fn round_from_root(
        &self,
        decided: Option<Result<Vec<Group>, BudgetError>>,
    ) -> Result<Vec<Group>, BudgetError> {
        decided.unwrap_or(Ok(Vec::new()))
    }
}
