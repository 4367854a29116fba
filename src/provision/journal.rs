//! The run journal: every resource is recorded *before* it is created and again when it is
//! released, so a run killed with SIGKILL can be cleaned up exactly — no more, no less.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// What kind of resource an entry is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A sparse image file.
    Image,
    /// A loop device backed by `path` (the image); `detail` holds /dev/loopN once known.
    Loop,
    /// A mount at `path`.
    Mount,
    /// A directory fsarena created (mount points, `dir:` working directories).
    Dir,
    /// A memory cgroup at `path` (a database engine's cache limit); cleanup kills what is
    /// left in it and removes it.
    Cgroup,
    /// A database server whose data directory is `path`; `detail` holds `pid=N` once it
    /// runs. Cleanup kills that process if it still names the data directory.
    Server,
    /// An fscrypt key added to the file system mounted at `path`; `detail` holds its
    /// identifier once the kernel has returned it (never the key itself).
    Key,
    /// A trace instance (`path`: its directory under a tracefs mount) recording a clone's
    /// writes; cleanup removes it by name, wherever tracefs is mounted.
    Trace,
    /// A file written outside the run directory under a temporary name of the run's own
    /// (`record --out`'s trace until it is whole), renamed over its real name once complete
    /// and then released; cleanup removes it if it is still there.
    Partial,
}

/// Whether a journal entry records something made or something released.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    Create,
    Release,
}

/// One journal line: what was made or released, and where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub op: Op,
    pub kind: Kind,
    pub path: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// An append-only, fsynced journal file.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: Mutex<File>,
}

impl Journal {
    /// The journal's file name inside the run directory.
    pub const FILE_NAME: &'static str = "journal.jsonl";

    /// Opens (or creates) the journal at `path` for appending.
    pub fn open(path: &Path) -> io::Result<Journal> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Journal {
            path: path.to_path_buf(),
            file: Mutex::new(file),
        })
    }

    /// Where the journal lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one entry and makes it durable before returning. Once the process is
    /// being taken down ([`close`]), nothing new may be made: a creation is refused here,
    /// before it starts.
    pub fn record(&self, op: Op, kind: Kind, path: &Path, detail: Option<&str>) -> io::Result<()> {
        if op == Op::Create && GATE.closed.load(Ordering::SeqCst) && !IN_SPAN.get() {
            return Err(io::Error::other(CLOSED_MESSAGE));
        }
        let entry = Entry {
            op,
            kind,
            path: path.to_path_buf(),
            detail: detail.map(str::to_string),
        };
        let mut line = serde_json::to_vec(&entry).map_err(io::Error::other)?;
        line.push(b'\n');
        let mut f = self
            .file
            .lock()
            .map_err(|_| io::Error::other("journal lock poisoned"))?;
        f.write_all(&line)?;
        f.sync_data()
    }
}

/// The gate between making resources and the emergency sweep of a second Ctrl-C: each
/// [`creating`] span (journal entry, then the resource) holds it shared, [`close`]
/// exclusively, so a sweep never reads the journal and the kernel's state between the two.
pub struct Gate {
    spans: RwLock<()>,
    /// Set by [`Gate::close`]: from then on no resource is made.
    closed: AtomicBool,
}

/// This process's gate.
static GATE: Gate = Gate::new();

