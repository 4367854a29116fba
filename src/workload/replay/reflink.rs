//! A recorded clone (`FICLONE`, `FICLONERANGE`) issued again, with its effect. Where the
//! target can share extents (btrfs, xfs with reflink) it is a clone. Where it cannot (ext4,
//! tmpfs, exFAT and NTFS through FUSE refuse with EOPNOTSUPP, EINVAL or EXDEV) the replay
//! copies the same bytes, because that is what a program that clones does next (`cp`
//! falls back to copy_file_range): the files end as the program's did, and the self-check
//! says how many clones became copies.
//!
//! A clone that failed when recorded (`cp` on ext4, which then copied with
//! copy_file_range) is tried again as it was: it fails again, or, on a file system that can
//! clone, succeeds. The real program would then not copy afterwards; the replay still
//! issues the recorded copy, which overwrites the same range with the same length (on btrfs
//! and xfs copy_file_range shares extents too, so it costs about what the clone did).

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::io::Errno;

use crate::fsops::copy::is_unsupported;
use crate::fsops::range_copy::{self, KernelCopy, Range};
use crate::trace::format::Call;

/// What the clones of one replay did, counted as they are issued (the replay's threads
/// share it).
#[derive(Debug, Default)]
pub struct Clones {
    shared: AtomicU64,
    copied: AtomicU64,
    bytes: AtomicU64,
}

/// The clones of one measured pass.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Cloned {
    /// Clones the file system made by sharing extents.
    pub shared: u64,
    /// Clones it refused, replayed as copies of the same bytes.
    pub copied: u64,
    /// Bytes cloned or copied for them: their own kind in the self-check, not written bytes.
    pub bytes: u64,
}

impl Clones {
    /// What was counted since the last take, and a fresh count for the next pass.
    pub fn take(&self) -> Cloned {
        Cloned {
            shared: self.shared.swap(0, Ordering::SeqCst),
            copied: self.copied.swap(0, Ordering::SeqCst),
            bytes: self.bytes.swap(0, Ordering::SeqCst),
        }
    }
}

/// The range a clone covers: from the source's offset, its length (to the source's end, as
/// it is in the replay, for a whole-file clone or a range of length 0), to the destination's
/// offset.
fn range(call: &Call, src: &OwnedFd) -> Result<Range, i32> {
    let size = rustix::fs::fstat(src)
        .map_err(|e| e.raw_os_error())?
        .st_size;
    let size = u64::try_from(size).unwrap_or(0);
    let src_off = call.source.as_ref().and_then(|s| s.offset).unwrap_or(0);
    let rest = size.saturating_sub(src_off);
    // A range is bounded by the file it reads (a trace's length may say anything).
    let len = match call.size {
        Some(n) if n > 0 => n.min(rest),
        _ => rest,
    };
    Ok(Range::new(src_off, call.offset.unwrap_or(0), len))
}

/// Issues the clone `call` from `src` to `dst`: the bytes it cloned or copied, or the errno
/// (the shape of `super::call::Returned`, which is issued from there).
pub fn issue(call: &Call, src: &OwnedFd, dst: &OwnedFd, clones: &Clones) -> Result<i64, i32> {
    let r = range(call, src)?;
    let whole = call.source.as_ref().and_then(|s| s.offset).is_none();
    let attempt = if whole {
        rustix::fs::ioctl_ficlone(dst, src)
    } else {
        clone_range(src, dst, call.size.unwrap_or(0), &r)
    };
    match attempt {
        Ok(()) => {
            clones.shared.fetch_add(1, Ordering::SeqCst);
            clones.bytes.fetch_add(r.len, Ordering::SeqCst);
            Ok(r.len as i64)
        }
        // The program cloned here; this file system cannot: the bytes are copied instead.
        Err(e) if call.ret.is_some() && is_unsupported(e) => {
            let n = copy(src, dst, r).map_err(|e| e.raw_os_error())?;
            clones.copied.fetch_add(1, Ordering::SeqCst);
            clones.bytes.fetch_add(n, Ordering::SeqCst);
            Ok(n as i64)
        }
        Err(e) => Err(e.raw_os_error()),
    }
}

/// `ioctl(dst, FICLONERANGE, {src, …})` with the recorded length (0: to the source's end).
fn clone_range(src: &OwnedFd, dst: &OwnedFd, len: u64, r: &Range) -> rustix::io::Result<()> {
    let arg = libc::file_clone_range {
        src_fd: i64::from(src.as_raw_fd()),
        src_offset: r.src_off,
        src_length: len.min(r.len),
        dest_offset: r.dst_off,
    };
    // SAFETY: two open descriptors and a struct the kernel only reads.
    let rc = unsafe { libc::ioctl(dst.as_fd().as_raw_fd(), libc::FICLONERANGE, &arg) };
    if rc < 0 {
        Err(Errno::from_io_error(&std::io::Error::last_os_error()).unwrap_or(Errno::IO))
    } else {
        Ok(())
    }
}

/// The range copied as a program that cannot clone copies it: copy_file_range where the
/// file system takes it (the bytes it moved, short where it stopped early), else through a
/// buffer a MiB at a time (FUSE file systems that take no copy_file_range). Returns the
/// bytes copied.
fn copy(src: &OwnedFd, dst: &OwnedFd, r: Range) -> rustix::io::Result<u64> {
    match range_copy::by_kernel(src.as_fd(), dst.as_fd(), r)? {
        KernelCopy::Moved(n) => Ok(n),
        KernelCopy::Refused(_) => {
            let mut buf = vec![0u8; (1 << 20).min(r.len as usize)];
            range_copy::by_buffer(src.as_fd(), dst.as_fd(), r, &mut buf, None)
        }
    }
}
