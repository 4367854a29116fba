//! `chmod`: change the permission bits of every file (`fchmodat` relative to the directory
//! fd) and set a user extended attribute on it (`openat` + `fsetxattr`), where the file
//! system supports them. Support is probed once, unmeasured, on a scratch file: exFAT keeps
//! neither mode bits nor xattrs, and tmpfs before Linux 6.6 has no `user.*` xattrs. What
//! was probed is recorded (`mode_supported`, `xattr_supported`) and said in `notes`.

use std::ffi::CStr;
use std::os::fd::AsFd;
use std::path::Path;
use std::time::Instant;

use rustix::fs::{AtFlags, Mode, OFlags, StatxFlags, XattrFlags};

use super::create::prepare;
use super::{Ctx, Harness, IoContext, Outcome, Point, Workload, WorkloadError};
use crate::dataset::Manifest;
use crate::fsops::{self, Dir, Kind, LatencyLog, Need, WalkOptions};

pub struct Chmod;

/// The mode every file gets (files are created 0644).
pub const TARGET_MODE: u32 = 0o640;
/// The extended attribute every file gets.
pub const XATTR_NAME: &CStr = c"user.fsarena";
const PROBE_NAME: &CStr = c".fsarena-chmod-probe";

/// The attribute value for a data set seed.
pub fn xattr_value(seed: u64) -> Vec<u8> {
    format!("fsarena-{seed:016x}").into_bytes()
}

/// What the workload sets, and therefore what verification expects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expect {
    /// Permission bits (`& 0o7777`), when the file system stores them.
    pub mode: Option<u32>,
    /// `user.fsarena` value, when the file system supports user xattrs.
    pub xattr: Option<Vec<u8>>,
}

impl Workload for Chmod {
    fn name(&self) -> &'static str {
        "chmod"
    }

    fn describe(&self) -> &'static str {
        "change every file's mode bits and set a user xattr (where supported); verify by a stat/getxattr sweep"
    }

    fn run(
        &self,
        ctx: &Ctx,
        _point: &Point,
        harness: &mut dyn Harness,
    ) -> Result<Outcome, WorkloadError> {
        let (mode_ok, xattr_ok, notes) = probe(ctx.root)?;
        if !mode_ok && !xattr_ok {
            return Err(WorkloadError::Unsupported(format!(
                "this file system keeps neither mode bits nor user xattrs ({})",
                notes.join("; ")
            )));
        }
        let expect = Expect {
            mode: mode_ok.then_some(TARGET_MODE),
            xattr: xattr_ok.then(|| xattr_value(ctx.dataset.seed)),
        };
        let manifest = prepare(ctx)?;
        let mut outcome = harness.measure(&mut || {
            let t0 = Instant::now();
            let done = apply(ctx.root, ctx.threads, &expect, ctx)?;
            let s0 = Instant::now();
            crate::sys::syncfs(ctx.root).ctx(|| format!("syncfs {}", ctx.root.display()))?;
            let mut out = Outcome {
                seconds: t0.elapsed().as_secs_f64(),
                files: done.files,
                ..Outcome::default()
            };
            out.metrics
                .insert("syncfs_seconds".into(), s0.elapsed().as_secs_f64());
            done.chmod.add_metrics("chmod", &mut out.metrics);
            done.setxattr.add_metrics("setxattr", &mut out.metrics);
            Ok(out)
        })?;
        verify(ctx.root, ctx.threads, &manifest, &expect)?;
        outcome
            .metrics
            .insert("mode_supported".into(), f64::from(u8::from(mode_ok)));
        outcome
            .metrics
            .insert("xattr_supported".into(), f64::from(u8::from(xattr_ok)));
        outcome.notes.extend(notes);
        outcome
            .notes
            .push("setxattr_* latencies cover openat + fsetxattr + close".into());
        Ok(outcome)
    }
}

/// Whether an error means "this file system does not do that" rather than a failure.
fn unsupported(e: rustix::io::Errno) -> bool {
    [libc::ENOTSUP, libc::EOPNOTSUPP, libc::ENOSYS, libc::EPERM].contains(&e.raw_os_error())
}

/// Probes, on a scratch file in `dir` (removed again), whether mode bits and user xattrs
/// stick. Returns (mode supported, xattr supported, notes explaining any "no").
pub fn probe(dir: &Path) -> Result<(bool, bool, Vec<String>), WorkloadError> {
    let at = |op: &str| {
        format!(
            "{op} {}",
            dir.join(PROBE_NAME.to_string_lossy().as_ref()).display()
        )
    };
    let dirfd = rustix::fs::open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| WorkloadError::io(format!("open {}", dir.display()), e.into()))?;
    let fd = rustix::fs::openat(
        &dirfd,
        PROBE_NAME,
        OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )
    .map_err(|e| WorkloadError::io(at("create"), e.into()))?;
    let mut notes = Vec::new();
    let result = (|| {
        let mode_ok = match rustix::fs::chmodat(
            &dirfd,
            PROBE_NAME,
            Mode::from_raw_mode(TARGET_MODE),
            AtFlags::empty(),
        ) {
            Ok(()) => {
                let x = rustix::fs::statx(
                    &dirfd,
                    PROBE_NAME,
                    AtFlags::SYMLINK_NOFOLLOW,
                    StatxFlags::MODE,
                )
                .map_err(|e| WorkloadError::io(at("statx"), e.into()))?;
                let kept = u32::from(x.stx_mode) & 0o7777 == TARGET_MODE;
                if !kept {
                    notes.push(format!(
                        "chmod succeeds but mode bits are not stored (mode reads back {:o}); chmod not measured",
                        x.stx_mode & 0o7777
                    ));
                }
                kept
            }
            Err(e) if unsupported(e) => {
                notes.push(format!(
                    "chmod is not supported here ({e}); chmod not measured"
                ));
                false
            }
            Err(e) => return Err(WorkloadError::io(at("chmod"), e.into())),
        };
        let value = b"probe";
        let xattr_ok = match rustix::fs::fsetxattr(&fd, XATTR_NAME, value, XattrFlags::empty()) {
            Ok(()) => {
                let mut buf = [0u8; 16];
                let n = rustix::fs::fgetxattr(&fd, XATTR_NAME, &mut buf[..])
                    .map_err(|e| WorkloadError::io(at("fgetxattr"), e.into()))?;
                buf[..n] == value[..]
            }
            Err(e) if unsupported(e) => {
                notes.push(format!(
                    "user xattrs are not supported here ({e}), e.g. exFAT; xattrs not measured"
                ));
                false
            }
            Err(e) => return Err(WorkloadError::io(at("fsetxattr"), e.into())),
        };
        Ok((mode_ok, xattr_ok))
    })();
    drop(fd);
    rustix::fs::unlinkat(&dirfd, PROBE_NAME, AtFlags::empty())
        .map_err(|e| WorkloadError::io(at("unlink"), e.into()))?;
    let (m, x) = result?;
    Ok((m, x, notes))
}

