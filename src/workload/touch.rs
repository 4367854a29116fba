//! `touch`: set every file's modification (and access) time to one fixed, seed-derived
//! instant with `utimensat` relative to the directory descriptor, then check it with a
//! stat sweep. The instant is a whole, even second, which every file system stores exactly
//! (FAT-family timestamps have 2 s granularity in places; exFAT 10 ms).

use std::path::Path;
use std::time::Instant;

use rustix::fs::{AtFlags, Timespec, Timestamps};

use super::contract::Workload;
use super::ctx::Ctx;
use super::error::{IoContext, WorkloadError};
use super::harness::Harness;
use super::outcome::Outcome;
use super::point::Point;
use super::prepare::prepare;
use super::spec::{StartState, WorkloadSpec};
use super::verify::file_set_problem;
use crate::dataset::Manifest;
use crate::fsops::{self, Dir, Kind, LatencyLog, Need, WalkOptions};

pub struct Touch;

/// 2001-09-09T01:46:40Z: any target time is this plus up to ten years.
const BASE_TIME: i64 = 1_000_000_000;

/// The time `touch` sets for a data set seed: whole, even seconds between 2001 and 2011,
/// so it never equals a freshly written file's mtime.
pub fn target_time(seed: u64) -> i64 {
    let span = 10 * 365 * 86_400_u64;
    BASE_TIME + ((seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) % span) & !1) as i64
}

impl Workload for Touch {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            start: StartState::DataSet,
            ..WorkloadSpec::new("touch", "set every file's mtime with utimensat (relative to the directory fd); verify by a stat sweep")
        }
    }
    fn run(
        &self,
        ctx: &Ctx,
        _point: &Point,
        harness: &mut dyn Harness,
    ) -> Result<Outcome, WorkloadError> {
        let manifest = prepare(ctx)?;
        let when = target_time(ctx.dataset.seed);
        let outcome = harness.measure(&mut || {
            let t0 = Instant::now();
            let (files, log) = touch_all(ctx.root, ctx.threads, when, ctx)?;
            let s0 = Instant::now();
            crate::sys::syncfs(ctx.root).ctx(|| format!("syncfs {}", ctx.root.display()))?;
            let mut out = Outcome {
                seconds: t0.elapsed().as_secs_f64(),
                files,
                ..Outcome::default()
            };
            out.metrics
                .insert("syncfs_seconds".into(), s0.elapsed().as_secs_f64());
            log.add_metrics("utimensat", &mut out.metrics);
            Ok(out)
        })?;
        verify(ctx.root, ctx.threads, &manifest, when)?;
        Ok(outcome)
    }
}

/// Sets atime and mtime of every regular file under `root` to `when` (seconds, 0 ns).
/// Returns the number of files and the per-call latencies.
pub fn touch_all(
    root: &Path,
    threads: usize,
    when: i64,
    ctx: &Ctx,
) -> Result<(u64, LatencyLog), WorkloadError> {
    let t = Timespec {
        tv_sec: when,
        tv_nsec: 0,
    };
    let times = Timestamps {
        last_access: t,
        last_modification: t,
    };
    let opts = WalkOptions::new(threads, Need::NONE);
    let (stats, logs) = fsops::walk_with(
        root,
        &opts,
        LatencyLog::default,
        |log: &mut LatencyLog, d: &Dir| {
            ctx.check()?;
            for e in d.entries().filter(|e| e.kind == Kind::File) {
                log.time(|| {
                    rustix::fs::utimensat(d.fd(), e.name, &times, AtFlags::SYMLINK_NOFOLLOW)
                })
                .map_err(|err| {
                    WorkloadError::io(
                        format!("utimensat {}", d.path_of(e.name).display()),
                        err.into(),
                    )
                })?;
            }
            Ok::<(), WorkloadError>(())
        },
    )?;
    Ok((stats.files, LatencyLog::merge(logs)))
}

/// Checks that `root` holds exactly the manifest's files and each has mtime `when` s, 0 ns.
pub fn verify(
    root: &Path,
    threads: usize,
    manifest: &Manifest,
    when: i64,
) -> Result<(), WorkloadError> {
    let entries = fsops::list(root, threads, Need::MTIME)?;
    let files: Vec<_> = entries.iter().filter(|e| e.kind == Kind::File).collect();
    let mut problems = Vec::new();
    problems.extend(file_set_problem(manifest, &files));
    for e in files.iter().filter(|e| e.mtime != (when, 0)).take(10) {
        problems.push(format!(
            "{}: mtime {:?} instead of ({when}, 0)",
            e.path.display(),
            e.mtime
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(WorkloadError::Verify(format!(
            "touch: {}",
            problems.join("; ")
        )))
    }
}
