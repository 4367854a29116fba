//! Phases long enough to measure. A warm `scan` of a small tree takes a few milliseconds,
//! where the timer, the scheduler and one page fault are a large share of the figure. Such a
//! pass changes nothing, so it can be run again and again inside one measured phase until
//! the phase lasts at least the run's floor ([`super::harness::Harness::phase_floor`]); the phase's
//! figures are then totals over the passes (rates stay per second), and the per-pass figures
//! are reported beside them.
//!
//! A cold read-only pass (a cold walk, a cold load) can repeat too, if the caches are dropped
//! before each pass: every pass then starts as cold as the first ([`measure_cold_passes`]).
//! One cold pass of a small tree is a few tens of milliseconds of device latency, whose
//! run-to-run spread (20 % here) no number of cells averages away cheaply; twenty passes in
//! one phase do. A mutating pass cannot repeat: it would not do the same work twice.
//! A cold pass is read-only but not write-free: under `relatime` its first walk gives every
//! directory (and a read, every file) a new access time, which the file system writes back
//! later (btrfs: ~470 metadata writes for 800 directories). Those writes are the pass's
//! work, as `du` then `sync` pays for them: each pass but the last is followed by `syncfs`
//! inside the measured time ([`Harness::pass_writeback`]), and the last by the harness's own.
//! Before each later pass of a tree, outside the measured time, every access time under it
//! is reset ([`forget_reads`]), so each later pass is a first walk that writes them again,
//! as `du` of a fresh tree does; without it they walked a tree read moments before and
//! wrote nothing.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use rustix::fs::{AtFlags, Timespec, Timestamps, UTIME_NOW, UTIME_OMIT};

use super::ctx::Ctx;
use super::error::WorkloadError;
use super::harness::{Harness, WriteBack};
use super::in_turn::{InTurn, Tree};
use super::outcome::Outcome;
use crate::fsops::{self, Dir, Kind, Need};

/// Warm passes never exceed this, whatever the floor: a pass so fast that this many do not
/// reach it is measured over this many.
pub const MAX_PASSES: u64 = 100_000;

/// Cold passes never exceed this many per phase, whatever the floor.
pub const MAX_COLD_PASSES: u64 = 64;

/// A phase stops repeating once its wall time (passes plus what runs between them: cache
/// drops for cold passes) reaches this many floors, so a machine whose cache drop is slow (a
/// large page cache to free) does not spend minutes on one point; the phase is then flagged
/// as below the floor, like any short one.
pub const COLD_WALL_FLOORS: u32 = 6;

/// Runs `pass` inside one measured phase, once, then again until the passes' own seconds
/// reach the harness's floor (or the wall clock [`COLD_WALL_FLOORS`] floors). Each pass
/// returns its own [`Outcome`]; the phase's outcome sums their seconds, files and bytes,
/// keeps the last pass's other metrics (the same every pass for a read-only walk: matches,
/// dirs, …), and adds `passes`, `seconds_per_pass` and `files_per_pass`. With the
/// baseline's tree beside the point's ([`Ctx::in_turn`]), each turn walks both (see
/// [`repeat`]) and the baseline's figures go into [`Outcome::in_turn`].
pub fn measure_passes(
    ctx: &Ctx,
    harness: &mut dyn Harness,
    pass: &mut dyn FnMut(Tree) -> Result<Outcome, WorkloadError>,
) -> Result<Outcome, WorkloadError> {
    repeat(ctx, harness, pass, None)
}

/// [`measure_passes`] with the caches dropped ([`Harness::pass_dropper`]) before every pass
/// after the first, so each starts as cold as the first; the caller drops them before the
/// first, as for a single cold pass. Before each drop, what the pass left dirty is written
/// back ([`Harness::pass_writeback`]), timed as part of the pass. The passes' own time (the
/// drops not counted) must reach the floor. The drops are set aside ([`Harness::aside`]):
/// the monitor's seconds, device counters and CPU figures leave them out. Adds
/// `between_passes_seconds`: the time they took. In turn, `drops` says whether a drop comes
/// before every pass or before every turn ([`Drops`]).
pub fn measure_cold_passes(
    ctx: &Ctx,
    harness: &mut dyn Harness,
    drops: Drops,
    pass: &mut dyn FnMut(Tree) -> Result<Outcome, WorkloadError>,
) -> Result<Outcome, WorkloadError> {
    let drop_caches = harness.pass_dropper();
    repeat(ctx, harness, pass, Some((drop_caches, drops)))
}

