//! `untar`: unpack a real tarball of a source-like tree onto the target, then `syncfs`.
//!
//! The tarball is made by fsarena, unmeasured, in the scratch area: the data set (by default
//! the `smallfolder` profile, a source tree with typed text content, at the run's scale and
//! seed) written as a GNU tar with the `tar` crate, straight from the content generator.
//! The measured part reads the archive with the same crate's header parser and does what
//! GNU tar does per entry — `mkdirat`, or `openat(O_CREAT|O_EXCL)` + `write` + `futimens` +
//! `close`, directory times last — then `syncfs`. Afterwards the tree is compared with the
//! data set's manifest (every path, size, xxh3, nothing extra) and every file's time with
//! the archive's.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read};
use std::os::fd::OwnedFd;
use std::path::{Component, Path};
use std::time::Instant;

use rustix::fs::{AtFlags, Mode, OFlags, Timespec, Timestamps};
use serde::Deserialize;

use super::contract::Workload;
use super::ctx::Ctx;
use super::error::IoContext;
use super::error::WorkloadError;
use super::harness::Harness;
use super::mix;
use super::outcome::Outcome;
use super::point::Point;
use super::prepare::{check_threads, dataset_error};
use super::spec::WorkloadSpec;
use super::{dirfd, options, verify};
use crate::dataset::{fill_content, parse_profile, DatasetSpec, Manifest};
use crate::fsops::{self, LatencyLog, Need};

/// Every entry's modification time: 2019-01-01T00:00:00Z.
const TAR_MTIME: u64 = 1_546_300_800;

pub struct Untar;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct UntarOptions {
    /// The data-set profile the tarball holds (default `smallfolder`, a source tree).
    profile: Option<String>,
}

fn data_set(ctx_spec: &DatasetSpec, table: &toml::Table) -> Result<DatasetSpec, String> {
    let o: UntarOptions = options::parse("untar", table)?;
    let profile = parse_profile(o.profile.as_deref().unwrap_or("smallfolder"))
        .map_err(|e| format!("[workload.untar]: `profile`: {e}"))?;
    Ok(DatasetSpec {
        profile,
        ..ctx_spec.clone()
    })
}

impl Workload for Untar {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            key_metric: ("ops_per_s", true),
            columns: super::spec::WRITE_COLUMNS,
            // tar unpacks one entry after another.
            uses_threads: false,
            ..WorkloadSpec::new("untar", "unpack a generated tarball of a source tree onto the target, then syncfs; verify the tree")
        }
    }
    fn check_options(&self, table: &toml::Table) -> Result<(), String> {
        data_set(&DatasetSpec::default(), table).map(|_| ())
    }
    fn run(
        &self,
        ctx: &Ctx,
        _point: &Point,
        harness: &mut dyn Harness,
    ) -> Result<Outcome, WorkloadError> {
        let spec = data_set(ctx.dataset, ctx.options).map_err(WorkloadError::Option)?;
        let manifest = spec.plan().map_err(dataset_error)?;
        let archive = ctx.scratch.join("fsarena-untar.tar");
        let archive_bytes = write_tar(&spec, &manifest, &archive)?;
        ctx.check()?;
        let outcome = harness.measure(&mut || {
            let t0 = Instant::now();
            let done = unpack(ctx, &archive)?;
            let s0 = Instant::now();
            crate::sys::syncfs(ctx.root).ctx(|| format!("syncfs {}", ctx.root.display()))?;
            let seconds = t0.elapsed().as_secs_f64();
            let mut out = Outcome {
                seconds,
                files: done.files,
                logical_write_bytes: done.bytes,
                logical_read_bytes: archive_bytes,
                ..Outcome::default()
            };
            let ops = done.files + done.dirs;
            out.metrics.insert("ops".into(), ops as f64);
            out.metrics.insert("ops_per_s".into(), ops as f64 / seconds);
            out.metrics.insert("dirs".into(), done.dirs as f64);
            out.metrics
                .insert("archive_bytes".into(), archive_bytes as f64);
            out.metrics
                .insert("syncfs_seconds".into(), s0.elapsed().as_secs_f64());
            mix::add_latency(&mut out.metrics, "file", done.file_ns);
            out.notes.push(format!(
                "unpacked a {} tarball of the `{}` data set (file latency: open, write, set time, close)",
                crate::plan::size::human_bytes(archive_bytes),
                crate::dataset::profile_name(spec.profile)
            ));
            Ok(out)
        })?;
        let _ = std::fs::remove_file(&archive);
        verify::tree(ctx.root, &manifest, check_threads(ctx))?;
        check_times(ctx.root, check_threads(ctx))?;
        Ok(outcome)
    }
}

