//! What a recording knows of the program's own time, untraced: the header's
//! `program_time`. strace only adds to a program's time, so its wall clock over the run is
//! the most the program took there; the calibrated cost of each call strace stopped
//! (`super::overhead`) taken from it gives an estimate. That cost is known only roughly: it
//! is calibrated on `dd`'s one-byte reads and writes, and other calls (an `openat`, a
//! `clone` and the `exec` after it) cost strace more or less. On the corpus of issue 56
//! (bench/journal/replay-fidelity.md, "A program time record can stand behind") the
//! untraced time lay between 0.44 times strace's cost below the estimate and 0.23 times above
//! it, so the least the program took is the estimate less [`COST_UNCERTAINTY`] of that cost
//! (never below zero), and the most is strace's wall clock. Where strace's cost is small
//! beside the program's time the bracket is narrow; where it is several times the program's
//! (`cp -a`, SQLite's short commits) the bracket says so, and the replay's self-check is
//! held to it rather than to an estimate that can be wrong by factors.

use serde::{Deserialize, Serialize};

/// How far strace's cost over a run may be from its calibrated figure, as a fraction of it.
/// Twice the largest gap the corpus showed (0.44 of it, the python writer's, on a busy
/// machine): the bracket is meant to hold the program's time, not to be tight.
pub const COST_UNCERTAINTY: f64 = 0.5;

/// The share of the user CPU time counted while strace ran that the untraced program is held
/// to have needed at least. ptrace's stops leave a program's user time nearly alone (they
/// cost system time): traced and untraced, the corpus's nine programs' user CPU agreed
/// within about 10 % where it was above 0.1 s (bench/results/record-timing-20261129), so a
/// floor at 0.8 of it stays below what the program needed.
pub const COMPUTING_SHARE: f64 = 0.8;

/// The program's untraced time as a recording measured it, in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProgramTime {
    /// strace's wall clock over the command: from the first call it printed to the last
    /// one's end. The most the program took, since strace only adds.
    pub traced_s: f64,
    /// strace's calibrated cost over the run: every call it printed (kept in the trace or
    /// not) times the header's `strace_overhead` per call (`call_s + gap_s`).
    pub strace_s: f64,
    /// The least the program's untraced time can have been.
    pub least_s: f64,
    /// The most it can have been: `traced_s`, on the device it was recorded on.
    pub most_s: f64,
}

impl ProgramTime {
    /// The time of a run strace printed `calls` calls of over `traced_s` seconds, at a
    /// calibrated `per_call_s` each.
    pub fn measured(traced_s: f64, calls: usize, per_call_s: f64) -> ProgramTime {
        let strace_s = calls as f64 * per_call_s;
        let estimate = (traced_s - strace_s).max(0.0);
        ProgramTime {
            traced_s: micros(traced_s),
            strace_s: micros(strace_s),
            least_s: micros((estimate - COST_UNCERTAINTY * strace_s).max(0.0)),
            most_s: micros(traced_s),
        }
    }

    /// The bracket's floor raised to the program's own computing: untraced, it needed at
    /// least [`COMPUTING_SHARE`] of its `user_cpu_s` (the kernel's count) spread over the
    /// CPUs it could use at once, `parallel` (its threads, at most the machine's CPUs).
    /// strace's cost is calibrated in a moment beside the run, and on a busy machine it can
    /// come out above the whole run; without this floor a `sort` that computed for 0.19 s
    /// was said to take 0.000 s untraced.
    pub fn computing_at_least(mut self, user_cpu_s: f64, parallel: usize) -> ProgramTime {
        let floor = COMPUTING_SHARE * user_cpu_s.max(0.0) / parallel.max(1) as f64;
        self.least_s = micros(floor.min(self.most_s)).max(self.least_s);
        self
    }

    /// The best single figure: strace's wall clock less its calibrated cost.
    pub fn estimate_s(&self) -> f64 {
        (self.traced_s - self.strace_s).clamp(self.least_s, self.most_s)
    }

