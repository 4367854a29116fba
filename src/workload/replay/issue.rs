//! The measured phase: every recorded thread on its own OS thread, its calls in its own
//! order, each call first waiting for the calls of other threads it depends on
//! ([`super::deps`]) and, with `timing = "original"`, for its anchor and the recorded think
//! time after it ([`super::pace`]). Only the call itself is timed; what each returned is kept
//! for the check.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use super::call::{Aligned, Returned, Target};
use super::deps::Wait;
use super::options::Timing;
use super::pace::{self, Anchor};
use super::progress::Progress;
use super::script::Script;
use crate::trace::format::Op;
use crate::workload::ctx::Ctx;
use crate::workload::error::WorkloadError;

/// What one recorded thread's calls returned and took, in its own order.
#[derive(Debug, Default)]
pub struct ThreadLog {
    /// (call index in the trace, what it returned, nanoseconds); a skipped call has none.
    pub calls: Vec<(usize, Option<Returned>, u64)>,
}

/// Halts the phase when dropped before the thread finished its calls.
struct HaltUnlessDone<'a>(&'a Progress, bool);

impl Drop for HaltUnlessDone<'_> {
    fn drop(&mut self) {
        if !self.1 {
            self.0.halt();
        }
    }
}

/// Replays `script` on `target`: one log per recorded thread, and the phase's seconds.
pub fn replay(
    ctx: &Ctx,
    target: &Target,
    script: &Script,
    waits: &[Vec<Wait>],
    timing: Timing,
) -> Result<(Vec<ThreadLog>, f64), WorkloadError> {
    let threads = script.by_thread.len();
    let progress = Progress::new(threads);
    let skipped: std::collections::HashSet<usize> = script.skipped.iter().copied().collect();
    let copies = &super::script::copies(script);
    let anchors = pace::kept(script, timing);
    let ends: Vec<AtomicU64> = (0..script.calls.len()).map(|_| AtomicU64::new(0)).collect();
    let (anchors, ends) = (&anchors, &ends);
    let start = Barrier::new(threads + 1);
    // The phase's start, set before the barrier opens: the recorded starts count from it
    // and so do the phase's seconds, so `timing = "original"` lasts at least the trace.
    let began = std::sync::OnceLock::new();
    let began = &began;
    let (progress, start, skipped) = (&progress, &start, &skipped);
    let (logs, seconds) = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    start.wait();
                    let t0 = began.get().copied().unwrap_or_else(Instant::now);
                    let run = Thread {
                        ctx,
                        target,
                        script,
                        waits,
                        anchors,
                        timing,
                        ends,
                        progress,
                        skipped,
                        copies,
                    };
                    // Whatever ends this thread early (an error, a panic) frees its waiters.
                    let mut halt = HaltUnlessDone(progress, false);
                    let log = run.calls(t, t0);
                    halt.1 = log.is_ok();
                    log
                })
            })
            .collect();
        let t0 = *began.get_or_init(Instant::now);
        start.wait();
        let logs: Vec<_> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|p| Err(WorkloadError::from_panic("a replay thread", p)))
            })
            .collect();
        (logs, t0.elapsed().as_secs_f64())
    });
    let logs = logs.into_iter().collect::<Result<Vec<_>, _>>()?;
    Ok((logs, seconds))
}

/// One replaying thread's view of the phase.
struct Thread<'a> {
    ctx: &'a Ctx<'a>,
    target: &'a Target,
    script: &'a Script<'a>,
    waits: &'a [Vec<Wait>],
    /// Per call, where its pause counts from (`pace::kept`); empty under `timing = "fast"`.
    anchors: &'a [Option<Anchor>],
    /// Under `original` a call with no anchor waits for its recorded start; under `think`
    /// it does not wait.
    timing: Timing,
    /// Per call, nanoseconds from the phase's start to its end in this replay (0: not yet).
    ends: &'a [AtomicU64],
    progress: &'a Progress,
    skipped: &'a std::collections::HashSet<usize>,
    /// The copies between two files, by their read half's index (`script::copies`).
    copies: &'a HashMap<usize, usize>,
}

