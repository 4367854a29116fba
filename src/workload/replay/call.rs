//! Issuing one recorded call on the target, relative to the replay's root directory, and
//! what it returned: the bytes or descriptor (`Ok`), or the errno (`Err`). The replay's
//! own descriptors live in the slots [`super::script`] assigned; writes carry generated
//! content of the file's kind (by extension), reads land in a buffer and are counted.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use std::io::{IoSlice, IoSliceMut};

use rustix::fs::{Access, AtFlags, FallocateFlags, Mode, OFlags, RenameFlags};
use rustix::io::ReadWriteFlags;

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
    /// Per slot, the buffered twin of a descriptor opened with `O_DIRECT` that a mapping
    /// was read through (`map_read`): opened at its first mapping, closed with the slot.
    pub twins: Vec<Mutex<Option<Arc<OwnedFd>>>>,
    /// Per slot, which content pool its writes use (the file's kind by extension).
    pub pool_of: Vec<usize>,
    /// Generated content, one pool per kind, at least as long as the largest write plus a
    /// block: a write at offset `o` takes its bytes from `o % BLOCK` on.
    pub pools: Vec<Aligned>,
    /// What the clones did: shared extents, or copied where the file system cannot.
    pub clones: super::reflink::Clones,
    /// Renames whose `RENAME_NOREPLACE` the file system refused, done as `mv` does then
    /// ([`Target::rename`]); counted for the self-check, taken per measured pass.
    pub unflagged_renames: AtomicU64,
}

/// The bytes a replayed read asks for ([`issued_len`]), never more than the kernel's
/// per-call maximum: the buffer is what the file held when recorded, not the request.
pub fn read_len(call: &Call) -> usize {
    issued_len(call).min(MAX_RW_COUNT) as usize
}

/// The bytes a replayed write issues ([`issued_len`]): what the recorded write moved (a
/// short write's count, a copy's bytes copied, never `cp`'s 2^63-byte copy_file_range
/// request), at most the kernel's per-call maximum.
pub fn write_len(call: &Call) -> usize {
    issued_len(call).min(MAX_RW_COUNT) as usize
}

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

