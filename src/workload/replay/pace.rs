//! `timing = "original"`: the program's own pauses kept, the file system's time its own.
//! Issuing each call at its recorded start would replay the recording file system's call
//! times too (a create that took 300 µs on the recording disk would pace a tmpfs replay),
//! so each call is paced from its *anchor* instead: the recorded call, of any thread, that
//! ended last before it started (for a single thread, its previous call; for a shell's next
//! command, the last call of the one before). The call is issued once its anchor has
//! completed in the replay and the recorded pause between them, the think time, has passed
//! since. Anchors point back in recorded start order, as the waits of `super::deps` do, so
//! waiting on them cannot deadlock. A call with no anchor (the first) waits for its recorded
//! start. Pauses are slept, their last stretch spun: a sleep overshoots by tens of
//! microseconds, as long as many a recorded pause.

use std::time::{Duration, Instant};

use super::deps::Wait;
use super::options::Timing;
use super::script::Script;

/// The shortest recorded pause `timing = "think"` keeps, in seconds. strace's cost left in a
/// pause after the calibrated correction is tens of microseconds (`trace::overhead`), and a
/// program's bookkeeping between two calls (a loop, a buffer filled) a few more; a pause of a
/// millisecond or more is the program computing (a compiler's pass, a script building a
/// file), which the real program spends on every file system alike and which dilutes their
/// differences. Over the traces in traces/ the pauses under it add up to at most 0.03 s per
/// program, those above it to 0-12 s (a C build: its compiler).
pub const THINK_MIN: f64 = 1e-3;

/// Where a call's pause is counted from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Anchor {
    /// The call (index in the trace) it follows.
    pub call: usize,
    /// The same call as a wait on its thread.
    pub wait: Wait,
    /// Seconds between the anchor's recorded end and this call's recorded start.
    pub think: f64,
}

/// Every call's anchor, `None` for a call nothing ended before.
pub fn anchors(script: &Script) -> Vec<Option<Anchor>> {
    let calls = script.calls;
    let end = |j: usize| calls[j].start + calls[j].dur;
    let mut pos = vec![0; calls.len()];
    for list in &script.by_thread {
        for (p, &i) in list.iter().enumerate() {
            pos[i] = p;
        }
    }
    let mut by_end: Vec<usize> = (0..calls.len()).collect();
    by_end.sort_by(|&a, &b| end(a).total_cmp(&end(b)).then(a.cmp(&b)));
    let mut ended = 0;
    (0..calls.len())
        .map(|i| {
            while ended < by_end.len() && end(by_end[ended]) <= calls[i].start {
                ended += 1;
            }
            // The latest end among those, skipping calls that start with or after this one
            // (zero-length calls stamped at the same microsecond).
            let j = by_end[..ended].iter().rev().copied().find(|&j| j < i)?;
            Some(Anchor {
                call: j,
                wait: Wait {
                    thread: calls[j].thread,
                    pos: pos[j],
                },
                think: (calls[i].start - end(j)).max(0.0),
            })
        })
        .collect()
}

/// The anchors `timing` paces by: every call's under `original`, only those of the pauses
/// `think` keeps (at least [`THINK_MIN`]), none under `fast` (an empty list).
pub fn kept(script: &Script, timing: Timing) -> Vec<Option<Anchor>> {
    match timing {
        Timing::Fast => Vec::new(),
        Timing::Original => anchors(script),
        Timing::Think => anchors(script)
            .into_iter()
            .map(|a| a.filter(|a| a.think >= THINK_MIN))
            .collect(),
    }
}

/// The least seconds a replay at `timing`'s pace takes on any file system: the longest
/// chain of the pauses it keeps (under `original` a call with no anchor waits for its
/// recorded start; one with an anchor for the anchor, then its think time; every call for
/// the one before it on its thread), the calls themselves taken as instant.
pub fn least_seconds(script: &Script, timing: Timing) -> f64 {
    let anchors = kept(script, timing);
    let mut before = vec![None; script.calls.len()];
    for list in &script.by_thread {
        for pair in list.windows(2) {
            before[pair[1]] = Some(pair[0]);
        }
    }
    let mut least = vec![0.0f64; script.calls.len()];
    for i in 0..least.len() {
        // Anchors and a thread's calls point back in the trace's order, so both are known.
        let paced = match anchors.get(i).copied().flatten() {
            Some(a) if a.call < i => least[a.call] + a.think,
            _ if timing == Timing::Original => script.calls[i].start,
            _ => 0.0,
        };
        let ordered = before[i].filter(|&b| b < i).map_or(0.0, |b| least[b]);
        least[i] = paced.max(ordered);
    }
    least.into_iter().fold(0.0, f64::max)
}

/// Below this, a pause is spun rather than slept.
const SPIN: Duration = Duration::from_micros(200);

