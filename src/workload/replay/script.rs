//! What each recorded call acts on, worked out once before the measured phase: the
//! recorded threads' call lists, and for every call that names a descriptor, which of the
//! trace's opens made it (its *slot*: the replay keeps its own file there).
//!
//! Descriptor numbers belong to a process, and the trace numbers threads, not processes:
//! a thread's own open of a number wins; failing that, the most recent open of that number
//! by any thread still open (a child, or another thread of the process, using a descriptor
//! it did not open). A `dup` makes its new number another name of the same slot, as the
//! kernel makes it another name of the same open file (offset shared): `dd of=F` writes to
//! descriptor 1 after `dup2(3, 1)`. Closing one of several names of a slot closes nothing
//! in the replay; the last name's close closes it.
//!
//! A thread that uses a number it neither opened nor dup'ed onto got it from another thread:
//! a child forked after the open (`dpkg-deb`'s `tar` reads the package its parent opened,
//! and goes on reading after the parent closed its own copy), or another thread of the same
//! process. It becomes an heir of that slot: the parent's close leaves the slot open for it,
//! and the number goes on naming the slot in that thread until it closes it or another open
//! takes the number. The trace numbers threads, not processes, so an heir's number is looked
//! up after the thread's own and the latest open's: a thread of one process that reuses a
//! number another thread closed and opened again reaches the new file, as the kernel's shared
//! table would. A descriptor no recorded open made (stdin, a pipe) cannot be replayed: those
//! calls are counted by kind and said, never issued.

use std::collections::{BTreeSet, HashMap, HashSet};

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
    /// Closes of one of several names of a slot (a `dup`'s or the original): the slot
    /// stays open for the other names, so the replay issues nothing for them.
    pub keeps_open: HashSet<usize>,
    /// Per clone (by call index), the slot its source descriptor resolves to; a clone whose
    /// source no recorded open made is skipped.
    pub source: HashMap<usize, usize>,
    /// The program's user CPU seconds, from the trace's header (`user_cpu_s`): how much
    /// computing a `think` replay gives back between the calls (`super::pace`).
    pub user_cpu_s: Option<f64>,
}