/// When cold passes in turn drop the caches. Measured alone, a drop comes before every pass
/// either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drops {
    /// Before every pass: one tree's pass may warm what the other's reads too (a program
    /// launched from either tree loads the same libraries).
    EachPass,
    /// Before every turn: a pass reads only its own tree, so the turn's second tree is as
    /// cold after the first's pass as after a drop, and after the phase both trees stay
    /// cached for a warm point that follows (no warm-up walk of the one a last drop
    /// evicted: ~0.6 s a cell at scale 0.2), at half the drops.
    EachTurn,
}

/// What drops the caches between cold passes ([`Harness::pass_dropper`]).
type Dropper = fn() -> std::io::Result<()>;

/// What a phase's passes over one tree add up to.
#[derive(Default)]
struct Sum {
    outcome: Option<Outcome>,
}

impl Sum {
    fn add(&mut self, next: Outcome) {
        let Some(total) = &mut self.outcome else {
            self.outcome = Some(next);
            return;
        };
        total.seconds += next.seconds;
        total.files += next.files;
        total.logical_read_bytes += next.logical_read_bytes;
        total.logical_write_bytes += next.logical_write_bytes;
        total.metrics.extend(next.metrics);
    }

    fn seconds(&self) -> f64 {
        self.outcome.as_ref().map_or(0.0, |o| o.seconds)
    }

    /// Time spent on the tree's behalf outside its passes (a cold pass's write-back).
    fn charge(&mut self, seconds: f64) {
        if let Some(o) = &mut self.outcome {
            o.seconds += seconds;
        }
    }
}

/// The loop behind both: `between`, when given, runs before every pass after the first
/// and its time is kept apart from the passes'. With the baseline's tree beside the
/// point's ([`Ctx::in_turn`]), the passes alternate between the two trees in turns of one
/// pass each, the baseline's set aside from the monitor's figures ([`Harness::aside`]) and
/// timed on its own; which goes first swaps every turn (A B, B A, A B, …), starting where
/// the runner says ([`InTurn::first`]), and the phase ends after one turn or an even
/// number of them, so each tree went first as often as the other within the phase or,
/// after one turn, across the cells (a cold start read 13 % faster second in its turn, in
/// an A/A pair of ext4 file systems). Cold passes get a drop before each, whichever tree
/// they read.
fn repeat(
    ctx: &Ctx,
    harness: &mut dyn Harness,
    pass: &mut dyn FnMut(Tree) -> Result<Outcome, WorkloadError>,
    between: Option<(Dropper, Drops)>,
) -> Result<Outcome, WorkloadError> {
    let floor = harness.phase_floor();
    let mut run = Run {
        ctx,
        aside: harness.aside(),
        writeback: between.and(harness.pass_writeback()),
        between: between.map(|b| b.0),
        each_turn: between.is_some_and(|b| b.1 == Drops::EachTurn) && ctx.in_turn.is_some(),
        own: Sum::default(),
        other: Sum::default(),
        between_s: 0.0,
        to_forget: [false; 2],
    };
    let max = if between.is_some() {
        MAX_COLD_PASSES
    } else {
        MAX_PASSES
    };
    // Two trees take twice the wall time for the same passes of the point's own.
    let walls = COLD_WALL_FLOORS * if run.ctx.in_turn.is_some() { 2 } else { 1 };
    run.start(pass)?;
    harness.measure(&mut || {
        let t0 = Instant::now();
        let trees = if run.ctx.in_turn.is_some() { 2 } else { 1 };
        let mut done = 0usize;
        loop {
            let tree = run.tree_at(done);
            if done > 0 {
                let drop = !run.each_turn || done % trees == 0;
                run.between(run.tree_at(done - 1), tree, drop)?;
            }
            run.one(pass, tree)?;
            done += 1;
            if done % trees != 0 {
                continue;
            }
            // The passes' own seconds must reach the floor, not the wall clock: the
            // phase's `seconds` is their sum, and what runs between them is not in it.
            let capped = t0.elapsed() >= floor * walls || (done / trees) as u64 >= max;
            // Each tree first as often as the other within the phase, unless one turn
            // reached the floor (long passes: the cells alternate which goes first).
            let balanced = trees == 1 || done == trees || done % (2 * trees) == 0;
            if capped || (run.own.seconds() >= floor.as_secs_f64() && balanced) {
                break;
            }
        }
        run.total((done / trees) as u64, floor)
    })
}

