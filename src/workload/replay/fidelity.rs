//! The self-check every replay run carries: how far the replay did what the recorded
//! program did. Calls replayed and left out, by kind; bytes read, written and synced,
//! counted the same way from the trace's results and from the replay's; the I/O the trace
//! could not hold (its header's `unseen`); and, on a file system of the type the program was
//! recorded on, the replay's time against the program's own. A replay that moved other bytes
//! than the trace, left calls out, misses unseen I/O, or took more than a quarter more or
//! less time (`TIME_GAP_PCT`) than the program could have taken where the two should agree,
//! says so: a note with the figures,
//! and metrics on the row (`replay_time_gap_pct`, `replay_incomplete`, `replay_unseen_io`). A
//! replay across FUSE from where the trace was recorded says that the program may have called
//! otherwise there (`replay_recorded_on_other_kind`). How the program's time is known, and
//! how far the replay may stray from it, is `time_check`'s.

use std::collections::BTreeMap;

use super::call::Returned;
use super::issue::ThreadLog;
use super::options::Timing;
use super::script::{has_flag, Script};
use super::time_check::{ProgramTime, TIME_GAP_PCT};
use crate::trace::format::{Call, Op, Trace};
use crate::workload::outcome::Outcome;

/// An operation's name as the trace writes it (`sync_file_range`, …).
pub fn op_name(op: Op) -> String {
    serde_json::to_value(op)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{op:?}").to_lowercase())
}

/// Bytes by what happened to them, counted in recorded order.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Bytes {
    pub read: u64,
    /// Bytes read through mappings (`map_read`: the ranges mapped, as far as the file
    /// reaches), their own kind: the program's page faults read only the pages it touched.
    pub map_read: u64,
    pub written: u64,
    /// Written bytes a later fsync, fdatasync, sync_file_range, msync, syncfs or sync wrote
    /// back (or that an `O_SYNC`/`O_DSYNC` descriptor or `RWF_*SYNC` wrote through).
    pub synced: u64,
}

/// Counts `script`'s bytes, taking each call's bytes from `moved` (`None`: the call failed
/// or was not issued, so it moved nothing).
pub fn bytes(script: &Script, moved: impl Fn(usize) -> Option<i64>) -> Bytes {
    let mut out = Bytes::default();
    // Per file, the bytes written since its last write-back.
    let mut dirty: BTreeMap<&str, u64> = BTreeMap::new();
    let mut sync_open = vec![false; script.slot_path.len()];
    for (i, call) in script.calls.iter().enumerate() {
        let slot = script.slot[i];
        let file = match (slot, call.op) {
            (Some(s), op) if op != Op::Open => script.slot_path[s].as_str(),
            _ => call.path.as_deref().unwrap_or_default(),
        };
        let Some(n) = moved(i) else { continue };
        let n = n.max(0) as u64;
        match call.op {
            Op::Open => {
                if let Some(s) = slot.and_then(|s| sync_open.get_mut(s)) {
                    *s = has_flag(call, "O_SYNC") || has_flag(call, "O_DSYNC");
                }
            }
            Op::Read => out.read += n,
            Op::MapRead => out.map_read += n,
            Op::Write => {
                out.written += n;
                let through = slot.is_some_and(|s| sync_open[s])
                    || has_flag(call, "RWF_DSYNC")
                    || has_flag(call, "RWF_SYNC");
                if through {
                    out.synced += n;
                } else {
                    *dirty.entry(file).or_default() += n;
                }
            }
            Op::Msync => {
                out.written += n;
                out.synced += n;
            }
            Op::Fsync | Op::Fdatasync | Op::SyncFileRange => {
                out.synced += dirty.remove(file).unwrap_or(0);
            }
            Op::Sync | Op::Syncfs => {
                out.synced += dirty.values().sum::<u64>();
                dirty.clear();
            }
            _ => {}
        }
    }
    out
}

/// What the recorded call moved: its result when it succeeded; for an msync (whose result
/// is 0), the range it wrote back.
fn recorded(call: &Call) -> Option<i64> {
    match (call.op, call.ret) {
        (Op::Msync, Some(_)) => call.size.and_then(|s| i64::try_from(s).ok()),
        (_, r) => r,
    }
}