/// The bytes of one generated file, as a reader.
struct Content<'a> {
    spec: &'a DatasetSpec,
    id: u64,
    off: u64,
    size: u64,
}

impl Read for Content<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = (buf.len() as u64).min(self.size - self.off) as usize;
        fill_content(self.spec, self.id, self.off, &mut buf[..n]);
        self.off += n as u64;
        Ok(n)
    }
}

/// Writes `manifest` as a GNU tar at `path` (directories first, then files by path;
/// fixed owner, modes and times, so the archive is a function of the seed); returns its
/// size. A `source_dir` data set's bytes come from its files.
fn write_tar(spec: &DatasetSpec, manifest: &Manifest, path: &Path) -> Result<u64, WorkloadError> {
    let io = |e: std::io::Error| WorkloadError::io(format!("writing {}", path.display()), e);
    let file = File::create(path).map_err(io)?;
    let mut b = tar::Builder::new(BufWriter::with_capacity(1 << 20, file));
    let header = |kind: tar::EntryType, mode: u32, size: u64| {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(kind);
        h.set_mode(mode);
        h.set_size(size);
        h.set_mtime(TAR_MTIME);
        h.set_uid(0);
        h.set_gid(0);
        h
    };
    for d in &manifest.dirs {
        let mut h = header(tar::EntryType::Directory, 0o755, 0);
        b.append_data(&mut h, format!("{d}/"), std::io::empty())
            .map_err(io)?;
    }
    for f in &manifest.files {
        let mut h = header(tar::EntryType::Regular, 0o644, f.size);
        match &spec.source_dir {
            Some(src) => {
                let r = File::open(src.join(&f.path))
                    .ctx(|| format!("reading {}", src.join(&f.path).display()))?;
                b.append_data(&mut h, &f.path, r.take(f.size)).map_err(io)?;
            }
            None => {
                let r = Content {
                    spec,
                    id: f.content,
                    off: 0,
                    size: f.size,
                };
                b.append_data(&mut h, &f.path, r).map_err(io)?;
            }
        }
    }
    let w = b.into_inner().map_err(io)?;
    let file = w.into_inner().map_err(|e| io(e.into_error()))?;
    Ok(file.metadata().map_err(io)?.len())
}

/// What an unpack did.
struct Unpacked {
    files: u64,
    dirs: u64,
    bytes: u64,
    file_ns: LatencyLog,
}

