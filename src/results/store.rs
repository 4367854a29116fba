//! `results.jsonl`: the first line holds host facts, each further line one measurement,
//! appended and fsynced the moment the measurement is final.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::budget_stop::BudgetStop;
use super::record::{CellKey, HostFacts, Measurement, Record, RunEnd, Status};

/// The results file's name inside a results directory.
pub const FILE_NAME: &str = "results.jsonl";

/// Why a results directory cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{0} is not an fsarena results directory (no results.jsonl starting with host facts)")]
    NotResults(PathBuf),
    #[error("{0} already holds results; choose another --out or use --resume {0}")]
    Exists(PathBuf),
    #[error("{dir} is being written by another fsarena run ({holder}): wait for it to end, or choose another --out")]
    Busy { dir: PathBuf, holder: String },
}

/// The lock file inside a results directory: held (flock, exclusive) by the one process
/// writing `results.jsonl`, for the life of its run.
pub const LOCK_NAME: &str = ".fsarena.lock";

/// Takes the results directory's writer lock, or says who holds it. The kernel drops the
/// lock when the holder exits however it exits (kill -9 included), so it never goes stale.
fn lock(dir: &Path) -> Result<File, StoreError> {
    let path = dir.join(LOCK_NAME);
    let io_err = |source| StoreError::Io {
        path: path.clone(),
        source,
    };
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(io_err)?;
    match rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => {}
        Err(e) if e == rustix::io::Errno::WOULDBLOCK => {
            let mut holder = String::new();
            let _ = f.read_to_string(&mut holder);
            let holder = holder.trim();
            return Err(StoreError::Busy {
                dir: dir.to_path_buf(),
                holder: if holder.is_empty() {
                    "a process that holds its lock".into()
                } else {
                    holder.to_string()
                },
            });
        }
        Err(e) => return Err(io_err(e.into())),
    }
    // Who holds it, for the refusal a second writer gets.
    f.set_len(0).map_err(io_err)?;
    f.seek(SeekFrom::Start(0)).map_err(io_err)?;
    writeln!(f, "pid {}", std::process::id()).map_err(io_err)?;
    Ok(f)
}

/// An unterminated last line cut off `results.jsonl` on resume (see [`Store::reopen`]).
#[derive(Debug, Clone)]
pub struct TornTail {
    /// Where the torn line started (the file's new length).
    pub offset: u64,
    pub bytes: usize,
    /// The copy of the removed bytes, next to the results file.
    pub saved: PathBuf,
}

/// Cuts an unterminated last line off `path` (a run killed, or a disk filled, mid-write),
/// keeping a copy of the removed bytes in `path.torn-OFFSET`, so that appending never glues
/// a new record onto half of an old one.
fn repair_tail(path: &Path) -> Result<Option<TornTail>, StoreError> {
    let io_err = |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    };
    let bytes = std::fs::read(path).map_err(io_err)?;
    if bytes.is_empty() || bytes.ends_with(b"\n") {
        return Ok(None);
    }
    let offset = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let mut saved = path.as_os_str().to_owned();
    saved.push(format!(".torn-{offset}"));
    let saved = PathBuf::from(saved);
    let mut copy = File::create(&saved).map_err(io_err)?;
    copy.write_all(&bytes[offset..]).map_err(io_err)?;
    copy.sync_all().map_err(io_err)?;
    let f = OpenOptions::new().write(true).open(path).map_err(io_err)?;
    f.set_len(offset as u64).map_err(io_err)?;
    f.sync_all().map_err(io_err)?;
    Ok(Some(TornTail {
        offset: offset as u64,
        bytes: bytes.len() - offset,
        saved,
    }))
}

/// The append side of a results file.
#[derive(Debug)]
pub struct Store {
    path: PathBuf,
    file: File,
    /// The directory's writer lock, held as long as the store is open.
    _lock: File,
}

