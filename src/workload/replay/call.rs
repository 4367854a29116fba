//! Issuing one recorded call on the target, relative to the replay's root directory, and
//! what it returned: the bytes or descriptor (`Ok`), or the errno (`Err`). The replay's
//! own descriptors live in the slots [`super::script`] assigned; writes carry generated
//! content of the file's kind (by extension), reads land in a buffer and are counted.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rustix::fs::{Access, AtFlags, FallocateFlags, Mode, OFlags};

use crate::trace::bounds::MAX_RW_COUNT;
use crate::trace::format::{Call, Op};

/// What a call returned: bytes moved, a descriptor or 0 — or the errno.
pub type Returned = Result<i64, i32>;

/// Page alignment for buffers, so an `O_DIRECT` call's memory is aligned as it must be.
const ALIGN: usize = 4096;

/// A buffer whose usable part starts on a page boundary.
#[derive(Default)]
pub struct Aligned {
    bytes: Vec<u8>,
    start: usize,
}

impl Aligned {
    /// A buffer of at least `len` usable bytes, filled by `fill`.
    pub fn new(len: usize, fill: impl FnOnce(&mut [u8])) -> Aligned {
        let bytes = vec![0u8; len + ALIGN];
        let start = bytes.as_ptr().align_offset(ALIGN).min(ALIGN);
        let mut b = Aligned { bytes, start };
        fill(b.slice_mut(len));
        b
    }
    pub fn len(&self) -> usize {
        self.bytes.len().saturating_sub(ALIGN)
    }
    pub fn slice(&self, from: usize, len: usize) -> &[u8] {
        &self.bytes[self.start + from..self.start + from + len]
    }
    pub fn slice_mut(&mut self, len: usize) -> &mut [u8] {
        &mut self.bytes[self.start..self.start + len]
    }
}

/// What every replaying thread shares: the root, the open descriptors by slot, and the
/// generated content writes take their bytes from.
pub struct Target {
    pub root: OwnedFd,
    pub root_path: PathBuf,
    pub slots: Vec<Mutex<Option<Arc<OwnedFd>>>>,
    /// Per slot, which content pool its writes use (the file's kind by extension).
    pub pool_of: Vec<usize>,
    /// Generated content, one pool per kind, at least as long as the largest write plus a
    /// block: a write at offset `o` takes its bytes from `o % BLOCK` on.
    pub pools: Vec<Aligned>,
}

/// The bytes a replayed read asks for: what the recorded call moved, rounded up to a page
/// (so an `O_DIRECT` read stays aligned), and never more than it asked. A read that asked
/// for 2^40 bytes and got 12 reads into 4 KiB: the request is the program's, the buffer it
/// needs is what the file held; the kernel clamps a request to [`MAX_RW_COUNT`] anyway.
pub fn read_len(call: &Call) -> usize {
    let asked = call.size.unwrap_or(0).min(MAX_RW_COUNT);
    let got = call.ret.unwrap_or(0).clamp(0, MAX_RW_COUNT as i64) as u64;
    asked.min(got.div_ceil(PAGE).max(1) * PAGE) as usize
}

/// The bytes a replayed write issues: what the recorded write moved (a short write's count,
/// a copy's bytes copied, never `cp`'s 2^63-byte copy_file_range request); a failed write
/// its request, up to [`FAILED_WRITE`].
pub fn write_len(call: &Call) -> usize {
    let asked = call.size.unwrap_or(0);
    let len = match call.ret {
        Some(got) => asked.min(got.max(0) as u64),
        None => asked.min(FAILED_WRITE),
    };
    len.min(MAX_RW_COUNT) as usize
}

/// A page, the alignment of an `O_DIRECT` buffer.
const PAGE: u64 = 4096;

/// The most a failed write's replay issues: it fails as recorded (a bad descriptor, a full
/// file system) without a buffer as large as a request nobody moved.
const FAILED_WRITE: u64 = 1 << 20;

