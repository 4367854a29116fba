//! The run journal: every resource is recorded *before* it is created and again when it is
//! released, so a run killed with SIGKILL can be cleaned up exactly — no more, no less.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

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

    /// Appends one entry and makes it durable before returning.
    pub fn record(&self, op: Op, kind: Kind, path: &Path, detail: Option<&str>) -> io::Result<()> {
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
