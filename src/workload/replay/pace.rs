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
/// program, those above it to 0-12 s (a C build: its compiler). With the program's user time
/// in the trace every pause is kept, scaled ([`computing`]), and this threshold only chooses
/// where a pause counts from.
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

/// The anchors `timing` paces by: every call's under `original`, none under `fast` (an
/// empty list), and under `think` the pauses of at least [`THINK_MIN`] with, when the trace
/// holds the program's user CPU time, the rest of its computing between them
/// ([`computing`]).
pub fn kept(script: &Script, timing: Timing) -> Vec<Option<Anchor>> {
    match timing {
        Timing::Fast => Vec::new(),
        Timing::Original => anchors(script),
        Timing::Think => {
            let all = anchors(script);
            match script.user_cpu_s {
                Some(user) => computing(script, all, user),
                None => all
                    .into_iter()
                    .map(|a| a.filter(|a| a.think >= THINK_MIN))
                    .collect(),
            }
        }
    }
}

/// `think`'s anchors for a program that computed `user` CPU seconds (the kernel's count,
/// which neither strace nor the machine's load distorts). The trace's pauses give the shape:
/// where the program was between calls, and for how long relative to each other; the kernel
/// gives the total. Every recorded pause is scaled by `user` over their sum, so that they
/// add up to what the program computed: its computing between calls closer together than
/// strace's cost per call is given back, and a recording on a busy machine, whose pauses
/// hold the program's waits for a CPU (hundreds of milliseconds where it computed tens), is
/// not replayed as if it had computed them. (Evenly, where every pause was recorded as zero.)
/// A pause recorded as [`THINK_MIN`] or more keeps its anchor, in whichever thread ran
/// before it; a shorter one counts from the previous call *of its own thread*: a process's
/// computing between two of its calls does not wait for another process, and pacing every
/// call from another thread's is what made `original` hand over between threads at every
/// call. (A thread's first call keeps its anchor.)
pub fn computing(script: &Script, anchors: Vec<Option<Anchor>>, user: f64) -> Vec<Option<Anchor>> {
    let (recorded, paused) = anchors
        .iter()
        .flatten()
        .fold((0.0, 0usize), |(sum, n), a| (sum + a.think, n + 1));
    let scaled = |think: f64| match recorded > 0.0 {
        true => user * think / recorded,
        false => user / paused as f64,
    };
    let mut previous = vec![None; script.calls.len()];
    for (t, list) in script.by_thread.iter().enumerate() {
        for (p, pair) in list.windows(2).enumerate() {
            let wait = Wait {
                thread: t as u32,
                pos: p,
            };
            previous[pair[1]] = Some((pair[0], wait));
        }
    }
    let pace = |(i, a): (usize, Option<Anchor>)| {
        let a = a?;
        let think = scaled(a.think);
        (think > 0.0).then(|| match previous[i] {
            Some((call, wait)) if a.think < THINK_MIN && call < i => Anchor { call, wait, think },
            _ => Anchor { think, ..a },
        })
    };
    anchors.into_iter().enumerate().map(pace).collect()
}

