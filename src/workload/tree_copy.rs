//! The tree-copy engine: copies a directory tree the way `cp -a` does, as fast as the file
//! systems allow, and reports how each file's bytes moved.
//!
//! Shared by `copy` (its measured phase), `copy-verify` (hashing on the way), `sync`
//! (laying down the mirror it later brings in line) and `fsarena op copy`, so all of them
//! copy through one code path.
//!
//! The copy is one pass of the shared walker over the source: one task per source
//! directory creates the subdirectories' counterparts and copies its files, each opened
//! with `openat` relative to the directory fds. Directory times are set after all files
//! are in (a file created in a directory would move its mtime again).

use std::ffi::CStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;
use rustix::fs::{AtFlags, Mode, StatxFlags, Timespec, Timestamps};

use super::ctx::Ctx;
use super::dirfd::{open_dir, open_rel_dir};
use super::error::{IoContext, WorkloadError};
use super::outcome::Outcome;
use crate::fsops::copy::{copy_file_at, copy_file_hashing, CopyMethod, CopyStrategy};
use crate::fsops::{self, Dir, Kind, LatencyLog, Need, Totals, WalkOptions};

/// Read/write fallback buffer per worker: large, so a big file takes few syscalls.
pub const COPY_BUF: usize = 1 << 20;

/// What a tree copy did.
#[derive(Debug, Default)]
pub struct TreeCopy {
    pub files: u64,
    pub bytes: u64,
    pub dirs: u64,
    pub symlinks: u64,
    /// Sockets, FIFOs, device nodes: not data, not copied.
    pub skipped: u64,
    pub reflink_files: u64,
    pub copy_file_range_files: u64,
    pub readwrite_files: u64,
    /// Files whose mode the destination refused to take (FUSE without permissions).
    pub mode_not_kept: u64,
    pub latency: LatencyLog,
    /// With [`CopyMode::Hashing`]: (relative path, source xxh3, bytes) of every file.
    pub source_hashes: Vec<(PathBuf, u64, u64)>,
    /// Why faster methods were switched off.
    pub refusals: Vec<String>,
}

