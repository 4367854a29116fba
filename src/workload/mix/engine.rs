//! The engine that runs a mix: one thread per worker, each owning every `threads`-th slot
//! of the working set and drawing its operations and files from its own seeded stream, so
//! the operation sequence of a worker is fixed by (seed, threads, worker) and no two
//! workers ever touch one file. Log appenders (if the mix has them) run beside the workers,
//! paced to the workers' operation count.
//!
//! Every operation is real system calls on the target; every read is checked, segment by
//! segment, against the xxh3 of what was written; every `stat` against the book's size.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rand_chacha::ChaCha8Rng;
use rustix::fs::{AtFlags, Mode, OFlags};
use xxhash_rust::xxh3::Xxh3Default;

use super::set::{FileState, Segment, WorkingSet};
use super::spec::{Fsync, MixSpec, Op, Stop};
use crate::dataset::{draw, fill_content, seed::workload_rng, DatasetSpec};
use crate::fsops::{LatencyLog, Totals};
use crate::workload::error::WorkloadError;

/// The seed purpose of worker `i`'s stream is this plus `i`.
const WORKER_SALT: u64 = 0x313C_5E70_0001_0000;

/// Draws of an operation before one with nothing to act on is substituted.
const REDRAWS: u32 = 64;

/// What the workers did, summed.
#[derive(Debug, Default)]
pub struct Tally {
    /// Latencies per operation, indexed like [`Op::ALL`].
    pub ops: [LatencyLog; 6],
    pub log_appends: LatencyLog,
    /// The `fsync = "end"` flushes.
    pub final_fsyncs: LatencyLog,
    /// Every fsync the workers made, whatever the policy that asked for it.
    pub fsyncs: u64,
    /// Draws discarded because the operation had nothing to act on.
    pub redrawn: u64,
    /// Operations that still could not run as drawn after [`REDRAWS`] tries (a create with
    /// no free slot became a rewrite; an operation on a file with none held, a create).
    pub substituted: u64,
    pub read_bytes: u64,
    pub written_bytes: u64,
    /// Operation and slot, in order, when tracing.
    pub trace: Vec<(Op, usize)>,
}

impl Totals for Tally {
    fn add(&mut self, o: Tally) {
        for (a, b) in self.ops.iter_mut().zip(o.ops) {
            a.add(b);
        }
        self.log_appends.add(o.log_appends);
        self.final_fsyncs.add(o.final_fsyncs);
        self.fsyncs += o.fsyncs;
        self.substituted += o.substituted;
        self.redrawn += o.redrawn;
        self.read_bytes += o.read_bytes;
        self.written_bytes += o.written_bytes;
        self.trace.extend(o.trace);
    }
}

/// Everything the workers share.
pub struct Shared<'a> {
    pub root: &'a OwnedFd,
    pub spec: &'a MixSpec,
    pub data: &'a DatasetSpec,
    pub set: &'a WorkingSet,
    /// Returns an error once the run is cancelled or past its deadline.
    pub check: &'a (dyn Fn() -> Result<(), WorkloadError> + Sync),
    /// Record every worker's (operation, slot) sequence.
    pub trace: bool,
}

/// One worker (or appender): its slots, its stream, its buffer and its counts.
struct Worker<'a> {
    sh: &'a Shared<'a>,
    rng: ChaCha8Rng,
    /// (global slot, state) of the slots it owns.
    slots: Vec<(usize, Option<FileState>)>,
    /// Indices into `slots` that hold a file / do not; `pos[i]` is slot i's place in one.
    used: Vec<usize>,
    free: Vec<usize>,
    pos: Vec<usize>,
    /// Slots written since their last fsync (`fsync = "end"`).
    dirty: std::collections::BTreeSet<usize>,
    buf: Vec<u8>,
    tally: Tally,
}

impl<'a> Worker<'a> {
    fn new(sh: &'a Shared<'a>, salt: u64, slots: Vec<(usize, Option<FileState>)>) -> Self {
        let mut w = Worker {
            sh,
            rng: workload_rng(sh.data.seed, salt),
            used: Vec::new(),
            free: Vec::new(),
            pos: vec![0; slots.len()],
            slots,
            dirty: Default::default(),
            buf: vec![0u8; sh.spec.io_size],
            tally: Tally::default(),
        };
        for i in 0..w.slots.len() {
            let list = if w.slots[i].1.is_some() {
                &mut w.used
            } else {
                &mut w.free
            };
            w.pos[i] = list.len();
            list.push(i);
        }
        w
    }

