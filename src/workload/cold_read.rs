//! `cold-read`: how long a program takes to load its installed files from a cold cache.
//!
//! Preparation writes a `smallfolder`-shaped "application install" (source files, configs,
//! a few MiB-sized assets) at the run's scale and seed, then drops the caches. The measured
//! phase reads every file once, whole, on one thread, in a fixed order drawn from the seed —
//! a program at start-up opens its files one after another in an order the directory layout
//! does not predict. One load is a pass; the phase repeats it, caches dropped before each,
//! until the loads add up to the floor, and `seconds_per_pass` (the key figure) is the mean
//! time until the last byte is in.
//!
//! The `launch` point starts a real program installed on the target instead (see
//! [`super::launch`]): exec, shared libraries, page faults and the data, timed to its exit.

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::time::Instant;

use rustix::fs::{Mode, OFlags};
use xxhash_rust::xxh3::Xxh3Default;

use super::contract::Workload;
use super::ctx::Ctx;
use super::dirfd::{c_path, open_dir};
use super::error::{IoContext, WorkloadError};
use super::harness::Harness;
use super::launch;
use super::outcome::Outcome;
use super::passes::{measure_cold_passes, Drops};
use super::point::Point;
use super::prepare::{generate, prep_threads};
use super::spec::WorkloadSpec;
use super::verify::examples;
use crate::dataset::draw;
use crate::dataset::seed::workload_rng;
use crate::dataset::{DatasetSpec, Manifest, Profile};
use crate::fsops::LatencyLog;

/// Read buffer: large enough that a multi-MiB asset takes a handful of `read` calls.
const BUF: usize = 1 << 20;
/// Salt for the read-order stream, so it never equals a generator stream of the same seed.
const ORDER_SALT: u64 = 0xC01D_4EAD_0000_0001;

pub struct ColdRead;

/// The install `cold-read` loads: `smallfolder` at the run's scale and seed. The user's own
/// `source_dir` is not used: the workload needs a manifest to check every byte against.
pub fn install_spec(run: &DatasetSpec) -> DatasetSpec {
    DatasetSpec {
        profile: Profile::Smallfolder,
        source_dir: None,
        ..run.clone()
    }
}

/// Indices of `manifest.files` in the order a run with `seed` reads them.
pub fn read_order(manifest: &Manifest, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..manifest.files.len()).collect();
    draw::shuffle(&mut workload_rng(seed, ORDER_SALT), &mut order);
    order
}

/// What the measured phase read: per file in `order`, its xxh3-64 and byte count.
pub struct ReadBack {
    pub hashes: Vec<(u64, u64)>,
    pub bytes: u64,
    pub latency: LatencyLog,
}

/// Reads every file of `order` under `root_fd`, whole, one after another. Each file is
/// opened by its relative path from the root, as a program resolves its data paths.
pub fn read_all(
    ctx: &Ctx,
    root_fd: &OwnedFd,
    manifest: &Manifest,
    order: &[usize],
) -> Result<ReadBack, WorkloadError> {
    let mut buf = vec![0u8; BUF];
    let mut out = ReadBack {
        hashes: Vec::with_capacity(order.len()),
        bytes: 0,
        latency: LatencyLog(Vec::with_capacity(order.len())),
    };
    for &i in order {
        ctx.check()?;
        let rel = &manifest.files[i].path;
        let t = Instant::now();
        let (hash, n) = read_one(root_fd, rel, &mut buf)?;
        out.latency.0.push(t.elapsed().as_nanos() as u64);
        out.hashes.push((hash, n));
        out.bytes += n;
    }
    Ok(out)
}

fn read_one(root_fd: &OwnedFd, rel: &str, buf: &mut [u8]) -> Result<(u64, u64), WorkloadError> {
    let cpath = c_path(rel)?;
    let fd = rustix::fs::openat(
        root_fd.as_fd(),
        &cpath,
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::empty(),
    )
    .map_err(std::io::Error::from)
    .ctx(|| format!("opening {rel}"))?;
    let mut file = File::from(fd);
    let mut h = Xxh3Default::new();
    let mut n = 0u64;
    loop {
        match file.read(buf) {
            Ok(0) => break,
            Ok(k) => {
                h.update(&buf[..k]);
                n += k as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(WorkloadError::io(format!("reading {rel}"), e)),
        }
    }
    Ok((h.digest(), n))
}

/// Checks that every file read holds the manifest's bytes (hash and length).
pub fn verify_reads(
    manifest: &Manifest,
    order: &[usize],
    reads: &[(u64, u64)],
) -> Result<(), WorkloadError> {
    if reads.len() != order.len() {
        return Err(WorkloadError::Verify(format!(
            "read {} files, expected {}",
            reads.len(),
            order.len()
        )));
    }
    let wrong: Vec<&str> = order
        .iter()
        .zip(reads)
        .filter(|(&i, &(hash, n))| {
            let f = &manifest.files[i];
            f.hash != hash || f.size != n
        })
        .map(|(&i, _)| manifest.files[i].path.as_str())
        .collect();
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(WorkloadError::Verify(format!(
            "{} files read back with wrong content: {}",
            wrong.len(),
            examples(&wrong)
        )))
    }
}

