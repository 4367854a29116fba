//! Which workloads take `--threads`: the one fact about a workload the plan's cells need
//! ([`crate::plan::Plan::cells`], the only cell loop), asked here because `plan` sits below
//! `workload` and cannot ask it itself.

use crate::workload::Workload;

/// For each of `workloads`, whether it takes `--threads` (else it runs at 1 alone).
pub fn takes_threads(workloads: &[Box<dyn Workload>]) -> Vec<bool> {
    workloads.iter().map(|w| w.spec().uses_threads).collect()
}