#[cfg(test)]
impl<'t> Script<'t> {
    /// A script of `calls` made by the threads `by_thread` lists, on no descriptor: what the
    /// pacing and ordering tests need, without a trace to build it from.
    pub fn of_threads(calls: &'t [Call], by_thread: Vec<Vec<usize>>) -> Script<'t> {
        Script {
            calls,
            slot: vec![None; calls.len()],
            slot_path: vec![],
            by_thread,
            skipped: vec![],
            keeps_open: HashSet::new(),
            source: HashMap::new(),
            user_cpu_s: None,
        }
    }
}

/// The system calls that copy from one file to another inside the kernel.
const COPY_CALLS: [&str; 3] = ["copy_file_range", "sendfile", "sendfile64"];

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
        | Op::Lock
        | Op::Seek
        | Op::Clone
        | Op::MapRead
        | Op::Dup => true,
        Op::Stat | Op::Truncate | Op::Setxattr | Op::Getxattr | Op::Removexattr | Op::Setattr => {
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
    let mut tables = Tables {
        own: vec![HashMap::new(); threads],
        latest: HashMap::new(),
        inherited: vec![HashMap::new(); threads],
        names: Vec::new(),
        heirs: Vec::new(),
    };
    let mut slot = Vec::with_capacity(trace.calls.len());
    let mut slot_path = Vec::new();
    let mut skipped = Vec::new();
    let mut keeps_open = HashSet::new();
    let mut source = HashMap::new();
    for (i, call) in trace.calls.iter().enumerate() {
        let t = call.thread as usize;
        by_thread[t].push(i);
        let resolved = match (call.op, call.ret, &call.path) {
            (Op::Open, Some(fd), Some(path)) => {
                let s = slot_path.len();
                slot_path.push(path.clone());
                tables.names.push(BTreeSet::new());
                tables.heirs.push(BTreeSet::new());
                tables.bind(t, fd as i32, s);
                Some(s)
            }
            _ if on_descriptor(call) => {
                let found = call.fd.and_then(|fd| tables.find(t, fd));
                let from = call.source.as_ref().map(|s| tables.find(t, s.fd));
                if let Some(Some(from)) = from {
                    source.insert(i, from);
                }
                if found.is_none() || from == Some(None) {
                    skipped.push(i);
                }
                found
            }
            _ => None,
        };
        match (call.op, resolved, call.fd, call.ret) {
            (Op::Dup, Some(s), _, Some(new)) => tables.bind(t, new as i32, s),
            (Op::Close, Some(s), Some(fd), Some(_)) => {
                let named_elsewhere = tables.close(t, fd, s);
                if named_elsewhere {
                    keeps_open.insert(i);
                }
            }
            _ => {}
        }
        slot.push(resolved);
    }
    Script {
        calls: &trace.calls,
        slot,
        slot_path,
        by_thread,
        skipped,
        keeps_open,
        source,
        user_cpu_s: trace.header.user_cpu_s,
    }
}

/// The copies between two files (`copy_file_range`, `sendfile`), which the trace holds as
/// a read of one descriptor and, next in its thread, the write of the same call (same
/// start) to another: each pair's read index mapped to its write's. The replay issues the
/// call once for the pair, so a file system that copies by sharing extents (a reflink on
/// xfs or btrfs) does so, as it did for the program. Both halves must be on descriptors a
/// recorded open made; a copy with a pipe end holds one half only and stays a plain read or
/// write.
pub fn copies(script: &Script) -> HashMap<usize, usize> {
    let calls = script.calls;
    let half = |i: usize, op: Op| {
        let c = &calls[i];
        c.op == op && script.slot[i].is_some() && COPY_CALLS.contains(&c.syscall.as_str())
    };
    script
        .by_thread
        .iter()
        .flat_map(|own| own.windows(2))
        .filter(|w| half(w[0], Op::Read) && half(w[1], Op::Write))
        .filter(|w| {
            let (r, w) = (&calls[w[0]], &calls[w[1]]);
            r.syscall == w.syscall && r.start == w.start
        })
        .map(|w| (w[0], w[1]))
        .collect()
}

/// Which slot each descriptor number names: per thread, the latest of any thread, and per
/// thread what it inherited; per slot, the numbers that name it and the heirs that hold it.
struct Tables {
    own: Vec<HashMap<i32, usize>>,
    latest: HashMap<i32, usize>,
    inherited: Vec<HashMap<i32, usize>>,
    names: Vec<BTreeSet<i32>>,
    heirs: Vec<BTreeSet<(usize, i32)>>,
}

impl Tables {
    /// The slot `fd` names in thread `t`; a number found through another thread's open makes
    /// `t` an heir of it.
    fn find(&mut self, t: usize, fd: i32) -> Option<usize> {
        if let Some(&s) = self.own[t].get(&fd) {
            return Some(s);
        }
        if let Some(&s) = self.latest.get(&fd) {
            if self.inherited[t].insert(fd, s) != Some(s) {
                self.heirs[s].insert((t, fd));
            }
            return Some(s);
        }
        self.inherited[t].get(&fd).copied()
    }

    /// `fd` of thread `t` names slot `s` from now on (an open, or a dup onto it: a number a
    /// dup2 reuses stops naming what it named, and what the thread inherited under it).
    fn bind(&mut self, t: usize, fd: i32, s: usize) {
        if let Some(before) = self.own[t].insert(fd, s) {
            self.names[before].remove(&fd);
        }
        if let Some(before) = self.inherited[t].remove(&fd) {
            self.heirs[before].remove(&(t, fd));
        }
        self.latest.insert(fd, s);
        self.names[s].insert(fd);
    }

    /// Thread `t` closes `fd`, naming slot `s`; true when another number or an heir still
    /// holds `s`.
    fn close(&mut self, t: usize, fd: i32, s: usize) -> bool {
        if self.own[t].get(&fd) != Some(&s) && self.heirs[s].remove(&(t, fd)) {
            // An heir closing its copy: the others' names stay.
            self.inherited[t].remove(&fd);
        } else {
            for table in self.own.iter_mut().chain(std::iter::once(&mut self.latest)) {
                if table.get(&fd) == Some(&s) {
                    table.remove(&fd);
                }
            }
            self.names[s].remove(&fd);
            if self.heirs[s].remove(&(t, fd)) {
                self.inherited[t].remove(&fd);
            }
        }
        !self.names[s].is_empty() || !self.heirs[s].is_empty()
    }
}