/// The self-check of one replay: notes and metrics added to `out`.
pub struct Check<'a> {
    pub trace: &'a Trace,
    pub script: &'a Script<'a>,
    pub logs: &'a [ThreadLog],
    pub seconds: f64,
    pub timing: Timing,
    /// The replayed file system's type (`crate::sys::fs_name`).
    pub fs_type: Option<String>,
    /// What the replay's clones did (`super::reflink`).
    pub cloned: super::reflink::Cloned,
    /// Renames whose `RENAME_NOREPLACE` the target refused, done as `mv` does there.
    pub unflagged_renames: u64,
    /// Initial files with holes that have none here (`super::lay::holes_not_kept`).
    pub holes_not_kept: u64,
}

/// What the replay's threads logged, gathered by call: each call's result (by its index in
/// the trace), and per operation the calls replayed, those left out, and the attribute
/// calls refused here that the program had succeed, and the calls this file system refused
/// as it would have refused the program's (`check::refused_here`: locks, fallocates).
struct Tally<'l> {
    results: Vec<Option<&'l Returned>>,
    replayed: BTreeMap<Op, u64>,
    skipped: BTreeMap<Op, u64>,
    not_kept: BTreeMap<Op, u64>,
    refused: BTreeMap<Op, u64>,
}

impl Check<'_> {
    /// Adds the self-check's figures, its note, and its warnings' metrics to `out`.
    pub fn add_to(&self, out: &mut Outcome) {
        let tally = self.tally();
        let (mut note, moved_all) = self.add_counts(&tally, &mut out.metrics);
        self.add_time(&mut out.metrics, &mut out.notes, &mut note);
        let unseen = self.add_warnings(out, &tally.not_kept);
        self.add_refused(out, &tally.refused);
        self.add_unflagged(out);
        self.add_holes_not_kept(out);
        if !tally.skipped.is_empty() || !moved_all || unseen {
            out.metrics.insert("replay_incomplete".into(), 1.0);
        }
        self.add_clones(out, &mut note);
        out.notes.push(note);
    }

    /// The threads' logs gathered by call.
    fn tally(&self) -> Tally<'_> {
        let mut t = Tally {
            results: vec![None; self.trace.calls.len()],
            replayed: BTreeMap::new(),
            skipped: BTreeMap::new(),
            not_kept: BTreeMap::new(),
            refused: BTreeMap::new(),
        };
        for (i, r, _) in self.logs.iter().flat_map(|l| &l.calls) {
            let call = &self.trace.calls[*i];
            let op = call.op;
            match r {
                Some(r) => {
                    t.results[*i] = Some(r);
                    *t.replayed.entry(op).or_default() += 1;
                    if call.ret.is_some() && super::check::not_kept(call, r) {
                        *t.not_kept.entry(op).or_default() += 1;
                    }
                    if super::check::refused_here(call, r) {
                        *t.refused.entry(op).or_default() += 1;
                    }
                }
                None => *t.skipped.entry(op).or_default() += 1,
            }
        }
        t
    }

    /// The calls replayed and left out by kind, and the bytes read, written and synced
    /// against the trace's, as metrics; returns the self-check's note so far, and whether
    /// the replay moved the trace's bytes exactly.
    fn add_counts(&self, t: &Tally, m: &mut BTreeMap<String, f64>) -> (String, bool) {
        let want = bytes(self.script, |i| recorded(&self.script.calls[i]));
        let got = bytes(self.script, |i| {
            t.results[i].and_then(|r| r.as_ref().ok().copied())
        });
        for (op, n) in &t.replayed {
            m.insert(format!("replayed_{}_calls", op_name(*op)), *n as f64);
        }
        for (op, n) in &t.skipped {
            m.insert(format!("skipped_{}_calls", op_name(*op)), *n as f64);
        }
        for (what, w, g) in [
            ("read", want.read, got.read),
            ("written", want.written, got.written),
            ("synced", want.synced, got.synced),
        ] {
            m.insert(format!("trace_{what}_bytes"), w as f64);
            m.insert(format!("replayed_{what}_bytes"), g as f64);
        }
        if want.map_read + got.map_read > 0 {
            m.insert("trace_map_read_bytes".into(), want.map_read as f64);
            m.insert("replayed_map_read_bytes".into(), got.map_read as f64);
        }
        let mut note = format!(
            "self-check: {} calls replayed, {} left out{}; bytes read / written / synced {} / {} / {} (the trace's {} / {} / {})",
            t.replayed.values().sum::<u64>(),
            t.skipped.values().sum::<u64>(),
            by_kind(&t.skipped),
            got.read,
            got.written,
            got.synced,
            want.read,
            want.written,
            want.synced,
        );
        if want.map_read + got.map_read > 0 {
            note.push_str(&format!(
                "; bytes read through mappings {} (the trace's {})",
                got.map_read, want.map_read
            ));
        }
        (note, want == got)
    }

    /// The warnings beside the figures: attributes this file system keeps none of, a trace
    /// recorded on another kind of file system, the I/O the trace could not hold. Says
    /// whether there was such I/O (the replay is then incomplete).
    fn add_warnings(&self, out: &mut Outcome, not_kept: &BTreeMap<Op, u64>) -> bool {
        let m = &mut out.metrics;
        if !not_kept.is_empty() {
            m.insert(
                "replay_attrs_not_kept".into(),
                not_kept.values().sum::<u64>() as f64,
            );
            out.notes.push(format!(
                "fidelity: {} attribute calls{} succeeded for the program and were refused here, as this file system keeps no such attributes (extended attributes, owners): the program would have met the same",
                not_kept.values().sum::<u64>(),
                by_kind(not_kept)
            ));
        }
        let recorded_on = self.trace.header.fs_type.as_deref();
        if let Some(why) = kind_note(recorded_on, self.fs_type.as_deref()) {
            m.insert("replay_recorded_on_other_kind".into(), 1.0);
            out.notes.push(why);
        }
        let unseen = &self.trace.header.unseen;
        if unseen.is_empty() {
            return false;
        }
        m.insert(
            "replay_unseen_io".into(),
            unseen.values().sum::<u64>() as f64,
        );
        out.notes.push(format!(
            "fidelity: the trace could not hold some of the program's I/O, so the replay does not do it: {}",
            crate::trace::calls::unseen_text(unseen)
        ));
        true
    }

    /// The calls this file system refused as it would have refused the program's: per kind
    /// (`refused_lock_calls`, `refused_fallocate_calls`), and a note that says why.
    fn add_refused(&self, out: &mut Outcome, refused: &BTreeMap<Op, u64>) {
        if refused.is_empty() {
            return;
        }
        for (op, n) in refused {
            out.metrics
                .insert(format!("refused_{}_calls", op_name(*op)), *n as f64);
        }
        out.notes.push(format!(
            "fidelity: {} calls{} were refused by {}, their result there as the program would have met it: a lock held by another of the replay's open files (EAGAIN) or on a file system that keeps no locks, a fallocate on one that has none (EOPNOTSUPP; one that would have grown the file is followed by the size it asked for, as glibc's posix_fallocate leaves it)",
            refused.values().sum::<u64>(),
            by_kind(refused),
            self.fs_type.as_deref().unwrap_or("this file system")
        ));
    }

    /// The renames the target took only without their `RENAME_NOREPLACE` (`super::call`).
    fn add_unflagged(&self, out: &mut Outcome) {
        let n = self.unflagged_renames;
        if n == 0 {
            return;
        }
        out.metrics
            .insert("renames_without_their_flags".into(), n as f64);
        out.notes.push(format!(
            "fidelity: {n} renames with RENAME_NOREPLACE were refused by {} (EINVAL: it takes no renameat2 flags) and done as `mv` does there: the new name checked free, then renamed without the flag",
            self.fs_type.as_deref().unwrap_or("this file system")
        ));
    }

    /// The initial files whose holes this file system did not keep, and the `SEEK_DATA`s
    /// that found data in them where the program's found none (`check::seek_into_hole_not_kept`):
    /// a warning, as the program there would have read those bytes as data, which the
    /// replay, issuing the program's calls, does not.
    fn add_holes_not_kept(&self, out: &mut Outcome) {
        if self.holes_not_kept == 0 {
            return;
        }
        let seeks = (self.logs.iter().flat_map(|l| &l.calls))
            .filter(|(i, r, _)| {
                r.as_ref().is_some_and(|r| {
                    super::check::seek_into_hole_not_kept(&self.trace.calls[*i], r)
                })
            })
            .count();
        out.metrics
            .insert("initial_holes_not_kept".into(), self.holes_not_kept as f64);
        out.metrics
            .insert("seeks_into_holes_not_kept".into(), seeks as f64);
        out.notes.push(format!(
            "fidelity warning: {} initial files with holes have none on {}, which keeps no holes (their holes read as zeros); {seeks} SEEK_DATA calls that found no more data for the program found data here. The program there would have read those bytes as data; the replay issues the program's calls, so it does less than the program would have",
            self.holes_not_kept,
            self.fs_type.as_deref().unwrap_or("this file system")
        ));
    }

    /// The clones: their bytes as their own kind (a clone writes no data of its own where
    /// it shares extents), and how many this file system could only copy.
    fn add_clones(&self, out: &mut Outcome, note: &mut String) {
        let c = self.cloned;
        let recorded = self
            .trace
            .calls
            .iter()
            .filter(|call| call.op == Op::Clone && call.ret.is_some())
            .count();
        if recorded == 0 && c.shared + c.copied == 0 {
            return;
        }
        let m = &mut out.metrics;
        m.insert("replayed_cloned_bytes".into(), c.bytes as f64);
        m.insert("clones_sharing_extents".into(), c.shared as f64);
        m.insert("clones_replayed_as_copies".into(), c.copied as f64);
        m.insert("copies_made_by_clones".into(), c.made_copies as f64);
        note.push_str(&format!(
            "; {} clone{} ({} bytes, not counted as written) of the trace's {recorded}",
            c.shared + c.copied,
            if c.shared + c.copied == 1 { "" } else { "s" },
            c.bytes
        ));
        if c.made_copies > 0 {
            out.notes.push(format!(
                "fidelity: {} copies the program made after a clone that failed for it were not issued: the clone succeeded on {}, where the program would have made no copy",
                c.made_copies,
                self.fs_type.as_deref().unwrap_or("this file system")
            ));
        }
        if c.copied > 0 {
            out.notes.push(format!(
                "fidelity: {} clones replayed as copies on {}, which cannot share extents: the files hold what the program's did, but this file system wrote the bytes the program's shared",
                c.copied,
                self.fs_type.as_deref().unwrap_or("this file system")
            ));
        }
    }

    /// The replay's time against the program's (`time_check`), on the recorded file-system
    /// type: the gap as a metric, a warning past it, and the figures in the self-check's note.
    fn add_time(&self, m: &mut BTreeMap<String, f64>, notes: &mut Vec<String>, note: &mut String) {
        let Some((program, gap)) = self.time_gap() else {
            return;
        };
        m.insert("replay_time_gap_pct".into(), gap * 100.0);
        if ProgramTime::warns(gap) {
            notes.push(format!(
                "fidelity warning: on the file-system type it was recorded on, the replay took {:+.0} % against {} (beyond {TIME_GAP_PCT} %)",
                gap * 100.0,
                program.phrase(),
            ));
        }
        note.push_str(&format!(
            "; on {}, the type it was recorded on, the replay took {:.3} s against {} ({:+.0} %{})",
            self.fs_type.as_deref().unwrap_or_default(),
            self.seconds,
            program.phrase(),
            gap * 100.0,
            match (self.timing, self.trace.header.user_cpu_s) {
                (Timing::Fast, _) => ", without the program's own time between calls".into(),
                (Timing::Think, None) => ", with the program's pauses of 1 ms or more".into(),
                (Timing::Think, Some(user)) => format!(
                    ", with the program's pauses scaled to its computing ({user:.3} s of user CPU)"
                ),
                (Timing::Original, _) => String::new(),
            }
        ));
    }

    /// The program's time and the replay's gap from it (`time_check`), when the two ran on
    /// the same file-system type and there is a time to compare with.
    fn time_gap(&self) -> Option<(ProgramTime, f64)> {
        let recorded_on = self.trace.header.fs_type.as_deref()?;
        if self.fs_type.as_deref() != Some(recorded_on) {
            return None;
        }
        let program = ProgramTime::of(self.trace, self.script);
        program.gap(self.seconds).map(|gap| (program, gap))
    }
}