/// A recorded lseek: to the position it returned, from the start (what SEEK_CUR, SEEK_END
/// or SEEK_DATA found then is where the program's next read or write began); a seek that
/// failed is issued as recorded, where its offset was not negative, so it fails alike.
fn seek(fd: &OwnedFd, call: &Call) -> Returned {
    use rustix::fs::SeekFrom;
    let has_flag = |name: &str| call.flags.iter().any(|f| f == name);
    let to = match (call.ret, call.offset) {
        (Some(p), _) => SeekFrom::Start(p.max(0) as u64),
        (None, Some(off)) if has_flag("SEEK_DATA") => SeekFrom::Data(off),
        (None, Some(off)) if has_flag("SEEK_HOLE") => SeekFrom::Hole(off),
        (None, Some(off)) if has_flag("SEEK_END") => SeekFrom::End(off as i64),
        (None, Some(off)) => SeekFrom::Start(off),
        (None, None) => SeekFrom::Current(0),
    };
    rustix::fs::seek(fd, to).map(|p| p as i64).map_err(errno)
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
            (Op::Rename, _) => self.rename(call, path),
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
            (Op::Sync, _) => done(rustix::fs::syncfs(&self.root)),
            (Op::Msync, _) => self.msync(call, path),
            (Op::Setxattr | Op::Getxattr | Op::Removexattr, None) => {
                super::attrs::on_path(&self.root_path, call, attr_buf(call, buf))
            }
            (Op::Setattr, None) => super::setattr::on_path(&self.root, call, path),
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

    /// A rename, with renameat2's flags. A FUSE daemon without renameat2 (ntfs-3g) makes
    /// the kernel refuse any flag with EINVAL. For `RENAME_NOREPLACE` a program then does
    /// what coreutils' `mv` does: it checks that the new name is free and renames without
    /// the flag. The replay does the same, so the tree ends as the program's would there,
    /// and counts it (`unflagged_renames`); other flags' refusal is the result.
    fn rename(&self, call: &Call, path: &str) -> Returned {
        let to = call.path2.as_deref().unwrap_or_default();
        let flags = rename_flags(&call.flags);
        match rustix::fs::renameat_with(&self.root, path, &self.root, to, flags) {
            Err(e) if e == rustix::io::Errno::INVAL && flags == RenameFlags::NOREPLACE => {
                match rustix::fs::statat(&self.root, to, AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(_) => return Err(libc::EEXIST),
                    Err(e) if e != rustix::io::Errno::NOENT => return Err(errno(e)),
                    Err(_) => {}
                }
                done(rustix::fs::renameat(&self.root, path, &self.root, to))?;
                self.unflagged_renames.fetch_add(1, Ordering::SeqCst);
                Ok(0)
            }
            r => done(r),
        }
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
            if let Some(Ok(mut twin)) = self.twins.get(slot).map(|t| t.lock()) {
                twin.take();
            }
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
            Op::Read | Op::Getdents | Op::MapRead if buf.len() < size => {
                *buf = Aligned::new(size, |_| {});
            }
            _ => {}
        }
        match call.op {
            Op::Read if !rwf(&call.flags).is_empty() => {
                let off = call.offset.unwrap_or(0);
                let r = rustix::io::preadv2(
                    &*fd,
                    &mut [IoSliceMut::new(buf.slice_mut(size))],
                    off,
                    rwf(&call.flags),
                );
                bytes(r)
            }
            Op::Read => match call.offset {
                Some(off) => bytes(rustix::io::pread(&*fd, buf.slice_mut(size), off)),
                None => bytes(rustix::io::read(&*fd, buf.slice_mut(size))),
            },
            Op::Write => self.write(&fd, call, slot, size),
            Op::Fsync => done(rustix::fs::fsync(&*fd)),
            Op::Fdatasync => done(rustix::fs::fdatasync(&*fd)),
            Op::SyncFileRange => sync_file_range(&fd, call),
            Op::Stat => done(rustix::fs::fstat(&*fd).map(|_| ())),
            Op::Truncate => done(rustix::fs::ftruncate(&*fd, call.size.unwrap_or(0))),
            Op::Fallocate => fallocate(&fd, call),
            Op::Getdents => getdents(&fd, buf.slice_mut(size)),
            Op::MapRead => {
                let twin = self.twin_if_direct(&fd, slot)?;
                let r =
                    super::mapped::read(twin.as_deref().unwrap_or(&fd), call, buf.slice_mut(size));
                r.map(|n| n as i64).map_err(errno)
            }
            Op::Syncfs => done(rustix::fs::syncfs(&*fd)),
            Op::Seek => seek(&fd, call),
            Op::Setxattr | Op::Getxattr | Op::Removexattr => {
                super::attrs::on_fd(&fd, call, attr_buf(call, buf))
            }
            Op::Setattr => super::setattr::on_fd(&fd, call),
            Op::Lock => super::lock::issue(&fd, call),
            // Another name of the slot's open file (`super::script`): nothing to issue.
            Op::Dup => Ok(fd.as_raw_fd() as i64),
            _ => Err(libc::EBADF),
        }
    }

    /// A copy between two files, the pair of records `read` (on slot `from`) and `write` (on
    /// slot `to`) of one `copy_file_range` or `sendfile`, issued as that call for the bytes it
    /// copied: the kernel and the file system then do what they did for the program (xfs
    /// and btrfs share the extents, ext4 copies in the kernel, a FUSE daemon gets the
    /// request or the kernel's fallback), where a read and a write would move every byte
    /// through the replay.
    pub fn copy(&self, read: &Call, from: usize, write: &Call, to: usize) -> Returned {
        let (src, dst) = (self.fd(from)?, self.fd(to)?);
        let len = write_len(write);
        let mut in_off = read.offset;
        if write.syscall.starts_with("sendfile") {
            return bytes(rustix::fs::sendfile(&*dst, &*src, in_off.as_mut(), len));
        }
        let mut out_off = write.offset;
        bytes(rustix::fs::copy_file_range(
            &*src,
            in_off.as_mut(),
            &*dst,
            out_off.as_mut(),
            len,
        ))
    }

    /// A clone (call `index`) from the file in slot `from` to the one in slot `to`
    /// (`super::reflink`).
    pub fn clone_file(
        &self,
        index: usize,
        call: &Call,
        from: Option<usize>,
        to: Option<usize>,
    ) -> Returned {
        let src = self.fd(from.ok_or(libc::EBADF)?)?;
        let dst = self.fd(to.ok_or(libc::EBADF)?)?;
        super::reflink::issue(index, call, &src, &dst, &self.clones)
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
            Some(off) if !rwf(&call.flags).is_empty() => bytes(rustix::io::pwritev2(
                fd,
                &[IoSlice::new(data)],
                off,
                rwf(&call.flags),
            )),
            Some(off) => bytes(rustix::io::pwrite(fd, data, off)),
            None => bytes(rustix::io::write(fd, data)),
        }
    }

    /// An msync'd range of a shared mapping: the bytes it wrote back, as a write of the range
    /// as far as the file reaches (a mapping's stores never grow a file), then the
    /// write-back itself: `MS_SYNC` waits for it (an fdatasync), `MS_ASYNC` starts it.
    fn msync(&self, call: &Call, path: &str) -> Returned {
        let fd = rustix::fs::openat(
            &self.root,
            path,
            OFlags::WRONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(errno)?;
        let size = rustix::fs::fstat(&fd).map_err(errno)?.st_size.max(0) as u64;
        let off = call.offset.unwrap_or(0);
        let len = call.size.unwrap_or(0).min(size.saturating_sub(off));
        let pool = self
            .pools
            .iter()
            .max_by_key(|p| p.len())
            .ok_or(libc::EFAULT)?;
        let chunk = (pool.len() as u64).saturating_sub(crate::dataset::content::BLOCK);
        let mut done_bytes = 0;
        while done_bytes < len {
            let at = off + done_bytes;
            let n = chunk.min(len - done_bytes) as usize;
            if n == 0 {
                return Err(libc::EFAULT);
            }
            let from = (at % crate::dataset::content::BLOCK) as usize;
            match bytes(rustix::io::pwrite(&fd, pool.slice(from, n), at))? {
                0 => break,
                w => done_bytes += w as u64,
            }
        }
        if call.flags.iter().any(|f| f == "MS_SYNC") {
            rustix::fs::fdatasync(&fd).map_err(errno)?;
        } else if call.flags.iter().any(|f| f == "MS_ASYNC") {
            sync_range(&fd, off, len, libc::SYNC_FILE_RANGE_WRITE)?;
        }
        Ok(done_bytes as i64)
    }
}

