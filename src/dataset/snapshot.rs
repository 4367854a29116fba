//! Reading a tree back into a [`Manifest`]: every path, size and xxh3-64, so workloads can
//! verify what they wrote, and a user's own directory (`source_dir`) can be planned like a
//! generated data set. Built on fsops' walker and hashing primitives.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use rayon::prelude::*;

use super::error::DatasetError;
use super::manifest::{FileEntry, Manifest};
use crate::fsops::{
    hash_unseen_at, hash_unseen_path, pool, walk_with, Dir, FsError, Hashed, Kind, Need,
};
use crate::fsops::{WalkOptions, HASH_BUF};

/// What a tree holds, in the manifest's form.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// Files (regular only) and directories, sorted by path bytes. `content` is the hash
    /// (files with equal bytes share it); `duplicate_groups` is left empty.
    pub manifest: Manifest,
    /// Entries left out, as `path (reason)`: symbolic links, sockets, FIFOs, device nodes,
    /// and names that are not UTF-8 (a manifest path is a `String`).
    pub skipped: Vec<String>,
}

/// Files at least this large are hashed after the walk, one task per file, so a
/// directory of a few huge files still uses every thread; smaller ones are hashed inside
/// the walk, relative to their directory's descriptor.
const DEFER_HASH: u64 = 4 << 20;

/// One walker thread's share of the snapshot.
#[derive(Default)]
struct Part {
    files: Vec<FileEntry>,
    /// Indices into `files` of big files still to hash.
    deferred: Vec<usize>,
    dirs: Vec<String>,
    skipped: Vec<String>,
    buf: Vec<u8>,
}

/// Walks `root` with `threads` workers and lists every regular file with its size (and
/// xxh3-64 if `hash`, else 0) and every directory. Files are read unseen
/// ([`crate::fsops::open_unseen`]): a snapshot is a check or a plan, never a measured
/// read, and leaves every access time as it found it.
pub fn snapshot(root: &Path, threads: usize, hash: bool) -> Result<Snapshot, FsError> {
    let opts = WalkOptions::new(threads, Need::SIZE);
    let (_, parts) = walk_with(root, &opts, Part::default, |p: &mut Part, d: &Dir| {
        list_dir(root, hash, p, d)
    })?;
    let mut snap = Snapshot::default();
    let mut deferred = Vec::new();
    for p in parts {
        let base = snap.manifest.files.len();
        deferred.extend(p.deferred.iter().map(|i| base + i));
        snap.manifest.files.extend(p.files);
        snap.manifest.dirs.extend(p.dirs);
        snap.skipped.extend(p.skipped);
    }
    if !deferred.is_empty() {
        hash_deferred(root, threads, &mut snap.manifest.files, &deferred)?;
    }
    snap.manifest
        .files
        .sort_unstable_by(|a, b| a.path.cmp(&b.path));
    snap.manifest.dirs.sort_unstable();
    snap.skipped.sort_unstable();
    Ok(snap)
}

/// The walk's step for one directory `d`: its subdirectories, its regular files (hashed
/// here if `hash` and small, else left for [`hash_deferred`]), and what it skips.
fn list_dir(root: &Path, hash: bool, p: &mut Part, d: &Dir) -> Result<(), FsError> {
    for e in d.entries() {
        let rel = d.path_of(e.name);
        let Some(path) = rel.to_str().map(str::to_owned) else {
            p.skipped
                .push(format!("{} (name is not UTF-8)", rel.to_string_lossy()));
            continue;
        };
        match e.kind {
            Kind::Dir => p.dirs.push(path),
            Kind::File => {
                let mut h = 0;
                if hash && e.meta.size >= DEFER_HASH {
                    p.deferred.push(p.files.len());
                } else if hash {
                    if p.buf.is_empty() {
                        p.buf = vec![0u8; HASH_BUF];
                    }
                    let got = hash_unseen_at(d.fd(), e.name, &mut p.buf)
                        .map_err(|err| FsError::new("hash", &root.join(&rel), err))?;
                    check_len(root, &path, e.meta.size, got)?;
                    h = got.hash;
                }
                p.files.push(FileEntry {
                    path,
                    size: e.meta.size,
                    content: h,
                    hash: h,
                });
            }
            Kind::Symlink => p.skipped.push(format!("{path} (symbolic link)")),
            Kind::Other => p.skipped.push(format!("{path} (not a regular file)")),
        }
    }
    Ok(())
}

/// Hashes the big files (`deferred` indexes `files`) after the walk, one task per file
/// on `threads` threads, so a directory of a few huge files still uses every thread.
fn hash_deferred(
    root: &Path,
    threads: usize,
    files: &mut [FileEntry],
    deferred: &[usize],
) -> Result<(), FsError> {
    let listed = &*files;
    let hashes: Vec<u64> = pool(threads)?.install(|| {
        deferred
            .par_iter()
            .map_init(
                || vec![0u8; HASH_BUF],
                |buf, &i| {
                    let f = &listed[i];
                    let full = root.join(&f.path);
                    let got = hash_unseen_path(&full, buf)
                        .map_err(|err| FsError::new("hash", &full, err))?;
                    check_len(root, &f.path, f.size, got)?;
                    Ok(got.hash)
                },
            )
            .collect::<Result<_, FsError>>()
    })?;
    for (&i, h) in deferred.iter().zip(hashes) {
        files[i].hash = h;
        files[i].content = h;
    }
    Ok(())
}

/// A file whose length changed between `statx` and reading is an error, not a result.
fn check_len(root: &Path, path: &str, size: u64, got: Hashed) -> Result<(), FsError> {
    if got.len == size {
        return Ok(());
    }
    Err(FsError::new(
        "hash",
        &root.join(path),
        io::Error::other(format!(
            "file changed while read: stat said {size} bytes, read {}",
            got.len
        )),
    ))
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
    let snap = snapshot(dir, threads, true).map_err(|e| DatasetError::Io {
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
