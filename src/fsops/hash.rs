//! xxh3-64 of whole files, read in large chunks through one reusable buffer. These are the
//! primitives; `dataset::snapshot` builds a whole tree's manifest from them.
//!
//! Two ways to open a file to hash it. A measured phase reads as any program does
//! ([`hash_at`], [`hash_path`]): the file system updates the access time as its mount
//! options say. A check that reads a tree back after the phase reads *unseen*
//! ([`hash_unseen_at`], [`hash_unseen_path`], [`open_unseen`]: `O_NOATIME`), so it writes
//! nothing to the file system it checks. Under `relatime` a first read after a write updates
//! the access time, so checking a tree just written dirtied every inode of it: the unmount
//! after `create` then wrote 50,000 inodes back, and a clone's restore copied their blocks.

use std::ffi::CStr;
use std::io;
use std::os::fd::BorrowedFd;
use std::path::Path;

use rustix::fs::{Advice, Mode, OFlags};

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

/// Opens `path` read-only without updating its access time (`O_NOATIME`), for a check's
/// read; where the kernel refuses that flag (`EPERM`: the caller neither owns the file nor
/// has `CAP_FOWNER`) it opens it as any reader does.
pub fn open_unseen(path: &Path) -> io::Result<std::fs::File> {
    open_unseen_at(rustix::fs::CWD, path).map(std::fs::File::from)
}

/// [`open_unseen`] relative to `dirfd` (symbolic links are not followed).
fn open_unseen_at<P: rustix::path::Arg + Copy>(
    dirfd: BorrowedFd<'_>,
    name: P,
) -> io::Result<std::os::fd::OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    match rustix::fs::openat(dirfd, name, flags | OFlags::NOATIME, Mode::empty()) {
        Err(rustix::io::Errno::PERM) => Ok(rustix::fs::openat(dirfd, name, flags, Mode::empty())?),
        other => Ok(other?),
    }
}

/// [`hash_at`] for a check: the file is read unseen ([`open_unseen`]).
pub fn hash_unseen_at(dirfd: BorrowedFd<'_>, name: &CStr, buf: &mut [u8]) -> io::Result<Hashed> {
    let fd = open_unseen_at(dirfd, name)?;
    hash_fd(std::os::fd::AsFd::as_fd(&fd), buf)
}

/// [`hash_path`] for a check: the file is read unseen ([`open_unseen`]).
pub fn hash_unseen_path(path: &Path, buf: &mut [u8]) -> io::Result<Hashed> {
    let fd = open_unseen_at(rustix::fs::CWD, path)?;
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