/// Unpacks `archive` into `ctx.root` entry by entry, as GNU tar does.
fn unpack(ctx: &Ctx, archive: &Path) -> Result<Unpacked, WorkloadError> {
    let io = |what: &str, p: &Path, e: std::io::Error| {
        WorkloadError::io(format!("{what} {}", p.display()), e)
    };
    let root = dirfd::open_dir(ctx.root)?;
    let file = File::open(archive).map_err(|e| io("opening", archive, e))?;
    let mut ar = tar::Archive::new(BufReader::with_capacity(1 << 20, file));
    let mut done = Unpacked {
        files: 0,
        dirs: 0,
        bytes: 0,
        file_ns: LatencyLog::default(),
    };
    let mut dirs = Vec::new();
    let mut buf = vec![0u8; 1 << 20];
    for (n, entry) in ar
        .entries()
        .map_err(|e| io("reading", archive, e))?
        .enumerate()
    {
        if n % 256 == 0 {
            ctx.check()?;
        }
        let mut e = entry.map_err(|e| io("reading", archive, e))?;
        let path = e
            .path()
            .map_err(|e| io("reading", archive, e))?
            .into_owned();
        if !path.components().all(|c| matches!(c, Component::Normal(_))) {
            return Err(WorkloadError::Verify(format!(
                "archive entry {} escapes the target",
                path.display()
            )));
        }
        let h = e.header();
        let mode = Mode::from_raw_mode(h.mode().map_err(|e| io("reading", &path, e))? & 0o7777);
        let mtime = h.mtime().map_err(|e| io("reading", &path, e))?;
        match h.entry_type() {
            tar::EntryType::Directory => {
                rustix::fs::mkdirat(&root, &path, mode)
                    .map_err(|e| io("mkdir", &path, e.into()))?;
                dirs.push((path, mtime));
                done.dirs += 1;
            }
            tar::EntryType::Regular => {
                let t0 = Instant::now();
                done.bytes += write_file(&root, &path, mode, mtime, &mut e, &mut buf, archive)?;
                done.file_ns.0.push(t0.elapsed().as_nanos() as u64);
                done.files += 1;
            }
            other => {
                return Err(WorkloadError::Verify(format!(
                    "archive entry {} has unexpected type {other:?}",
                    path.display()
                )))
            }
        }
    }
    // Directory times last (creating their entries changed them), deepest first.
    for (path, mtime) in dirs.iter().rev() {
        rustix::fs::utimensat(&root, path, &times_of(*mtime), AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|e| io("utimensat", path, e.into()))?;
    }
    Ok(done)
}

/// An archive entry's time as both access and modification time, as GNU tar sets them.
fn times_of(mtime: u64) -> Timestamps {
    let t = Timespec {
        tv_sec: mtime as i64,
        tv_nsec: 0,
    };
    Timestamps {
        last_access: t,
        last_modification: t,
    }
}

/// What GNU tar does for one regular file: create it (never over an existing one), write
/// the entry's bytes from `archive` through `buf`, set its time, close it. Returns the
/// bytes written.
fn write_file(
    root: &OwnedFd,
    path: &Path,
    mode: Mode,
    mtime: u64,
    entry: &mut impl Read,
    buf: &mut [u8],
    archive: &Path,
) -> Result<u64, WorkloadError> {
    let io = |what: &str, p: &Path, e: std::io::Error| {
        WorkloadError::io(format!("{what} {}", p.display()), e)
    };
    let fd = rustix::fs::openat(
        root,
        path,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC,
        mode,
    )
    .map_err(|e| io("create", path, e.into()))?;
    let mut f = File::from(fd);
    let mut bytes = 0;
    loop {
        let n = entry.read(buf).map_err(|e| io("reading", archive, e))?;
        if n == 0 {
            break;
        }
        std::io::Write::write_all(&mut f, &buf[..n]).map_err(|e| io("write", path, e))?;
        bytes += n as u64;
    }
    rustix::fs::futimens(&f, &times_of(mtime)).map_err(|e| io("futimens", path, e.into()))?;
    drop(f);
    Ok(bytes)
}

/// Checks that every unpacked file and directory carries the archive's time.
fn check_times(root: &Path, threads: usize) -> Result<(), WorkloadError> {
    let wrong: Vec<String> = fsops::list(root, threads, Need::MTIME)?
        .iter()
        .filter(|e| e.mtime != (TAR_MTIME as i64, 0))
        .map(|e| e.path.display().to_string())
        .collect();
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(WorkloadError::Verify(format!(
            "{} unpacked entries lack the archive's modification time: {}",
            wrong.len(),
            verify::examples(&wrong)
        )))
    }
}