impl Thread<'_> {
    /// Issues recorded thread `t`'s calls in order.
    fn calls(&self, t: usize, t0: Instant) -> Result<ThreadLog, WorkloadError> {
        let mut log = ThreadLog::default();
        let mut buf = Aligned::default();
        // A copy's write half, and what the copy issued at its read half returned.
        let mut copied: Option<(usize, Returned)> = None;
        for (n, &i) in self.script.by_thread[t].iter().enumerate() {
            if n % 64 == 0 {
                self.ctx.check()?;
            }
            let anchor = self.anchors.get(i).copied().flatten();
            let after: &[Wait] = match &anchor {
                Some(a) => std::slice::from_ref(&a.wait),
                None => &[],
            };
            let give_up = || self.ctx.check().is_err();
            // A copy is issued at its read half, once its write half's waits are met too.
            let partner: &[Wait] = match self.copies.get(&i) {
                Some(&j) => &self.waits[j],
                None => &[],
            };
            if !(self.progress.wait_for(&self.waits[i], give_up)
                && self.progress.wait_for(partner, give_up)
                && self.progress.wait_for(after, give_up))
            {
                return Err(self.ctx.check().err().unwrap_or(WorkloadError::Interrupted));
            }
            let call = &self.script.calls[i];
            if !self.anchors.is_empty() {
                // The trace's times are bounded when it is read (`trace::bounds`), so these
                // durations exist; the wait itself ends with the run's stop or deadline.
                let due = match anchor {
                    Some(a) => {
                        let ended = self.ends[a.call].load(Ordering::SeqCst);
                        Some(t0 + Duration::from_nanos(ended) + Duration::from_secs_f64(a.think))
                    }
                    None if self.timing == Timing::Original => {
                        Some(t0 + Duration::from_secs_f64(call.start))
                    }
                    None => None,
                };
                if due.is_some_and(|due| !pace::until(due, give_up)) {
                    return Err(self.ctx.check().err().unwrap_or(WorkloadError::Interrupted));
                }
            }
            let (r, ns) = self.issue(i, &mut buf, &mut copied);
            log.calls.push((i, r, ns));
            self.ends[i].store(t0.elapsed().as_nanos() as u64, Ordering::SeqCst);
            self.progress.advance(t);
        }
        Ok(log)
    }

    /// Issues call `i`: what it returned (`None`: skipped) and the nanoseconds it took. A
    /// copy's read half issues the whole copy and leaves its result in `copied` for the
    /// write half, which issues nothing and takes no time of its own.
    fn issue(
        &self,
        i: usize,
        buf: &mut Aligned,
        copied: &mut Option<(usize, Returned)>,
    ) -> (Option<Returned>, u64) {
        let call = &self.script.calls[i];
        let slot = self.script.slot[i];
        if self.skipped.contains(&i) {
            return (None, 0);
        }
        if self.script.keeps_open.contains(&i) {
            // One of several names of a file closed: the kernel does no I/O for it.
            return (Some(Ok(0)), 0);
        }
        if let Some((_, r)) = copied.take_if(|(j, _)| *j == i) {
            return (Some(r), 0);
        }
        if let Some(&j) = self
            .copies
            .get(&i)
            .filter(|_| self.target.clones.made_here(i))
        {
            // The program's copy after its clone failed; the clone succeeded here.
            let recorded = |c: &crate::trace::format::Call| Ok(c.ret.unwrap_or(0));
            *copied = Some((j, recorded(&self.script.calls[j])));
            return (Some(recorded(call)), 0);
        }
        let c0 = Instant::now();
        let r = match (self.copies.get(&i), slot) {
            (Some(&j), Some(from)) => {
                let to = self.script.slot[j].unwrap_or(usize::MAX);
                let r = self.target.copy(call, from, &self.script.calls[j], to);
                *copied = Some((j, r));
                r
            }
            _ if call.op == Op::Clone => {
                let from = self.script.source.get(&i).copied();
                self.target.clone_file(i, call, from, slot)
            }
            _ => self.target.issue(call, slot, buf),
        };
        (Some(r), c0.elapsed().as_nanos() as u64)
    }
}
