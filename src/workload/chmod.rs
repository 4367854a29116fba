//! `chmod`: change the permission bits of every file (`fchmodat` relative to the directory
//! fd) and set a user extended attribute on it (`openat` + `fsetxattr`), where the file
//! system supports them. Support is probed once, unmeasured, on a scratch file: exFAT keeps
//! neither mode bits nor xattrs, and tmpfs before Linux 6.6 has no `user.*` xattrs. What
//! was probed is recorded (`mode_supported`: mode bits are stored; `xattr_supported`) and
//! said in `notes`. Where `chmod` succeeds without storing anything (exFAT), the calls are
//! still measured and the notes say their effect could not be verified.

use std::ffi::CStr;
use std::os::fd::AsFd;
use std::path::Path;
use std::time::Instant;

use rustix::fs::{AtFlags, Mode, OFlags, StatxFlags, XattrFlags};

use super::contract::Workload;
use super::ctx::Ctx;
use super::error::{IoContext, WorkloadError};
use super::harness::Harness;
use super::outcome::Outcome;
use super::point::Point;
use super::prepare::prepare;
use super::spec::{StartState, WorkloadSpec};
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
    /// Permission bits (`& 0o7777`) to set with `chmod`, unless `chmod` fails outright here.
    pub mode: Option<u32>,
    /// Whether the file system stores mode bits, so verification can read them back.
    /// exFAT accepts `chmod` and keeps reporting its mount-time mode: the calls are still
    /// measured (users run them), but their effect cannot be checked, and notes say so.
    pub mode_stored: bool,
    /// `user.fsarena` value, when the file system supports user xattrs.
    pub xattr: Option<Vec<u8>>,
}

impl Workload for Chmod {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            start: StartState::DataSet,
            ..WorkloadSpec::new("chmod", "change every file's mode bits and set a user xattr (where supported); verify by a stat/getxattr sweep")
        }
    }
    fn run(
        &self,
        ctx: &Ctx,
        _point: &Point,
        harness: &mut dyn Harness,
    ) -> Result<Outcome, WorkloadError> {
        let probed = probe(ctx.root)?;
        if !probed.chmod_works && !probed.xattr {
            return Err(WorkloadError::Unsupported(format!(
                "this file system supports neither chmod nor user xattrs ({})",
                probed.notes.join("; ")
            )));
        }
        let expect = Expect {
            mode: probed.chmod_works.then_some(TARGET_MODE),
            mode_stored: probed.mode_stored,
            xattr: probed.xattr.then(|| xattr_value(ctx.dataset.seed)),
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
        outcome.metrics.insert(
            "mode_supported".into(),
            f64::from(u8::from(probed.mode_stored)),
        );
        outcome
            .metrics
            .insert("xattr_supported".into(), f64::from(u8::from(probed.xattr)));
        outcome.notes.extend(probed.notes);
        outcome
            .notes
            .push("setxattr_* latencies cover openat + fsetxattr + close".into());
        Ok(outcome)
    }
}

/// Whether an error means "this file system does not do that" rather than a failure.
fn unsupported(e: rustix::io::Errno) -> bool {
    [
        rustix::io::Errno::NOTSUP,
        rustix::io::Errno::OPNOTSUPP,
        rustix::io::Errno::NOSYS,
        rustix::io::Errno::PERM,
    ]
    .contains(&e)
}

/// What [`probe`] found out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Probed {
    /// `chmod` returns success.
    pub chmod_works: bool,
    /// ... and the new mode reads back.
    pub mode_stored: bool,
    /// A `user.*` xattr can be set and read back.
    pub xattr: bool,
    /// Explanations for every "no".
    pub notes: Vec<String>,
}

/// Probes, on a scratch file in `dir` (removed again), whether `chmod` works and sticks
/// and whether user xattrs are supported.
pub fn probe(dir: &Path) -> Result<Probed, WorkloadError> {
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
    let mut p = Probed::default();
    let result = (|| {
        let mode = Mode::from_raw_mode(TARGET_MODE);
        match rustix::fs::chmodat(&dirfd, PROBE_NAME, mode, AtFlags::empty()) {
            Ok(()) => {
                p.chmod_works = true;
                let flags = AtFlags::SYMLINK_NOFOLLOW;
                let x = rustix::fs::statx(&dirfd, PROBE_NAME, flags, StatxFlags::MODE)
                    .map_err(|e| WorkloadError::io(at("statx"), e.into()))?;
                p.mode_stored = u32::from(x.stx_mode) & 0o7777 == TARGET_MODE;
                if !p.mode_stored {
                    p.notes.push(format!(
                        "chmod succeeds but mode bits are not stored (mode reads back {:o}, \
                         e.g. exFAT): chmod calls measured, their effect not verifiable",
                        x.stx_mode & 0o7777
                    ));
                }
            }
            Err(e) if unsupported(e) => {
                p.notes.push(format!(
                    "chmod is not supported here ({e}); chmod not measured"
                ));
            }
            Err(e) => return Err(WorkloadError::io(at("chmod"), e.into())),
        }
        let value = b"probe";
        match rustix::fs::fsetxattr(&fd, XATTR_NAME, value, XattrFlags::empty()) {
            Ok(()) => {
                let mut buf = [0u8; 16];
                let n = rustix::fs::fgetxattr(&fd, XATTR_NAME, &mut buf[..])
                    .map_err(|e| WorkloadError::io(at("fgetxattr"), e.into()))?;
                p.xattr = buf[..n] == value[..];
                if !p.xattr {
                    p.notes.push(
                        "a user xattr did not read back as written; xattrs not measured".into(),
                    );
                }
            }
            Err(e) if unsupported(e) => p.notes.push(format!(
                "user xattrs are not supported here ({e}; exFAT has none); xattrs not measured"
            )),
            Err(e) => return Err(WorkloadError::io(at("fsetxattr"), e.into())),
        }
        Ok(())
    })();
    drop(fd);
    rustix::fs::unlinkat(&dirfd, PROBE_NAME, AtFlags::empty())
        .map_err(|e| WorkloadError::io(at("unlink"), e.into()))?;
    result?;
    Ok(p)
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
/// (when the file system stores them) and xattr value.
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
                if let Some(m) = expect.mode.filter(|_| expect.mode_stored) {
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