/// The open flags a trace names, as the kernel's bits (names this build does not know,
/// such as `O_LARGEFILE`, implicit on 64-bit, add nothing).
pub fn open_flags(names: &[String]) -> OFlags {
    let bits = names.iter().fold(0, |acc, n| {
        acc | match n.as_str() {
            "O_WRONLY" => libc::O_WRONLY,
            "O_RDWR" => libc::O_RDWR,
            "O_CREAT" => libc::O_CREAT,
            "O_EXCL" => libc::O_EXCL,
            "O_NOCTTY" => libc::O_NOCTTY,
            "O_TRUNC" => libc::O_TRUNC,
            "O_APPEND" => libc::O_APPEND,
            "O_NONBLOCK" => libc::O_NONBLOCK,
            "O_DSYNC" => libc::O_DSYNC,
            "O_SYNC" => libc::O_SYNC,
            "O_DIRECT" => libc::O_DIRECT,
            "O_DIRECTORY" => libc::O_DIRECTORY,
            "O_NOFOLLOW" => libc::O_NOFOLLOW,
            "O_NOATIME" => libc::O_NOATIME,
            "O_CLOEXEC" => libc::O_CLOEXEC,
            "O_PATH" => libc::O_PATH,
            "O_TMPFILE" => libc::O_TMPFILE,
            _ => 0,
        }
    });
    OFlags::from_bits_retain(bits as u32)
}

fn errno(e: rustix::io::Errno) -> i32 {
    e.raw_os_error()
}

fn done(r: rustix::io::Result<()>) -> Returned {
    r.map(|_| 0).map_err(errno)
}

fn bytes(r: rustix::io::Result<usize>) -> Returned {
    r.map(|n| n as i64).map_err(errno)
}

/// A libc call's result: -1 means the errno.
fn libc_result(r: i64) -> Returned {
    if r < 0 {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    } else {
        Ok(r)
    }
}

impl Target {
    /// The descriptor in `slot`, if it is open.
    fn fd(&self, slot: usize) -> Result<Arc<OwnedFd>, i32> {
        match self.slots.get(slot).map(|s| s.lock()) {
            Some(Ok(g)) => g.clone().ok_or(libc::EBADF),
            _ => Err(libc::EBADF),
        }
    }

    /// Issues `call` (whose descriptor, if any, resolved to `slot`), reading into `buf`.
    pub fn issue(&self, call: &Call, slot: Option<usize>, buf: &mut Aligned) -> Returned {
        let path = call.path.as_deref().unwrap_or_default();
        match (call.op, slot) {
            (Op::Open, _) => self.open(call, path, slot),
            (Op::Mkdir, _) => done(rustix::fs::mkdirat(
                &self.root,
                path,
                Mode::from_raw_mode(call.mode.unwrap_or(0o755)),
            )),
            (Op::Rmdir, _) => done(rustix::fs::unlinkat(&self.root, path, AtFlags::REMOVEDIR)),
            (Op::Unlink, _) => done(rustix::fs::unlinkat(&self.root, path, AtFlags::empty())),
            (Op::Rename, _) => done(rustix::fs::renameat(
                &self.root,
                path,
                &self.root,
                call.path2.as_deref().unwrap_or_default(),
            )),
            (Op::Link, _) => done(rustix::fs::linkat(
                &self.root,
                path,
                &self.root,
                call.path2.as_deref().unwrap_or_default(),
                AtFlags::empty(),
            )),
            (Op::Symlink, _) => done(rustix::fs::symlinkat(
                call.target.as_deref().unwrap_or_default(),
                &self.root,
                path,
            )),
            (Op::Stat, None) => self.stat(call, path),
            (Op::Truncate, None) => self.truncate_path(path, call.size.unwrap_or(0)),
            (_, Some(slot)) => self.on_fd(call, slot, buf),
            (_, None) => Err(libc::EBADF),
        }
    }

    fn open(&self, call: &Call, path: &str, slot: Option<usize>) -> Returned {
        let mode = Mode::from_raw_mode(call.mode.unwrap_or(0o644));
        let fd =
            rustix::fs::openat(&self.root, path, open_flags(&call.flags), mode).map_err(errno)?;
        let raw = fd.as_raw_fd() as i64;
        if let Some(Ok(mut s)) = slot.and_then(|s| self.slots.get(s)).map(|s| s.lock()) {
            *s = Some(Arc::new(fd));
        }
        Ok(raw)
    }

    fn stat(&self, call: &Call, path: &str) -> Returned {
        match call.syscall.as_str() {
            "access" | "faccessat" | "faccessat2" => done(rustix::fs::accessat(
                &self.root,
                path,
                Access::from_bits_retain(call.mode.unwrap_or(0)),
                AtFlags::empty(),
            )),
            syscall => {
                let nofollow = matches!(syscall, "lstat" | "lstat64")
                    || call.flags.iter().any(|f| f == "AT_SYMLINK_NOFOLLOW");
                let flags = if nofollow {
                    AtFlags::SYMLINK_NOFOLLOW
                } else {
                    AtFlags::empty()
                };
                done(rustix::fs::statat(&self.root, path, flags).map(|_| ()))
            }
        }
    }

