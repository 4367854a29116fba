//! What a manifest promises: a stable digest, totals, a readable diff against a tree, and
//! manifests of a user's own directory (`source_dir`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use super::{DatasetError, FileEntry, Manifest};
use crate::fsops;

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

    /// How `actual` (typically a [`fsops::snapshot`] of a tree) differs from this manifest:
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

/// Plans a data set from a user's directory: every regular file with its size and xxh3-64.
/// Returns the manifest and what was skipped (`path (reason)`): symbolic links, sockets,
/// FIFOs, device nodes and non-UTF-8 names.
///
/// Content ids are assigned per distinct (size, hash); files sharing one form the
/// duplicate groups, except empty files, which are never reported as duplicates (as
/// duplicate finders do by default). Equality here rests on a 64-bit hash, not a byte
/// comparison: a collision is possible in principle (about 2^-64 per pair).
pub fn plan_source(dir: &Path) -> Result<(Manifest, Vec<String>), DatasetError> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let snap = fsops::snapshot(dir, threads, true).map_err(|e| DatasetError::Io {
        path: e.path,
        source: e.source,
    })?;
    let mut m = snap.manifest;
    let mut ids: BTreeMap<(u64, u64), (u64, Vec<usize>)> = BTreeMap::new();
    for (i, f) in m.files.iter_mut().enumerate() {
        let next = ids.len() as u64 + 1;
        let slot = ids.entry((f.size, f.hash)).or_insert((next, Vec::new()));
        f.content = slot.0;
        slot.1.push(i);
    }
    let mut groups: Vec<Vec<usize>> = ids
        .into_iter()
        .filter(|((size, _), (_, members))| *size > 0 && members.len() >= 2)
        .map(|(_, (_, members))| members)
        .collect();
    groups.sort_unstable();
    m.duplicate_groups = groups;
    Ok((m, snap.skipped))
}
