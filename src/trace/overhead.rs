//! What strace adds to a recorded program's pace, and the clock a trace is stamped on with it
//! taken out. Every traced call stops the program twice (at entry, through the seccomp
//! filter, and at exit), and each stop costs a switch to strace and back: tens of
//! microseconds on a quiet machine, more on a loaded one or where waking an idle CPU is dear
//! (a VM), against a microsecond for a cached `read`. A program making thousands of calls
//! runs ~10x slower under strace, and a replay that kept those gaps (`timing = "original"`)
//! would replay strace, not the program. So `fsarena record` times a tight loop of one-byte
//! `read`s and `write`s (`dd`, from coreutils) under strace with the recording's own flags,
//! just before and just after the command, and against the same loop untraced; the per-call
//! cost inside a call and between calls goes into the trace's header, and every start and
//! duration is put on a clock that subtracts it, stop by stop, from the intervals of the
//! recording (never below zero).
//!
//! strace and everything it traces run on one CPU ([`spawn_on_one_cpu`]), the loop too: a
//! stop then switches to strace on the same CPU instead of waking another, which in a VM
//! whose other CPU sits idle costs several times more and varies with what else runs.
//! strace handles every stop of every thread in turn anyway; a program's own threads do
//! take turns on that CPU while recorded.

use std::io::BufRead;
use std::process::{Command, Stdio};
use std::time::Instant;

use super::format::StraceOverhead;
use super::strace::{Joiner, Syscall};

/// Iterations of the calibration loop (each a `read` and a `write`): ~0.1-0.5 s under strace.
const LOOP: u32 = 500;

/// Times the calibration loop under `strace_args` (the recording's flags, without `-e
/// trace=` and `-o`) and untraced. `None` when it could not be measured (no `dd`, strace
/// refused): the trace is then stamped with strace's own clock and says nothing of overhead.
pub fn calibrate(strace_args: &[&str]) -> Option<StraceOverhead> {
    let out = strace_file("calibrate");
    let status = spawn_on_one_cpu(
        // The calibration's strace and loop are fsarena's helpers, not the recorded
        // program: their own process group, killed with fsarena (`sys::helper_command`).
        crate::sys::helper_command("strace")
            .args(strace_args)
            .args(["-e", "trace=read,write", "-o"])
            .arg(&out)
            .arg("--")
            .args(dd(LOOP))
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    )
    .and_then(|mut child| child.wait());
    let lines = std::fs::File::open(&out);
    let _ = std::fs::remove_file(&out);
    if !status.ok()?.success() {
        return None;
    }
    let mut joiner = Joiner::default();
    let calls: Vec<Syscall> = std::io::BufReader::new(lines.ok()?)
        .lines()
        .map_while(Result::ok)
        .filter_map(|l| joiner.push(&l))
        .filter(is_loop_call)
        .collect();
    let (in_call, between) = split(&calls)?;
    let untraced = untraced_per_call()?;
    Some(StraceOverhead {
        call_s: round_ns(in_call),
        gap_s: round_ns((between - untraced).max(0.0)),
    })
}

/// A private file for strace's lines, named for what it holds, this process and the time.
pub fn strace_file(what: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "fsarena-{what}-{}-{}.strace",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ))
}

/// The mean of two calibrations (before and after the command), or whichever was made.
pub fn mean(a: Option<StraceOverhead>, b: Option<StraceOverhead>) -> Option<StraceOverhead> {
    match (a, b) {
        (Some(a), Some(b)) => Some(StraceOverhead {
            call_s: round_ns((a.call_s + b.call_s) / 2.0),
            gap_s: round_ns((a.gap_s + b.gap_s) / 2.0),
        }),
        (a, b) => a.or(b),
    }
}

fn round_ns(s: f64) -> f64 {
    (s * 1e9).round() / 1e9
}

fn dd(count: u32) -> [String; 6] {
    [
        "dd".into(),
        "if=/dev/zero".into(),
        "of=/dev/null".into(),
        "bs=1".into(),
        format!("count={count}"),
        "status=none".into(),
    ]
}

