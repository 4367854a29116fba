//! Copy primitives: one regular file from one directory fd to another, by the fastest
//! method the file systems allow, keeping what `cp -a` keeps for a file (mode, access and
//! modification times).
//!
//! The order is reflink (`FICLONE`, shares extents: btrfs, xfs with reflink), then
//! `copy_file_range` (in-kernel copy, server-side on some file systems), then `read`/`write`
//! through a large user buffer. A method the kernel refuses with an "unsupported here"
//! errno is switched off for the rest of the run in the shared [`CopyStrategy`], so a tree
//! of a million files pays for the refusal once, not a million times.
//!
//! The bytes themselves move through [`super::range_copy`], whose loops take explicit
//! offsets, so a whole file's copy here and the replay of a clone a file system refuses
//! (`workload::replay::reflink`) share them.

use std::ffi::CStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, StatxFlags, Timestamps};
use rustix::io::Errno;
use xxhash_rust::xxh3::Xxh3Default;

pub use super::range_copy::is_unsupported;
use super::range_copy::{self, KernelCopy, Range};

/// How a file's bytes got to the destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CopyMethod {
    /// `ioctl(FICLONE)`: the destination shares the source's extents.
    Reflink,
    /// `copy_file_range(2)`: the kernel copied without a user buffer.
    CopyFileRange,
    /// `read(2)`/`write(2)` through a user buffer.
    ReadWrite,
}

impl CopyMethod {
    /// The name used in metrics and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            CopyMethod::Reflink => "reflink",
            CopyMethod::CopyFileRange => "copy_file_range",
            CopyMethod::ReadWrite => "read/write",
        }
    }
}

/// Which methods a copy may still try; shared by every worker of one tree copy.
#[derive(Debug)]
pub struct CopyStrategy {
    reflink: AtomicBool,
    copy_file_range: AtomicBool,
    /// Testing aid: make `copy_file_range` act as if the kernel refused it with this errno
    /// (0 = off), so the fallback path can be exercised on any file system.
    simulated_cfr_refusal: AtomicU64,
    /// Why a method was switched off, for the workload's notes.
    refusals: Mutex<Vec<String>>,
}

impl CopyStrategy {
    /// `reflink`: try `FICLONE` first (only useful when source and destination share a file
    /// system). `copy_file_range`: try the in-kernel copy before read/write.
    pub fn new(reflink: bool, copy_file_range: bool) -> Self {
        CopyStrategy {
            reflink: AtomicBool::new(reflink),
            copy_file_range: AtomicBool::new(copy_file_range),
            simulated_cfr_refusal: AtomicU64::new(0),
            refusals: Mutex::new(Vec::new()),
        }
    }

    /// Makes every `copy_file_range` attempt fail as if the kernel returned `errno`, so the
    /// read/write fallback runs through the same code path a refusing file system drives.
    pub fn simulate_copy_file_range_refusal(&self, errno: i32) {
        self.simulated_cfr_refusal
            .store(errno as u64, Ordering::Relaxed);
    }

    /// Human-readable reasons why methods were switched off during the run.
    pub fn refusals(&self) -> Vec<String> {
        self.refusals
            .lock()
            .map(|v| v.clone())
            .unwrap_or_else(|p| p.into_inner().clone())
    }

    fn refuse(&self, flag: &AtomicBool, what: &str, errno: Errno) {
        // Only the first worker to see the refusal records it.
        if flag.swap(false, Ordering::Relaxed) {
            let msg = format!("{what} refused ({}), fell back", io::Error::from(errno));
            match self.refusals.lock() {
                Ok(mut v) => v.push(msg),
                Err(p) => p.into_inner().push(msg),
            }
        }
    }
}

/// The result of copying one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopiedFile {
    pub method: CopyMethod,
    /// Bytes the destination holds afterwards.
    pub bytes: u64,
    /// False when the destination file system refused `fchmod` (FUSE mounts without
    /// permission support); `cp -a` would warn, we count it.
    pub mode_kept: bool,
    /// xxh3-64 of the source's bytes, when the caller asked for it ([`copy_file_hashing`]).
    pub source_hash: Option<u64>,
}

