//! `create`: write the whole data set from scratch (directories, then files in parallel),
//! then check every path, size and byte of what landed on disk.

use std::time::Instant;

use super::contract::Workload;
use super::ctx::Ctx;
use super::error::{IoContext, WorkloadError};
use super::harness::Harness;
use super::outcome::Outcome;
use super::point::Point;
use super::prepare::{check_threads, dataset_error, plan};
use super::spec::WorkloadSpec;
use super::verify;
use crate::dataset;
use crate::fsops::LatencyLog;

pub struct Create;

impl Workload for Create {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            columns: super::spec::WRITE_COLUMNS,
            shares_dirs: true,
            // Its phase writes the data set as `prepare` does, and its check reads every
            // byte back (without writing access times): what a populated image holds.
            leaves_dataset: true,
            ..WorkloadSpec::new("create", "write the data set (directories and files) from scratch; verify every path, size and hash")
        }
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
        check_created(ctx, &manifest)?;
        Ok(outcome)
    }
}

/// The check after `create`: the root holds this process's part of the data set, every
/// path, size and byte, read back with the check's threads ([`check_threads`]), not the
/// point's: a single-threaded point's 50,000 files were checked on one thread.
fn check_created(ctx: &Ctx, manifest: &dataset::Manifest) -> Result<(), WorkloadError> {
    verify::own_tree(ctx.root, ctx.dataset, manifest, check_threads(ctx))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::sync::testenv::Env;
    use crate::workload::PlainHarness;

    /// The check reads with more threads than a one-thread point wrote with, and must still
    /// hold every file to the data set: a flipped byte and a missing file each fail it.
    #[test]
    fn the_check_of_a_created_tree_catches_a_flipped_byte_and_a_missing_file() {
        let env = Env::new();
        let mut ctx = env.ctx();
        ctx.threads = 1;
        Create
            .run(&ctx, &Point::default(), &mut PlainHarness::default())
            .unwrap();
        let manifest = plan(&ctx).unwrap();
        check_created(&ctx, &manifest).unwrap();
        let victim = ctx.root.join(&manifest.files[0].path);
        let good = std::fs::read(&victim).unwrap();
        let mut bad = good.clone();
        bad[0] ^= 1;
        std::fs::write(&victim, &bad).unwrap();
        let err = check_created(&ctx, &manifest).unwrap_err().to_string();
        assert!(err.contains("content differs"), "{err}");
        std::fs::remove_file(&victim).unwrap();
        let err = check_created(&ctx, &manifest).unwrap_err().to_string();
        assert!(err.contains(&manifest.files[0].path), "{err}");
        std::fs::write(&victim, &good).unwrap();
        check_created(&ctx, &manifest).unwrap();
    }
}
