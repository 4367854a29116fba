//! Which calls of other threads each call waits for, ARTC-style (Weiss et al., SOSP '13):
//! every call touches resources — the path it names and that path's ancestors, the file
//! behind a descriptor (the path it was opened at), and for a call that changes a
//! directory's entries the parent directory — each either reading it or changing it. In
//! recorded start order, a call waits for the last call that changed each resource it
//! touches, and a call that changes one also waits for every call that read it since:
//! a creation, rename or unlink before a later use of the name, a file's writes before
//! another thread's read, a directory's new entries before its listing, an open before
//! another thread's use of its descriptor and that use before the descriptor's last close. Readers do not
//! wait for one another. A call also waits for the last call of every thread that had made
//! all its calls before it started ([`Exits`]): programs a shell runs one after another
//! replay one after another. Order within a thread is the thread's own; only waits on other
//! threads are kept, the latest per thread (a thread completes its calls in order). "Recorded
//! start order" is corrected where two threads' calls overlapped and their results show the
//! kernel ran them the other way round (`super::order`).
//!
//! Finally a call waits for every call of another thread that had ended a pause's worth
//! ([`THINK_MIN`]) before it started ([`Settled`]). A program's processes also hand each
//! other data through pipes and sockets, which no file call shows: `rsync`'s receiver writes
//! a file only once its sender has read it and sent it over their socket. By resources
//! alone the receiver's writes waited for nothing of the sender's, and in its replay the
//! receiver ran up to 91-125 files ahead of the sender, where the program's receiver is never
//! ahead (2 to 43 files behind): the receiver's work overlapped other parts of the sender's
//! than in the program (bench/journal/replay-fidelity.md, 2026-11-29). Calls recorded
//! closer than that, whose order strace's stamps cannot tell apart, still go as the
//! resources allow.

use std::collections::HashMap;

use super::script::{has_flag, Script};
use crate::trace::format::{Call, Op, ROOT};

/// A call to wait for: the `pos`-th call of recorded thread `thread` must have completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Wait {
    pub thread: u32,
    pub pos: usize,
}

/// One resource a call touches, and whether it changes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Touch {
    pub resource: String,
    pub changes: bool,
}

/// Whether the call changes what its own path (or descriptor's file) names: its content,
/// size, or existence.
fn changes_target(call: &Call) -> bool {
    match call.op {
        Op::Open => {
            has_flag(call, "O_CREAT") || has_flag(call, "O_TRUNC") || has_flag(call, "O_TMPFILE")
        }
        Op::Write
        | Op::Truncate
        | Op::Fallocate
        | Op::Mkdir
        | Op::Rmdir
        | Op::Unlink
        | Op::Rename
        | Op::Link
        | Op::Symlink
        | Op::Msync
        | Op::Clone
        | Op::Setxattr
        | Op::Removexattr
        | Op::Setattr
        | Op::Lock
        // A seek moves the position every name of the open file shares: the reads and
        // writes around it must keep their recorded order.
        | Op::Seek => true,
        _ => false,
    }
}

/// Whether the call writes back every file (`sync`, `syncfs`): it waits for every call
/// of every other thread that started before it, as the kernel's write-back takes what
/// they did.
fn is_barrier(call: &Call) -> bool {
    matches!(call.op, Op::Sync | Op::Syncfs)
}

/// Whether the call adds or removes entries of the directory holding its path(s).
fn changes_parent(call: &Call) -> bool {
    match call.op {
        Op::Open => has_flag(call, "O_CREAT"),
        Op::Mkdir | Op::Rmdir | Op::Unlink | Op::Rename | Op::Link | Op::Symlink => true,
        _ => false,
    }
}

/// The directory holding `path` ("" for the root).
pub fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(p, _)| p)
}

