//! xxh3-64 of whole files, read in large chunks through one reusable buffer. These are the
//! primitives; `dataset::snapshot` builds a whole tree's manifest from them.

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

/// Hashes the file at `path`.
pub fn hash_path(path: &Path, buf: &mut [u8]) -> io::Result<Hashed> {
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::empty(),
    )?;
    hash_fd(std::os::fd::AsFd::as_fd(&fd), buf)
}
