//! A trace's first line: what the recording says about itself (the command, its threads,
//! its clock and what strace cost, what it could not see), and the bounds every header
//! field is held to before any entry is read. Its own file so that the format's entries
//! and the header each stay readable as the header gains optional fields.

use serde::{Deserialize, Serialize};

use super::bounds::{Limits, TraceError, MAX_SECONDS, MAX_THREADS, MIN_ENTRY_LINE};
use super::program_time::ProgramTime;

/// What a trace says about itself, before its entries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    /// The format version (`format::VERSION`); a reader refuses any other.
    pub fstrace: u32,
    /// The recorded command and its arguments (names hashed too when `anonymized`).
    pub command: Vec<String>,
    /// Whether names were replaced by stable hashes (`--anonymize`).
    pub anonymized: bool,
    /// Recorded threads; calls name them 0..threads.
    pub threads: u32,
    /// Wall seconds of the recorded command, from its first call to its exit.
    pub duration_s: f64,
    /// How many `initial` entries follow the header.
    pub initial: u64,
    /// How many `call` entries follow those.
    pub calls: u64,
    /// File-system calls on paths (or descriptors of paths) outside the root: counted, not kept.
    pub outside_root: u64,
    /// `mmap`s of files under the root: their I/O is invisible to strace, so said, not replayed.
    pub file_mmaps: u64,
    /// strace's calibrated cost per call, already taken out of the calls' `start` and `dur`
    /// (`trace::overhead`); absent in a trace stamped with strace's own clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strace_overhead: Option<StraceOverhead>,
    /// The type of the file system the root was on when recorded (`ext4`, `xfs`…), so a
    /// replay on the same type can compare its time with the program's own; absent in
    /// traces recorded before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fs_type: Option<String>,
    /// CPU seconds the recorded program's processes spent in user mode, from the kernel's
    /// accounting of a cgroup that held them and not strace (`trace::record`): its
    /// computing, which takes the same time on every file system and which the trace's
    /// clock cannot measure where the program's pauses are shorter than strace's own cost.
    /// A `think` replay gives the program this time back (`replay::pace`); absent in traces
    /// recorded before it was kept, or where no cgroup v2 could be made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_cpu_s: Option<f64>,
    /// The program's untraced time as the recording could bound it (strace's wall clock,
    /// its calibrated cost, and the bracket they give): what the replay's self-check holds
    /// a replay on the recorded file-system type to. Absent in traces recorded before it
    /// was kept, or where strace's cost could not be calibrated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program_time: Option<ProgramTime>,
    /// File I/O strace could not see, by kind (`io_uring_enter`, `shared_mappings_unsynced`
    /// …), with how many calls or mappings: said at record time and as a fidelity warning
    /// by every replay of the trace.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub unseen: std::collections::BTreeMap<String, u64>,
}

/// What strace added per traced call when the trace was recorded, in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StraceOverhead {
    /// Inside a call: from the entry stop to the exit stop, beyond the call's own work.
    pub call_s: f64,
    /// Between one call's end and the next's start, beyond the program's own work.
    pub gap_s: f64,
}

// What a trace may ask of the host (`super::bounds` says why each bound is what it is).

pub(super) fn bound_error(line: u64, what: String) -> TraceError {
    TraceError::Invalid { line, what }
}

/// Seconds a trace gives: finite, not negative, at most [`MAX_SECONDS`].
pub(super) fn seconds(line: u64, field: &str, s: f64) -> Result<(), TraceError> {
    if s.is_finite() && (0.0..=MAX_SECONDS).contains(&s) {
        Ok(())
    } else {
        Err(bound_error(
            line,
            format!("`{field}` {s}: seconds must be finite, not negative and at most {MAX_SECONDS} (30 days)"),
        ))
    }
}

/// The header's counts and times, before any entry is read.
pub(super) fn check_header_bounds(h: &Header, limits: &Limits) -> Result<(), TraceError> {
    seconds(1, "duration_s", h.duration_s)?;
    if let Some(user) = h.user_cpu_s {
        seconds(1, "user_cpu_s", user)?;
    }
    if let Some(p) = &h.program_time {
        for (field, s) in p.seconds() {
            seconds(1, field, s)?;
        }
        if let Some(why) = p.inconsistency() {
            return Err(bound_error(1, format!("`program_time`: {why}")));
        }
    }
    if h.threads > MAX_THREADS {
        return Err(bound_error(
            1,
            format!(
                "`threads` {}: a replay runs at most {MAX_THREADS} recorded threads",
                h.threads
            ),
        ));
    }
    if u64::from(h.threads) > h.calls {
        return Err(bound_error(
            1,
            format!(
                "`threads` {}: more than the trace's {} calls (every recorded thread made one)",
                h.threads, h.calls
            ),
        ));
    }
    let most = limits.total / MIN_ENTRY_LINE;
    for (field, n) in [("initial", h.initial), ("calls", h.calls)] {
        if n > most {
            return Err(bound_error(
                1,
                format!("`{field}` {n}: more entries than a trace this host can hold ({most})"),
            ));
        }
    }
    Ok(())
}