impl Store {
    /// Starts a new results file in `dir` (created if needed) with the host facts line.
    pub fn create(dir: &Path, host: &HostFacts) -> Result<Store, StoreError> {
        let io_err = |source| StoreError::Io {
            path: dir.to_path_buf(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(io_err)?;
        let lock = lock(dir)?;
        let path = dir.join(FILE_NAME);
        if path.exists() {
            return Err(StoreError::Exists(dir.to_path_buf()));
        }
        let file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(&path)
            .map_err(io_err)?;
        let mut s = Store {
            path,
            file,
            _lock: lock,
        };
        s.write(&Record::Host(Box::new(host.clone())))
            .map_err(io_err)?;
        Ok(s)
    }

    /// Reopens an existing results file to append to it (`--resume`), under the
    /// directory's writer lock. A torn last line is cut off first (and kept aside, see
    /// [`TornTail`]); read the file back with [`load`] only after this.
    pub fn reopen(dir: &Path) -> Result<(Store, Option<TornTail>), StoreError> {
        let path = dir.join(FILE_NAME);
        if !path.is_file() {
            return Err(StoreError::NotResults(dir.to_path_buf()));
        }
        let lock = lock(dir)?;
        let torn = repair_tail(&path)?;
        let file = OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(|source| StoreError::Io {
                path: path.clone(),
                source,
            })?;
        Ok((
            Store {
                path,
                file,
                _lock: lock,
            },
            torn,
        ))
    }

    /// The results file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one measurement and makes it durable before returning. Refused when the
    /// results file was removed or replaced since it was opened: a record appended to a
    /// file no path leads to any more would be lost with the run.
    pub fn append(&mut self, m: &Measurement) -> io::Result<()> {
        self.still_in_place()?;
        self.write(&Record::Measurement(Box::new(m.clone())))
    }

    /// Appends the budget's stop of a comparison, durable before returning, under the same
    /// check as a measurement.
    pub fn append_stop(&mut self, s: &BudgetStop) -> io::Result<()> {
        self.still_in_place()?;
        self.write(&Record::BudgetStop(Box::new(s.clone())))
    }

    /// Appends the end of this invocation of the run, durable before returning, under the
    /// same check as a measurement.
    pub fn append_end(&mut self, e: &RunEnd) -> io::Result<()> {
        self.still_in_place()?;
        self.write(&Record::RunEnd(*e))
    }

    /// Whether the path still leads to the file this store writes (same device and inode).
    fn still_in_place(&self) -> io::Result<()> {
        use std::os::unix::fs::MetadataExt;
        let open = self.file.metadata()?;
        let gone = |what: &str| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("the results file was {what} during the run; measuring on would lose every further record"),
            )
        };
        match std::fs::metadata(&self.path) {
            Ok(now) if (now.dev(), now.ino()) == (open.dev(), open.ino()) => Ok(()),
            Ok(_) => Err(gone("replaced")),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(gone("removed")),
            Err(e) => Err(e),
        }
    }

    fn write(&mut self, r: &Record) -> io::Result<()> {
        // One write call per line: a crash leaves at most one torn line at the end.
        let mut line = serde_json::to_vec(r).map_err(io::Error::other)?;
        line.push(b'\n');
        self.file.write_all(&line)?;
        self.file.sync_data()
    }
}

/// A results file as read back.
#[derive(Debug, Default)]
pub struct Loaded {
    pub host: HostFacts,
    /// Measurements, the last record winning for a cell recorded twice (a resumed run
    /// re-measures what was interrupted).
    pub measurements: Vec<Measurement>,
    /// Lines that could not be read: (line number, reason). Reported, never fatal.
    pub skipped: Vec<(usize, String)>,
    /// `disturbed` records a later record of the same cell replaced: set aside and
    /// measured again. Kept for the report, which says how many and why.
    pub set_aside: Vec<Measurement>,
    /// The comparisons `--runs auto` stopped giving runs, in record order.
    pub budget_stops: Vec<BudgetStop>,
}