    /// Moves local slot `i` between the held and free lists.
    fn mark(&mut self, i: usize, held: bool) {
        let (from, to) = if held {
            (&mut self.free, &mut self.used)
        } else {
            (&mut self.used, &mut self.free)
        };
        let at = self.pos[i];
        from.swap_remove(at);
        if let Some(&moved) = from.get(at) {
            self.pos[moved] = at;
        }
        self.pos[i] = to.len();
        to.push(i);
    }

    /// Draws the next operation and its slot. An operation with nothing to act on (a
    /// create with every slot held, a read with none) is drawn again, as Filebench retries
    /// a flowop that finds no file; after [`REDRAWS`] tries it is substituted.
    fn next(&mut self) -> (Op, usize) {
        let total: u64 = self.sh.spec.weights.iter().map(|w| w.1).sum();
        let mut op = self.sh.spec.weights[0].0;
        for attempt in 0..REDRAWS {
            let mut x = draw::below(&mut self.rng, total);
            for &(o, w) in &self.sh.spec.weights {
                if x < w {
                    op = o;
                    break;
                }
                x -= w;
            }
            let possible = if op == Op::Create {
                !self.free.is_empty()
            } else {
                !self.used.is_empty()
            };
            if possible {
                break;
            }
            if attempt + 1 < REDRAWS {
                self.tally.redrawn += 1;
            }
        }
        let op = match op {
            Op::Create if self.free.is_empty() => {
                self.tally.substituted += 1;
                Op::Write
            }
            Op::Create => Op::Create,
            _ if self.used.is_empty() => {
                self.tally.substituted += 1;
                Op::Create
            }
            other => other,
        };
        let list = if op == Op::Create {
            &self.free
        } else {
            &self.used
        };
        let i = list[draw::below(&mut self.rng, list.len() as u64) as usize];
        (op, i)
    }