/// The longest single sleep: how late a stop (the first Ctrl-C, `--timeout`) is noticed.
const SLICE: Duration = Duration::from_millis(20);

/// Returns at `due` (at once if it has passed): sleeps while far from it, spins the rest.
/// A recorded pause can be as long as the recording, so the sleep is cut into slices and
/// `stopped` is asked between them; returns false, early, once it says so.
pub fn until(due: Instant, stopped: impl Fn() -> bool) -> bool {
    loop {
        let Some(left) = due.checked_duration_since(Instant::now()) else {
            return true;
        };
        if left > SPIN {
            if stopped() {
                return false;
            }
            std::thread::sleep((left - SPIN).min(SLICE));
        } else {
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::format::{Call, Op};

    fn call(thread: u32, start: f64, dur: f64) -> Call {
        Call::on_path(thread, start, dur, Op::Stat, "a")
    }

    #[test]
    fn a_call_follows_the_call_that_ended_last_before_it_of_any_thread() {
        // Thread 0 at 0-1 s, thread 1 (a child) at 2-3 s and 3.5-4 s, thread 0 again at 5 s.
        let calls = vec![
            call(0, 0.0, 1.0),
            call(1, 2.0, 1.0),
            call(1, 3.5, 0.5),
            call(0, 5.0, 0.0),
        ];
        let script = Script {
            calls: &calls,
            slot: vec![None; 4],
            slot_path: vec![],
            by_thread: vec![vec![0, 3], vec![1, 2]],
            skipped: vec![],
            keeps_open: Default::default(),
        };
        let a = anchors(&script);
        assert_eq!(a[0], None);
        let anchor = |i: usize| a[i].map(|x| (x.call, x.wait.thread, x.wait.pos, x.think));
        assert_eq!(anchor(1), Some((0, 0, 0, 1.0)));
        assert_eq!(anchor(2), Some((1, 1, 0, 0.5)));
        // Thread 0's second call follows the child's last, not its own first call.
        assert_eq!(anchor(3), Some((2, 1, 1, 1.0)));
        // The pauses of the longest chain: 1 s, 0.5 s, 1 s.
        assert_eq!(least_seconds(&script, Timing::Original), 2.5);
    }

    #[test]
    fn think_keeps_the_long_pauses_and_drops_the_short_ones() {
        // Thread 0: a call, 50 µs of bookkeeping, a call, 2 s of computing, a call.
        let calls = vec![
            call(0, 0.0, 0.001),
            call(0, 0.00105, 0.001),
            call(0, 2.00205, 0.0),
        ];
        let script = Script {
            calls: &calls,
            slot: vec![None; 3],
            slot_path: vec![],
            by_thread: vec![vec![0, 1, 2]],
            skipped: vec![],
            keeps_open: Default::default(),
        };
        let think = kept(&script, Timing::Think);
        assert_eq!(think[1], None, "a 50 µs pause is not kept");
        assert_eq!(think[2].map(|a| a.call), Some(1));
        assert!(kept(&script, Timing::Fast).is_empty());
        assert!(kept(&script, Timing::Original)[1].is_some());
        assert!((least_seconds(&script, Timing::Think) - 2.0).abs() < 1e-9);
        assert!((least_seconds(&script, Timing::Original) - 2.00005).abs() < 1e-9);
        assert_eq!(least_seconds(&script, Timing::Fast), 0.0);
        // A short pause between two long ones does not start the count again: 2 s + 2 s.
        let mut more = calls.clone();
        more.push(call(0, 2.00215, 0.0));
        more.push(call(0, 4.00215, 0.0));
        let script = Script {
            calls: &more,
            slot: vec![None; 5],
            by_thread: vec![vec![0, 1, 2, 3, 4]],
            ..script
        };
        assert!((least_seconds(&script, Timing::Think) - 4.0).abs() < 1e-9);
    }

    /// Defect (issue 57): a call recorded at `start: 1e6` slept in one piece under
    /// `--timing original`; neither Ctrl-C nor `--timeout` ended the sleep. A stop asked
    /// for while a pause sleeps ends it within a slice.
    #[test]
    fn a_long_recorded_pause_ends_when_the_run_is_stopped() {
        let asked = Instant::now() + Duration::from_millis(100);
        let t0 = Instant::now();
        let due = t0 + Duration::from_secs(1_000_000);
        assert!(!until(due, || Instant::now() > asked));
        assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    }

    #[test]
    fn a_pause_ends_on_time_not_a_sleep_s_slack_later() {
        // A 30 µs sleep overshoots by the timer slack (50 µs) every time; the least late of
        // 20 pauses is how late `until` is when nothing preempts it.
        let late = (0..20)
            .map(|_| {
                let due = Instant::now() + Duration::from_micros(30);
                assert!(until(due, || false));
                Instant::now().duration_since(due)
            })
            .min()
            .unwrap();
        assert!(late < Duration::from_micros(20), "{late:?} late");
    }
}