/// Size, mode and times of an open file, as `cp -a` keeps them.
struct SourceMeta {
    size: u64,
    mode: u32,
    times: Timestamps,
}

fn source_meta(fd: BorrowedFd<'_>) -> io::Result<SourceMeta> {
    let st = rustix::fs::statx(
        fd,
        c"",
        AtFlags::EMPTY_PATH,
        StatxFlags::TYPE
            | StatxFlags::MODE
            | StatxFlags::SIZE
            | StatxFlags::ATIME
            | StatxFlags::MTIME,
    )?;
    let ts = |t: rustix::fs::StatxTimestamp| rustix::fs::Timespec {
        tv_sec: t.tv_sec,
        tv_nsec: t.tv_nsec.into(),
    };
    Ok(SourceMeta {
        size: st.stx_size,
        mode: u32::from(st.stx_mode),
        times: Timestamps {
            last_access: ts(st.stx_atime),
            last_modification: ts(st.stx_mtime),
        },
    })
}

fn open_pair(
    src_dir: BorrowedFd<'_>,
    src_name: &CStr,
    dst_dir: BorrowedFd<'_>,
    dst_name: &CStr,
) -> io::Result<(File, File, SourceMeta)> {
    let src = rustix::fs::openat(
        src_dir,
        src_name,
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::empty(),
    )?;
    let meta = source_meta(src.as_fd())?;
    if FileType::from_raw_mode(meta.mode) != FileType::RegularFile {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    let dst = rustix::fs::openat(
        dst_dir,
        dst_name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::from_raw_mode(meta.mode & 0o7777),
    )?;
    Ok((File::from(src), File::from(dst), meta))
}

/// Copies the regular file `src_name` (relative to `src_dir`) to `dst_name` (relative to
/// `dst_dir`), replacing what is there, then sets mode and access/modification times from
/// the source. `buf` is the read/write fallback buffer: make it large (≥ 1 MiB) and reuse it.
///
/// Errors keep the kernel's errno (ENOSPC, EIO, …) so callers can classify them.
pub fn copy_file_at(
    src_dir: BorrowedFd<'_>,
    src_name: &CStr,
    dst_dir: BorrowedFd<'_>,
    dst_name: &CStr,
    strategy: &CopyStrategy,
    buf: &mut [u8],
) -> io::Result<CopiedFile> {
    let (src, dst, meta) = open_pair(src_dir, src_name, dst_dir, dst_name)?;
    let method = copy_data(&src, &dst, meta.size, strategy, buf)?;
    let mode_kept = finish(&dst, &meta)?;
    Ok(CopiedFile {
        method,
        bytes: meta.size,
        mode_kept,
        source_hash: None,
    })
}

/// Like [`copy_file_at`], but always through the user buffer, hashing the source bytes as
/// they pass (xxh3-64), the way a verifying copier does so that it never reads the source
/// twice.
pub fn copy_file_hashing(
    src_dir: BorrowedFd<'_>,
    src_name: &CStr,
    dst_dir: BorrowedFd<'_>,
    dst_name: &CStr,
    buf: &mut [u8],
) -> io::Result<CopiedFile> {
    let (src, dst, meta) = open_pair(src_dir, src_name, dst_dir, dst_name)?;
    let mut hasher = Xxh3Default::new();
    let bytes = range_copy::by_buffer(
        src.as_fd(),
        dst.as_fd(),
        Range::to_end(0),
        buf,
        Some(&mut hasher),
    )?;
    let mode_kept = finish(&dst, &meta)?;
    Ok(CopiedFile {
        method: CopyMethod::ReadWrite,
        bytes,
        mode_kept,
        source_hash: Some(hasher.digest()),
    })
}

/// Mode, then times (last, since any later write would move mtime again).
fn finish(dst: &File, meta: &SourceMeta) -> io::Result<bool> {
    let mode_kept = match rustix::fs::fchmod(dst, Mode::from_raw_mode(meta.mode & 0o7777)) {
        Ok(()) => true,
        Err(e) if e == Errno::PERM || e == Errno::OPNOTSUPP || e == Errno::NOSYS => false,
        Err(e) => return Err(e.into()),
    };
    rustix::fs::futimens(dst, &meta.times)?;
    Ok(mode_kept)
}

fn copy_data(
    src: &File,
    dst: &File,
    size: u64,
    strategy: &CopyStrategy,
    buf: &mut [u8],
) -> io::Result<CopyMethod> {
    if size == 0 {
        return Ok(CopyMethod::ReadWrite);
    }
    if strategy.reflink.load(Ordering::Relaxed) {
        match rustix::fs::ioctl_ficlone(dst, src) {
            Ok(()) => return Ok(CopyMethod::Reflink),
            Err(e) if is_unsupported(e) || e == Errno::PERM => {
                strategy.refuse(&strategy.reflink, "reflink (FICLONE)", e)
            }
            Err(e) => return Err(e.into()),
        }
    }
    if strategy.copy_file_range.load(Ordering::Relaxed) {
        match kernel_copy(src, dst, size, strategy)? {
            KernelCopy::Moved(n) if n == size => return Ok(CopyMethod::CopyFileRange),
            // The kernel stopped early (short source, or a file system that copies nothing):
            // read/write continues from where it stopped.
            KernelCopy::Moved(n) => {
                range_copy::by_buffer(src.as_fd(), dst.as_fd(), Range::to_end(n), buf, None)?;
                return Ok(CopyMethod::CopyFileRange);
            }
            KernelCopy::Refused(e) => {
                strategy.refuse(&strategy.copy_file_range, "copy_file_range", e)
            }
        }
    }
    range_copy::by_buffer(src.as_fd(), dst.as_fd(), Range::to_end(0), buf, None)?;
    Ok(CopyMethod::ReadWrite)
}

/// The whole file by `copy_file_range`, or the refusal a test asked the strategy to
/// simulate, taken as the kernel's first answer would be.
fn kernel_copy(
    src: &File,
    dst: &File,
    size: u64,
    strategy: &CopyStrategy,
) -> rustix::io::Result<KernelCopy> {
    match strategy.simulated_cfr_refusal.load(Ordering::Relaxed) {
        0 => range_copy::by_kernel(src.as_fd(), dst.as_fd(), Range::new(0, 0, size)),
        errno => match Errno::from_raw_os_error(errno as i32) {
            e if is_unsupported(e) => Ok(KernelCopy::Refused(e)),
            e => Err(e),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::OwnedFd;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use std::path::Path;

    fn dir_fd(p: &Path) -> OwnedFd {
        rustix::fs::open(p, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).unwrap()
    }

    fn tmp_in(base: &str) -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix("fsarena-copy-")
            .tempdir_in(base)
            .unwrap()
    }

    /// A 3 MiB + 5 byte file with varied bytes, mode 0640 and an old mtime.
    fn make_source(dir: &Path) -> Vec<u8> {
        let data: Vec<u8> = (0..(3 << 20) + 5u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let p = dir.join("src.bin");
        std::fs::write(&p, &data).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        let t = rustix::fs::Timespec {
            tv_sec: 1_600_000_000,
            tv_nsec: 123_456_789,
        };
        rustix::fs::utimensat(
            rustix::fs::CWD,
            &p,
            &Timestamps {
                last_access: t,
                last_modification: t,
            },
            AtFlags::empty(),
        )
        .unwrap();
        data
    }

    fn copy(src: &Path, dst: &Path, strategy: &CopyStrategy) -> CopiedFile {
        let mut buf = vec![0u8; 1 << 20];
        copy_file_at(
            dir_fd(src).as_fd(),
            c"src.bin",
            dir_fd(dst).as_fd(),
            c"dst.bin",
            strategy,
            &mut buf,
        )
        .unwrap()
    }

    fn assert_same(data: &[u8], dst: &Path) {
        let p = dst.join("dst.bin");
        assert!(std::fs::read(&p).unwrap() == data, "content differs");
        let m = std::fs::metadata(&p).unwrap();
        assert_eq!(m.mode() & 0o7777, 0o640);
        assert_eq!((m.mtime(), m.mtime_nsec()), (1_600_000_000, 123_456_789));
    }

    #[test]
    fn refused_copy_file_range_falls_back_to_read_write() {
        let src = tmp_in("/var/tmp");
        let dst = tmp_in("/var/tmp");
        let data = make_source(src.path());
        let s = CopyStrategy::new(false, true);
        s.simulate_copy_file_range_refusal(Errno::OPNOTSUPP.raw_os_error());
        let r = copy(src.path(), dst.path(), &s);
        assert_eq!(r.method, CopyMethod::ReadWrite);
        assert_eq!(r.bytes, data.len() as u64);
        assert_same(&data, dst.path());
        let why = s.refusals();
        assert_eq!(why.len(), 1, "{why:?}");
        assert!(why[0].starts_with("copy_file_range refused"), "{why:?}");
        // Switched off for the rest of the run: the next file goes straight to read/write.
        std::fs::remove_file(dst.path().join("dst.bin")).unwrap();
        s.simulate_copy_file_range_refusal(0);
        assert_eq!(
            copy(src.path(), dst.path(), &s).method,
            CopyMethod::ReadWrite
        );
        assert_eq!(s.refusals().len(), 1);
    }

    #[test]
    fn within_one_file_system_the_kernel_copies() {
        let src = tmp_in("/var/tmp");
        let dst = tmp_in("/var/tmp");
        let data = make_source(src.path());
        let s = CopyStrategy::new(true, true);
        let r = copy(src.path(), dst.path(), &s);
        // ext4 refuses FICLONE and takes copy_file_range; btrfs/xfs would reflink.
        assert_ne!(r.method, CopyMethod::ReadWrite, "{:?}", s.refusals());
        if r.method == CopyMethod::CopyFileRange {
            assert!(s.refusals()[0].starts_with("reflink"), "{:?}", s.refusals());
        }
        assert_same(&data, dst.path());
    }

    #[test]
    fn across_file_systems_exdev_falls_back() {
        let src = tmp_in("/var/tmp");
        let dst = tmp_in("/dev/shm");
        let dev = |p: &Path| std::fs::metadata(p).unwrap().dev();
        assert_ne!(
            dev(src.path()),
            dev(dst.path()),
            "/var/tmp and /dev/shm share a device"
        );
        let data = make_source(src.path());
        let s = CopyStrategy::new(false, true);
        let r = copy(src.path(), dst.path(), &s);
        assert_same(&data, dst.path());
        // Kernels 5.3–5.18 copied across file systems; newer ones refuse with EXDEV.
        if r.method == CopyMethod::ReadWrite {
            let why = s.refusals();
            assert!(why[0].contains("cross-device"), "{why:?}");
        } else {
            assert_eq!(r.method, CopyMethod::CopyFileRange);
        }
    }

    #[test]
    fn hashing_copy_hashes_the_source_and_handles_empty_files() {
        let src = tmp_in("/var/tmp");
        let dst = tmp_in("/var/tmp");
        let data = make_source(src.path());
        let mut buf = vec![0u8; 4096];
        let r = copy_file_hashing(
            dir_fd(src.path()).as_fd(),
            c"src.bin",
            dir_fd(dst.path()).as_fd(),
            c"dst.bin",
            &mut buf,
        )
        .unwrap();
        assert_eq!(r.source_hash, Some(xxhash_rust::xxh3::xxh3_64(&data)));
        assert_same(&data, dst.path());

        std::fs::write(src.path().join("empty"), b"").unwrap();
        let r = copy_file_at(
            dir_fd(src.path()).as_fd(),
            c"empty",
            dir_fd(dst.path()).as_fd(),
            c"empty",
            &CopyStrategy::new(true, true),
            &mut buf,
        )
        .unwrap();
        assert_eq!(r.bytes, 0);
        assert_eq!(
            std::fs::metadata(dst.path().join("empty")).unwrap().len(),
            0
        );
    }

    #[test]
    fn a_missing_source_keeps_its_errno() {
        let src = tmp_in("/var/tmp");
        let mut buf = vec![0u8; 16];
        let e = copy_file_at(
            dir_fd(src.path()).as_fd(),
            c"nope",
            dir_fd(src.path()).as_fd(),
            c"dst",
            &CopyStrategy::new(false, false),
            &mut buf,
        )
        .unwrap_err();
        assert_eq!(e.raw_os_error(), Some(Errno::NOENT.raw_os_error()));
    }
}