/// The program's own time, which a replay on the file-system type it was recorded on should
/// take: the trace's `duration_s` with its pauses replaced by the computing [`computing`]
/// gives them (the program's user time), so that neither side counts what strace or the
/// machine's load added to them. Without the program's user time, `duration_s` as it is.
pub fn program_seconds(script: &Script, duration_s: f64) -> f64 {
    let Some(user) = script.user_cpu_s else {
        return duration_s;
    };
    let recorded: f64 = anchors(script).iter().flatten().map(|a| a.think).sum();
    (duration_s - recorded).max(0.0) + user
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
        let script = Script::of_threads(&calls, vec![vec![0, 3], vec![1, 2]]);
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
        let script = Script::of_threads(&calls, vec![vec![0, 1, 2]]);
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
        let script = Script::of_threads(&more, vec![vec![0, 1, 2, 3, 4]]);
        assert!((least_seconds(&script, Timing::Think) - 4.0).abs() < 1e-9);
    }

    fn script_of(calls: &[Call], by_thread: Vec<Vec<usize>>, user: Option<f64>) -> Script<'_> {
        Script {
            user_cpu_s: user,
            ..Script::of_threads(calls, by_thread)
        }
    }

    /// Defect (issue 56): `think` dropped every pause under 1 ms, and with them the
    /// program's computing that strace's cost hides (dpkg, rsync, git replayed 0.02-0.13 s
    /// faster than they ran on the recording's file system), and kept every longer one, a
    /// busy machine's waits for a CPU included (rsync: 0.5 s of them for 0.04 s computed).
    /// The kernel's count of the program's user time sets their sum; the trace their shape.
    #[test]
    fn the_pauses_are_scaled_to_add_up_to_the_program_s_user_time() {
        // One thread: pauses of 10 µs, 30 µs, then 2 ms, then 0.
        let calls = vec![
            call(0, 0.0, 0.0),
            call(0, 0.00001, 0.0),
            call(0, 0.00004, 0.0),
            call(0, 0.00204, 0.0),
            call(0, 0.00204, 0.0),
        ];
        let order = vec![vec![0, 1, 2, 3, 4]];
        let think = |user| kept(&script_of(&calls, order.clone(), user), Timing::Think);
        // A trace without the field (recorded before it was kept) replays as before.
        let old = think(None);
        assert_eq!(old.iter().flatten().count(), 1);
        assert_eq!(old[3].map(|a| (a.call, a.think)), Some((2, 0.002)));
        // 20.4 ms of computing over 2.04 ms of pauses: each ten times as long.
        let pause = |user, i: usize| think(Some(user))[i].map_or(0.0, |a| a.think);
        for (i, recorded) in [(1, 0.00001), (2, 0.00003), (3, 0.002)] {
            assert!((pause(0.0204, i) - recorded * 10.0).abs() < 1e-9, "{i}");
            // A program that computed less than its pauses hold (a busy machine's): shorter.
            assert!((pause(0.00102, i) - recorded / 2.0).abs() < 1e-9, "{i}");
        }
        assert_eq!(
            think(Some(0.0204))[4],
            None,
            "a pause recorded as zero stays zero"
        );
        let script = script_of(&calls, order.clone(), Some(0.0204));
        assert!((least_seconds(&script, Timing::Think) - 0.0204).abs() < 1e-9);
        assert!((program_seconds(&script, 0.5) - (0.5 - 0.00204 + 0.0204)).abs() < 1e-9);
        // Where every pause was recorded as zero, the time is shared evenly.
        let flat: Vec<Call> = (0..5).map(|_| call(0, 0.0, 0.0)).collect();
        let even = kept(&script_of(&flat, order, Some(0.004)), Timing::Think);
        assert!(even[1..]
            .iter()
            .all(|a| a.is_some_and(|a| (a.think - 0.001).abs() < 1e-12)));
    }

    #[test]
    fn a_short_pause_counts_from_its_own_thread_never_waiting_for_another() {
        // Threads 0 and 1 take turns, 20 µs apart: each call's anchor is the other thread's.
        let calls: Vec<Call> = (0..6)
            .map(|i| call(i % 2, i as f64 * 0.00002, 0.0))
            .collect();
        let order = vec![vec![0, 2, 4], vec![1, 3, 5]];
        let script = script_of(&calls, order, Some(0.005));
        let all = anchors(&script);
        assert_eq!(all[3].map(|a| a.wait.thread), Some(0));
        let think = kept(&script, Timing::Think);
        for (i, a) in think.iter().enumerate().skip(2) {
            let a = a.expect("every later call paced");
            assert_eq!(
                (a.call, a.wait.thread, a.wait.pos),
                (i - 2, i as u32 % 2, i / 2 - 1)
            );
        }
        // A thread's first call keeps the other thread's call as its anchor.
        assert_eq!(think[1].map(|a| a.call), Some(0));
        let shared: f64 = think.iter().flatten().map(|a| a.think).sum();
        assert!((shared - 0.005).abs() < 1e-12, "{shared}");
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