/// What call `i` of `script` touches.
pub fn touches(script: &Script, i: usize) -> Vec<Touch> {
    let call = &script.calls[i];
    let mut out: Vec<Touch> = Vec::new();
    let mut add =
        |resource: &str, changes: bool| match out.iter_mut().find(|t| t.resource == resource) {
            Some(t) => t.changes |= changes,
            None => out.push(Touch {
                resource: resource.to_string(),
                changes,
            }),
        };
    let target = changes_target(call);
    let named: Vec<&str> = match (script.slot[i], call.op) {
        (Some(s), op) if op != Op::Open => vec![script.slot_path[s].as_str()],
        _ => [&call.path, &call.path2]
            .into_iter()
            .flatten()
            .map(String::as_str)
            .collect(),
    };
    for (n, &path) in named.iter().enumerate() {
        // The root itself (a directory sync of it) is the resource the changes of its
        // entries mark: the parent of a name at the top.
        let path = if path == ROOT { "" } else { path };
        let mut dir = parent(path);
        while !dir.is_empty() {
            add(dir, false);
            dir = parent(dir);
        }
        // A link's existing name is read, not changed; its new name is made.
        add(path, target && !(call.op == Op::Link && n == 0));
        if changes_parent(call) && !(call.op == Op::Link && n == 0) {
            add(parent(path), true);
        }
    }
    // The open file itself: its open makes it and its last close ends it, so a call on it
    // in another thread (a child that inherited the descriptor) waits for the open, and the
    // close waits for every such call since.
    if let Some(s) = script.slot[i] {
        let ends = call.op == Op::Close && !script.keeps_open.contains(&i);
        add(&slot_resource(s), call.op == Op::Open || ends);
    }
    // A clone reads its source: it waits for what changed the source before it.
    if let Some(&s) = script.source.get(&i) {
        add(&script.slot_path[s], false);
        add(&slot_resource(s), false);
    }
    out
}

/// The resource that stands for the replay's open file in slot `s`: no path can name it
/// (no file name holds a NUL).
fn slot_resource(s: usize) -> String {
    format!("\u{0}slot {s}")
}

/// Per call, the calls of other threads it waits for.
pub fn waits(script: &Script) -> Vec<Vec<Wait>> {
    let calls = script.calls;
    let mut pos = vec![0usize; calls.len()];
    for list in &script.by_thread {
        for (p, &i) in list.iter().enumerate() {
            pos[i] = p;
        }
    }
    #[derive(Default)]
    struct State {
        changed_by: Option<usize>,
        read_since: Vec<usize>,
    }
    let mut state: HashMap<String, State> = HashMap::new();
    let mut out = vec![Vec::new(); calls.len()];
    let mut last_of_thread: Vec<Option<usize>> = vec![None; script.by_thread.len()];
    let mut exits = Exits::new(script);
    let mut settled = Settled::new(script);
    for i in super::order::order(script) {
        let touched = touches(script, i);
        let mut before: Vec<usize> = exits.before(script, i);
        before.extend(settled.before(script, i));
        if is_barrier(&calls[i]) {
            before.extend(last_of_thread.iter().flatten());
        }
        if let Some(last) = last_of_thread.get_mut(calls[i].thread as usize) {
            *last = Some(i);
        }
        for t in &touched {
            if let Some(s) = state.get(&t.resource) {
                before.extend(s.changed_by);
                if t.changes {
                    before.extend(&s.read_since);
                }
            }
        }
        for t in touched {
            let s = state.entry(t.resource).or_default();
            if t.changes {
                s.changed_by = Some(i);
                s.read_since.clear();
            } else {
                s.read_since.push(i);
            }
        }
        out[i] = latest_per_thread(calls, &pos, calls[i].thread, before);
    }
    out
}

/// The ends of the recorded threads, as order: a process that had made its last call before
/// another thread's call began had ended by then as far as the trace can tell, and what came
/// after may have waited for it in ways the trace cannot see (a shell runs `git commit` once
/// `git clone` has exited; its `wait` is no file call). Resources alone let the commit start
/// while the clone still wrote: its first calls touch nothing the clone was still changing.
struct Exits {
    /// Each thread's last call and its recorded end, earliest end first.
    ends: Vec<(f64, usize)>,
    /// Per thread, how many of `ends` its calls so far started after.
    passed: Vec<usize>,
    /// Per call, whether `waits` has taken it (a wait may only point back in its order).
    taken: Vec<bool>,
}