/// The bytes a read or write of `call` moves in the replay: what the call returned when
/// recorded, never the length it asked for (a program may ask for anything: `cp` asks
/// copy_file_range for 2^62 bytes). A read asks for the returned bytes rounded up to a
/// block, at most what was asked, so a read at the end of a file still finds it there and
/// an O_DIRECT read stays aligned. A failed call moves nothing; an msync's range is
/// written, and a mapping's range read where it is not mapped, in pieces of at most
/// [`MAPPED_PIECE`] (so the content pools and read buffers, sized by this, stay small);
/// other calls use `size`.
pub fn issued_len(call: &Call) -> u64 {
    const BLOCK: u64 = 4096;
    let asked = call.size.unwrap_or(0);
    match (call.op, call.ret) {
        (Op::Msync, _) => asked.min(MAPPED_PIECE),
        (Op::MapRead, Some(n)) => {
            (n.max(0) as u64)
                .div_ceil(BLOCK)
                .clamp(1, MAPPED_PIECE / BLOCK)
                * BLOCK
        }
        (Op::Write, Some(n)) => n.max(0) as u64,
        (Op::Read, Some(n)) => asked.min((n.max(0) as u64).div_ceil(BLOCK).max(1) * BLOCK),
        (Op::Read | Op::Write, None) => asked.min(BLOCK),
        _ => asked,
    }
}

/// The most bytes one replayed call moves of a mapping's range (an msync's write, a
/// mapping's read): a MiB, so a range of gigabytes costs calls, not memory.
const MAPPED_PIECE: u64 = 1 << 20;

/// A recorded fallocate, with its mode. A file system that does not do it (ntfs-3g and
/// exfat-fuse refuse every mode with EOPNOTSUPP) refuses it as it would have refused the
/// program: that is the call's result here, which the self-check counts
/// (`super::check::refused_here`). A refused mode that would have grown the file (no keep
/// size, no punch hole) is followed by the size it asked for, which is what glibc's
/// `posix_fallocate`, most programs' way to the call, leaves where the file system has no
/// fallocate (it writes a zero into each block of the range; the replay sets the size only,
/// and says so): the files end as the program's did.
fn fallocate(fd: &OwnedFd, call: &Call) -> Returned {
    let mode = FallocateFlags::from_bits_retain(call.mode.unwrap_or(0));
    let (off, len) = (call.offset.unwrap_or(0), call.size.unwrap_or(0));
    let r = rustix::fs::fallocate(fd, mode, off, len);
    let grows = !mode.intersects(FallocateFlags::KEEP_SIZE | FallocateFlags::PUNCH_HOLE);
    if let (Err(e), true) = (r, grows) {
        if super::errno::unsupported(e.raw_os_error()) {
            let size = rustix::fs::fstat(fd).map_err(errno)?.st_size.max(0) as u64;
            if size < off.saturating_add(len) {
                rustix::fs::ftruncate(fd, off.saturating_add(len)).map_err(errno)?;
            }
        }
    }
    done(r)
}

