//! What a plan will cost before it runs: `--dry-run` prints the estimated wall time of the
//! minimum repetitions (and whether it fits an `auto` budget) and the disk it needs.
//!
//! **The model.** A cell costs what cells of the same target and workload cost in the most
//! recent earlier runs on this host (`cell_seconds` in their results, looked up in the
//! results directory's parent, e.g. `fsarena-results/`), rescaled to this plan's data set:
//! `overhead + (cost − overhead) × files_now / files_then`, where `overhead` is that run's
//! cheapest cell of the target (provisioning and teardown, which do not grow with the data
//! set). Without such history it falls back to a coarse per-file-system model, stated in the
//! output: a fixed 1 s per cell plus twice the time to create the data set's files at the
//! rate measured on the development machine (ext4 ~11,000 files/s, btrfs ~3,300, FUSE
//! ~3,500). Either way it is an estimate; the progress bar's ETA corrects it as cells are
//! timed.

use std::collections::HashMap;
use std::path::Path;

use crate::plan::{FsKind, Plan};
use crate::results::store;

/// The estimate and what it rests on.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// Seconds the minimum repetitions take.
    pub minimum_s: f64,
    /// Cells priced from history, and from the coarse model.
    pub from_history: usize,
    pub from_model: usize,
}

/// A target's cell costs in one earlier run: (workload → mean cell seconds), its cheapest
/// cell, and that run's data-set size in files.
#[derive(Debug, Default, Clone)]
pub struct History {
    per: HashMap<(String, String), (f64, f64, f64)>,
}

impl History {
    /// Reads up to `limit` earlier runs under `root` (newest first); the newest run that
    /// timed a (target, workload) pair wins.
    pub fn load(root: &Path, limit: usize) -> History {
        let mut h = History::default();
        let Ok(entries) = std::fs::read_dir(root) else {
            return h;
        };
        let mut dirs: Vec<_> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.join(store::FILE_NAME).is_file())
            .collect();
        dirs.sort();
        for dir in dirs.iter().rev().take(limit) {
            let Ok(loaded) = store::load(dir) else {
                continue;
            };
            let files = serde_json::from_value::<Plan>(loaded.host.plan.clone())
                .ok()
                .and_then(|p| p.dataset.plan().ok())
                .map(|m| m.files.len() as f64);
            let Some(files) = files.filter(|&f| f > 0.0) else {
                continue;
            };
            // One cost per cell (all points of a cell carry the same cell_seconds).
            let mut cells: HashMap<(String, String, u32, u32), f64> = HashMap::new();
            for m in &loaded.measurements {
                if let Some(c) = m.cell_seconds {
                    cells.insert(
                        (
                            m.target.clone(),
                            m.workload.clone(),
                            m.threads,
                            m.repetition,
                        ),
                        c,
                    );
                }
            }
            let mut cheapest: HashMap<String, f64> = HashMap::new();
            let mut sums: HashMap<(String, String), (f64, u32)> = HashMap::new();
            for ((t, w, _, _), c) in &cells {
                let e = cheapest.entry(t.clone()).or_insert(f64::INFINITY);
                *e = e.min(*c);
                let s = sums.entry((t.clone(), w.clone())).or_insert((0.0, 0));
                s.0 += c;
                s.1 += 1;
            }
            for ((t, w), (sum, n)) in sums {
                let overhead = cheapest.get(&t).copied().unwrap_or(0.0);
                h.per
                    .entry((t, w))
                    .or_insert((sum / n as f64, overhead, files));
            }
        }
        h
    }

    /// Seconds a cell of `workload` on `target` costs for a data set of `files` files.
    pub fn cell(&self, target: &str, workload: &str, files: f64) -> Option<f64> {
        let &(cost, overhead, then) = self.per.get(&(target.to_string(), workload.to_string()))?;
        let overhead = overhead.min(cost);
        Some(overhead + (cost - overhead) * files / then)
    }
}

/// Files per second the coarse model assumes a file system creates (dev machine, loop
/// devices on an ext4 host, default run at scale 0.01).
pub(super) fn create_rate(kind: FsKind) -> f64 {
    match kind {
        FsKind::Tmpfs => 40_000.0,
        FsKind::Ext4 | FsKind::Xfs => 11_000.0,
        FsKind::Btrfs | FsKind::F2fs => 3_300.0,
        _ => 3_500.0,
    }
}

/// The coarse model: 1 s per cell plus twice the time to create `files` files.
pub fn model_cell(kind: FsKind, files: f64) -> f64 {
    1.0 + 2.0 * files / create_rate(kind)
}

/// Prices `cells` (target index into `plan.targets`, workload name): history first, else
/// the model.
pub fn estimate(plan: &Plan, cells: &[(usize, &str)], files: usize, history: &History) -> Estimate {
    let mut e = Estimate {
        minimum_s: 0.0,
        from_history: 0,
        from_model: 0,
    };
    for &(t, w) in cells {
        let target = &plan.targets[t];
        match history.cell(&target.name, w, files as f64) {
            Some(s) => {
                e.minimum_s += s;
                e.from_history += 1;
            }
            None => {
                e.minimum_s += model_cell(target.fs, files as f64);
                e.from_model += 1;
            }
        }
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_rescales_only_what_grows_with_the_data_set() {
        let mut h = History::default();
        // A cell cost 3 s; the target's cheapest cell 1 s; the run had 1,000 files.
        h.per
            .insert(("ext4".into(), "scan".into()), (3.0, 1.0, 1000.0));
        assert_eq!(h.cell("ext4", "scan", 1000.0), Some(3.0));
        assert_eq!(h.cell("ext4", "scan", 10_000.0), Some(21.0));
        assert_eq!(h.cell("xfs", "scan", 10.0), None);
    }

    #[test]
    fn the_model_grows_with_the_files_and_is_slower_on_fuse() {
        assert!(model_cell(FsKind::Ext4, 0.0) == 1.0);
        assert!(model_cell(FsKind::Ntfs, 10_000.0) > model_cell(FsKind::Ext4, 10_000.0));
    }
}
