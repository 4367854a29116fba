//! The manifest: what a data set holds (every file's path, size, content id and hash, every
//! directory, the planted duplicates), the ground truth every workload verifies against,
//! and what it promises: a stable digest, totals, a readable diff against a tree. Reading a
//! tree back into a manifest is [`super::snapshot`]'s job.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

/// One file of a data set. Paths are relative, `/`-separated, and never start with `/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    pub path: String,
    pub size: u64,
    /// Content identity: two entries with the same `content` have the same bytes.
    pub content: u64,
    /// xxh3-64 of the file's bytes.
    pub hash: u64,
}

/// What a data set holds: the ground truth every workload verifies against.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub files: Vec<FileEntry>,
    /// Every directory (relative), parents before children; the root itself is not listed.
    pub dirs: Vec<String>,
    /// Planted duplicate groups: indices into `files`, each group ≥ 2 files of equal bytes,
    /// groups sorted and each group's indices sorted, so they compare with `==`.
    pub duplicate_groups: Vec<Vec<usize>>,
}

/// At most this many differences are listed by [`Manifest::diff`].
const MAX_DIFF_LINES: usize = 20;

impl Manifest {
    /// Stable hex digest over (path, size, hash) of every file and every dir, independent of
    /// thread count and of the order the lists happen to be in (they are sorted first).
    pub fn digest(&self) -> String {
        let mut dirs: Vec<&str> = self.dirs.iter().map(String::as_str).collect();
        dirs.sort_unstable();
        let mut files: Vec<&FileEntry> = self.files.iter().collect();
        files.sort_unstable_by(|a, b| a.path.cmp(&b.path));
        let mut h = xxhash_rust::xxh3::Xxh3Default::new();
        for d in dirs {
            h.update(b"D");
            h.update(d.as_bytes());
            h.update(b"\0");
        }
        for f in files {
            h.update(b"F");
            h.update(f.path.as_bytes());
            h.update(b"\0");
            h.update(&f.size.to_le_bytes());
            h.update(&f.hash.to_le_bytes());
        }
        format!("{:032x}", h.digest128())
    }

    /// Sum of all file sizes.
    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }

    /// The entry for `path`, if any (files are kept sorted by path).
    pub fn file(&self, path: &str) -> Option<&FileEntry> {
        self.files
            .binary_search_by(|f| f.path.as_str().cmp(path))
            .ok()
            .map(|i| &self.files[i])
    }

    /// How `actual` (typically a [`super::snapshot::snapshot`] of a tree) differs from this manifest:
    /// missing or extra files and directories, sizes, and (if `hashes`) contents. Empty when
    /// they agree; capped at 20 lines plus a count of the rest.
    pub fn diff(&self, actual: &Manifest, hashes: bool) -> Vec<String> {
        let mut out = Vec::new();
        let expected: BTreeMap<&str, &FileEntry> =
            self.files.iter().map(|f| (f.path.as_str(), f)).collect();
        let got: BTreeMap<&str, &FileEntry> =
            actual.files.iter().map(|f| (f.path.as_str(), f)).collect();
        for (p, e) in &expected {
            match got.get(p) {
                None => out.push(format!("missing file {p}")),
                Some(a) if a.size != e.size => {
                    out.push(format!("{p}: size {} instead of {}", a.size, e.size))
                }
                Some(a) if hashes && a.hash != e.hash => out.push(format!(
                    "{p}: content differs (xxh3 {:016x} instead of {:016x})",
                    a.hash, e.hash
                )),
                _ => {}
            }
        }
        for p in got.keys().filter(|p| !expected.contains_key(*p)) {
            out.push(format!("unexpected file {p}"));
        }
        let ed: std::collections::BTreeSet<&str> = self.dirs.iter().map(String::as_str).collect();
        let ad: std::collections::BTreeSet<&str> = actual.dirs.iter().map(String::as_str).collect();
        for d in ed.difference(&ad) {
            out.push(format!("missing directory {d}"));
        }
        for d in ad.difference(&ed) {
            out.push(format!("unexpected directory {d}"));
        }
        if out.len() > MAX_DIFF_LINES {
            let more = out.len() - MAX_DIFF_LINES;
            out.truncate(MAX_DIFF_LINES);
            out.push(format!("… and {more} more differences"));
        }
        out
    }

    /// One line summarising a diff, for error messages.
    pub fn diff_summary(lines: &[String]) -> String {
        let mut s = String::new();
        for (i, l) in lines.iter().enumerate() {
            if i > 0 {
                s.push_str("; ");
            }
            let _ = write!(s, "{l}");
        }
        s
    }
}
