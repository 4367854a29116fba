//! The baseline's file system beside a candidate's, for a read-only point measured in turn:
//! the two trees' passes alternate inside one phase ([`super::passes`]), so both see the
//! same moment of the machine. Measured apart, in cells a quarter second or a minute apart,
//! the ratio of two file systems' warm walks spreads 3–6× more than measured in one window
//! (bench/journal/default-run.md, "Interleaved passes"): the machine's spells of seconds
//! land on one side only.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};

use super::harness::WriteBack;

/// Which tree a pass walks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tree {
    /// The point's own, on the target measured ([`super::Ctx::root`]).
    Own,
    /// The baseline's, on its own file system beside it ([`InTurn::root`]).
    InTurn,
}

impl Tree {
    /// 0 for the point's own tree, 1 for the baseline's: where a workload keeps each
    /// tree's last result, to check both after the phase.
    pub fn index(self) -> usize {
        match self {
            Tree::Own => 0,
            Tree::InTurn => 1,
        }
    }
}

/// The baseline's file system a point's passes take turns with.
#[derive(Debug)]
pub struct InTurn {
    /// The baseline target's name.
    pub target: String,
    /// Its working directory: the same tree as the point's own root holds, once the
    /// workload has laid it down there too.
    pub root: PathBuf,
    /// Its file system, written back after each cold pass as the target's is
    /// ([`super::Harness::pass_writeback`]).
    pub writeback: WriteBack,
    /// The baseline's pass goes first in the phase's first turn. The tree walked second in
    /// a turn read 0.2–0.4 % faster in an A/A pair of one file system, so the runner
    /// alternates this between cells and the passes alternate it between turns.
    pub first: bool,
    /// Which trees the page cache holds as the last pass on these file systems left them
    /// (bit [`Tree::index`] set: read since the last drop). A cold phase drops the caches
    /// before each pass, so after it only the tree its last pass read is cached; a warm
    /// point that follows warms just the other one. Empty on a fresh pair.
    pub cached: AtomicU8,
}

impl InTurn {
    /// Whether a pass read `tree` since the caches were last dropped ([`InTurn::cached`]).
    pub fn is_cached(&self, tree: Tree) -> bool {
        self.cached.load(Ordering::Relaxed) & Self::bit(tree) != 0
    }

    /// Notes that a pass read `tree`: the cache holds it now.
    pub fn read(&self, tree: Tree) {
        self.cached.fetch_or(Self::bit(tree), Ordering::Relaxed);
    }

    /// Notes a cache drop: neither tree is cached now.
    pub fn dropped(&self) {
        self.cached.store(0, Ordering::Relaxed);
    }

    fn bit(tree: Tree) -> u8 {
        1 << tree.index()
    }
}
