//! What a run does differently on several MPI ranks ([`crate::cluster`]).
//!
//! Every rank runs the same resolved plan, cell by cell, in the same order; rank 0 alone
//! records. The ranks meet (an all-gather, which is also a barrier) at fixed steps, and
//! each step carries a label, so ranks that fell out of step are caught instead of pairing
//! the wrong phases:
//!
//! * at the start: the plan's digest, the host, and whether the checks passed here;
//! * at the start of each cell: whether the rank's file system and points are ready;
//! * around each measured phase: before (ready), after (each rank's figures);
//! * at the end of each point: the status each rank records.
//!
//! A failure on one rank becomes the same failure on every rank, so the cells, stopped
//! targets and records stay identical everywhere. A rank that dies is not waited for here:
//! the launcher (`mpirun`) ends the job when one rank exits abnormally.

mod exchange;
mod job;
mod shared;
mod start;
mod steps;

pub use job::Ranks;
pub use start::{join, rank_dir_name, rank_targets, Joined};

use super::budget::{BudgetError, Group};
use super::failure::Failure;
use super::phase::{Figures, Observed};
use super::team::Team;
use crate::dataset::DatasetSpec;
use crate::plan::TargetConfig;
use crate::provision::{Instance, InstanceSpec, WorkDir};
use crate::results::Measurement;
use crate::workload::Outcome;

/// A rank of the job: every step is met with the other ranks.
impl Team for Ranks {
    fn is_root(&self) -> bool {
        self.world.is_root()
    }

    fn is_alone(&self) -> bool {
        false
    }

    fn prepare_targets(&self, targets: &[TargetConfig], work: &WorkDir) -> Result<(), String> {
        start::make_rank_dirs(targets, work)
    }

    fn stamp(&self, m: &mut Measurement) {
        Ranks::stamp(self, m);
    }

    fn dataset(&self, d: DatasetSpec) -> DatasetSpec {
        shared::dataset_for(self, d)
    }

    fn shared_instance(
        &self,
        step: &str,
        spec: &InstanceSpec,
        work: &WorkDir,
        work_dir: &str,
    ) -> Option<Result<Instance, Failure>> {
        self.shared
            .then(|| shared::instance(self, step, spec, work, work_dir))
    }

    fn agree_cell(&self, step: &str, mine: Result<usize, &Failure>) -> Result<(), Failure> {
        steps::agree_cell(self, step, mine)
    }

    fn before_phase(&self, step: &str, ready: Result<(), String>) -> Result<(), String> {
        steps::before_phase(self, step, ready)
    }

    fn after_phase(
        &self,
        step: &str,
        mine: Result<Figures, String>,
        phase: Option<(&mut Outcome, &mut Observed)>,
    ) -> Result<(), String> {
        let all = steps::after_phase(self, step, mine)?;
        if let Some((outcome, seen)) = phase {
            steps::combine(outcome, seen, &all);
        }
        Ok(())
    }

    fn agree_point(&self, step: &str, m: &mut Measurement, echoed: bool) {
        steps::agree_point(self, step, m, echoed);
    }

    fn round_from_root(
        &self,
        decided: Option<Result<Vec<Group>, BudgetError>>,
    ) -> Result<Vec<Group>, BudgetError> {
        steps::round_from_root(decided)
    }
}

#[cfg(test)]
mod tests;
