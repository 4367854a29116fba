//! The order cells run in. Repetitions are interleaved across targets (A B C, then B C A,
//! then C A B) so slow drift on a shared machine does not land on one target.

use crate::plan::Plan;
use crate::workload::Workload;

/// One cell: a fresh file system for one target × data set × workload × thread count ×
/// repetition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    pub repetition: u32,
    pub target: usize,
    /// Index into [`Plan::datasets`] (0 for a plan of one data set).
    pub dataset: usize,
    pub workload: usize,
    pub threads: usize,
}

/// The cells of one repetition, targets rotated by the repetition number; within a target,
/// data set by data set, so each target's populated images are built one after the other.
pub fn repetition(
    rep: u32,
    targets: usize,
    datasets: usize,
    workloads: &[(usize, Vec<usize>)],
) -> Vec<Cell> {
    let mut out = Vec::new();
    for i in 0..targets {
        let target = (i + rep as usize) % targets;
        for dataset in 0..datasets.max(1) {
            for (workload, threads) in workloads {
                for &t in threads {
                    out.push(Cell {
                        repetition: rep,
                        target,
                        dataset,
                        workload: *workload,
                        threads: t,
                    });
                }
            }
        }
    }
    out
}

/// Each workload with the thread counts it runs at (`--threads` only where it applies).
pub fn thread_lists(plan: &Plan, workloads: &[Box<dyn Workload>]) -> Vec<(usize, Vec<usize>)> {
    workloads
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let threads = if w.spec().uses_threads {
                plan.threads.clone()
            } else {
                vec![1]
            };
            (i, threads)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotates_targets() {
        let w = vec![(0, vec![1])];
        let order =
            |rep| -> Vec<usize> { repetition(rep, 3, 1, &w).iter().map(|c| c.target).collect() };
        assert_eq!(order(0), vec![0, 1, 2]);
        assert_eq!(order(1), vec![1, 2, 0]);
        assert_eq!(order(2), vec![2, 0, 1]);
        assert_eq!(order(3), vec![0, 1, 2]);
        let w2 = vec![(0, vec![1, 2]), (1, vec![1])];
        assert_eq!(repetition(0, 1, 1, &w2).len(), 3);
        let both = repetition(0, 1, 2, &w2);
        assert_eq!(both.len(), 6);
        assert_eq!(
            both.iter().map(|c| c.dataset).collect::<Vec<_>>(),
            vec![0, 0, 0, 1, 1, 1]
        );
    }
}
