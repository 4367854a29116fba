//! A mapping of a file the program read through (`map_read`): its range mapped, its pages
//! faulted in and unmapped, as the program's loads did; read with `pread`s where it cannot
//! be mapped or reaches past the file's end. For a descriptor opened with `O_DIRECT`, both go
//! through a buffered twin of the same file, kept per descriptor.

use std::os::fd::{AsRawFd, OwnedFd};
use std::ptr::null_mut;

use rustix::fs::{Mode, OFlags};
use rustix::io::{Errno, Result};
use rustix::mm::{Advice, MapFlags, ProtFlags};

use crate::trace::format::Call;

/// A mapping's range, from the recorded offset, for the bytes the trace says the range held
/// of the file; returns the bytes read. The range is mapped, its pages faulted in through the
/// file system (`MADV_POPULATE_READ`) and unmapped: the kernel work of git's 10,267 `mmap`s
/// and 10,193 `munmap`s (111 ms on ext4, the same on every file system) was missing when
/// the range was read with `pread`s, which made the replay's ratios between file systems
/// steeper than git's. Where the range cannot be mapped (an offset not on a page, a file
/// system that refuses) or the replay's file ends inside it (populating stops there with an
/// error, not a SIGBUS), it is read with `pread`s, which stop at the file's end: a size
/// from a trace is bounded by the file it applies to. No `fstat` bounds it beforehand: the
/// program's faults make no call, and on a FUSE file system a stat is a round trip to the
/// daemon. A mapping's loads go through the page cache whatever its descriptor's flags, so
/// `fd` is, for a descriptor opened with `O_DIRECT`, a buffered twin of the same file
/// (`super::call::Target::twin_if_direct`, whose flag query the kernel answers from the
/// open file, without a request to the file system).
pub fn read(fd: &OwnedFd, call: &Call, buf: &mut [u8]) -> Result<u64> {
    let off = call.offset.unwrap_or(0);
    let want = call.ret.unwrap_or(0).max(0) as u64;
    if want == 0 || fault_in(fd, off, want).is_err() {
        return read_through(fd, off, want, buf);
    }
    Ok(want)
}

/// Maps `len` bytes of `fd` from `off` read-only, faults every page in and unmaps them.
fn fault_in(fd: &OwnedFd, off: u64, len: u64) -> Result<()> {
    let len = usize::try_from(len).map_err(|_| Errno::NOMEM)?;
    // SAFETY: a new private, read-only mapping that no reference points into; it is only
    // populated (an error, not a SIGBUS, for pages past the file's end) and unmapped here.
    unsafe {
        let at = rustix::mm::mmap(null_mut(), len, ProtFlags::READ, MapFlags::PRIVATE, fd, off)?;
        let populated = rustix::mm::madvise(at, len, Advice::LinuxPopulateRead);
        let unmapped = rustix::mm::munmap(at, len);
        populated.and(unmapped)
    }
}

/// The range read in pieces of `buf` through the page cache, as far as the file reaches.
fn read_through(fd: &OwnedFd, off: u64, want: u64, buf: &mut [u8]) -> Result<u64> {
    let mut got = 0;
    while got < want {
        let n = (buf.len() as u64).min(want - got) as usize;
        if n == 0 {
            return Err(Errno::FAULT);
        }
        match rustix::io::pread(fd, &mut buf[..n], off + got)? {
            0 => break,
            r => got += r as u64,
        }
    }
    Ok(got)
}

/// A second, buffered descriptor (read-only, no `O_DIRECT`) of the file `fd` has open: a
/// new open file description, so the replayed descriptor's flags and position are its own.
pub fn buffered_twin(fd: &OwnedFd) -> Result<OwnedFd> {
    let path = format!("/proc/self/fd/{}", fd.as_raw_fd());
    rustix::fs::open(
        path.as_str(),
        OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
}
