//! The plan's `log_target`s: which target a database workload's log lives on, checked
//! before anything is provisioned.

use crate::plan::{Location, Plan, TargetConfig};
use crate::runner::terms::RunError;

/// `log_target = "own"`: each cell's log on a second fresh file system made like the cell's
/// own target (seed 001: four database and four log volumes of the file system compared).
pub const OWN_LOG: &str = "own";

/// The target a workload's `[workload.NAME] log_target` names, if any (a string: checked
/// by [`check_log_targets`] before the run).
pub fn log_target<'p>(plan: &'p Plan, workload: &str) -> Option<&'p str> {
    plan.workload_options
        .get(workload)?
        .get("log_target")?
        .as_str()
}

/// A `log_target` must name a target of this plan that this host can make and that keeps
/// what it is given: a memory file system's fsyncs cost nothing and it forgets everything
/// at power loss, so a log there would flatter the engine and mean nothing. Refused before
/// anything is provisioned, in one line.
pub(super) fn check_log_targets(plan: &Plan, skipped: &[(String, String)]) -> Result<(), RunError> {
    for (workload, table) in &plan.workload_options {
        let Some(v) = table.get("log_target") else {
            continue;
        };
        let refuse = |why: String| {
            RunError::Refused(format!("[workload.{workload}]: `log_target` = {v}: {why}"))
        };
        let Some(name) = v.as_str() else {
            return Err(refuse(
                "expected the name of one of the plan's targets".into(),
            ));
        };
        if name == OWN_LOG {
            // A second file system of a named device or a memory target cannot be made.
            if let Some(t) = plan.targets.iter().find(|t| t.location != Location::Loop) {
                return Err(refuse(format!(
                    "\"{OWN_LOG}\" makes a second loop image of each target, and {} is not on one",
                    t.name
                )));
            }
            continue;
        }
        let Some(t) = plan.targets.iter().find(|t| t.name == name) else {
            let names: Vec<&str> = plan.targets.iter().map(|t| t.name.as_str()).collect();
            return Err(refuse(format!(
                "no target of the plan has that name (targets: {})",
                names.join(", ")
            )));
        };
        if t.fs.is_memory() {
            return Err(refuse(
                "a memory file system cannot hold a log: its fsyncs cost nothing and it keeps \
                 nothing at power loss"
                    .into(),
            ));
        }
        if let Some((_, why)) = skipped.iter().find(|(n, _)| n == name) {
            return Err(refuse(format!("this host cannot make that target ({why})")));
        }
    }
    Ok(())
}

/// Where a point's log lives, for a cell on `target`: a target of the plan and whether it is
/// the cell's own made again ([`OWN_LOG`]); `None` when the log stays beside the data.
pub fn log_home<'t>(
    plan: &Plan,
    workload: &str,
    target: &'t TargetConfig,
    targets: &'t [TargetConfig],
) -> Option<(&'t TargetConfig, bool)> {
    match log_target(plan, workload)? {
        OWN_LOG => Some((target, true)),
        name if name == target.name => None,
        name => targets.iter().find(|t| t.name == name).map(|t| (t, false)),
    }
}
