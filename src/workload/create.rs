//! `create`: write the whole data set from scratch (directories, then files in parallel),
//! then check every path, size and byte of what landed on disk.
//!
//! Also home of the helpers every tree workload shares: planning the data set and laying
//! it down unmeasured ([`prepare`]) before their own measured phase.

use std::path::Path;
use std::time::Instant;

use super::{Ctx, Harness, IoContext, Outcome, Point, Workload, WorkloadError};
use crate::dataset::{self, DatasetError, Manifest};
use crate::fsops::{self, LatencyLog};

pub struct Create;

impl Workload for Create {
    fn name(&self) -> &'static str {
        "create"
    }

    fn describe(&self) -> &'static str {
        "write the data set (directories and files) from scratch; verify every path, size and hash"
    }

    fn columns(&self) -> &'static [&'static str] {
        super::WRITE_COLUMNS
    }

    fn run(
        &self,
        ctx: &Ctx,
        _point: &Point,
        harness: &mut dyn Harness,
    ) -> Result<Outcome, WorkloadError> {
        let manifest = plan(ctx)?;
        let outcome = harness.measure(&mut || {
            let t0 = Instant::now();
            let stop = || ctx.check().is_err();
            let written = dataset::materialize_timed(
                ctx.dataset,
                &manifest,
                ctx.root,
                ctx.threads,
                true,
                &stop,
            )
            .map_err(|e| {
                // A stop request surfaces as the runner's own reason (cancel or timeout).
                ctx.check().err().unwrap_or_else(|| dataset_error(e))
            })?;
            let s0 = Instant::now();
            crate::sys::syncfs(ctx.root).ctx(|| format!("syncfs {}", ctx.root.display()))?;
            let mut out = Outcome {
                seconds: t0.elapsed().as_secs_f64(),
                files: written.files,
                logical_write_bytes: written.bytes,
                ..Outcome::default()
            };
            out.metrics
                .insert("syncfs_seconds".into(), s0.elapsed().as_secs_f64());
            out.metrics
                .insert("dirs".into(), manifest.dirs.len() as f64);
            LatencyLog(written.file_ns).add_metrics("file_create", &mut out.metrics);
            out.notes
                .push("file_create_* latencies cover open + all writes + close of one file".into());
            Ok(out)
        })?;
        verify(ctx.root, &manifest, ctx.threads)?;
        Ok(outcome)
    }
}

/// Plans the context's data set (unmeasured).
pub fn plan(ctx: &Ctx) -> Result<Manifest, WorkloadError> {
    ctx.dataset.plan().map_err(dataset_error)
}

/// Plans the data set and writes it into `ctx.root`, then `syncfs`, so that the next
/// measured phase does not pay for this one's writeback. Unmeasured preparation for the
/// workloads that operate on an existing tree.
pub fn prepare(ctx: &Ctx) -> Result<Manifest, WorkloadError> {
    let manifest = plan(ctx)?;
    ctx.check()?;
    let stop = || ctx.check().is_err();
    dataset::materialize_timed(ctx.dataset, &manifest, ctx.root, ctx.threads, false, &stop)
        .map_err(|e| ctx.check().err().unwrap_or_else(|| dataset_error(e)))?;
    crate::sys::syncfs(ctx.root).ctx(|| format!("syncfs {}", ctx.root.display()))?;
    Ok(manifest)
}

/// Maps a data-set error to a workload error, keeping the OS error (ENOSPC, EIO).
pub fn dataset_error(e: DatasetError) -> WorkloadError {
    match e {
        DatasetError::Io { path, source } => {
            WorkloadError::io(format!("writing data set at {}", path.display()), source)
        }
        DatasetError::Invalid(msg) => WorkloadError::Option(msg),
    }
}

/// Checks that `root` holds exactly the manifest: every directory, every file with its
/// size and xxh3 hash, nothing missing and nothing extra.
pub fn verify(root: &Path, manifest: &Manifest, threads: usize) -> Result<(), WorkloadError> {
    let snap = dataset::snapshot(root, threads, true)?;
    let diff = manifest.diff(&snap.manifest, true);
    let mut problems = diff;
    problems.extend(snap.skipped.iter().map(|s| format!("unexpected entry {s}")));
    if problems.is_empty() {
        Ok(())
    } else {
        Err(WorkloadError::Verify(format!(
            "tree under {} differs from the data set: {}",
            root.display(),
            Manifest::diff_summary(&problems)
        )))
    }
}

/// Whether `files` (sorted by path bytes, as [`fsops::list`] returns them) are exactly the
/// manifest's files; a description of the first difference if not.
pub fn file_set_problem(manifest: &Manifest, files: &[&fsops::Entry]) -> Option<String> {
    if files.len() != manifest.files.len() {
        return Some(format!(
            "{} files instead of {}",
            files.len(),
            manifest.files.len()
        ));
    }
    files
        .iter()
        .zip(&manifest.files)
        .find(|(e, m)| e.path.to_str() != Some(m.path.as_str()))
        .map(|(e, m)| format!("found {} where {} was expected", e.path.display(), m.path))
}