/// The loop's own calls: the one-byte reads of /dev/zero and writes to /dev/null.
fn is_loop_call(sc: &Syscall) -> bool {
    let dev = sc.args.first().and_then(|a| a.fd()).and_then(|fd| fd.path);
    matches!(
        (sc.name.as_str(), dev.as_deref()),
        ("read", Some("/dev/zero")) | ("write", Some("/dev/null"))
    )
}

/// The loop's mean seconds inside a call and between one call's end and the next's start.
/// Means, tail included: on a busy machine a stop often waits for another process's turn on
/// the CPU, a cost the untraced program, switching far less, mostly does not pay.
fn split(calls: &[Syscall]) -> Option<(f64, f64)> {
    if calls.len() < 100 {
        return None;
    }
    let durs: Vec<f64> = calls.iter().map(|c| c.dur).collect();
    let gaps: Vec<f64> = calls
        .windows(2)
        .map(|w| (w[1].time - (w[0].time + w[0].dur)).max(0.0))
        .collect();
    Some((mean_of(&durs), mean_of(&gaps)))
}

fn mean_of(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Seconds per loop call untraced: the loop's time less an empty run's, over its calls.
fn untraced_per_call() -> Option<f64> {
    let time = |count: u32| -> Option<f64> {
        let [program, args @ ..] = dd(count);
        let t0 = Instant::now();
        let ok = spawn_on_one_cpu(
            crate::sys::helper_command(program)
                .args(args)
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        )
        .and_then(|mut child| child.wait())
        .ok()?
        .success();
        ok.then(|| t0.elapsed().as_secs_f64())
    };
    let (full, empty) = (time(LOOP)?, time(0)?);
    Some(((full - empty) / f64::from(2 * LOOP)).max(0.0))
}

/// Spawns `command` bound to the CPU this thread runs on: the child inherits the thread's
/// CPU set at fork, which is put back at once. Where the set cannot be changed (a container
/// that forbids it) the command runs unbound.
pub fn spawn_on_one_cpu(command: &mut Command) -> std::io::Result<std::process::Child> {
    use rustix::thread::{sched_getaffinity, sched_getcpu, sched_setaffinity, CpuSet};
    let saved = sched_getaffinity(None).ok();
    let mut one = CpuSet::new();
    one.set(sched_getcpu());
    let bound = saved.is_some() && sched_setaffinity(None, &one).is_ok();
    let child = command.spawn();
    if let (true, Some(saved)) = (bound, saved) {
        let _ = sched_setaffinity(None, &saved);
    }
    child
}

/// The recording's clock with strace's share taken out: every call's start and end are
/// events; the interval before a start loses `gap_s`, the interval before an end `call_s`,
/// neither below zero. What an interval was too short to give is taken from the next one,
/// up to one call's cost: strace splits its cost between a call and the gap after it
/// differently for each call type (a `close` or a `read` spends less inside the call than the
/// calibration's `read`s and `write`s, and more after it), and left in that gap it would
/// be replayed as think time (docs/replay-timing.md). Across threads the events are taken in
/// one order, since one strace process handles every stop in turn.
#[derive(Debug)]
pub struct Clock {
    times: Vec<f64>,
    corrected: Vec<f64>,
}

impl Clock {
    /// The clock over `spans` (start, duration) of every call strace printed, kept or not.
    pub fn new(spans: &[(f64, f64)], overhead: Option<&StraceOverhead>) -> Clock {
        let (gap, call) = overhead.map_or((0.0, 0.0), |o| (o.gap_s, o.call_s));
        let mut events: Vec<(f64, f64)> = spans
            .iter()
            .flat_map(|&(t, d)| [(t, gap), (t + d.max(0.0), call)])
            .collect();
        events.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut corrected = Vec::with_capacity(events.len());
        let (mut at, mut owed) = (0.0, 0.0);
        for (k, &(t, cost)) in events.iter().enumerate() {
            if k > 0 {
                let interval = t - events[k - 1].0;
                let take = cost + owed;
                at += (interval - take).max(0.0);
                owed = (take - interval).clamp(0.0, gap + call);
            }
            corrected.push(at);
        }
        Clock {
            times: events.into_iter().map(|e| e.0).collect(),
            corrected,
        }
    }

    /// Seconds from the first event to `t` on the corrected clock.
    pub fn at(&self, t: f64) -> f64 {
        match self.times.partition_point(|&x| x <= t) {
            0 => 0.0,
            k => self.corrected[k - 1] + (t - self.times[k - 1]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_overhead_the_clock_is_strace_s_own() {
        let clock = Clock::new(&[(10.0, 0.5), (11.0, 0.25)], None);
        assert_eq!(clock.at(10.0), 0.0);
        assert_eq!(clock.at(11.0), 1.0);
        assert_eq!(clock.at(11.25), 1.25);
    }

    #[test]
    fn each_interval_loses_its_stop_s_cost_and_never_goes_below_zero() {
        let o = StraceOverhead {
            call_s: 0.1,
            gap_s: 0.2,
        };
        // Call 1 from 0 to 0.3, call 2 from 0.35 (gap 0.05 < 0.2: clamped, the 0.15 it
        // could not give taken from call 2) to 1.0.
        let clock = Clock::new(&[(0.0, 0.3), (0.35, 0.65)], Some(&o));
        assert!((clock.at(0.3) - 0.2).abs() < 1e-9);
        assert!((clock.at(0.35) - 0.2).abs() < 1e-9);
        assert!((clock.at(1.0) - 0.6).abs() < 1e-9);
    }

    /// Defect (issue 37, fidelity): a call shorter than `call_s` under strace (a `close`:
    /// strace spends less inside it than inside the calibration's calls, and more after it)
    /// had its duration clamped at zero and the rest of its cost left in the next gap, which
    /// `timing = "original"` replays as think time: tar, all cheap calls, replayed ~1.5x
    /// slower than it ran. What an interval cannot give is taken from the next one.
    #[test]
    fn strace_s_cost_a_short_call_cannot_give_is_taken_from_the_gap_after_it() {
        let o = StraceOverhead {
            call_s: 0.2,
            gap_s: 0.1,
        };
        // Call 1 from 0 to 0.05 (0.15 short of call_s), call 2 at 0.5, 0.45 after it.
        let clock = Clock::new(&[(0.0, 0.05), (0.5, 0.0)], Some(&o));
        assert_eq!(clock.at(0.05), 0.0);
        // The gap loses gap_s and the 0.15 call 1 could not give: 0.45 - 0.1 - 0.15.
        assert!((clock.at(0.5) - 0.2).abs() < 1e-9, "{}", clock.at(0.5));
        // Never more than one call's cost carried: a long pause keeps the rest.
        let many: Vec<(f64, f64)> = (0..100).map(|i| (i as f64 * 0.01, 0.0)).collect();
        let mut spans = many.clone();
        spans.push((11.0, 0.0));
        let clock = Clock::new(&spans, Some(&o));
        let pause = clock.at(11.0) - clock.at(0.99);
        assert!(pause >= 10.01 - 0.1 - 0.3 - 1e-9, "{pause}");
    }

    #[test]
    fn a_calibration_reads_the_loop_s_calls_only() {
        let mut joiner = Joiner::default();
        let line = |t: f64, call: &str| format!("7 {t:.6} {call} = 1 <0.000010>");
        let mut lines = vec![line(0.0, r#"read(3</etc/ld.so.cache>, "", 1)"#)];
        for i in 0..200 {
            let t = 1.0 + i as f64 * 0.0001;
            lines.push(line(t, r#"read(0</dev/zero>, "", 1)"#));
            lines.push(line(t + 0.00005, r#"write(1</dev/null>, "", 1)"#));
        }
        let calls: Vec<Syscall> = lines
            .iter()
            .filter_map(|l| joiner.push(l))
            .filter(is_loop_call)
            .collect();
        assert_eq!(calls.len(), 400);
        let (in_call, between) = split(&calls).unwrap();
        assert!((in_call - 0.00001).abs() < 1e-9, "{in_call}");
        assert!((between - 0.00004).abs() < 1e-7, "{between}");
    }
}