/// One phase's passes in progress: what each tree's passes added up to, and what runs
/// between them.
struct Run<'a> {
    /// Where the point runs: its own tree, the baseline's beside it when in turn
    /// ([`Ctx::root_of`]), and whether it follows a point on the same file systems.
    ctx: &'a Ctx<'a>,
    aside: crate::monitor::Aside,
    /// The point's file system, written back after each of its cold passes.
    writeback: Option<WriteBack>,
    between: Option<fn() -> std::io::Result<()>>,
    /// Cold passes in turn drop the caches before each turn, not each pass ([`Drops`]).
    each_turn: bool,
    own: Sum,
    other: Sum,
    between_s: f64,
    /// Per tree ([`Tree::index`]): a cold pass read it since its reads were last
    /// forgotten ([`forget_reads`]), so its next pass needs them forgotten first.
    to_forget: [bool; 2],
}

impl Run<'_> {
    /// Before the phase: the baseline's tree warmed as the workload warmed its own (after
    /// a cold point on the same file systems, whichever of the two its last pass did not
    /// read: a drop came before that pass), or made as cold as the caller made the
    /// point's own. The harness's drop writes back only the point's
    /// file system, so what the workload just wrote on the baseline's stayed dirty, and
    /// cached, through it (its first cold pass read 2.5 ms where the point's took 19: an
    /// A/A pair of ext4 file systems read the baseline's 7 % faster).
    fn start(
        &self,
        pass: &mut dyn FnMut(Tree) -> Result<Outcome, WorkloadError>,
    ) -> Result<(), WorkloadError> {
        match (self.ctx.in_turn, self.between) {
            // The point's own too when it follows a cold point on the same file systems,
            // whose last pass may have read the baseline's tree after a drop.
            (Some(t), None) => {
                // The workload warmed its own tree unless it follows a point on these file
                // systems; then each tree that point's drops left out of the cache.
                let trees: &[Tree] = match self.ctx.follows {
                    true => &[Tree::Own, Tree::InTurn],
                    false => &[Tree::InTurn],
                };
                for &tree in trees.iter().filter(|&&tree| !t.is_cached(tree)) {
                    self.warm_up(pass, t, tree)?;
                }
                Ok(())
            }
            (Some(t), Some(drop_caches)) => {
                t.writeback.run().map_err(|e| {
                    WorkloadError::io(
                        "writing the baseline's file system back before cold passes",
                        e,
                    )
                })?;
                aside_drop(drop_caches)?;
                t.dropped();
                Ok(())
            }
            (None, _) => Ok(()),
        }
    }

    /// An unmeasured walk of `tree` before a warm phase, and what it wrote (the access
    /// times a cold point's reset left to write: btrfs's warm scan wrote 451 I/Os in the
    /// phase after it) written back: the walk's, not the phase's.
    fn warm_up(
        &self,
        pass: &mut dyn FnMut(Tree) -> Result<Outcome, WorkloadError>,
        t: &InTurn,
        tree: Tree,
    ) -> Result<(), WorkloadError> {
        pass(tree)?;
        t.read(tree);
        crate::sys::syncfs(self.ctx.root_of(tree))
            .map_err(|e| WorkloadError::io("syncfs after the warm-up walk", e))
    }

    /// The tree the `i`-th pass of the phase reads ([`turn_order`]).
    fn tree_at(&self, i: usize) -> Tree {
        match self.ctx.in_turn {
            None => Tree::Own,
            Some(t) => turn_order(t.first, (i / 2) as u64)[i % 2],
        }
    }

    /// One pass over `tree`, added to its tree's sum; the baseline's set aside.
    fn one(
        &mut self,
        pass: &mut dyn FnMut(Tree) -> Result<Outcome, WorkloadError>,
        tree: Tree,
    ) -> Result<(), WorkloadError> {
        if let Some(t) = self.ctx.in_turn {
            t.read(tree);
        }
        match tree {
            Tree::Own if self.ctx.in_turn.is_some() => {
                // Bracketed as the baseline's pass is, by the monitor's readings on either
                // side (an empty span set aside): without them, an A/A pair of ext4 file
                // systems read the point's own warm name search 1.1 % slower than the
                // baseline's, whichever image was which; with them, within 0.1 %.
                self.aside.run(|| ());
                let o = pass(Tree::Own)?;
                self.aside.run(|| ());
                self.own.add(o)
            }
            Tree::Own => self.own.add(pass(Tree::Own)?),
            Tree::InTurn => self.other.add(self.aside.run(|| pass(Tree::InTurn))?),
        }
        Ok(())
    }

    /// After a cold pass over `last`, before one over `next`: what `last` left dirty
    /// written back and charged to it (the baseline's outside the monitor's figures), then,
    /// when the caches are to be dropped here (`drop`, [`Drops`]), set aside: the reads of
    /// the trees walked before the next drop forgotten, their file systems written back
    /// whole, and the caches dropped. A tree's reads are forgotten just before it is walked
    /// again, not after every pass: in turn, the first turn's second tree follows a tree
    /// that may never be walked again in the phase, and a reset of 50,000 files and its
    /// write-back took ~0.3 s. Nothing between warm passes.
    fn between(&mut self, last: Tree, next: Tree, drop: bool) -> Result<(), WorkloadError> {
        let Some(drop_caches) = self.between else {
            return Ok(());
        };
        if let Some(wb) = self.writeback_of(last) {
            let root = wb.root.clone();
            match last {
                Tree::Own => self.own.charge(synced(&root)?),
                Tree::InTurn => self.other.charge(self.aside.run(|| synced(&root))?),
            }
        }
        self.to_forget[last.index()] = true;
        if !drop {
            return Ok(());
        }
        let coming: &[Tree] = match self.each_turn {
            true => &[Tree::Own, Tree::InTurn],
            false => &[next],
        };
        let pending: Vec<Tree> = (coming.iter().copied())
            .filter(|t| std::mem::take(&mut self.to_forget[t.index()]))
            .collect();
        let forget: Vec<&WriteBack> = (pending.into_iter())
            .filter_map(|t| self.writeback_of(t))
            .collect();
        let d = Instant::now();
        self.aside
            .run(|| forget_reads_and_drop(&forget, drop_caches))?;
        self.between_s += d.elapsed().as_secs_f64();
        if let Some(t) = self.ctx.in_turn {
            t.dropped();
        }
        Ok(())
    }

    /// The file system under `tree`, written back after each of its cold passes.
    fn writeback_of(&self, tree: Tree) -> Option<&WriteBack> {
        match (tree, self.ctx.in_turn) {
            (Tree::InTurn, Some(t)) => Some(&t.writeback),
            _ => self.writeback.as_ref(),
        }
    }

    /// The phase's outcome after `passes` passes over the point's tree: their sums, the
    /// per-pass figures, and the baseline's figures beside them.
    fn total(&mut self, passes: u64, floor: Duration) -> Result<Outcome, WorkloadError> {
        let mut total = self.own.outcome.take().unwrap_or_default();
        let n = passes as f64;
        let m = &mut total.metrics;
        m.insert("passes".into(), n);
        m.insert("seconds_per_pass".into(), total.seconds / n);
        m.insert("files_per_pass".into(), total.files as f64 / n);
        if self.between.is_some() {
            m.insert("between_passes_seconds".into(), self.between_s);
        }
        if let (Some(t), Some(o)) = (self.ctx.in_turn, self.other.outcome.take()) {
            let last = self.aside.run(|| synced(&t.writeback.root))?;
            total.in_turn = in_turn_figures(&o, n, last);
            total.notes.push(format!(
                "measured in turn with {}: its passes alternated with these in one phase, \
                 set aside from this phase's figures",
                t.target
            ));
        }
        if passes > 1 {
            let between_s = self.between.map(|_| self.between_s);
            total
                .notes
                .push(passes_note(passes, between_s, total.seconds, floor));
        }
        Ok(total)
    }
}

