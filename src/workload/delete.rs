//! `delete`: remove the whole tree, as `rm -r`/`rmz` do it: a parallel walk unlinks the
//! files of each directory (relative to its descriptor, after the directory was read in
//! full), then the directories are removed deepest level first, each level in parallel.

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;
use rustix::fs::{AtFlags, Mode, OFlags};

use super::contract::Workload;
use super::ctx::Ctx;
use super::error::{IoContext, WorkloadError};
use super::harness::Harness;
use super::outcome::Outcome;
use super::point::Point;
use super::prepare::prepare;
use super::spec::{StartState, WorkloadSpec};
use crate::dataset::spec::SharedTree;
use crate::fsops::{self, Dir, Kind, LatencyLog, Need, WalkOptions};

pub struct Delete;

impl Workload for Delete {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            // In a shared tree each rank unlinks its own files in the phase; rank 0 removes the
            // directories after the phase's closing barrier.
            shares_dirs: true,
            start: StartState::DataSet,
            ..WorkloadSpec::new("delete", "delete the whole tree (files, then directories deepest first), in parallel; verify the root is empty")
        }
    }
    fn run(
        &self,
        ctx: &Ctx,
        _point: &Point,
        harness: &mut dyn Harness,
    ) -> Result<Outcome, WorkloadError> {
        let manifest = prepare(ctx)?;
        let mut removed = Removed::default();
        let outcome = harness.measure(&mut || {
            let t0 = Instant::now();
            removed = match ctx.dataset.shared {
                None => remove_tree_contents(ctx.root, ctx.threads, ctx)?,
                Some(s) => remove_files(ctx.root, ctx.threads, ctx, Some(s))?.0,
            };
            let s0 = Instant::now();
            crate::sys::syncfs(ctx.root).ctx(|| format!("syncfs {}", ctx.root.display()))?;
            let mut out = Outcome {
                seconds: t0.elapsed().as_secs_f64(),
                files: removed.files,
                ..Outcome::default()
            };
            let m = &mut out.metrics;
            m.insert("syncfs_seconds".into(), s0.elapsed().as_secs_f64());
            m.insert("dirs_removed".into(), removed.dirs as f64);
            std::mem::take(&mut removed.unlink).add_metrics("unlink", m);
            std::mem::take(&mut removed.rmdir).add_metrics("rmdir", m);
            Ok(out)
        })?;
        if let Some(s) = ctx.dataset.shared {
            return shared_done(ctx, s, &manifest, &removed, outcome);
        }
        verify(ctx.root)?;
        if removed.files != manifest.files.len() as u64
            || removed.dirs != manifest.dirs.len() as u64
        {
            return Err(WorkloadError::Verify(format!(
                "removed {} files and {} directories, the data set had {} and {}",
                removed.files,
                removed.dirs,
                manifest.files.len(),
                manifest.dirs.len()
            )));
        }
        Ok(outcome)
    }
}

/// What [`remove_tree_contents`] removed.
#[derive(Debug, Default)]
pub struct Removed {
    /// Non-directories unlinked (files, symlinks, others).
    pub files: u64,
    pub dirs: u64,
    pub unlink: LatencyLog,
    pub rmdir: LatencyLog,
}

/// After the measured phase in a tree all ranks share (`measure` returned: every rank has
/// passed the phase's closing barrier, so every rank's files are gone): each rank checks it
/// removed exactly its own files (each unlink of a uniquely tagged name succeeded, so the
/// count says none was missing); rank 0 then removes the common directories, which only
/// succeeds on empty ones, and checks the root is empty: no file of any rank was left.
fn shared_done(
    ctx: &Ctx,
    s: SharedTree,
    manifest: &crate::dataset::Manifest,
    removed: &Removed,
    mut outcome: Outcome,
) -> Result<Outcome, WorkloadError> {
    if removed.files != manifest.files.len() as u64 {
        return Err(WorkloadError::Verify(format!(
            "rank {} removed {} of its files, its part of the data set had {}",
            s.rank,
            removed.files,
            manifest.files.len()
        )));
    }
    outcome.notes.push(
        "shared tree: each rank unlinked its own files in the phase; rank 0 removed the directories after it (not measured)".into(),
    );
    if s.rank != 0 {
        return Ok(outcome);
    }
    let rest = remove_tree_contents(ctx.root, ctx.threads, ctx)?;
    if rest.files != 0 || rest.dirs != manifest.dirs.len() as u64 {
        return Err(WorkloadError::Verify(format!(
            "after every rank's delete, {} files and {} directories were left (the data set has {} directories)",
            rest.files,
            rest.dirs,
            manifest.dirs.len()
        )));
    }
    verify(ctx.root)?;
    Ok(outcome)
}

