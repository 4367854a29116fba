//! `create`: write the whole data set from scratch (directories, then files in parallel),
//! then check every path, size and byte of what landed on disk.

use std::time::Instant;

use super::contract::Workload;
use super::ctx::Ctx;
use super::error::{IoContext, WorkloadError};
use super::harness::Harness;
use super::outcome::Outcome;
use super::point::Point;
use super::prepare::{dataset_error, plan};
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
        verify::own_tree(ctx.root, ctx.dataset, &manifest, ctx.threads)?;
        Ok(outcome)
    }
}