    /// Why a header's figures cannot be a recording's: `None` when they can. (Each is also
    /// bounded like every time of a trace, by the reader.)
    pub fn inconsistency(&self) -> Option<&'static str> {
        if self.least_s > self.most_s {
            Some("`least_s` is more than `most_s`")
        } else if self.most_s > self.traced_s {
            Some("`most_s` is more than `traced_s` (strace only adds to a program's time)")
        } else {
            None
        }
    }

    /// The seconds fields by name, for the reader's bounds.
    pub fn seconds(&self) -> [(&'static str, f64); 4] {
        [
            ("program_time.traced_s", self.traced_s),
            ("program_time.strace_s", self.strace_s),
            ("program_time.least_s", self.least_s),
            ("program_time.most_s", self.most_s),
        ]
    }
}

/// Seconds rounded to microseconds, strace's own resolution, without the epoch's float
/// noise (every time a recording writes).
pub fn micros(s: f64) -> f64 {
    (s.max(0.0) * 1e6).round() / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strace_s_cost_taken_out_gives_the_estimate_and_its_uncertainty_the_bracket() {
        // A compiler's build: 6.37 s traced, 20,613 calls at 33.5 µs (0.69 s of strace).
        let build = ProgramTime::measured(6.37, 20_613, 33.5e-6);
        assert!((build.estimate_s() - 5.679).abs() < 1e-3, "{build:?}");
        assert!((build.least_s - (5.679 - 0.345)).abs() < 1e-3, "{build:?}");
        assert_eq!(build.most_s, 6.37);
        assert_eq!(build.inconsistency(), None);
        // cp -a: strace's cost is most of the traced time, the bracket wide and never
        // below zero.
        let cp = ProgramTime::measured(0.40, 11_000, 35e-6);
        assert_eq!(cp.least_s, 0.0);
        assert_eq!(cp.most_s, 0.40);
        assert!((cp.estimate_s() - 0.015).abs() < 1e-9);
        // A calibration larger than the whole run: the estimate is zero, the bracket whole.
        let over = ProgramTime::measured(0.1, 10_000, 35e-6);
        assert_eq!(
            (over.estimate_s(), over.least_s, over.most_s),
            (0.0, 0.0, 0.1)
        );
    }

    #[test]
    fn a_recording_never_says_the_program_took_less_than_its_own_computing() {
        // `sort` of 17 MB recorded on a busy machine: 0.968 s under strace, 21,419 calls
        // calibrated at 83 µs (more than the whole run), 0.186 s of user CPU in one thread.
        let sort = ProgramTime::measured(0.968, 21_419, 82.9e-6);
        assert_eq!((sort.estimate_s(), sort.least_s), (0.0, 0.0));
        let sort = sort.computing_at_least(0.186, 1);
        assert!((sort.least_s - 0.1488).abs() < 1e-9, "{sort:?}");
        assert_eq!(sort.estimate_s(), sort.least_s);
        assert_eq!(sort.inconsistency(), None);
        // Spread over two CPUs it could have run in half the time.
        let two = ProgramTime::measured(0.968, 21_419, 82.9e-6).computing_at_least(0.186, 2);
        assert!((two.least_s - 0.0744).abs() < 1e-9, "{two:?}");
        // A floor never lifts the bracket above strace's wall clock, nor lowers it.
        let busy = ProgramTime::measured(0.2, 100, 1e-6).computing_at_least(5.0, 1);
        assert_eq!((busy.least_s, busy.most_s), (0.2, 0.2));
        let build = ProgramTime::measured(6.37, 20_613, 33.5e-6);
        assert_eq!(build.computing_at_least(0.1, 1), build);
    }

    #[test]
    fn figures_no_recording_can_give_are_named() {
        let mut t = ProgramTime::measured(1.0, 1000, 100e-6);
        t.least_s = t.most_s + 0.1;
        assert!(t.inconsistency().unwrap().contains("least_s"));
        let mut t = ProgramTime::measured(1.0, 1000, 100e-6);
        t.most_s = 2.0;
        assert!(t.inconsistency().unwrap().contains("traced_s"));
    }
}