    fn path(&self, i: usize) -> &'a str {
        &self.sh.set.paths[self.slots[i].0]
    }

    fn io_err(&self, what: &str, i: usize, e: impl Into<std::io::Error>) -> WorkloadError {
        WorkloadError::io(format!("{what} {}", self.path(i)), e.into())
    }

    fn open(&self, i: usize, flags: OFlags) -> Result<File, WorkloadError> {
        rustix::fs::openat(
            self.sh.root,
            self.path(i),
            flags | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )
        .map(File::from)
        .map_err(|e| self.io_err("open", i, e))
    }

    /// Runs operation `op` on local slot `i`.
    fn run(&mut self, op: Op, i: usize) -> Result<(), WorkloadError> {
        if self.sh.trace {
            self.tally.trace.push((op, self.slots[i].0));
        }
        match op {
            Op::Create | Op::Write => {
                let flags = if op == Op::Create {
                    OFlags::CREATE | OFlags::EXCL
                } else {
                    OFlags::TRUNC
                };
                let generation = self.slots[i].1.as_ref().map_or(0, |s| s.generation + 1);
                let size = self.sh.spec.file_size.draw(&mut self.rng);
                let mut f = self.open(i, flags | OFlags::WRONLY)?;
                let mut state = FileState {
                    generation,
                    size: 0,
                    segments: Vec::new(),
                };
                self.write(&mut f, i, &mut state, size)?;
                self.slots[i].1 = Some(state);
                if op == Op::Create {
                    self.mark(i, true);
                }
            }
            Op::Append => {
                let size = self.sh.spec.append_size.draw(&mut self.rng);
                self.append(i, size)?;
            }
            Op::Read => self.read(i)?,
            Op::Stat => {
                let st = rustix::fs::statat(self.sh.root, self.path(i), AtFlags::empty())
                    .map_err(|e| self.io_err("stat", i, e))?;
                let want = self.slots[i].1.as_ref().map_or(0, |s| s.size);
                if st.st_size as u64 != want {
                    return Err(WorkloadError::Verify(format!(
                        "stat {}: size {} where {want} bytes were written",
                        self.path(i),
                        st.st_size
                    )));
                }
            }
            Op::Delete => {
                rustix::fs::unlinkat(self.sh.root, self.path(i), AtFlags::empty())
                    .map_err(|e| self.io_err("unlink", i, e))?;
                self.slots[i].1 = None;
                self.dirty.remove(&i);
                self.mark(i, false);
            }
        }
        Ok(())
    }

    /// Appends `size` bytes to the file in local slot `i` (held).
    fn append(&mut self, i: usize, size: u64) -> Result<(), WorkloadError> {
        let mut f = self.open(i, OFlags::WRONLY | OFlags::APPEND)?;
        let mut state = self.slots[i].1.take().unwrap_or(FileState {
            generation: 0,
            size: 0,
            segments: Vec::new(),
        });
        let r = self.write(&mut f, i, &mut state, size);
        self.slots[i].1 = Some(state);
        r
    }

    /// Writes the next `len` bytes of the slot's stream at the end of `f`, as one segment,
    /// with the mix's fsync policy; then closes `f`.
    fn write(
        &mut self,
        f: &mut File,
        i: usize,
        state: &mut FileState,
        len: u64,
    ) -> Result<(), WorkloadError> {
        let content = self.sh.set.content(self.slots[i].0, state.generation);
        let fsync = self.sh.spec.fsync;
        let mut h = Xxh3Default::new();
        let (mut off, end) = (state.size, state.size + len);
        while off < end {
            let n = (self.buf.len() as u64).min(end - off) as usize;
            fill_content(self.sh.data, content, off, &mut self.buf[..n]);
            h.update(&self.buf[..n]);
            f.write_all(&self.buf[..n])
                .map_err(|e| self.io_err("write", i, e))?;
            if fsync == Fsync::EachWrite {
                self.fsync(f, i)?;
            }
            off += n as u64;
        }
        state.size = end;
        state.segments.push(Segment {
            len,
            hash: h.digest(),
        });
        self.tally.written_bytes += len;
        match fsync {
            Fsync::EachFile => self.fsync(f, i)?,
            Fsync::End => {
                self.dirty.insert(i);
            }
            _ => {}
        }
        Ok(())
    }

    /// Reads the file in local slot `i` whole, checking each written segment's xxh3 and
    /// that the file ends exactly where the book says.
    fn read(&mut self, i: usize) -> Result<(), WorkloadError> {
        let mut f = self.open(i, OFlags::RDONLY)?;
        let segs: &[Segment] = self.slots[i].1.as_ref().map_or(&[], |s| &s.segments);
        let (mut seg, mut total) = (0usize, 0u64);
        let mut left = segs.first().map_or(0, |s| s.len);
        let mut h = Xxh3Default::new();
        let bad = |why: String| {
            WorkloadError::Verify(format!(
                "read {}: {why}",
                self.sh.set.paths[self.slots[i].0]
            ))
        };
        loop {
            let n = f.read(&mut self.buf).map_err(|e| {
                WorkloadError::io(format!("read {}", self.sh.set.paths[self.slots[i].0]), e)
            })?;
            if n == 0 {
                break;
            }
            total += n as u64;
            let mut chunk = &self.buf[..n];
            while !chunk.is_empty() {
                if seg >= segs.len() {
                    return Err(bad(format!("more than the {total} bytes written")));
                }
                let take = (left as usize).min(chunk.len());
                h.update(&chunk[..take]);
                chunk = &chunk[take..];
                left -= take as u64;
                if left == 0 {
                    if h.digest() != segs[seg].hash {
                        return Err(bad(format!(
                            "bytes of write {} of {} differ from what was written",
                            seg + 1,
                            segs.len()
                        )));
                    }
                    h.reset();
                    seg += 1;
                    left = segs.get(seg).map_or(0, |s| s.len);
                }
            }
        }
        if seg != segs.len() {
            return Err(bad(format!(
                "ends after {total} bytes, short of what was written"
            )));
        }
        self.tally.read_bytes += total;
        Ok(())
    }

    /// fsync of the file in local slot `i`, counted.
    fn fsync(&mut self, f: &File, i: usize) -> Result<(), WorkloadError> {
        f.sync_all().map_err(|e| self.io_err("fsync", i, e))?;
        self.tally.fsyncs += 1;
        Ok(())
    }

    /// `fsync = "end"`: flushes every file still holding unsynced writes.
    fn flush_dirty(&mut self) -> Result<(), WorkloadError> {
        for i in std::mem::take(&mut self.dirty) {
            let f = self.open(i, OFlags::RDONLY)?;
            let t0 = Instant::now();
            self.fsync(&f, i)?;
            self.tally
                .final_fsyncs
                .0
                .push(t0.elapsed().as_nanos() as u64);
        }
        Ok(())
    }

    /// Runs one timed operation.
    fn step(&mut self) -> Result<(), WorkloadError> {
        let (op, i) = self.next();
        let t0 = Instant::now();
        self.run(op, i)?;
        self.tally.ops[op as usize]
            .0
            .push(t0.elapsed().as_nanos() as u64);
        Ok(())
    }
}

/// The workers' progress, which the appenders pace their logs by.
struct Progress {
    /// Operations the workers have done (counted only when there are appenders to read it).
    worker_ops: AtomicU64,
    /// Workers still running: an appender stops once this reads 0 and its count is met.
    running: AtomicUsize,
    counting: bool,
}

