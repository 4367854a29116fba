//! A mapping of a file the program read through (`map_read`): its range read through the
//! page cache, as the program's page faults read it; for a descriptor opened with
//! `O_DIRECT`, through a buffered twin of the same file, kept per descriptor.

use std::os::fd::{AsRawFd, OwnedFd};

use rustix::fs::{Mode, OFlags};
use rustix::io::{Errno, Result};

use crate::trace::format::Call;

/// A mapping's range read as the program's page faults read it, through the page cache, in
/// pieces of `buf`, from the recorded offset for the bytes the trace says the range held of
/// the file, as far as the replay's file reaches (a size from a trace is bounded by the
/// file it applies to: a read at its end returns nothing). Returns the bytes read. Only the
/// reads reach the file system: the program's faults make no call, and an `fstat` before
/// each range to bound it was, on a FUSE file system, a round trip to the daemon the
/// program never made (git's 10,172 mapped objects: ~0.2 s on ntfs-3g). A mapping's loads
/// go through the page cache whatever its descriptor's flags, so `fd` is, for a descriptor
/// opened with `O_DIRECT` (where an unaligned piece fails with EINVAL), a buffered twin of
/// the same file (`super::call::Target::twin_if_direct`, whose flag query the kernel
/// answers from the open file, without a request to the file system).
pub fn read(fd: &OwnedFd, call: &Call, buf: &mut [u8]) -> Result<u64> {
    let off = call.offset.unwrap_or(0);
    let want = call.ret.unwrap_or(0).max(0) as u64;
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