/// The two trees of turn `k`, the baseline's first in the first turn when `first` says so
/// and the order swapped every turn after.
fn turn_order(first: bool, k: u64) -> [Tree; 2] {
    match first == (k % 2 == 0) {
        true => [Tree::InTurn, Tree::Own],
        false => [Tree::Own, Tree::InTurn],
    }
}

/// A cache drop between passes, its error said so.
fn aside_drop(drop_caches: fn() -> std::io::Result<()>) -> Result<(), WorkloadError> {
    drop_caches().map_err(|e| WorkloadError::io("dropping caches between cold passes", e))
}

/// `syncfs` of the file system under `root`, and the seconds it took.
fn synced(root: &Path) -> Result<f64, WorkloadError> {
    let w = Instant::now();
    crate::sys::syncfs(root).map_err(|e| WorkloadError::io("syncfs after a cold pass", e))?;
    Ok(w.elapsed().as_secs_f64())
}

/// The baseline's figures from its passes in turn (`o`, `n` of them) and its write-back
/// after the last (`last` seconds, as the harness's own `syncfs` ends the point's phase),
/// named as the point's own are ([`crate::results`]' metrics): what its comparison pairs.
fn in_turn_figures(o: &Outcome, n: f64, last: f64) -> BTreeMap<String, f64> {
    let seconds = o.seconds + last;
    let mut m = BTreeMap::from([
        ("passes".to_string(), n),
        ("seconds".to_string(), seconds),
        ("seconds_per_pass".to_string(), o.seconds / n),
        ("files".to_string(), o.files as f64),
    ]);
    if seconds > 0.0 {
        m.insert("files_per_s".into(), o.files as f64 / seconds);
        let bytes = o.logical_read_bytes.max(o.logical_write_bytes);
        if bytes > 0 {
            m.insert("mb_per_s".into(), bytes as f64 / seconds / 1e6);
        }
    }
    m
}