/// `buf`, grown to an attribute call's value or buffer length (its bytes a value's).
fn attr_buf<'b>(call: &Call, buf: &'b mut Aligned) -> &'b mut [u8] {
    let n = super::attrs::len(call);
    if buf.len() < n {
        *buf = Aligned::new(n, |b| b.fill(b'x'));
    }
    buf.slice_mut(n)
}

/// renameat2's flags by their names.
fn rename_flags(names: &[String]) -> RenameFlags {
    names.iter().fold(RenameFlags::empty(), |acc, n| {
        acc | match n.as_str() {
            "RENAME_NOREPLACE" => RenameFlags::NOREPLACE,
            "RENAME_EXCHANGE" => RenameFlags::EXCHANGE,
            "RENAME_WHITEOUT" => RenameFlags::WHITEOUT,
            _ => RenameFlags::empty(),
        }
    })
}

/// preadv2's and pwritev2's flags by their names.
fn rwf(names: &[String]) -> ReadWriteFlags {
    names.iter().fold(ReadWriteFlags::empty(), |acc, n| {
        acc | match n.as_str() {
            "RWF_DSYNC" => ReadWriteFlags::DSYNC,
            "RWF_SYNC" => ReadWriteFlags::SYNC,
            "RWF_HIPRI" => ReadWriteFlags::HIPRI,
            "RWF_NOWAIT" => ReadWriteFlags::NOWAIT,
            "RWF_APPEND" => ReadWriteFlags::APPEND,
            _ => ReadWriteFlags::empty(),
        }
    })
}

/// `sync_file_range` with the recorded flags (a trace recorded before they were kept asks
/// for the range's write-out).
fn sync_file_range(fd: &OwnedFd, call: &Call) -> Returned {
    let flags = call.flags.iter().fold(0, |acc, n| {
        acc | match n.as_str() {
            "SYNC_FILE_RANGE_WAIT_BEFORE" => libc::SYNC_FILE_RANGE_WAIT_BEFORE,
            "SYNC_FILE_RANGE_WRITE" => libc::SYNC_FILE_RANGE_WRITE,
            "SYNC_FILE_RANGE_WAIT_AFTER" => libc::SYNC_FILE_RANGE_WAIT_AFTER,
            _ => 0,
        }
    });
    let flags = if call.flags.is_empty() {
        libc::SYNC_FILE_RANGE_WRITE
    } else {
        flags
    };
    sync_range(fd, call.offset.unwrap_or(0), call.size.unwrap_or(0), flags)
}

fn sync_range(fd: &impl AsFd, off: u64, len: u64, flags: libc::c_uint) -> Returned {
    // SAFETY: a valid descriptor and plain integers.
    let r = unsafe {
        libc::sync_file_range(
            fd.as_fd().as_raw_fd(),
            off as libc::off64_t,
            len as libc::off64_t,
            flags,
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

impl Target {
    /// For a descriptor opened with `O_DIRECT`, the buffered twin its mappings are read
    /// through (`super::mapped::read`), opened at its first mapping and kept in `slot` until the
    /// descriptor's close, so a program that maps its file again and again costs the
    /// replay no open and close per mapping, which the program did not make; `None` for any
    /// other descriptor.
    fn twin_if_direct(&self, fd: &OwnedFd, slot: usize) -> Result<Option<Arc<OwnedFd>>, i32> {
        if !rustix::fs::fcntl_getfl(fd)
            .map_err(errno)?
            .contains(OFlags::DIRECT)
        {
            return Ok(None);
        }
        let Some(Ok(mut twin)) = self.twins.get(slot).map(|t| t.lock()) else {
            return super::mapped::buffered_twin(fd)
                .map(|t| Some(Arc::new(t)))
                .map_err(errno);
        };
        if twin.is_none() {
            *twin = Some(Arc::new(super::mapped::buffered_twin(fd).map_err(errno)?));
        }
        Ok(twin.clone())
    }
}