thread_local! {
    /// Whether this thread is inside a [`creating`] span, which finishes what it began
    /// (the sweep waits for it) even once [`close`] was called.
    static IN_SPAN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

const CLOSED_MESSAGE: &str = "the run is being taken down: nothing new is made";

impl Gate {
    pub const fn new() -> Gate {
        Gate {
            spans: RwLock::new(()),
            closed: AtomicBool::new(false),
        }
    }

    /// [`creating`] through this gate.
    pub fn creating<T>(
        &self,
        make: impl FnOnce() -> Result<T, super::error::ProvisionError>,
    ) -> Result<T, super::error::ProvisionError> {
        let _span = self.spans.read().unwrap_or_else(|e| e.into_inner());
        if self.closed.load(Ordering::SeqCst) {
            return Err(super::error::ProvisionError::Unsupported(
                CLOSED_MESSAGE.into(),
            ));
        }
        let outer = IN_SPAN.replace(true);
        let made = make();
        IN_SPAN.set(outer);
        made
    }

    /// [`close`] for this gate.
    pub fn close(&self, wait: Duration) -> bool {
        self.closed.store(true, Ordering::SeqCst);
        let t0 = Instant::now();
        loop {
            if self.spans.try_write().is_ok() {
                return true;
            }
            if t0.elapsed() >= wait {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Default for Gate {
    fn default() -> Gate {
        Gate::new()
    }
}

/// Runs `make`, which journals a resource and then creates it (a loop device, a mount), as
/// one step the emergency sweep of a second Ctrl-C cannot fall between: the sweep
/// ([`close`]) waits for a span under way to end, and a span that starts after it is
/// refused. Before, the run's own thread could attach a loop device after the sweep had
/// read the journal and the attached devices, and the device stayed (issue 39).
pub fn creating<T>(
    make: impl FnOnce() -> Result<T, super::error::ProvisionError>,
) -> Result<T, super::error::ProvisionError> {
    GATE.creating(make)
}

/// Stops this process making resources (a journal entry of a creation is refused too),
/// then waits up to `wait` for the [`creating`] spans under way to end, so a sweep that
/// follows sees everything they made. Says whether they all ended (one stuck in the
/// kernel, a hung mount, is not waited for: the sweep goes ahead without it, which is
/// what a second Ctrl-C is for).
pub fn close(wait: Duration) -> bool {
    GATE.close(wait)
}

/// Reads a journal; a torn last line (the process died mid-write) is ignored.
pub fn read(path: &Path) -> io::Result<Vec<Entry>> {
    let f = File::open(path)?;
    let mut out = Vec::new();
    for line in BufReader::new(f).lines() {
        if let Ok(e) = serde_json::from_str::<Entry>(&line?) {
            out.push(e);
        }
    }
    Ok(out)
}

/// Entries created and not released, in creation order.
pub fn live(entries: &[Entry]) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    for e in entries {
        match e.op {
            Op::Create => out.push(e.clone()),
            Op::Release => {
                if let Some(i) = out
                    .iter()
                    .rposition(|c| c.kind == e.kind && c.path == e.path)
                {
                    out.remove(i);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The race a second Ctrl-C left (issue 39): the sweep must see what a creation under
    /// way makes, and nothing may be made once it began. A span that is slow between its
    /// journal entry and its resource (as `losetup` can be) holds the sweep until the
    /// resource exists; a span started after the sweep is refused. (A gate of the test's
    /// own: closing the process's would stop the other tests of this binary.)
    #[test]
    fn a_second_signals_sweep_waits_for_a_creation_under_way_and_refuses_new_ones() {
        use std::sync::atomic::AtomicBool;
        use std::sync::Arc;
        let gate: &'static Gate = Box::leak(Box::new(Gate::new()));
        let made = Arc::new(AtomicBool::new(false));
        let (entered_tx, entered_rx) = std::sync::mpsc::channel();
        let m = made.clone();
        let slow = std::thread::spawn(move || {
            gate.creating(|| {
                entered_tx.send(()).unwrap();
                std::thread::sleep(Duration::from_millis(300));
                m.store(true, Ordering::SeqCst);
                Ok(())
            })
        });
        entered_rx.recv().unwrap();
        assert!(
            gate.close(Duration::from_secs(5)),
            "the span under way did not end"
        );
        assert!(
            made.load(Ordering::SeqCst),
            "the sweep went ahead before the creation under way had made its resource"
        );
        slow.join().unwrap().unwrap();
        let refused = gate.creating(|| -> Result<(), super::super::ProvisionError> {
            panic!("a creation started after the sweep ran")
        });
        assert!(refused.is_err());
    }

    #[test]
    fn live_entries_survive_a_torn_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j.jsonl");
        let j = Journal::open(&p).unwrap();
        j.record(Op::Create, Kind::Image, Path::new("/w/a.img"), None)
            .unwrap();
        j.record(Op::Create, Kind::Mount, Path::new("/w/m"), None)
            .unwrap();
        j.record(Op::Release, Kind::Mount, Path::new("/w/m"), None)
            .unwrap();
        drop(j);
        std::fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .unwrap()
            .write_all(b"{\"op\":\"cre")
            .unwrap();
        let l = live(&read(&p).unwrap());
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].kind, Kind::Image);
    }
}
