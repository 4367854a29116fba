//! What a workload is told about where and how it runs: the [`Ctx`] the runner builds for
//! each point.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use super::error::WorkloadError;
use super::in_turn::{InTurn, Tree};
use crate::dataset::DatasetSpec;

/// Everything a workload may know about where and how it runs.
pub struct Ctx<'a> {
    /// A fresh, empty directory on the target file system. The workload owns it.
    pub root: &'a Path,
    /// A warm scratch directory *outside* the target (for copy sources). Fresh per cell.
    pub scratch: &'a Path,
    /// The run's directory of read-only source trees made once and shared by its cells
    /// ([`super::source`]); `None` outside a run (they are then made in `scratch`).
    pub sources: Option<&'a Path>,
    /// Worker threads for this measurement (`--threads`).
    pub threads: usize,
    /// The data set to generate or use.
    pub dataset: &'a DatasetSpec,
    /// Workload-specific options from the plan (`[workload.NAME]` table), raw.
    pub options: &'a toml::Table,
    /// Set by the runner on SIGINT/SIGTERM or timeout; long loops should poll [`Ctx::check`].
    pub cancel: &'a AtomicBool,
    /// The time after which the runner records a timeout.
    pub deadline: Option<Instant>,
    /// The data set is already under `root`: the runner gave this point a copy of an image
    /// populated once for the run, so [`super::prepare::prepare`] plans it and writes nothing.
    pub populated: bool,
    /// A fresh, empty directory on a second file system, the plan's `log_target`, for a
    /// database workload's log (WAL); `None` when the log stays beside the data.
    pub log_root: Option<&'a Path>,
    /// This point runs on the file system the point before it (of the same cell) has just
    /// run on ([`super::Workload::follows_on_same_fs`]), so what that point read is in the
    /// caches; `false` on a fresh file system or a copy of an image, which arrive cold.
    pub follows: bool,
    /// The baseline's file system beside this one, for a point measured in turn with it
    /// ([`super::Workload::in_turn`]): the workload lays its tree down there too and its
    /// passes alternate between the two ([`super::passes`]); `None` for every other point.
    pub in_turn: Option<&'a InTurn>,
}

impl<'a> Ctx<'a> {
    /// A point on a fresh file system outside a run's cell (preparing an image, listing a
    /// plan's points, `bench_op`, tests): one thread, no deadline, no shared source trees,
    /// log target or baseline beside it. Callers set what differs (`Ctx { threads, ..new }`).
    pub fn new(
        root: &'a Path,
        scratch: &'a Path,
        dataset: &'a DatasetSpec,
        options: &'a toml::Table,
        cancel: &'a AtomicBool,
    ) -> Ctx<'a> {
        Ctx {
            root,
            scratch,
            sources: None,
            threads: 1,
            dataset,
            options,
            cancel,
            deadline: None,
            populated: false,
            log_root: None,
            follows: false,
            in_turn: None,
        }
    }

    /// The directory a pass over `tree` walks.
    pub fn root_of(&self, tree: Tree) -> &Path {
        match (tree, self.in_turn) {
            (Tree::InTurn, Some(t)) => &t.root,
            _ => self.root,
        }
    }

    /// Every tree this point's passes walk: its own, then the baseline's when in turn.
    pub fn trees(&self) -> Vec<Tree> {
        match self.in_turn {
            Some(_) => vec![Tree::Own, Tree::InTurn],
            None => vec![Tree::Own],
        }
    }

    /// Returns an error once the run is cancelled or past its deadline, so long loops stop.
    pub fn check(&self) -> Result<(), WorkloadError> {
        if self.cancel.load(Ordering::Relaxed) {
            return Err(WorkloadError::Interrupted);
        }
        if self.deadline.is_some_and(|d| Instant::now() > d) {
            return Err(WorkloadError::Timeout);
        }
        Ok(())
    }
}