impl Workload for ColdRead {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            // One cold load's time: the phase repeats the load, caches dropped before each, until
            // the loads add up to the floor.
            key_metric: ("seconds_per_pass", false),
            uses_threads: false,
            ..WorkloadSpec::new("cold-read", "load an application install (smallfolder) file by file from a cold cache, one thread")
        }
    }
    fn drops_caches(&self, _options: &toml::Table) -> Option<&'static str> {
        Some("every point: a cold read is what it measures")
    }

    /// Each of its two points writes the install and loads it back from a cold cache.
    fn byte_passes(&self, _options: &toml::Table) -> f64 {
        4.0
    }

    /// Read-only passes over a tree laid down the same way on any file system.
    fn in_turn(&self, _point: &Point) -> bool {
        true
    }
    fn points(&self, _ctx: &Ctx) -> Result<Vec<Point>, WorkloadError> {
        Ok(vec![
            Point::default(),
            Point {
                variant: LAUNCH.into(),
                ..Point::default()
            },
        ])
    }
    fn run(
        &self,
        ctx: &Ctx,
        point: &Point,
        harness: &mut dyn Harness,
    ) -> Result<Outcome, WorkloadError> {
        if point.variant == LAUNCH {
            return run_launch(ctx, harness);
        }
        let spec = install_spec(ctx.dataset);
        let manifest = generate(ctx, &spec, ctx.root, prep_threads(ctx))?;
        let mut roots = vec![open_dir(ctx.root)?];
        if let Some(t) = ctx.in_turn {
            // The baseline's tree, read in turn: the same install, laid down the same way.
            generate(ctx, &spec, &t.root, prep_threads(ctx))?;
            roots.push(open_dir(&t.root)?);
        }
        let order = read_order(&manifest, spec.seed);
        harness
            .drop_caches()
            .ctx(|| "dropping caches before the cold read".to_string())?;

        // Every pass is checked, after its own clock stops and out of the monitor's
        // figures: a pass that read wrong bytes fails the phase.
        let aside = harness.aside();
        let mut outcome = measure_cold_passes(ctx, harness, Drops::EachPass, &mut |tree| {
            let t = Instant::now();
            let r = read_all(ctx, &roots[tree.index()], &manifest, &order)?;
            let seconds = t.elapsed().as_secs_f64();
            aside.run(|| verify_reads(&manifest, &order, &r.hashes))?;
            let mut out = Outcome {
                seconds,
                files: r.hashes.len() as u64,
                logical_read_bytes: r.bytes,
                ..Outcome::default()
            };
            r.latency.add_metrics("file_read", &mut out.metrics);
            Ok(out)
        })?;
        outcome.notes.push(
            "file_read_* latencies cover open + read to the end + close of one file (last pass)"
                .into(),
        );
        Ok(outcome)
    }
}

/// The variant that starts a program rather than reading files.
pub const LAUNCH: &str = "launch";

/// The launch's program (its libraries and loader) under `root/app/` and its data under
/// `root/data/`: the command that starts it, the data's manifest, and the install.
fn lay_down_launch(
    ctx: &Ctx,
    root: &Path,
) -> Result<(std::process::Command, Manifest, launch::Installed), WorkloadError> {
    let spec = install_spec(ctx.dataset);
    let data = root.join("data");
    std::fs::create_dir(&data).ctx(|| format!("creating {}", data.display()))?;
    let manifest = generate(ctx, &spec, &data, prep_threads(ctx))?;
    let app = launch::install(&launch::host_program()?, &root.join("app"))?;
    Ok((app.command(&data), manifest, app))
}

/// The `launch` point: installs the program (its libraries and loader) under `app/` and the
/// install under `data/`, drops the caches, starts the program and times it to its exit.
fn run_launch(ctx: &Ctx, harness: &mut dyn Harness) -> Result<Outcome, WorkloadError> {
    // The program and its data on every tree the starts read (the baseline's too, when in
    // turn).
    let mut installs = Vec::new();
    for tree in ctx.trees() {
        installs.push(lay_down_launch(ctx, ctx.root_of(tree))?);
    }
    harness
        .drop_caches()
        .ctx(|| "dropping caches before the launch".to_string())?;
    // Every start is checked (exit status, and that it read every data file whole), after
    // its own clock stops and out of the monitor's figures.
    let aside = harness.aside();
    let mut outcome = measure_cold_passes(ctx, harness, Drops::EachPass, &mut |tree| {
        let (cmd, manifest, app) = &mut installs[tree.index()];
        let t = Instant::now();
        let out = super::tool::output_unless_stopped(ctx, cmd, launch::PROGRAM)?;
        let seconds = t.elapsed().as_secs_f64();
        if !out.status.success() {
            return Err(WorkloadError::Tool(format!(
                "{} exited with {}: {}",
                launch::PROGRAM,
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        aside.run(|| launch::verify_output(&String::from_utf8_lossy(&out.stdout), manifest))?;
        Ok(Outcome {
            seconds,
            files: manifest.files.len() as u64 + app.files as u64,
            logical_read_bytes: manifest.files.iter().map(|f| f.size).sum::<u64>() + app.bytes,
            ..Outcome::default()
        })
    })?;
    let (_, manifest, app) = &installs[0];
    outcome.notes.push(format!(
        "launch: {} with {} libraries and its loader from the target, reading {} data files; seconds_per_pass = exec to exit of one start",
        launch::PROGRAM,
        app.files - 2,
        manifest.files.len()
    ));
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_order_is_a_seeded_permutation() {
        let m = Manifest {
            files: (0..50)
                .map(|i| crate::dataset::FileEntry {
                    path: format!("f{i}"),
                    size: 1,
                    content: i,
                    hash: 0,
                })
                .collect(),
            ..Manifest::default()
        };
        let a = read_order(&m, 1);
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..50).collect::<Vec<_>>());
        assert_eq!(a, read_order(&m, 1));
        assert_ne!(a, read_order(&m, 2));
        assert_ne!(a, sorted);
    }
}