    fn truncate_path(&self, path: &str, len: u64) -> Returned {
        let full = self.root_path.join(path);
        let Ok(c) = std::ffi::CString::new(full.as_os_str().as_encoded_bytes()) else {
            return Err(libc::EINVAL);
        };
        // SAFETY: a NUL-terminated path; truncate reads it and nothing else.
        libc_result(unsafe { libc::truncate(c.as_ptr(), len as libc::off_t) } as i64)
    }

    /// The calls on a descriptor.
    fn on_fd(&self, call: &Call, slot: usize, buf: &mut Aligned) -> Returned {
        if call.op == Op::Close {
            let taken = match self.slots.get(slot).map(|s| s.lock()) {
                Some(Ok(mut g)) => g.take(),
                _ => None,
            };
            // The last holder closes it: here, unless a racing call of the trace holds it.
            return taken.map(drop).map(|_| 0).ok_or(libc::EBADF);
        }
        let fd = self.fd(slot)?;
        // Buffers are sized by what the call moved when recorded, never by its request.
        let size = match call.op {
            Op::Write => write_len(call),
            _ => read_len(call),
        };
        match call.op {
            Op::Read | Op::Getdents if buf.len() < size => {
                *buf = Aligned::new(size, |_| {});
            }
            _ => {}
        }
        match call.op {
            Op::Read => match call.offset {
                Some(off) => bytes(rustix::io::pread(&*fd, buf.slice_mut(size), off)),
                None => bytes(rustix::io::read(&*fd, buf.slice_mut(size))),
            },
            Op::Write => self.write(&fd, call, slot, size),
            Op::Fsync => done(rustix::fs::fsync(&*fd)),
            Op::Fdatasync => done(rustix::fs::fdatasync(&*fd)),
            Op::SyncFileRange => sync_range(&fd, call),
            Op::Stat => done(rustix::fs::fstat(&*fd).map(|_| ())),
            Op::Truncate => done(rustix::fs::ftruncate(&*fd, call.size.unwrap_or(0))),
            Op::Fallocate => done(rustix::fs::fallocate(
                &*fd,
                FallocateFlags::from_bits_retain(call.mode.unwrap_or(0)),
                call.offset.unwrap_or(0),
                call.size.unwrap_or(0),
            )),
            Op::Getdents => getdents(&fd, buf.slice_mut(size)),
            // Another name of the slot's open file (`super::script`): nothing to issue.
            Op::Dup => Ok(fd.as_raw_fd() as i64),
            _ => Err(libc::EBADF),
        }
    }

    fn write(&self, fd: &OwnedFd, call: &Call, slot: usize, size: usize) -> Returned {
        let Some(pool) = self.pool_of.get(slot).and_then(|&p| self.pools.get(p)) else {
            return Err(libc::EFAULT);
        };
        let from = (call.offset.unwrap_or(0) % crate::dataset::content::BLOCK) as usize;
        if from + size > pool.len() {
            return Err(libc::EFAULT);
        }
        let data = pool.slice(from, size);
        match call.offset {
            Some(off) => bytes(rustix::io::pwrite(fd, data, off)),
            None => bytes(rustix::io::write(fd, data)),
        }
    }
}

/// `sync_file_range` asking for the range's write-out (the flags are not recorded).
fn sync_range(fd: &OwnedFd, call: &Call) -> Returned {
    let (off, len) = (call.offset.unwrap_or(0), call.size.unwrap_or(0));
    // SAFETY: a valid descriptor and plain integers.
    let r = unsafe {
        libc::sync_file_range(
            fd.as_fd().as_raw_fd(),
            off as libc::off64_t,
            len as libc::off64_t,
            libc::SYNC_FILE_RANGE_WRITE,
        )
    };
    libc_result(r as i64)
}

/// `getdents64` into `buf`, for the byte count it returns (rustix's reader hides it).
fn getdents(fd: &OwnedFd, buf: &mut [u8]) -> Returned {
    // SAFETY: `buf` is writable for its whole length, which is what the kernel is told.
    let r = unsafe {
        libc::syscall(
            libc::SYS_getdents64,
            fd.as_fd().as_raw_fd(),
            buf.as_mut_ptr(),
            buf.len(),
        )
    };
    libc_result(r)
}
