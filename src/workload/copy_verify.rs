//! `copy-verify`: copy a tree onto the target, then read the copy back and compare every
//! file's hash with the source's — what verifying copiers (TeraCopy, `rsync -c` after the
//! fact) do, and what the user studies timed "with verification".
//!
//! The copy hashes the source as it streams through the user buffer, so the source is read
//! once (this means read/write, never `copy_file_range`: the bytes must pass through user
//! space to be hashed; between the scratch area and the target `copy_file_range` is refused
//! with EXDEV anyway). `copy_seconds` ends with `syncfs` on the target: a verifier that
//! wants to read back what reached the device must wait for it to get there.
//!
//! **Cache dropping** (`verify_cold`, default true): between the copy and the read-back the
//! page cache is dropped, so the verify reads the device and not the copy's own pages. The
//! drop happens *inside* the measured phase (the monitor sees it; the harness cannot be
//! called from within `measure`, so it is `sys::drop_caches`), but its duration is in
//! neither `copy_seconds` nor `verify_seconds`, and `seconds` is their sum. The `sync` the
//! drop starts with finds nothing dirty: `copy_seconds` already ended with `syncfs`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Deserialize;

use super::contract::Workload;
use super::ctx::Ctx;
use super::error::{IoContext, WorkloadError};
use super::harness::Harness;
use super::options;
use super::outcome::Outcome;
use super::point::Point;
use super::prepare::prep_threads;
use super::spec::WorkloadSpec;
use super::tree_copy::{copy_report, copy_tree, CopyMode};
use super::verify::{self, examples};
use crate::dataset::{FileEntry, Manifest};
use crate::fsops::{self, hash_at, Dir, Kind, LatencyLog, Need, Totals, WalkOptions, HASH_BUF};

pub struct CopyVerify;

/// `[workload.copy-verify]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CopyVerifyOptions {
    /// Drop the page cache between the copy and the read-back (default true), so the verify
    /// reads the device and not the copy's own pages.
    #[serde(default = "yes")]
    pub verify_cold: bool,
}

fn yes() -> bool {
    true
}

impl CopyVerifyOptions {
    /// Parses the table (keys and types; a bool has no values to range-check).
    pub fn from_table(table: &toml::Table) -> Result<CopyVerifyOptions, String> {
        options::parse("copy-verify", table)
    }
}

/// (relative path, xxh3-64, bytes) of one file.
pub type FileHash = (PathBuf, u64, u64);

/// What the read-back found.
#[derive(Debug, Default)]
pub struct ReadBack {
    pub files: Vec<FileHash>,
    pub dirs: Vec<PathBuf>,
    pub bytes: u64,
    pub latency: LatencyLog,
}

impl Totals for ReadBack {
    fn add(&mut self, o: ReadBack) {
        self.files.add(o.files);
        self.dirs.add(o.dirs);
        self.bytes += o.bytes;
        self.latency.add(o.latency);
    }
}

/// Reads every file under `root` back (one task per directory) and hashes it.
pub fn read_back(ctx: &Ctx, root: &Path, threads: usize) -> Result<ReadBack, WorkloadError> {
    struct Worker {
        buf: Vec<u8>,
        out: ReadBack,
    }
    let opts = WalkOptions::new(threads, Need::NONE);
    let (_, workers) = fsops::walk_with(
        root,
        &opts,
        || Worker {
            buf: vec![0u8; HASH_BUF],
            out: ReadBack::default(),
        },
        |w: &mut Worker, d: &Dir| {
            ctx.check()?;
            for e in d.entries() {
                match e.kind {
                    Kind::File => {
                        ctx.check()?;
                        let t = Instant::now();
                        let h = hash_at(d.fd(), e.name, &mut w.buf).ctx(|| {
                            format!("reading back {}", root.join(d.path_of(e.name)).display())
                        })?;
                        w.out.latency.0.push(t.elapsed().as_nanos() as u64);
                        w.out.bytes += h.len;
                        w.out.files.push((d.path_of(e.name), h.hash, h.len));
                    }
                    Kind::Dir => w.out.dirs.push(d.path_of(e.name)),
                    Kind::Symlink | Kind::Other => {}
                }
            }
            Ok::<(), WorkloadError>(())
        },
    )?;
    Ok(ReadBack::sum_all(workers.into_iter().map(|w| w.out)))
}

