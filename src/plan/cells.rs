//! A plan's cells, and the order they run in: the one loop over target × data set ×
//! workload × thread count × repetition that the walk, the dry run, the completeness count
//! and the tuner's pricing all read. Repetitions are interleaved across targets (A B C,
//! then B C A, then C A B) so slow drift on a shared machine does not land on one target.
//!
//! `plan` sits below `workload`, so it cannot ask a workload whether `--threads` applies to
//! it: the caller says so, one yes or no per workload.

use std::ops::Range;

use super::Plan;

/// One cell: a fresh file system for one target × data set × workload × thread count ×
/// repetition, each named by its position (what the records call it is
/// [`crate::results::record::CellId`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    pub repetition: u32,
    /// Index into the targets the caller counts (those that can run here).
    pub target: usize,
    /// Index into [`Plan::datasets`] (0 for a plan of one data set).
    pub dataset: usize,
    /// Index into the workloads the caller counts (`takes_threads`).
    pub workload: usize,
    pub threads: usize,
}

impl Plan {
    /// The thread counts workload `w` runs at: the plan's `--threads` where it takes them
    /// (`takes_threads[w]`), else 1 alone.
    pub fn threads_of(&self, takes_threads: &[bool], w: usize) -> Vec<usize> {
        match takes_threads.get(w) {
            Some(true) => self.threads.clone(),
            _ => vec![1],
        }
    }

    /// The cells of repetitions `reps` on `targets` targets, of the workloads that
    /// `takes_threads` lists (whether each takes `--threads`), in the order they run: each
    /// repetition's targets rotated by its number; within a target, data set by data set,
    /// so each target's populated images are built one after the other; then workload by
    /// workload, thread count by thread count.
    pub fn cells(&self, reps: Range<u32>, targets: usize, takes_threads: &[bool]) -> Vec<Cell> {
        let threads: Vec<Vec<usize>> = (0..takes_threads.len())
            .map(|w| self.threads_of(takes_threads, w))
            .collect();
        let mut out = Vec::new();
        for repetition in reps {
            for i in 0..targets {
                let target = (i + repetition as usize) % targets;
                for dataset in 0..self.dataset_count().max(1) {
                    for (workload, counts) in threads.iter().enumerate() {
                        for &threads in counts {
                            out.push(Cell {
                                repetition,
                                target,
                                dataset,
                                workload,
                                threads,
                            });
                        }
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotates_targets() {
        let mut plan = Plan::of(Vec::new(), &[], Default::default());
        let order = |plan: &Plan, rep| -> Vec<usize> {
            (plan.cells(rep..rep + 1, 3, &[false]).iter())
                .map(|c| c.target)
                .collect()
        };
        assert_eq!(order(&plan, 0), vec![0, 1, 2]);
        assert_eq!(order(&plan, 1), vec![1, 2, 0]);
        assert_eq!(order(&plan, 2), vec![2, 0, 1]);
        assert_eq!(order(&plan, 3), vec![0, 1, 2]);
        plan.threads = vec![1, 2];
        assert_eq!(plan.cells(0..1, 1, &[true, false]).len(), 3);
        plan.extra_scales = vec![2.0];
        let both = plan.cells(0..1, 1, &[true, false]);
        assert_eq!(both.len(), 6);
        assert_eq!(
            both.iter().map(|c| c.dataset).collect::<Vec<_>>(),
            vec![0, 0, 0, 1, 1, 1]
        );
        assert_eq!(plan.cells(0..2, 2, &[true, false]).len(), 24);
    }
}