/// The note of a phase of `passes` passes: cold ones with the seconds between them.
fn passes_note(passes: u64, between_s: Option<f64>, seconds: f64, floor: Duration) -> String {
    let (kind, drops) = match between_s {
        Some(between_s) => (
            "cold",
            format!(
                "; each written back and counted, caches dropped before the next, \
                 {between_s:.2} s not counted"
            ),
        ),
        None => ("warm", String::new()),
    };
    format!(
        "{passes} {kind} passes in one phase of {seconds:.2} s (floor {:.2} s{drops})",
        floor.as_secs_f64()
    )
}

/// What runs between two cold passes, outside the measured time: the trees under the
/// written-back file systems made unread again ([`forget_reads`]), those file systems written
/// back whole (the reset's own inode writes, which a drop cannot evict while dirty), then
/// the caches dropped. Only the target is written back, not the machine (`sync(2)`, which
/// waits on every other program's dirty pages too and makes the target no colder); on a
/// target whose drop does nothing (tmpfs) the write-back does nothing either.
fn forget_reads_and_drop(
    writebacks: &[&WriteBack],
    drop_caches: fn() -> std::io::Result<()>,
) -> Result<(), WorkloadError> {
    for wb in writebacks {
        forget_reads(&wb.root)?;
        wb.run()
            .map_err(|e| WorkloadError::io("writing the target back between cold passes", e))?;
    }
    aside_drop(drop_caches)
}

/// Gives every directory and file under `root` an access time no later than its change
/// time, as a tree nobody has read since it was written has, so that under `relatime`
/// the next pass's reads write new ones again and every cold pass is a first walk. Without
/// it the passes after the first walked a tree read moments before and wrote nothing:
/// btrfs's cold scan of 20,000 files measured −5 % against ext4 where `du -s` of a fresh
/// tree, which pays for the writes, measured −27 % (issue 41, `bench/agree.sh`).
/// `utimensat` sets the change time to now, and the access time is set to now as well
/// (`UTIME_NOW`, valid on every file system's timestamp grain); the modification time is
/// left alone. A directory is reset after the walk has read it, through its own descriptor,
/// so the walk's own read does not count as the next pass's.
pub fn forget_reads(root: &Path) -> Result<(), WorkloadError> {
    let times = Timestamps {
        last_access: Timespec {
            tv_sec: 0,
            tv_nsec: UTIME_NOW,
        },
        last_modification: Timespec {
            tv_sec: 0,
            tv_nsec: UTIME_OMIT,
        },
    };
    let reset = |d: &Dir, name: &std::ffi::CStr| {
        rustix::fs::utimensat(d.fd(), name, &times, AtFlags::SYMLINK_NOFOLLOW).map_err(|e| {
            WorkloadError::io(
                format!("resetting the access time of {}", d.path_of(name).display()),
                e.into(),
            )
        })
    };
    fsops::walk(root, 1, Need::NONE, |d: &Dir| {
        for e in d.entries().filter(|e| e.kind == Kind::File) {
            reset(d, e.name)?;
        }
        reset(d, c".")
    })?;
    Ok(())
}

#[cfg(test)]
mod tests;
