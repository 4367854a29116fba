//! The walk as an owned, sorted list, for callers that want data rather than a visitor
//! (verification, small trees). Allocates per entry, so not for measured phases.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::dir::{Dir, Kind, Need};
use super::error::FsError;
use super::walk::{walk_with, WalkOptions};

/// An owned entry, for callers that want a sorted list rather than a visitor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Relative to the walk root.
    pub path: PathBuf,
    pub kind: Kind,
    pub size: u64,
    /// 512-byte units.
    pub blocks: u64,
    pub mtime: (i64, u32),
    pub mode: u32,
}

impl Entry {
    /// The extension, as `Path::extension` defines it.
    pub fn ext(&self) -> Option<&OsStr> {
        self.path.extension()
    }
}

/// Every entry under `root` (not the root itself), sorted by path bytes. Allocates per entry:
/// meant for verification and small trees, not for measured phases.
pub fn list(root: &Path, threads: usize, need: Need) -> Result<Vec<Entry>, FsError> {
    let opts = WalkOptions::new(threads, need);
    let (_, parts) = walk_with(root, &opts, Vec::new, |out: &mut Vec<Entry>, d: &Dir| {
        for e in d.entries() {
            out.push(Entry {
                path: d.path_of(e.name),
                kind: e.kind,
                size: e.meta.size,
                blocks: e.meta.blocks,
                mtime: e.meta.mtime,
                mode: e.meta.mode,
            });
        }
        Ok::<(), FsError>(())
    })?;
    let mut all: Vec<Entry> = parts.into_iter().flatten().collect();
    // Byte order, like the manifest (Path's own order is per component).
    all.sort_unstable_by(|a, b| {
        a.path
            .as_os_str()
            .as_bytes()
            .cmp(b.path.as_os_str().as_bytes())
    });
    Ok(all)
}