impl Worker<'_> {
    /// Worker `w`'s share of the mix: steps until its quota of `threads`' operations or
    /// the deadline, then fsyncs what it left dirty. Polls for a cancel every 64 steps.
    fn work_share(
        &mut self,
        threads: usize,
        w: usize,
        deadline: Option<Instant>,
        progress: &Progress,
    ) -> Result<(), WorkloadError> {
        let sh = self.sh;
        let mut done = 0u64;
        loop {
            match sh.spec.stop {
                Stop::Ops(n) if done >= quota(n, threads, w) => break,
                Stop::Time(_) if deadline.is_some_and(|d| Instant::now() >= d) => break,
                _ => {}
            }
            if done % 64 == 0 {
                (sh.check)()?;
            }
            self.step()?;
            done += 1;
            if progress.counting {
                progress.worker_ops.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.flush_dirty()
    }

    /// An appender's loop: keeps its log at `log.per_op` appends per worker operation
    /// (shared among `appenders`), so a log grows with the work it records, until every
    /// worker has stopped and the last of their operations is matched.
    fn keep_log(&mut self, appenders: f64, progress: &Progress) -> Result<(), WorkloadError> {
        let sh = self.sh;
        let log = sh.spec.log.as_ref().map_or(0.0, |l| l.per_op);
        let mut done = 0u64;
        loop {
            // `running` first: once it reads 0, every worker's count is in.
            let still = progress.running.load(Ordering::Acquire) > 0;
            let ops = progress.worker_ops.load(Ordering::Relaxed);
            if (done as f64) < (log * ops as f64 / appenders).floor() {
                let size = sh
                    .spec
                    .log
                    .as_ref()
                    .map_or(1, |l| l.append_size.draw(&mut self.rng));
                let t0 = Instant::now();
                self.append(0, size)?;
                self.tally
                    .log_appends
                    .0
                    .push(t0.elapsed().as_nanos() as u64);
                done += 1;
                continue;
            }
            if !still {
                break;
            }
            (sh.check)()?;
            std::thread::sleep(Duration::from_micros(50));
        }
        Ok(())
    }
}

/// Operations worker `w` of `threads` does when the mix stops after `n` in all.
fn quota(n: u64, threads: usize, w: usize) -> u64 {
    let t = threads as u64;
    n / t + u64::from((w as u64) < n % t)
}

/// Runs the mix with `threads` workers (plus the mix's appenders) over `states` (the book,
/// updated in place). The caller times the call.
pub fn run(
    sh: &Shared,
    threads: usize,
    states: &mut [Option<FileState>],
) -> Result<Tally, WorkloadError> {
    let files = sh.set.files;
    let mut owned: Vec<Vec<(usize, Option<FileState>)>> = vec![Vec::new(); threads];
    for (slot, s) in states[..files].iter_mut().enumerate() {
        owned[slot % threads].push((slot, s.take()));
    }
    let logs: Vec<(usize, Option<FileState>)> = (files..states.len())
        .map(|slot| (slot, states[slot].take()))
        .collect();
    let progress = Progress {
        worker_ops: AtomicU64::new(0),
        running: AtomicUsize::new(threads),
        counting: !logs.is_empty(),
    };
    let deadline = match sh.spec.stop {
        Stop::Time(d) => Some(Instant::now() + d),
        Stop::Ops(_) => None,
    };
    let results: Vec<Result<Worker, WorkloadError>> = std::thread::scope(|s| {
        let mut handles = Vec::new();
        let progress = &progress;
        for (w, slots) in owned.into_iter().enumerate() {
            handles.push(s.spawn(move || {
                let mut worker = Worker::new(sh, WORKER_SALT + w as u64, slots);
                let r = worker.work_share(threads, w, deadline, progress);
                progress.running.fetch_sub(1, Ordering::Release);
                r.map(|()| worker)
            }));
        }
        let appenders = logs.len().max(1) as f64;
        for (a, slot) in logs.into_iter().enumerate() {
            handles.push(s.spawn(move || {
                let mut worker = Worker::new(sh, WORKER_SALT + (1 << 20) + a as u64, vec![slot]);
                worker.keep_log(appenders, progress)?;
                worker.flush_dirty()?;
                Ok(worker)
            }));
        }
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(WorkloadError::Tool("a mix worker thread panicked".into()))
                })
            })
            .collect()
    });
    let mut tally = Tally::default();
    for r in results {
        let w = r?;
        for (slot, s) in w.slots {
            states[slot] = s;
        }
        tally.add(w.tally);
    }
    Ok(tally)
}

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
