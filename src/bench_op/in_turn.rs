//! `fsarena op NAME SRC --in-turn-with DIR …`: a read-only op on several trees in turn,
//! pass by pass in one process, for bench/interleave.sh.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{destination, in_ctx, timed, Op, OpArgs, OpReport, OPS};
use crate::workload::WorkloadError;

/// One pass of [`run_in_turn`]: which tree it ran on (0: SRC, then the others in the order
/// given), when it started (seconds since the first pass began), and what it did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Turn {
    pub tree: usize,
    pub at: f64,
    pub report: OpReport,
}

impl Turn {
    /// The one line `fsarena op --in-turn-with` prints per pass.
    pub fn line(&self, op: Op) -> String {
        let r = &self.report;
        format!(
            "{} tree={} at={:.6} seconds={:.6} files={} bytes={}",
            op.name, self.tree, self.at, r.seconds, r.files, r.bytes
        )
    }
}

/// The op on SRC and on each of `others` in turn, one pass each, round after round until
/// `lasting` has passed (whole rounds only), in this one process; `each` gets every pass
/// as it ends, and stops the run by breaking. Returns the rounds begun. With `rotate`, each
/// round starts one tree later than the round before (SRC first, then the second tree
/// first, …), so no tree always follows the same one.
///
/// Why: the machine this is built on changes speed in spells of seconds, which cancel in
/// the ratio of two trees' passes run this close together and not in cells run one after
/// another (bench/interleave.sh, bench/journal/default-run.md, "Interleaved passes"); a
/// process per pass would add noise of its own. Only an op that changes nothing can run
/// again on its tree.
pub fn run_in_turn(
    args: &OpArgs,
    others: &[PathBuf],
    lasting: Duration,
    rotate: bool,
    each: &mut dyn FnMut(&Turn) -> ControlFlow<()>,
) -> Result<u64, WorkloadError> {
    let op = args.name;
    if !op.read_only {
        let which: Vec<&str> = OPS.iter().filter(|o| o.read_only).map(|o| o.name).collect();
        return Err(WorkloadError::Option(format!(
            "op {} changes its tree, so it cannot run on it again: --in-turn-with takes {}",
            op.name,
            which.join(", ")
        )));
    }
    let dest = destination(args)?;
    let trees: Vec<&Path> = std::iter::once(args.src.as_path())
        .chain(others.iter().map(PathBuf::as_path))
        .collect();
    in_ctx(args, dest, |ctx| {
        let t0 = Instant::now();
        let mut rounds = 0;
        while rounds == 0 || t0.elapsed() < lasting {
            let first = if rotate {
                rounds as usize % trees.len()
            } else {
                0
            };
            rounds += 1;
            for k in 0..trees.len() {
                let tree = (first + k) % trees.len();
                let src = trees[tree];
                let at = t0.elapsed().as_secs_f64();
                let report = timed(args, ctx, src, None)?;
                if each(&Turn { tree, at, report }).is_break() {
                    return Ok(rounds);
                }
            }
        }
        Ok(rounds)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench_op::tests::{args, tree};

    #[test]
    fn passes_in_turn_alternate_the_trees_and_a_mutating_op_is_refused() {
        let base = tempfile::Builder::new()
            .prefix("fsarena-op-turn-")
            .tempdir_in("/var/tmp")
            .unwrap();
        let one = tree(&base.path().join("1"));
        let two = tree(&base.path().join("2"));
        let others = [two.clone()];
        let mut seen: Vec<Turn> = Vec::new();
        let mut keep = |t: &Turn| {
            seen.push(*t);
            ControlFlow::Continue(())
        };
        let lasting = Duration::from_millis(30);
        let names = args("search-name", &one, None);
        let rounds = run_in_turn(&names, &others, lasting, false, &mut keep).unwrap();
        assert!(rounds >= 1);
        assert_eq!(seen.len() as u64, 2 * rounds);
        for (i, t) in seen.iter().enumerate() {
            // Tree 0 (SRC), then tree 1, again and again; each pass found both .jpg files.
            assert_eq!((t.tree, t.report.files), (i % 2, 2), "{seen:?}");
            assert!(i == 0 || t.at >= seen[i - 1].at, "{seen:?}");
        }
        // Whole rounds until the time has passed: the last began before it ended.
        assert!(seen.last().unwrap().at < lasting.as_secs_f64() + 1.0);

        // Rotated: each round starts one tree later (0 1, 1 0, 0 1, …).
        let mut order = Vec::new();
        let mut trees_seen = |t: &Turn| {
            order.push(t.tree);
            ControlFlow::Continue(())
        };
        let rounds = run_in_turn(&names, &others, lasting, true, &mut trees_seen).unwrap();
        assert_eq!(order.len() as u64, 2 * rounds);
        for (i, tree) in order.iter().enumerate() {
            assert_eq!(*tree, (i / 2 + i % 2) % 2, "{order:?}");
        }

        // A break stops the run after the pass it was given.
        let mut passes = 0;
        let mut first_only = |_: &Turn| {
            passes += 1;
            ControlFlow::Break(())
        };
        let scan = args("scan", &one, None);
        let r = run_in_turn(&scan, &others, lasting, false, &mut first_only);
        assert_eq!((r.unwrap(), passes), (1, 1));

        // An op that changes its tree cannot run on it again: refused, nothing touched.
        let mut never = |_: &Turn| -> ControlFlow<()> { panic!("a pass ran") };
        let delete = args("delete", &one, None);
        let e = run_in_turn(&delete, &others, lasting, false, &mut never)
            .unwrap_err()
            .to_string();
        assert!(e.contains("op delete changes its tree"), "{e}");
        assert!(
            e.contains("scan, search-name, search-size, dupes, hash"),
            "{e}"
        );
        assert!(one.join("a/x.jpg").exists() && two.join("b/z.jpg").exists());
    }
}