impl Loaded {
    /// What a results file starting with `host` holds before its first measurement.
    pub fn new(host: HostFacts) -> Loaded {
        Loaded {
            host,
            ..Loaded::default()
        }
    }

    /// Adds a measurement just appended to the results file, by the rule [`load`] reads
    /// the file with: a cell recorded again keeps its place and takes the later record.
    /// A run keeps its results so, in memory, rather than reading the file back.
    pub fn record(&mut self, m: Measurement) {
        let k = m.key();
        match self.measurements.iter_mut().find(|x| x.key() == k) {
            Some(earlier) => {
                let replaced = std::mem::replace(earlier, m);
                self.set_aside_if_disturbed(replaced);
            }
            None => self.measurements.push(m),
        }
    }

    /// Keeps `replaced`, a record a later one of its cell took the place of, when it was
    /// set aside as disturbed.
    fn set_aside_if_disturbed(&mut self, replaced: Measurement) {
        if replaced.status == Status::Disturbed {
            self.set_aside.push(replaced);
        }
    }
}

/// Reads `dir/results.jsonl`, skipping (and reporting) corrupt lines.
pub fn load(dir: &Path) -> Result<Loaded, StoreError> {
    let path = dir.join(FILE_NAME);
    let f = File::open(&path).map_err(|source| {
        if source.kind() == io::ErrorKind::NotFound {
            StoreError::NotResults(dir.to_path_buf())
        } else {
            StoreError::Io {
                path: path.clone(),
                source,
            }
        }
    })?;
    let mut out = Loaded::default();
    let mut host = None;
    let mut order: Vec<CellKey> = Vec::new();
    let mut latest: HashMap<CellKey, Measurement> = HashMap::new();
    // Line of the final record each cell holds, to name a second one.
    let mut final_at: HashMap<CellKey, usize> = HashMap::new();
    for (i, line) in BufReader::new(f).split(b'\n').enumerate() {
        let n = i + 1;
        let line = line.map_err(|source| StoreError::Io {
            path: path.clone(),
            source,
        })?;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Record>(&line) {
            Ok(Record::Host(h)) if n == 1 => host = Some(*h),
            Ok(Record::Host(_)) => out.skipped.push((n, "a second host record".into())),
            Ok(Record::BudgetStop(s)) => out.budget_stops.push(*s),
            // Read by the benchmarks' scripts only: nothing a report or a resume decides by.
            Ok(Record::RunEnd(_)) => {}
            Ok(Record::Measurement(m)) => {
                let k = m.key();
                if is_final(&m) {
                    if let Some(first) = final_at.insert(k.clone(), n) {
                        // Two writers (or a resume beside its run) measured the same
                        // repetition: the later record is used, and the report says so.
                        out.skipped.push((
                            first,
                            format!(
                                "duplicate: {} {}{} threads {} repetition {} is recorded again on line {n}; line {n} is used",
                                k.target,
                                k.workload,
                                if k.variant.is_empty() {
                                    String::new()
                                } else {
                                    format!(" [{}]", k.variant)
                                },
                                k.threads,
                                k.repetition + 1
                            ),
                        ));
                    }
                }
                if !latest.contains_key(&k) {
                    order.push(k.clone());
                }
                if let Some(replaced) = latest.insert(k, *m) {
                    out.set_aside_if_disturbed(replaced);
                }
            }
            Err(e) => out.skipped.push((n, e.to_string())),
        }
    }
    out.host = host.ok_or_else(|| StoreError::NotResults(dir.to_path_buf()))?;
    out.measurements = order
        .into_iter()
        .filter_map(|k| latest.remove(&k))
        .collect();
    Ok(out)
}

/// Whether a recorded cell counts as done for `--resume`: interrupted ones are redone, and
/// so are failures whose tool was killed by a signal ([`killed_by_signal`]) and
/// measurements set aside as disturbed whose retry the run did not reach.
pub fn is_final(m: &Measurement) -> bool {
    !matches!(m.status, Status::Interrupted | Status::Disturbed) && !killed_by_signal(m)
}

