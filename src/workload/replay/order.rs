//! The order in which `super::deps` takes the calls: their recorded starts, corrected where
//! two threads' calls overlapped and their results say the kernel ran them the other way
//! round. strace stamps a call when it enters and when it leaves; what the call did happened
//! somewhere in between. Two PostgreSQL processes racing to create one directory: process
//! A's `mkdir(d)` is stamped from 1.961810 to 1.962479 s and succeeds; process B's
//! `mkdir(d/x)`, stamped at 1.961925, fails with `ENOENT` — in the kernel it ran before A's
//! `mkdir` made `d`. By start order the replay would make `d` first, B's `mkdir` would
//! succeed, and the check would call the replay a divergence. So a call whose result shows
//! it came first is moved before the overlapping call it raced:
//! - a lookup or creation that failed with `ENOENT` at or below a path another thread's
//!   overlapping call created;
//! - a creation that succeeded where another thread's overlapping creation of the same
//!   path, started no later, failed with `EEXIST`.
//!
//! Each thread keeps its own order (a moved call takes the calls before it on its thread
//! along), so the waits `deps` builds still point back along one order and cannot deadlock.

use super::script::{has_flag, Script};
use crate::trace::format::{Call, Op};

/// How many later-starting calls are compared with one creation: the calls a creation can
/// overlap are those stamped during it, a handful; the bound keeps a trace of a stalled
/// `mkdir` beside a million calls linear.
const WINDOW: usize = 256;

/// Whether `call` creates the name it is given (a directory, a file, a link).
fn creates(call: &Call) -> bool {
    match call.op {
        Op::Mkdir | Op::Symlink | Op::Link => true,
        Op::Open => has_flag(call, "O_CREAT"),
        _ => false,
    }
}

/// The name `call` creates: a link's second path, otherwise its first.
fn created(call: &Call) -> Option<&str> {
    match call.op {
        Op::Link | Op::Symlink => call.path2.as_deref().or(call.path.as_deref()),
        _ => call.path.as_deref(),
    }
}

/// Whether `path` is `dir` or lies below it.
fn at_or_below(path: &str, dir: &str) -> bool {
    path == dir
        || path
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Whether `later`, which started while `first` ran, ran before it by its result.
fn ran_before(first: &Call, later: &Call) -> bool {
    let Some(name) = created(first) else {
        return false;
    };
    let later_path = later.path.as_deref().unwrap_or_default();
    let not_found_below = first.err.is_none()
        && later.err.as_deref() == Some("ENOENT")
        && later_path != name
        && at_or_below(later_path, name);
    let made_what_it_found = first.err.as_deref() == Some("EEXIST")
        && creates(later)
        && later.err.is_none()
        && created(later) == Some(name);
    not_found_below || made_what_it_found
}

/// The calls' indices in the order `deps` takes them.
pub fn order(script: &Script) -> Vec<usize> {
    let calls = script.calls;
    let mut key: Vec<f64> = calls.iter().map(|c| c.start).collect();
    let mut by_start: Vec<usize> = (0..calls.len()).collect();
    by_start.sort_by(|&a, &b| calls[a].start.total_cmp(&calls[b].start).then(a.cmp(&b)));
    for (n, &i) in by_start.iter().enumerate() {
        let first = &calls[i];
        if !creates(first) {
            continue;
        }
        let end = first.start + first.dur;
        for &j in by_start[n + 1..].iter().take(WINDOW) {
            let later = &calls[j];
            if later.start > end {
                break;
            }
            if later.thread != first.thread && ran_before(first, later) {
                // Just before `first`; ties fall to the index, so below its key.
                key[j] = key[j].min(next_below(key[i]));
            }
        }
    }
    // A thread's calls keep their order: each takes at most the key of the one after it.
    for list in &script.by_thread {
        for w in (1..list.len()).rev() {
            key[list[w - 1]] = key[list[w - 1]].min(key[list[w]]);
        }
    }
    let mut out: Vec<usize> = (0..calls.len()).collect();
    out.sort_by(|&a, &b| key[a].total_cmp(&key[b]).then(a.cmp(&b)));
    out
}

/// The largest float below `x` (finite `x`): a key that sorts just before it.
fn next_below(x: f64) -> f64 {
    if x == 0.0 {
        return -f64::MIN_POSITIVE;
    }
    let bits = x.to_bits();
    f64::from_bits(if x > 0.0 { bits - 1 } else { bits + 1 })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(thread: u32, start: f64, dur: f64, op: Op, path: &str, err: Option<&str>) -> Call {
        Call {
            ret: err.is_none().then_some(0),
            err: err.map(Into::into),
            ..Call::on_path(thread, start, dur, op, path)
        }
    }

    fn script(calls: &[Call], by_thread: Vec<Vec<usize>>) -> Script<'_> {
        Script::of_threads(calls, by_thread)
    }

    /// The race of two PostgreSQL processes in the corpus's recording, as stamped.
    #[test]
    fn a_failed_mkdir_below_a_directory_another_thread_was_making_goes_first() {
        let calls = vec![
            call(0, 1.961810, 0.000669, Op::Mkdir, "d", None),
            call(1, 1.961920, 0.000002, Op::Stat, "d/x/f", Some("ENOENT")),
            call(1, 1.961925, 0.0, Op::Mkdir, "d/x", Some("ENOENT")),
            call(1, 1.961925, 0.000574, Op::Mkdir, "d", Some("EEXIST")),
            call(0, 1.962508, 0.000028, Op::Mkdir, "d/x", Some("EEXIST")),
            call(1, 1.962508, 0.000028, Op::Mkdir, "d/x", None),
        ];
        let s = script(&calls, vec![vec![0, 4], vec![1, 2, 3, 5]]);
        // Thread 1's two failures before thread 0's mkdir of d (its stat along), and its
        // mkdir of d/x that succeeded before thread 0's that found it.
        assert_eq!(order(&s), vec![1, 2, 0, 3, 5, 4]);
    }

    #[test]
    fn calls_that_did_not_race_keep_their_recorded_order() {
        let calls = vec![
            call(0, 0.0, 0.001, Op::Mkdir, "d", None),
            call(1, 0.002, 0.0, Op::Stat, "d/x", Some("ENOENT")),
            call(1, 0.0005, 0.0, Op::Stat, "e", Some("ENOENT")),
        ];
        let s = script(&calls, vec![vec![0], vec![2, 1]]);
        assert_eq!(order(&s), vec![0, 2, 1]);
    }
}