/// Whether a file system type is served through FUSE (`crate::sys::fs_name`'s name).
fn is_fuse(fs_type: &str) -> bool {
    fs_type == "fuse"
}

/// The note for a trace recorded through FUSE and replayed on a kernel file system, or the
/// other way: programs that adapt to the file system they run on call otherwise across
/// that line, and a trace holds only what the program did where it was recorded. The
/// corpus's programs recorded on ext4 and on ntfs-3g (bench/replay_counts.py
/// `--record-only`): rsync made 3,967 opens and 1,269 fchmods on ext4 against 3,321 and 623
/// on ntfs; git's commit opened 189 and 540 files on ext4 in two recordings (re-reading the
/// files its index calls racily clean), 49 on ntfs in both. Between two kernel file systems the corpus showed no such difference, so
/// nothing is said there.
fn kind_note(recorded_on: Option<&str>, replayed_on: Option<&str>) -> Option<String> {
    let (from, to) = (recorded_on?, replayed_on?);
    (is_fuse(from) != is_fuse(to)).then(|| {
        format!(
            "fidelity: recorded on {from}, replayed on {to}: the trace holds the calls the program made on {from}; a program that adapts to its file system calls otherwise across FUSE (rsync changes fewer modes on ntfs-3g, git re-reads fewer files after a slower clone), which a replay cannot know"
        )
    })
}