/// What a tool's death by a signal says in a record's error: a provisioning helper
/// ([`crate::provision::command`]), a file system's check, or a workload's child (Rust's
/// `ExitStatus` shows "signal: N").
const SIGNAL_DEATHS: [&str; 2] = ["killed by a signal", "signal: "];

/// Whether `m` failed (`error` or `invalid`) because a tool it ran died of a signal. That
/// is no verdict on the file system: before issue 39 a terminal's Ctrl-C killed the tools
/// with fsarena and such records were final, so `--resume` could never finish the plan.
/// They are measured again on resume; if the tool dies again, the new record says so. A
/// tool the OOM killer ends is measured again too, which costs time but never hides a
/// failure (a fresh run records it, and exits 1).
pub fn killed_by_signal(m: &Measurement) -> bool {
    matches!(m.status, Status::Error | Status::Invalid)
        && m.error
            .as_deref()
            .is_some_and(|e| SIGNAL_DEATHS.iter().any(|s| e.contains(s)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(target: &str, rep: u32, status: Status) -> Measurement {
        Measurement {
            target: target.into(),
            workload: "scan".into(),
            repetition: rep,
            threads: 1,
            status,
            ..Default::default()
        }
    }

    #[test]
    fn round_trip_skips_corrupt_lines_and_keeps_latest() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::create(dir.path(), &HostFacts::default()).unwrap();
        s.append(&m("a", 0, Status::Ok)).unwrap();
        s.append(&m("a", 1, Status::Interrupted)).unwrap();
        drop(s);
        let mut f = OpenOptions::new()
            .append(true)
            .open(dir.path().join(FILE_NAME))
            .unwrap();
        // A corrupt but complete line stays (skipped and reported); a torn tail goes.
        f.write_all(b"garbage\n{\"record\":\"measurement\",\"tar")
            .unwrap();
        drop(f);
        let (mut s, torn) = Store::reopen(dir.path()).unwrap();
        let torn = torn.expect("the torn tail is cut off");
        assert_eq!(
            std::fs::read(&torn.saved).unwrap(),
            b"{\"record\":\"measurement\",\"tar"
        );
        s.append(&m("a", 1, Status::Ok)).unwrap();
        drop(s);
        let l = load(dir.path()).unwrap();
        assert_eq!(l.measurements.len(), 2);
        assert!(l.measurements.iter().all(|x| x.status == Status::Ok));
        assert_eq!(l.skipped.len(), 1, "{:?}", l.skipped);
        assert_eq!(l.skipped[0].0, 4);
        assert!(matches!(
            Store::create(dir.path(), &HostFacts::default()),
            Err(StoreError::Exists(_))
        ));
    }

    /// The run's end is a line of its own, after the measurements: read back as it was
    /// written, and neither a measurement nor a skipped line when the file is loaded.
    #[test]
    fn the_runs_end_is_recorded_and_loads_as_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::create(dir.path(), &HostFacts::default()).unwrap();
        s.append(&m("a", 0, Status::Ok)).unwrap();
        let end = RunEnd {
            started_unix: 100.0,
            finished_unix: 396.5,
        };
        s.append_end(&end).unwrap();
        drop(s);
        let text = std::fs::read_to_string(dir.path().join(FILE_NAME)).unwrap();
        let last = text.lines().last().unwrap();
        assert!(last.starts_with("{\"record\":\"run_end\""), "{last}");
        match serde_json::from_str::<Record>(last).unwrap() {
            Record::RunEnd(e) => assert_eq!(e, end),
            other => panic!("read back as {other:?}"),
        }
        let l = load(dir.path()).unwrap();
        assert_eq!(l.measurements.len(), 1);
        assert!(l.skipped.is_empty(), "{:?}", l.skipped);
    }

    #[test]
    fn a_failure_whose_tool_was_killed_by_a_signal_is_not_final() {
        let with = |status, e: &str| Measurement {
            error: Some(e.into()),
            ..m("a", 0, status)
        };
        let mkfs =
            "provision: `mkfs.btrfs -q -f /dev/loop0` failed (killed by a signal): (no output)";
        assert!(!is_final(&with(Status::Error, mkfs)));
        assert!(!is_final(&with(
            Status::Invalid,
            "check killed by a signal"
        )));
        assert!(!is_final(&with(Status::Error, "fio (signal: 2 (SIGINT))")));
        assert!(is_final(&with(
            Status::Error,
            "provision: `mount` failed (exit 32)"
        )));
        assert!(is_final(&with(Status::Enospc, "killed by a signal")));
        assert!(is_final(&m("a", 0, Status::Ok)));
        assert!(!is_final(&m("a", 0, Status::Interrupted)));
    }

    #[test]
    fn measurements_recorded_in_memory_match_the_file_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::create(dir.path(), &HostFacts::default()).unwrap();
        let mut kept = Loaded::new(HostFacts::default());
        for x in [
            m("a", 0, Status::Ok),
            m("a", 1, Status::Interrupted),
            m("b", 0, Status::Ok),
            m("a", 1, Status::Ok),
        ] {
            s.append(&x).unwrap();
            kept.record(x);
        }
        let read = load(dir.path()).unwrap();
        let keys = |l: &Loaded| -> Vec<(CellKey, Status)> {
            l.measurements.iter().map(|x| (x.key(), x.status)).collect()
        };
        assert_eq!(keys(&kept), keys(&read));
    }

    #[test]
    fn an_append_to_a_removed_or_replaced_results_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::create(dir.path(), &HostFacts::default()).unwrap();
        s.append(&m("a", 0, Status::Ok)).unwrap();
        let path = dir.path().join(FILE_NAME);
        std::fs::rename(&path, dir.path().join("moved")).unwrap();
        let e = s.append(&m("a", 1, Status::Ok)).unwrap_err();
        assert!(e.to_string().contains("removed"), "{e}");
        std::fs::create_dir(&path).unwrap();
        let e = s.append(&m("a", 1, Status::Ok)).unwrap_err();
        assert!(e.to_string().contains("replaced"), "{e}");
    }

    #[test]
    fn a_second_writer_is_refused_while_the_first_holds_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::create(dir.path(), &HostFacts::default()).unwrap();
        let busy = Store::reopen(dir.path()).unwrap_err();
        assert!(matches!(busy, StoreError::Busy { .. }), "{busy}");
        assert!(busy
            .to_string()
            .contains(&format!("pid {}", std::process::id())));
        drop(s);
        assert!(Store::reopen(dir.path()).is_ok());
    }

    #[test]
    fn refuses_foreign_directories() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(load(dir.path()), Err(StoreError::NotResults(_))));
        std::fs::write(dir.path().join(FILE_NAME), "hello\n").unwrap();
        assert!(matches!(load(dir.path()), Err(StoreError::NotResults(_))));
    }
}

#[cfg(test)]
mod fuzz {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        /// Whatever follows the host line, loading never panics and keeps the host facts.
        #[test]
        fn any_lines_after_the_host_line(lines in proptest::collection::vec("\\PC{0,120}", 0..20)) {
            let dir = tempfile::tempdir().unwrap();
            let s = Store::create(dir.path(), &HostFacts::default()).unwrap();
            drop(s);
            let mut f = OpenOptions::new().append(true).open(dir.path().join(FILE_NAME)).unwrap();
            for l in &lines {
                f.write_all(l.as_bytes()).unwrap();
                f.write_all(b"\n").unwrap();
            }
            drop(f);
            let loaded = load(dir.path());
            prop_assert!(loaded.is_ok());
        }

        /// Random bytes as a whole file: an error or a load, never a panic.
        #[test]
        fn any_bytes_as_a_file(bytes in proptest::collection::vec(any::<u8>(), 0..1000)) {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join(FILE_NAME), &bytes).unwrap();
            let _ = load(dir.path());
        }
    }
}
