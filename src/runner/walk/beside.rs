//! Which cells measure their read-only points in turn with the baseline, and how the
//! baseline's file system beside them is made (`runner::cell::Beside`).

use std::sync::Arc;

use super::{Cell, Walk};
use crate::plan::Location;
use crate::provision::{InstanceSpec, MasterImage};
use crate::workload::Workload;

impl<'a> Walk<'a> {
    /// How the baseline's file system beside a point of `cell` (of workload `w`) is made,
    /// and the baseline's populated image its copies come from (when built), if the cell
    /// measures its read-only points in turn with the baseline's
    /// ([`crate::workload::Workload::in_turn`]): a loop-image target other than the
    /// baseline, compared with a loop-image baseline, alone (not under MPI), without a
    /// log target (`log`), on fresh (not aged) file systems, and unless the plan says
    /// `--in-turn off`. Numbered apart from the cell's own image.
    pub(super) fn beside(
        &self,
        cell: &Cell,
        w: &dyn Workload,
        log: bool,
    ) -> Option<(InstanceSpec<'a>, Option<Arc<MasterImage>>)> {
        let (plan, targets, usable) = (self.inputs.plan, self.inputs.targets, &self.inputs.usable);
        let target = &targets[usable[cell.target]];
        let b = usable
            .iter()
            .position(|&t| targets[t].name == plan.baseline)?;
        let baseline = &targets[usable[b]];
        let pairs = plan.in_turn
            && target.name != baseline.name
            && target.location == Location::Loop
            && baseline.location == Location::Loop
            && self.inputs.team.is_alone()
            && !log
            && plan.age_pct.is_none();
        pairs.then(|| {
            let spec = InstanceSpec {
                seq: self.seq | InstanceSpec::BESIDE,
                ..self.spec_for(baseline)
            };
            let image = self.masters.image(w, b, cell.dataset, &spec);
            (spec, image)
        })
    }
}