/// What [`apply`] did.
#[derive(Debug, Default)]
pub struct Applied {
    pub files: u64,
    pub chmod: LatencyLog,
    pub setxattr: LatencyLog,
}

/// Sets the expected mode and/or xattr on every regular file under `root`.
pub fn apply(
    root: &Path,
    threads: usize,
    expect: &Expect,
    ctx: &Ctx,
) -> Result<Applied, WorkloadError> {
    let mode = expect.mode.map(Mode::from_raw_mode);
    let opts = WalkOptions::new(threads, Need::NONE);
    let (stats, parts) =
        fsops::walk_with(root, &opts, Applied::default, |a: &mut Applied, d: &Dir| {
            ctx.check()?;
            for e in d.entries().filter(|e| e.kind == Kind::File) {
                let fail = |op: &str, err: rustix::io::Errno| {
                    WorkloadError::io(format!("{op} {}", d.path_of(e.name).display()), err.into())
                };
                if let Some(mode) = mode {
                    a.chmod
                        .time(|| rustix::fs::chmodat(d.fd(), e.name, mode, AtFlags::empty()))
                        .map_err(|err| fail("chmod", err))?;
                }
                if let Some(value) = &expect.xattr {
                    a.setxattr
                        .time(|| {
                            let fd = rustix::fs::openat(
                                d.fd(),
                                e.name,
                                OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
                                Mode::empty(),
                            )?;
                            rustix::fs::fsetxattr(&fd, XATTR_NAME, value, XattrFlags::empty())
                        })
                        .map_err(|err| fail("setxattr", err))?;
                }
            }
            Ok::<(), WorkloadError>(())
        })?;
    let mut all = Applied {
        files: stats.files,
        ..Applied::default()
    };
    for p in parts {
        all.chmod.0.extend(p.chmod.0);
        all.setxattr.0.extend(p.setxattr.0);
    }
    Ok(all)
}

/// Checks that `root` holds exactly the manifest's files, each with the expected mode bits
/// and xattr value.
pub fn verify(
    root: &Path,
    threads: usize,
    manifest: &Manifest,
    expect: &Expect,
) -> Result<(), WorkloadError> {
    let opts = WalkOptions::new(threads, Need::MODE);
    let (_, parts) = fsops::walk_with(
        root,
        &opts,
        Vec::new,
        |out: &mut Vec<(String, Option<String>)>, d: &Dir| {
            let mut buf = [0u8; 64];
            for e in d.entries().filter(|e| e.kind == Kind::File) {
                let path = d.path_of(e.name).to_string_lossy().into_owned();
                let mut problem = None;
                if let Some(m) = expect.mode {
                    if e.meta.mode & 0o7777 != m {
                        problem = Some(format!("mode {:o} instead of {m:o}", e.meta.mode & 0o7777));
                    }
                }
                if let Some(value) = &expect.xattr {
                    let fd = rustix::fs::openat(
                        d.fd(),
                        e.name,
                        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
                        Mode::empty(),
                    )
                    .map_err(|err| WorkloadError::io(format!("open {path}"), err.into()))?;
                    match rustix::fs::fgetxattr(fd.as_fd(), XATTR_NAME, &mut buf[..]) {
                        Ok(n) if buf[..n] == value[..] => {}
                        Ok(n) => {
                            problem =
                                Some(format!("xattr {:?}", String::from_utf8_lossy(&buf[..n])))
                        }
                        Err(err) => problem = Some(format!("xattr missing ({err})")),
                    }
                }
                out.push((path, problem));
            }
            Ok::<(), WorkloadError>(())
        },
    )?;
    let mut files: Vec<(String, Option<String>)> = parts.into_iter().flatten().collect();
    files.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut problems: Vec<String> = Vec::new();
    let paths: Vec<&str> = files.iter().map(|f| f.0.as_str()).collect();
    let want: Vec<&str> = manifest.files.iter().map(|f| f.path.as_str()).collect();
    if paths != want {
        problems.push(format!(
            "{} files found, {} expected, or different paths",
            paths.len(),
            want.len()
        ));
    }
    problems.extend(
        files
            .iter()
            .filter_map(|(p, pr)| pr.as_ref().map(|pr| format!("{p}: {pr}")))
            .take(10),
    );
    if problems.is_empty() {
        Ok(())
    } else {
        Err(WorkloadError::Verify(format!(
            "chmod: {}",
            problems.join("; ")
        )))
    }
}
