//! xxh3-64 of whole files, read in large chunks through one reusable buffer, and a
//! [`snapshot`] of a tree (every path, size and hash) to verify workloads against.

use std::ffi::CStr;
use std::io;
use std::os::fd::BorrowedFd;
use std::path::Path;

use rustix::fs::{Advice, Mode, OFlags};

use rayon::prelude::*;

use super::walk::{pool, walk_with, Dir, Kind, Need, WalkOptions};
use super::FsError;
use crate::dataset::{FileEntry, Manifest};

/// Read buffer size for hashing (≥ 256 KiB keeps syscalls per byte low).
pub const HASH_BUF: usize = 1 << 20;

/// A file's hash and the number of bytes it had when read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hashed {
    pub hash: u64,
    pub len: u64,
}

/// Hashes an open file from its current offset to the end through `buf` (any size ≥ 1;
/// use [`HASH_BUF`]).
pub fn hash_fd(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<Hashed> {
    // Advisory only: tells the kernel to read ahead aggressively.
    let _ = rustix::fs::fadvise(fd, 0, None, Advice::Sequential);
    let mut h = xxhash_rust::xxh3::Xxh3Default::new();
    let mut len = 0u64;
    loop {
        match rustix::io::read(fd, &mut *buf) {
            Ok(0) => break,
            Ok(n) => {
                h.update(&buf[..n]);
                len += n as u64;
            }
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(Hashed {
        hash: h.digest(),
        len,
    })
}

/// Hashes the file `name` of the directory `dirfd` (symbolic links are not followed).
pub fn hash_at(dirfd: BorrowedFd<'_>, name: &CStr, buf: &mut [u8]) -> io::Result<Hashed> {
    let fd = rustix::fs::openat(
        dirfd,
        name,
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::empty(),
    )?;
    hash_fd(std::os::fd::AsFd::as_fd(&fd), buf)
}

/// Hashes the file at `path`.
pub fn hash_path(path: &Path, buf: &mut [u8]) -> io::Result<Hashed> {
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::empty(),
    )?;
    hash_fd(std::os::fd::AsFd::as_fd(&fd), buf)
}

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

/// Walks `root` with `threads` workers and lists every regular file with its size (and
/// xxh3-64 if `hash`, else 0) and every directory.
pub fn snapshot(root: &Path, threads: usize, hash: bool) -> Result<Snapshot, FsError> {
    #[derive(Default)]
    struct Part {
        files: Vec<FileEntry>,
        /// Indices into `files` of big files still to hash.
        deferred: Vec<usize>,
        dirs: Vec<String>,
        skipped: Vec<String>,
        buf: Vec<u8>,
    }
    let opts = WalkOptions::new(threads, Need::SIZE);
    let (_, parts) = walk_with(root, &opts, Part::default, |p: &mut Part, d: &Dir| {
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
                        let got = hash_at(d.fd(), e.name, &mut p.buf)
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
        Ok::<(), FsError>(())
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
        let files = &snap.manifest.files;
        let hashes: Vec<u64> = pool(threads)?.install(|| {
            deferred
                .par_iter()
                .map_init(
                    || vec![0u8; HASH_BUF],
                    |buf, &i| {
                        let f = &files[i];
                        let full = root.join(&f.path);
                        let got = hash_path(&full, buf)
                            .map_err(|err| FsError::new("hash", &full, err))?;
                        check_len(root, &f.path, f.size, got)?;
                        Ok(got.hash)
                    },
                )
                .collect::<Result<_, FsError>>()
        })?;
        for (&i, h) in deferred.iter().zip(hashes) {
            snap.manifest.files[i].hash = h;
            snap.manifest.files[i].content = h;
        }
    }
    snap.manifest
        .files
        .sort_unstable_by(|a, b| a.path.cmp(&b.path));
    snap.manifest.dirs.sort_unstable();
    snap.skipped.sort_unstable();
    Ok(snap)
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