/// " (3 read, 1 write)" for the calls left out by kind; empty when none were.
fn by_kind(skipped: &BTreeMap<Op, u64>) -> String {
    if skipped.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = skipped
        .iter()
        .map(|(op, n)| format!("{n} {}", op_name(*op)))
        .collect();
    format!(" ({})", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::format::{Call, ProgramTime};

    fn call(op: Op, fd: Option<i32>, path: Option<&str>, ret: i64) -> Call {
        Call {
            thread: 0,
            start: 0.0,
            dur: 0.0,
            op,
            syscall: String::new(),
            path: path.map(str::to_string),
            path2: None,
            target: None,
            fd,
            source: None,
            flags: vec![],
            mode: None,
            owner: None,
            size: None,
            offset: None,
            ret: Some(ret),
            err: None,
        }
    }

    #[test]
    fn written_bytes_count_as_synced_once_their_file_is_written_back() {
        let mut dsync = call(Op::Open, None, Some("log"), 4);
        dsync.flags = vec!["O_WRONLY".into(), "O_DSYNC".into()];
        let mut calls = vec![
            call(Op::Open, None, Some("db"), 3),
            call(Op::Write, Some(3), None, 100),
            call(Op::Write, Some(3), None, 50),
            call(Op::Fdatasync, Some(3), None, 0),
            call(Op::Write, Some(3), None, 7),
            dsync,
            call(Op::Write, Some(4), None, 10),
            call(Op::Read, Some(3), None, 20),
            call(Op::Msync, None, Some("db"), 4096),
        ];
        calls[8].size = Some(4096);
        let trace = Trace::new(vec!["t".into()], 1, 1.0, vec![], calls);
        let script = crate::workload::replay::script::resolve(&trace);
        let got = bytes(&script, |i| script.calls[i].ret);
        // 150 by the fdatasync, 10 through O_DSYNC, 4096 by the msync; the 7 stay dirty.
        let want = Bytes {
            read: 20,
            map_read: 0,
            written: 100 + 50 + 7 + 10 + 4096,
            synced: 150 + 10 + 4096,
        };
        assert_eq!(got, want);
        // A replay that wrote nothing for the second write moves the figures.
        let short = bytes(&script, |i| if i == 2 { None } else { script.calls[i].ret });
        assert_eq!(
            (short.written, short.synced),
            (want.written - 50, want.synced - 50)
        );
    }

    /// Issue 56: rsync and git make other calls on ntfs-3g than on ext4, where the corpus
    /// recorded them; a replay across that line says so, and only across it.
    #[test]
    fn a_trace_recorded_on_ext4_and_replayed_through_fuse_says_the_program_may_call_otherwise() {
        let note = kind_note(Some("ext4"), Some("fuse")).unwrap();
        assert!(
            note.starts_with("fidelity: recorded on ext4, replayed on fuse"),
            "{note}"
        );
        assert!(kind_note(Some("fuse"), Some("xfs")).is_some());
        assert_eq!(kind_note(Some("ext4"), Some("xfs")), None);
        assert_eq!(kind_note(Some("fuse"), Some("fuse")), None);
        assert_eq!(kind_note(None, Some("fuse")), None);
    }

    /// Defect (issue 56): the check compared the replay with the trace's clock, strace's with
    /// its calibrated cost taken out, which on short programs is wrong by factors: sqlite in
    /// WAL mode lasted 0.094 s on it for a program that ran 0.248 s, and every replay on ext4
    /// (0.145-0.214 s, shorter than the real program) was warned "+91 %". A trace that holds
    /// what record knows of the program's time (strace's wall clock and its cost over the
    /// run) is held to the bracket they give; only a replay outside it by more than the
    /// gap is warned.
    #[test]
    fn a_short_programs_replay_is_not_warned_for_strace_s_compressed_clock() {
        let calls = vec![
            call(Op::Open, None, Some("app.db"), 3),
            call(Op::Write, Some(3), None, 4096),
            call(Op::Fdatasync, Some(3), None, 0),
        ];
        let mut trace = Trace::new(vec!["sqlite3".into()], 1, 0.094, vec![], calls);
        trace.header.fs_type = Some("ext4".into());
        trace.header.user_cpu_s = Some(0.0095);
        let script = crate::workload::replay::script::resolve(&trace);
        let check = |trace: &Trace, seconds: f64| {
            let mut out = Outcome::default();
            Check {
                trace,
                script: &script,
                logs: &[],
                seconds,
                timing: Timing::Think,
                fs_type: Some("ext4".into()),
                cloned: Default::default(),
                unflagged_renames: 0,
                holes_not_kept: 0,
            }
            .add_to(&mut out);
            out
        };
        let warned = |out: &Outcome| out.notes.iter().any(|n| n.starts_with("fidelity warning"));
        // Before: the clock's 0.094 s, and a replay of 0.18 s is "+91 %".
        assert!(warned(&check(&trace, 0.18)));
        // sqlite-wal under strace: 2,087 calls at 33.5 µs in 0.158 s traced.
        let mut recorded = trace.clone();
        recorded.header.program_time = Some(ProgramTime::measured(0.158, 2087, 33.5e-6));
        for seconds in [0.145, 0.18, 0.197] {
            let out = check(&recorded, seconds);
            assert!(!warned(&out), "{seconds}: {:?}", out.notes);
            let note = out.notes.last().unwrap();
            assert!(
                note.contains("known only to within [0.053, 0.158] s"),
                "{note}"
            );
            assert!(note.contains("strace's stops were 0.8×"), "{note}");
        }
        // A replay well beyond what the program could have taken is still warned.
        let out = check(&recorded, 0.3);
        assert!(warned(&out), "{:?}", out.notes);
        assert!(out.metrics["replay_time_gap_pct"] > 25.0);
    }

    #[test]
    fn a_sync_writes_back_every_file() {
        let calls = vec![
            call(Op::Open, None, Some("a"), 3),
            call(Op::Open, None, Some("b"), 4),
            call(Op::Write, Some(3), None, 10),
            call(Op::Write, Some(4), None, 20),
            call(Op::Sync, None, None, 0),
        ];
        let trace = Trace::new(vec!["t".into()], 1, 1.0, vec![], calls);
        let script = crate::workload::replay::script::resolve(&trace);
        assert_eq!(bytes(&script, |i| script.calls[i].ret).synced, 30);
    }
}
