//! What each recorded call acts on, worked out once before the measured phase: the
//! recorded threads' call lists, and for every call that names a descriptor, which of the
//! trace's opens made it (its *slot*: the replay keeps its own file there).
//!
//! Descriptor numbers belong to a process, and the trace numbers threads, not processes:
//! a thread's own open of a number wins; failing that, the most recent open of that number
//! by any thread still open (a child, or another thread of the process, using a descriptor
//! it did not open). A descriptor no recorded open made (stdin, a `dup`) cannot be
//! replayed: those calls are counted and said, never issued.

use std::collections::HashMap;

use crate::trace::format::{Call, Op, Trace};

/// The trace's calls with their descriptors resolved.
pub struct Script<'t> {
    pub calls: &'t [Call],
    /// Per call, the slot its descriptor resolves to (an open's own new slot); `None` for a
    /// call on no descriptor, or on one no recorded open made.
    pub slot: Vec<Option<usize>>,
    /// Per slot, the path it was opened at.
    pub slot_path: Vec<String>,
    /// Per recorded thread, its calls' indices in the order it made them.
    pub by_thread: Vec<Vec<usize>>,
    /// Calls on descriptors no recorded open made: left out of the replay.
    pub skipped: Vec<usize>,
}

/// Whether `call` acts on a descriptor rather than a path.
pub fn on_descriptor(call: &Call) -> bool {
    match call.op {
        Op::Close
        | Op::Read
        | Op::Write
        | Op::Fsync
        | Op::Fdatasync
        | Op::SyncFileRange
        | Op::Getdents
        | Op::Fallocate
        | Op::Syncfs
        | Op::Lock => true,
        Op::Stat | Op::Truncate | Op::Setxattr | Op::Getxattr | Op::Removexattr => {
            call.path.is_none() && call.fd.is_some()
        }
        _ => false,
    }
}

/// Whether an open's flags name `flag` (`O_CREAT`, …).
pub fn has_flag(call: &Call, flag: &str) -> bool {
    call.flags.iter().any(|f| f == flag)
}

/// Resolves every descriptor of `trace` to the open that made it.
pub fn resolve(trace: &Trace) -> Script<'_> {
    let threads = trace.header.threads as usize;
    let mut by_thread = vec![Vec::new(); threads];
    let mut own: Vec<HashMap<i32, usize>> = vec![HashMap::new(); threads];
    let mut latest: HashMap<i32, usize> = HashMap::new();
    let mut slot = Vec::with_capacity(trace.calls.len());
    let mut slot_path = Vec::new();
    let mut skipped = Vec::new();
    for (i, call) in trace.calls.iter().enumerate() {
        let t = call.thread as usize;
        by_thread[t].push(i);
        let resolved = match (call.op, call.ret, &call.path) {
            (Op::Open, Some(fd), Some(path)) => {
                let s = slot_path.len();
                slot_path.push(path.clone());
                let fd = fd as i32;
                own[t].insert(fd, s);
                latest.insert(fd, s);
                Some(s)
            }
            _ if on_descriptor(call) => {
                let found = call
                    .fd
                    .and_then(|fd| own[t].get(&fd).or_else(|| latest.get(&fd)).copied());
                if found.is_none() {
                    skipped.push(i);
                }
                found
            }
            _ => None,
        };
        if let (Op::Close, Some(s), Some(fd), Some(_)) = (call.op, resolved, call.fd, call.ret) {
            for table in own.iter_mut().chain(std::iter::once(&mut latest)) {
                if table.get(&fd) == Some(&s) {
                    table.remove(&fd);
                }
            }
        }
        slot.push(resolved);
    }
    Script {
        calls: &trace.calls,
        slot,
        slot_path,
        by_thread,
        skipped,
    }
}