/// Compares the hashes read back with the hashes taken from the source while copying:
/// every source file must be there with the same length and hash, and nothing else.
pub fn compare_with_source(source: &[FileHash], dest: &[FileHash]) -> Result<(), WorkloadError> {
    let mut a: Vec<&FileHash> = source.iter().collect();
    let mut b: Vec<&FileHash> = dest.iter().collect();
    a.sort_unstable_by(|x, y| x.0.cmp(&y.0));
    b.sort_unstable_by(|x, y| x.0.cmp(&y.0));
    let (mut i, mut j) = (0, 0);
    let mut problems: Vec<String> = Vec::new();
    while i < a.len() || j < b.len() {
        match (a.get(i), b.get(j)) {
            (Some(s), Some(d)) if s.0 == d.0 => {
                if s.1 != d.1 || s.2 != d.2 {
                    problems.push(format!("{} differs from its source", d.0.display()));
                }
                i += 1;
                j += 1;
            }
            (Some(s), Some(d)) if s.0 < d.0 => {
                problems.push(format!("{} missing", s.0.display()));
                i += 1;
            }
            (Some(s), None) => {
                problems.push(format!("{} missing", s.0.display()));
                i += 1;
            }
            (_, Some(d)) => {
                problems.push(format!("{} not in the source", d.0.display()));
                j += 1;
            }
            (None, None) => break,
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(WorkloadError::Verify(format!(
            "{} files failed verification against the source: {}",
            problems.len(),
            examples(&problems)
        )))
    }
}

/// The read-back as a manifest (for the final comparison with the data set).
fn as_manifest(rb: &ReadBack) -> Result<Manifest, WorkloadError> {
    let utf8 = |p: &Path| {
        p.to_str()
            .map(str::to_owned)
            .ok_or_else(|| WorkloadError::Verify(format!("non-UTF-8 name {}", p.display())))
    };
    let mut m = Manifest::default();
    for (p, hash, len) in &rb.files {
        m.files.push(FileEntry {
            path: utf8(p)?,
            size: *len,
            content: *hash,
            hash: *hash,
        });
    }
    for d in &rb.dirs {
        m.dirs.push(utf8(d)?);
    }
    m.files.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    Ok(m)
}

impl Workload for CopyVerify {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            key_metric: ("seconds", false),
            // The copy and the verify apart as well as their sum: seed 004 timed the copy with and
            // without verification.
            columns: &[
                "copy_seconds",
                "verify_seconds",
                "mb_per_s",
                "write_amplification",
                "space_amplification",
                "peak_cached_bytes",
                "cpu_system_pct",
            ],
            source_trees: 1,
            ..WorkloadSpec::new("copy-verify", "copy a tree onto the target hashing the source, then read the copy back (cold) and compare")
        }
    }
    fn check_options(&self, table: &toml::Table) -> Result<(), String> {
        CopyVerifyOptions::from_table(table).map(drop)
    }
    /// The copy writes the tree onto the target and the verify reads it back.
    fn byte_passes(&self, _options: &toml::Table) -> f64 {
        2.0
    }
    fn drops_caches(&self, options: &toml::Table) -> Option<&'static str> {
        CopyVerifyOptions::from_table(options)
            .is_ok_and(|o| o.verify_cold)
            .then_some("its cold verify (`[workload.copy-verify] verify_cold = false` avoids it)")
    }
    fn run(
        &self,
        ctx: &Ctx,
        _point: &Point,
        harness: &mut dyn Harness,
    ) -> Result<Outcome, WorkloadError> {
        let verify_cold = CopyVerifyOptions::from_table(ctx.options)
            .map_err(WorkloadError::Option)?
            .verify_cold;
        // The run's one dated source tree: clean but cached, so the source is warm and its
        // writeback is not measured.
        let (src, manifest) = super::source::dated(ctx)?;
        let dst = ctx.root;

        let mut readback = None;
        // The drop between the copy and its cold verify is neither: out of the figures.
        let aside = harness.aside();
        let mut outcome = harness.measure(&mut || {
            let t = Instant::now();
            let copied = copy_tree(ctx, &src, dst, ctx.threads, CopyMode::Hashing)?;
            let t_sync = Instant::now();
            crate::sys::syncfs(dst).ctx(|| format!("syncfs {}", dst.display()))?;
            let sync_seconds = t_sync.elapsed().as_secs_f64();
            let copy_seconds = t.elapsed().as_secs_f64();
            if verify_cold {
                aside
                    .run(crate::sys::drop_caches)
                    .ctx(|| "dropping caches before verify".to_string())?;
            }
            let t = Instant::now();
            let rb = read_back(ctx, dst, ctx.threads)?;
            compare_with_source(&copied.source_hashes, &rb.files)?;
            let verify_seconds = t.elapsed().as_secs_f64();

            let mut out = Outcome {
                seconds: copy_seconds + verify_seconds,
                files: copied.files,
                logical_read_bytes: rb.bytes,
                logical_write_bytes: copied.bytes,
                ..Outcome::default()
            };
            copy_report(&copied, &mut out);
            out.metrics.insert("copy_seconds".into(), copy_seconds);
            out.metrics.insert("syncfs_seconds".into(), sync_seconds);
            out.metrics.insert("verify_seconds".into(), verify_seconds);
            out.metrics.insert("bytes_verified".into(), rb.bytes as f64);
            rb.latency
                .clone()
                .add_metrics("file_verify", &mut out.metrics);
            readback = Some(rb);
            Ok(out)
        })?;
        let rb =
            readback.ok_or_else(|| WorkloadError::Verify("measured phase did not run".into()))?;
        // The source hashes could only be wrong together with the copy; the data set's own
        // hashes rule that out too.
        let diff = manifest.diff(&as_manifest(&rb)?, true);
        if !diff.is_empty() {
            return Err(WorkloadError::Verify(format!(
                "the copy does not match the data set: {}",
                Manifest::diff_summary(&diff)
            )));
        }
        verify::mtimes(&src, dst, prep_threads(ctx))?;
        outcome.notes.push(if verify_cold {
            "verify read after syncfs and a cache drop (drop time in neither phase)".into()
        } else {
            "verify read from a warm cache".into()
        });
        Ok(outcome)
    }
}