/// How file bytes move.
impl Totals for TreeCopy {
    fn add(&mut self, o: TreeCopy) {
        self.files += o.files;
        self.bytes += o.bytes;
        self.dirs += o.dirs;
        self.symlinks += o.symlinks;
        self.skipped += o.skipped;
        self.reflink_files += o.reflink_files;
        self.copy_file_range_files += o.copy_file_range_files;
        self.readwrite_files += o.readwrite_files;
        self.mode_not_kept += o.mode_not_kept;
        self.latency.add(o.latency);
        self.source_hashes.add(o.source_hashes);
        self.refusals.add(o.refusals);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyMode {
    /// Fastest available: reflink (if `reflink`), then `copy_file_range`, then read/write.
    Fast { reflink: bool },
    /// Through the user buffer, hashing the source on the way (a verifying copier).
    Hashing,
    /// Read/write only, reached through `copy_file_range` attempts refused as if the kernel
    /// said EOPNOTSUPP: exercises the fallback path a refusing file system drives (tests).
    RefusedRange,
}

/// Per-worker state of a tree copy: buffer and counters, merged at the end.
struct Worker {
    buf: Vec<u8>,
    out: TreeCopy,
    /// (relative dir, atime, mtime) of every directory created, set after all files.
    dir_times: Vec<(PathBuf, Timestamps)>,
}

fn times_at(dirfd: BorrowedFd<'_>, name: &CStr) -> std::io::Result<(Timestamps, u32)> {
    let st = rustix::fs::statx(
        dirfd,
        name,
        AtFlags::SYMLINK_NOFOLLOW,
        StatxFlags::MODE | StatxFlags::ATIME | StatxFlags::MTIME,
    )?;
    let ts = |t: rustix::fs::StatxTimestamp| Timespec {
        tv_sec: t.tv_sec,
        tv_nsec: t.tv_nsec.into(),
    };
    Ok((
        Timestamps {
            last_access: ts(st.stx_atime),
            last_modification: ts(st.stx_mtime),
        },
        u32::from(st.stx_mode),
    ))
}

/// Copies the tree under `src` into the existing directory `dst` with `threads` workers
/// (one task per source directory), preserving file modes and times, directory modes and
/// times, and symbolic links as links.
pub fn copy_tree(
    ctx: &Ctx,
    src: &Path,
    dst: &Path,
    threads: usize,
    mode: CopyMode,
) -> Result<TreeCopy, WorkloadError> {
    let strategy = match mode {
        CopyMode::Fast { reflink } => CopyStrategy::new(reflink, true),
        CopyMode::Hashing => CopyStrategy::new(false, false),
        CopyMode::RefusedRange => {
            let s = CopyStrategy::new(false, true);
            s.simulate_copy_file_range_refusal(rustix::io::Errno::OPNOTSUPP.raw_os_error());
            s
        }
    };
    let dst_root = open_dir(dst)?;
    let opts = WalkOptions::new(threads, Need::NONE);
    let (_, workers) = fsops::walk_with(
        src,
        &opts,
        || Worker {
            buf: vec![0u8; COPY_BUF],
            out: TreeCopy::default(),
            dir_times: Vec::new(),
        },
        |w: &mut Worker, d: &Dir| copy_dir(ctx, &strategy, mode, &dst_root, dst, w, d),
    )?;

    let mut dir_times = Vec::new();
    let mut total = TreeCopy::sum_all(workers.into_iter().map(|w| {
        dir_times.extend(w.dir_times);
        w.out
    }));
    total.refusals = strategy.refusals();

    // Directory times last: every file creation above moved the parents' mtimes.
    let pool = fsops::pool(threads)?;
    pool.install(|| {
        dir_times.par_iter().try_for_each(|(rel, times)| {
            ctx.check()?;
            rustix::fs::utimensat(&dst_root, rel, times, AtFlags::SYMLINK_NOFOLLOW).map_err(|e| {
                WorkloadError::io(
                    format!("setting times of {}", dst.join(rel).display()),
                    e.into(),
                )
            })
        })
    })?;
    Ok(total)
}

fn copy_dir(
    ctx: &Ctx,
    strategy: &CopyStrategy,
    mode: CopyMode,
    dst_root: &OwnedFd,
    dst: &Path,
    w: &mut Worker,
    d: &Dir,
) -> Result<(), WorkloadError> {
    ctx.check()?;
    let rel = d.rel();
    let owned =
        open_rel_dir(dst_root, rel).ctx(|| format!("opening {}", dst.join(rel).display()))?;
    let dst_fd = owned.as_ref().map_or(dst_root.as_fd(), |o| o.as_fd());
    let src_fd = d.fd();
    for e in d.entries() {
        let what = |verb: &str| format!("{verb} {}", dst.join(d.path_of(e.name)).display());
        match e.kind {
            Kind::File => {
                ctx.check()?;
                let t = Instant::now();
                let r = match mode {
                    CopyMode::Hashing => {
                        copy_file_hashing(src_fd, e.name, dst_fd, e.name, &mut w.buf)
                    }
                    _ => copy_file_at(src_fd, e.name, dst_fd, e.name, strategy, &mut w.buf),
                }
                .ctx(|| what("copying to"))?;
                w.out.latency.0.push(t.elapsed().as_nanos() as u64);
                w.out.files += 1;
                w.out.bytes += r.bytes;
                match r.method {
                    CopyMethod::Reflink => w.out.reflink_files += 1,
                    CopyMethod::CopyFileRange => w.out.copy_file_range_files += 1,
                    CopyMethod::ReadWrite => w.out.readwrite_files += 1,
                }
                if !r.mode_kept {
                    w.out.mode_not_kept += 1;
                }
                if let Some(h) = r.source_hash {
                    w.out.source_hashes.push((d.path_of(e.name), h, r.bytes));
                }
            }
            Kind::Dir => make_dir(src_fd, dst_fd, e.name, d.path_of(e.name), &what, w)?,
            Kind::Symlink => {
                let target = rustix::fs::readlinkat(src_fd, e.name, Vec::new())
                    .map_err(std::io::Error::from)
                    .ctx(|| what("reading link for"))?;
                rustix::fs::symlinkat(target.as_c_str(), dst_fd, e.name)
                    .map_err(std::io::Error::from)
                    .ctx(|| what("creating link"))?;
                w.out.symlinks += 1;
            }
            Kind::Other => w.out.skipped += 1,
        }
    }
    Ok(())
}

/// Creates the counterpart of source directory `name` with its exact mode bits and
/// remembers its times (under `rel`, its path relative to the tree): they are set only at the end, when no file creation inside it can
/// move them again.
fn make_dir(
    src_fd: BorrowedFd<'_>,
    dst_fd: BorrowedFd<'_>,
    name: &CStr,
    rel: PathBuf,
    what: &dyn Fn(&str) -> String,
    w: &mut Worker,
) -> Result<(), WorkloadError> {
    let (times, m) = times_at(src_fd, name).ctx(|| what("reading times for"))?;
    rustix::fs::mkdirat(dst_fd, name, Mode::from_raw_mode(m & 0o7777))
        .map_err(std::io::Error::from)
        .ctx(|| what("creating directory"))?;
    // mkdir applies the umask; cp -a restores the exact bits.
    rustix::fs::chmodat(
        dst_fd,
        name,
        Mode::from_raw_mode(m & 0o7777),
        AtFlags::empty(),
    )
    .or_else(|e| {
        if e == rustix::io::Errno::PERM || e == rustix::io::Errno::OPNOTSUPP {
            Ok(())
        } else {
            Err(e)
        }
    })
    .map_err(std::io::Error::from)
    .ctx(|| what("setting mode of"))?;
    w.dir_times.push((rel, times));
    w.out.dirs += 1;
    Ok(())
}

/// The metrics and notes every tree copy reports.
pub fn copy_report(t: &TreeCopy, out: &mut Outcome) {
    let m = &mut out.metrics;
    m.insert("bytes_copied".into(), t.bytes as f64);
    m.insert("dirs".into(), t.dirs as f64);
    m.insert("reflink_files".into(), t.reflink_files as f64);
    m.insert(
        "copy_file_range_files".into(),
        t.copy_file_range_files as f64,
    );
    m.insert("readwrite_files".into(), t.readwrite_files as f64);
    t.latency.clone().add_metrics("file_copy", m);
    let used: Vec<String> = [
        (t.reflink_files, "reflink"),
        (t.copy_file_range_files, "copy_file_range"),
        (t.readwrite_files, "read/write"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, name)| format!("{name} for {n} files"))
    .collect();
    if !used.is_empty() {
        out.notes.push(format!("copied with {}", used.join(", ")));
    }
    out.notes.extend(t.refusals.iter().cloned());
    if t.mode_not_kept > 0 {
        out.notes.push(format!(
            "the target refused to keep the mode of {} files (no permission support)",
            t.mode_not_kept
        ));
    }
    if t.skipped > 0 {
        out.notes.push(format!(
            "{} special files (FIFOs, sockets, devices) not copied",
            t.skipped
        ));
    }
}