impl Exits {
    fn new(script: &Script) -> Exits {
        let calls = script.calls;
        let mut ends: Vec<(f64, usize)> = script
            .by_thread
            .iter()
            .filter_map(|list| list.last())
            .map(|&i| (calls[i].start + calls[i].dur, i))
            .collect();
        ends.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        Exits {
            ends,
            passed: vec![0; script.by_thread.len()],
            taken: vec![false; calls.len()],
        }
    }

    /// The last calls of the threads that ended before call `i` started, not yet waited
    /// for by an earlier call of its thread (whose calls start in order, so one pass each).
    fn before(&mut self, script: &Script, i: usize) -> Vec<usize> {
        let call = &script.calls[i];
        let t = call.thread as usize;
        let mut out = Vec::new();
        while let Some(&(end, last)) = self.ends.get(self.passed[t]) {
            if end >= call.start {
                break;
            }
            self.passed[t] += 1;
            // A last call `order` put after this one cannot be waited for: it would wait
            // back, and a thread-order wait forward could close a cycle.
            if self.taken[last] {
                out.push(last);
            }
        }
        self.taken[i] = true;
        out
    }
}

/// How long before a call another thread's call must have ended, as recorded, for the call
/// to wait for it: the millisecond `pace::THINK_MIN` takes for a pause (below it strace's
/// own cost, calibrated away, is of the order of the gaps themselves, so the stamps of two
/// threads' calls that close cannot say which came first).
const THINK_MIN: f64 = 1e-3;

/// The calls of other threads that had ended at least [`THINK_MIN`] before a call started,
/// as recorded: order the recording shows clearly, kept where the trace cannot see why (a
/// pipe or a socket between the program's processes).
struct Settled {
    /// Every call, earliest recorded end first.
    by_end: Vec<usize>,
    /// How many of `by_end` have settled so far.
    next: usize,
    /// The settled calls in the order they settled: each thread takes the ones since its
    /// previous call (its own order covers what it waited for before).
    log: Vec<usize>,
    /// Per thread, how much of `log` its calls have taken.
    seen: Vec<usize>,
    /// Per call, whether `waits` has taken it (a wait may only point back in its order).
    taken: Vec<bool>,
}

impl Settled {
    fn new(script: &Script) -> Settled {
        let calls = script.calls;
        let mut by_end: Vec<usize> = (0..calls.len()).collect();
        by_end.sort_by(|&a, &b| end(&calls[a]).total_cmp(&end(&calls[b])).then(a.cmp(&b)));
        Settled {
            by_end,
            next: 0,
            log: Vec::new(),
            seen: vec![0; script.by_thread.len()],
            taken: vec![false; calls.len()],
        }
    }

    /// The calls of other threads that settled before call `i` and its thread has not
    /// waited for yet. A call `order` has not taken yet holds the others back until it is
    /// (it settles later, never out of its order).
    fn before(&mut self, script: &Script, i: usize) -> Vec<usize> {
        let calls = script.calls;
        let call = &calls[i];
        while let Some(&j) = self.by_end.get(self.next) {
            if end(&calls[j]) + THINK_MIN > call.start || !self.taken[j] {
                break;
            }
            self.log.push(j);
            self.next += 1;
        }
        self.taken[i] = true;
        let Some(seen) = self.seen.get_mut(call.thread as usize) else {
            return Vec::new();
        };
        let new = self.log[*seen..]
            .iter()
            .copied()
            .filter(|&j| calls[j].thread != call.thread)
            .collect();
        *seen = self.log.len();
        new
    }
}

/// When a call returned, on the trace's clock.
fn end(call: &Call) -> f64 {
    call.start + call.dur
}

/// The waits on other threads than `own`, only the latest call of each.
fn latest_per_thread(calls: &[Call], pos: &[usize], own: u32, before: Vec<usize>) -> Vec<Wait> {
    let mut latest: HashMap<u32, usize> = HashMap::new();
    for j in before {
        let t = calls[j].thread;
        if t != own {
            let p = latest.entry(t).or_insert(pos[j]);
            *p = (*p).max(pos[j]);
        }
    }
    let mut waits: Vec<Wait> = latest
        .into_iter()
        .map(|(thread, pos)| Wait { thread, pos })
        .collect();
    waits.sort();
    waits
}