/// Removes everything below `root` (not `root` itself) with `threads` workers.
pub fn remove_tree_contents(
    root: &Path,
    threads: usize,
    ctx: &Ctx,
) -> Result<Removed, WorkloadError> {
    let (mut out, dirs) = remove_files(root, threads, ctx, None)?;
    remove_dirs(root, threads, ctx, dirs, &mut out)?;
    Ok(out)
}

/// Unlinks every non-directory below `root` — only those `only`'s rank owns, when given
/// (a tree several ranks share) — and returns what it removed with every directory found,
/// by depth.
fn remove_files(
    root: &Path,
    threads: usize,
    ctx: &Ctx,
    only: Option<SharedTree>,
) -> Result<(Removed, Vec<(u32, PathBuf)>), WorkloadError> {
    #[derive(Default)]
    struct Part {
        files: u64,
        unlink: LatencyLog,
        dirs: Vec<(u32, PathBuf)>,
    }
    let opts = WalkOptions::new(threads, Need::NONE);
    // Phase 1: unlink every non-directory; remember directories with their depth.
    let (_, parts) = fsops::walk_with(root, &opts, Part::default, |p: &mut Part, d: &Dir| {
        ctx.check()?;
        for e in d.entries() {
            if e.kind == Kind::Dir {
                p.dirs.push((d.depth() + 1, d.path_of(e.name)));
                continue;
            }
            if let Some(s) = only {
                let mine = std::str::from_utf8(e.name_bytes()).is_ok_and(|n| s.owns(n));
                if !mine {
                    continue;
                }
            }
            p.unlink
                .time(|| rustix::fs::unlinkat(d.fd(), e.name, AtFlags::empty()))
                .map_err(|err| {
                    WorkloadError::io(
                        format!("unlink {}", d.path_of(e.name).display()),
                        err.into(),
                    )
                })?;
            p.files += 1;
        }
        Ok::<(), WorkloadError>(())
    })?;
    let mut out = Removed::default();
    let mut dirs = Vec::new();
    let mut unlink = Vec::new();
    for p in parts {
        out.files += p.files;
        unlink.push(p.unlink);
        dirs.extend(p.dirs);
    }
    out.unlink = LatencyLog::merge(unlink);
    Ok((out, dirs))
}

/// Removes `dirs` (found by [`remove_files`], all empty by now), deepest level first.
fn remove_dirs(
    root: &Path,
    threads: usize,
    ctx: &Ctx,
    mut dirs: Vec<(u32, PathBuf)>,
    out: &mut Removed,
) -> Result<(), WorkloadError> {
    // Phase 2: directories, deepest level first; a level's directories are independent.
    dirs.sort_unstable_by_key(|d| std::cmp::Reverse(d.0));
    let root_fd = rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| WorkloadError::io(format!("open {}", root.display()), e.into()))?;
    let pool = fsops::pool(threads)?;
    let mut logs = Vec::new();
    for level in dirs.chunk_by(|a, b| a.0 == b.0) {
        ctx.check()?;
        let level_logs: Vec<LatencyLog> = pool.install(|| {
            level
                .par_iter()
                .try_fold(LatencyLog::default, |mut log, (_, rel)| {
                    log.time(|| rustix::fs::unlinkat(root_fd.as_fd(), rel, AtFlags::REMOVEDIR))
                        .map_err(|e| {
                            WorkloadError::io(
                                format!("rmdir {}", root.join(rel).display()),
                                e.into(),
                            )
                        })?;
                    Ok::<LatencyLog, WorkloadError>(log)
                })
                .collect::<Result<Vec<_>, _>>()
        })?;
        logs.extend(level_logs);
    }
    out.dirs = dirs.len() as u64;
    out.rmdir = LatencyLog::merge(logs);
    Ok(())
}

/// Checks that `root` is empty.
pub fn verify(root: &Path) -> Result<(), WorkloadError> {
    if fsops::is_empty_dir(root)? {
        return Ok(());
    }
    let left = fsops::list(root, 1, Need::NONE)?;
    let names: Vec<String> = left
        .iter()
        .take(5)
        .map(|e| e.path.display().to_string())
        .collect();
    Err(WorkloadError::Verify(format!(
        "{} entries left under {} after delete, e.g. {names:?}",
        left.len(),
        root.display()
    )))
}
