//! `dupes`: find duplicate files the way fclones does — walk, group by size, then split the
//! groups by a hash of the first 4 KiB, then of the last 4 KiB, then of the whole file —
//! so that most files are never read in full.
//!
//! Every stage drops groups of one. Files of at most 4 KiB are settled by the prefix stage
//! (it read them whole) and files of at most 8 KiB by the suffix stage (prefix and suffix
//! together cover every byte); only larger files get a full hash, read in 1 MiB buffers.
//! Hard links are not collapsed (fclones does, by inode): generated trees have none.
//!
//! Preparation writes the data set onto the target (or the cell runs on a copy of the run's
//! populated image, which holds it already) and, with `cold` (default true), drops the
//! caches so the search reads the device, as the fclones benchmarks do. Verification:
//! the groups found must equal the manifest's planted groups exactly — the generator also
//! plants equal-size decoys and files that differ only in their last byte, which a finder
//! that trusts sizes or prefixes would wrongly group.

use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;
use rustix::fs::{Mode, OFlags};
use serde::Deserialize;

use super::contract::Workload;
use super::ctx::Ctx;
use super::dirfd::open_dir;
use super::error::{IoContext, WorkloadError};
use super::harness::Harness;
use super::in_turn::Tree;
use super::options;
use super::outcome::Outcome;
use super::passes::{measure_cold_passes, measure_passes, Drops};
use super::point::Point;
use super::prepare::{generate, prep_threads, prepare};
use super::spec::{StartState, WorkloadSpec};
use super::verify::examples;
use crate::dataset::Manifest;
use crate::fsops::{self, hash_fd, Dir, Kind, LatencyLog, Need, WalkOptions, HASH_BUF};

/// Bytes hashed at the start and at the end of a file in the partial stages.
pub const PARTIAL: u64 = 4096;

pub struct Dupes;

/// What a search found and what it cost.
#[derive(Debug, Default)]
pub struct Search {
    /// Every regular file walked: (relative path, size).
    pub files: Vec<(PathBuf, u64)>,
    /// Groups of indices into `files`, each sorted, sorted among themselves.
    pub groups: Vec<Vec<usize>>,
    pub bytes_hashed: u64,
    /// Files hashed in each stage: prefix, suffix, full.
    pub stage_files: [u64; 3],
    /// One operation = open, read the 4 KiB prefix, close.
    pub prefix_latency: LatencyLog,
}

#[derive(Clone, Copy)]
enum Stage {
    Prefix,
    Suffix,
    Full,
}

/// Runs the duplicate search over `root` with `threads` workers.
pub fn find_duplicates(ctx: &Ctx, root: &Path, threads: usize) -> Result<Search, WorkloadError> {
    let opts = WalkOptions::new(threads, Need::SIZE);
    let (_, parts) = fsops::walk_with(
        root,
        &opts,
        Vec::new,
        |out: &mut Vec<(PathBuf, u64)>, d: &Dir| {
            ctx.check()?;
            for e in d.entries() {
                // Empty files are all equal and never worth reporting (fclones skips them).
                if e.kind == Kind::File && e.meta.size > 0 {
                    out.push((d.path_of(e.name), e.meta.size));
                }
            }
            Ok::<(), WorkloadError>(())
        },
    )?;
    let mut search = Search {
        files: parts.into_iter().flatten().collect(),
        ..Search::default()
    };

    let mut by_size: HashMap<u64, Vec<usize>> = HashMap::new();
    for (i, (_, size)) in search.files.iter().enumerate() {
        by_size.entry(*size).or_default().push(i);
    }
    let mut groups: Vec<Vec<usize>> = by_size.into_values().filter(|g| g.len() >= 2).collect();

    let root_fd = open_dir(root)?;
    let pool = fsops::pool(threads)?;
    for (n, stage) in [Stage::Prefix, Stage::Suffix, Stage::Full]
        .into_iter()
        .enumerate()
    {
        let (next, hashed, bytes, lat) =
            pool.install(|| refine(ctx, &root_fd, root, &search.files, groups, stage))?;
        groups = next;
        search.stage_files[n] = hashed;
        search.bytes_hashed += bytes;
        if let Some(l) = lat {
            search.prefix_latency = l;
        }
    }
    for g in &mut groups {
        g.sort_unstable();
    }
    groups.sort_unstable();
    search.groups = groups;
    Ok(search)
}

type Refined = (Vec<Vec<usize>>, u64, u64, Option<LatencyLog>);

/// Splits every group by the stage's hash; drops groups of one.
fn refine(
    ctx: &Ctx,
    root_fd: &OwnedFd,
    root: &Path,
    files: &[(PathBuf, u64)],
    groups: Vec<Vec<usize>>,
    stage: Stage,
) -> Result<Refined, WorkloadError> {
    // Which members need reading in this stage: the suffix stage skips files the prefix
    // read whole, the full stage skips files prefix and suffix covered together.
    let needs = |size: u64| match stage {
        Stage::Prefix => true,
        Stage::Suffix => size > PARTIAL,
        Stage::Full => size > 2 * PARTIAL,
    };
    let members: Vec<usize> = groups
        .iter()
        .flatten()
        .copied()
        .filter(|&i| needs(files[i].1))
        .collect();
    struct Acc {
        keys: Vec<(usize, u64)>,
        bytes: u64,
        lat: LatencyLog,
        buf: Vec<u8>,
    }
    let buf_len = match stage {
        Stage::Full => HASH_BUF,
        _ => PARTIAL as usize,
    };
    let accs: Vec<Acc> = members
        .par_iter()
        .try_fold(
            || Acc {
                keys: Vec::new(),
                bytes: 0,
                lat: LatencyLog::default(),
                buf: vec![0u8; buf_len],
            },
            |mut acc, &i| {
                ctx.check()?;
                let (path, size) = &files[i];
                let t = Instant::now();
                let (key, read) = stage_hash(root_fd, path, *size, stage, &mut acc.buf)
                    .ctx(|| format!("hashing {}", root.join(path).display()))?;
                if matches!(stage, Stage::Prefix) {
                    acc.lat.0.push(t.elapsed().as_nanos() as u64);
                }
                acc.bytes += read;
                acc.keys.push((i, key));
                Ok::<Acc, WorkloadError>(acc)
            },
        )
        .collect::<Result<Vec<Acc>, WorkloadError>>()?;
    let mut key_of: HashMap<usize, u64> = HashMap::with_capacity(members.len());
    let mut bytes = 0;
    let mut logs = Vec::new();
    for a in accs {
        key_of.extend(a.keys);
        bytes += a.bytes;
        logs.push(a.lat);
    }
    let mut out = Vec::new();
    for g in groups {
        let mut split: HashMap<u64, Vec<usize>> = HashMap::new();
        for i in g {
            // Members this stage did not read keep key 0: they are already settled, and
            // members of one group all have one size, so they either all read or none did.
            split
                .entry(key_of.get(&i).copied().unwrap_or(0))
                .or_default()
                .push(i);
        }
        out.extend(split.into_values().filter(|s| s.len() >= 2));
    }
    let lat = matches!(stage, Stage::Prefix).then(|| LatencyLog::merge(logs));
    Ok((out, members.len() as u64, bytes, lat))
}

/// The stage's hash of one file and the bytes read for it.
fn stage_hash(
    root_fd: &OwnedFd,
    path: &Path,
    size: u64,
    stage: Stage,
    buf: &mut [u8],
) -> std::io::Result<(u64, u64)> {
    let fd = rustix::fs::openat(
        root_fd,
        path,
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::empty(),
    )?;
    match stage {
        Stage::Prefix | Stage::Suffix => {
            let len = size.min(PARTIAL);
            let offset = if matches!(stage, Stage::Prefix) {
                0
            } else {
                size - len
            };
            let data = &mut buf[..len as usize];
            pread_exact(&fd, data, offset)?;
            Ok((xxhash_rust::xxh3::xxh3_64(data), len))
        }
        Stage::Full => {
            let h = hash_fd(fd.as_fd(), buf)?;
            if h.len != size {
                return Err(std::io::Error::other(format!(
                    "file changed during the search: {} bytes instead of {size}",
                    h.len
                )));
            }
            Ok((h.hash, h.len))
        }
    }
}

fn pread_exact(fd: &OwnedFd, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    while !buf.is_empty() {
        match rustix::io::pread(fd, &mut *buf, offset) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// The groups found, as indices into `manifest.files`, normalised like
/// `manifest.duplicate_groups` (each sorted, sorted among themselves).
pub fn groups_in_manifest(
    search: &Search,
    manifest: &Manifest,
) -> Result<Vec<Vec<usize>>, WorkloadError> {
    let index: HashMap<&str, usize> = manifest
        .files
        .iter()
        .enumerate()
        .map(|(i, f)| (f.path.as_str(), i))
        .collect();
    let mut out = Vec::with_capacity(search.groups.len());
    for g in &search.groups {
        let mut m = Vec::with_capacity(g.len());
        for &i in g {
            let p = &search.files[i].0;
            let idx = p.to_str().and_then(|s| index.get(s)).ok_or_else(|| {
                WorkloadError::Verify(format!(
                    "found {} which the data set does not have",
                    p.display()
                ))
            })?;
            m.push(*idx);
        }
        m.sort_unstable();
        out.push(m);
    }
    out.sort_unstable();
    Ok(out)
}

/// Checks the groups found against the planted ones; any difference fails.
pub fn check_groups(found: &[Vec<usize>], manifest: &Manifest) -> Result<(), WorkloadError> {
    let expected = &manifest.duplicate_groups;
    if found == expected.as_slice() {
        return Ok(());
    }
    let show = |g: &Vec<usize>| {
        let names: Vec<&str> = g.iter().map(|&i| manifest.files[i].path.as_str()).collect();
        format!("[{}]", names.join(" "))
    };
    let missing: Vec<String> = expected
        .iter()
        .filter(|g| !found.contains(g))
        .map(show)
        .collect();
    let extra: Vec<String> = found
        .iter()
        .filter(|g| !expected.contains(g))
        .map(show)
        .collect();
    Err(WorkloadError::Verify(format!(
        "found {} duplicate groups, the data set planted {}; not found: {}; wrongly found: {}",
        found.len(),
        expected.len(),
        if missing.is_empty() {
            "none".into()
        } else {
            examples(&missing)
        },
        if extra.is_empty() {
            "none".into()
        } else {
            examples(&extra)
        },
    )))
}

/// `[workload.dupes]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DupesOptions {
    /// Drop the caches before the search (default true): a duplicate finder usually runs
    /// over a tree it has not just read.
    #[serde(default = "yes")]
    pub cold: bool,
}

fn yes() -> bool {
    true
}

impl DupesOptions {
    /// Parses the table (keys and types; a bool has no values to range-check).
    pub fn from_table(table: &toml::Table) -> Result<DupesOptions, String> {
        options::parse("dupes", table)
    }
}

/// The data set under `tree`'s root: found on a copy of the run's populated image (and
/// cold), else written now; for a warm search then cached, as right after writing it (on a
/// copy, one unmeasured search reads exactly that; the baseline's is read by
/// [`measure_passes`]).
fn lay_down(ctx: &Ctx, tree: Tree, cold: bool) -> Result<Manifest, WorkloadError> {
    let root = ctx.root_of(tree);
    let manifest = match ctx.populated {
        true => prepare(ctx)?,
        false => generate(ctx, ctx.dataset, root, prep_threads(ctx))?,
    };
    if !cold && ctx.populated && tree == Tree::Own {
        find_duplicates(ctx, root, ctx.threads)?;
    } else if !cold && !ctx.populated {
        crate::sys::syncfs(root).ctx(|| format!("syncfs {}", root.display()))?;
    }
    Ok(manifest)
}

impl Workload for Dupes {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            // One search's time: the phase repeats the search to the floor.
            key_metric: ("seconds_per_pass", false),
            // The search only reads: a copy of the run's populated image serves it.
            start: StartState::DataSet,
            ..WorkloadSpec::new("dupes", "find duplicate files like fclones: size, 4 KiB prefix hash, suffix hash, full xxh3")
        }
    }
    /// Read-only passes over a tree laid down the same way on any file system.
    fn in_turn(&self, _point: &Point) -> bool {
        true
    }
    fn check_options(&self, table: &toml::Table) -> Result<(), String> {
        DupesOptions::from_table(table).map(drop)
    }
    fn drops_caches(&self, options: &toml::Table) -> Option<&'static str> {
        DupesOptions::from_table(options)
            .is_ok_and(|o| o.cold)
            .then_some("its cold search (`[workload.dupes] cold = false` avoids it)")
    }
    fn run(
        &self,
        ctx: &Ctx,
        _point: &Point,
        harness: &mut dyn Harness,
    ) -> Result<Outcome, WorkloadError> {
        let cold = DupesOptions::from_table(ctx.options)
            .map_err(WorkloadError::Option)?
            .cold;
        // On a copy of the run's populated image the data set is already there (and cold);
        // otherwise it is written now.
        let manifest = lay_down(ctx, Tree::Own, cold)?;
        if ctx.in_turn.is_some() {
            // The baseline's tree, measured in turn, is laid down the same way.
            lay_down(ctx, Tree::InTurn, cold)?;
        }
        if cold {
            harness
                .drop_caches()
                .ctx(|| "dropping caches before the search".to_string())?;
        }

        // Every pass's groups are checked against the manifest, after its clock stops and
        // out of the monitor's figures.
        let aside = harness.aside();
        let mut pass = |tree: Tree| {
            let t = Instant::now();
            let s = find_duplicates(ctx, ctx.root_of(tree), ctx.threads)?;
            let seconds = t.elapsed().as_secs_f64();
            aside.run(|| check_groups(&groups_in_manifest(&s, &manifest)?, &manifest))?;
            let dup_files: usize = s.groups.iter().map(Vec::len).sum();
            let mut out = Outcome {
                seconds,
                files: s.files.len() as u64,
                logical_read_bytes: s.bytes_hashed,
                ..Outcome::default()
            };
            let m = &mut out.metrics;
            m.insert("groups".into(), s.groups.len() as f64);
            m.insert("duplicate_files".into(), dup_files as f64);
            m.insert(
                "redundant_files".into(),
                (dup_files - s.groups.len()) as f64,
            );
            m.insert("bytes_hashed".into(), s.bytes_hashed as f64);
            m.insert("prefix_hashed_files".into(), s.stage_files[0] as f64);
            m.insert("suffix_hashed_files".into(), s.stage_files[1] as f64);
            m.insert("full_hashed_files".into(), s.stage_files[2] as f64);
            s.prefix_latency.add_metrics("prefix_read", m);
            Ok(out)
        };
        // The search only reads, so it repeats to the floor: cold with the caches dropped
        // before every pass, warm back to back.
        let mut outcome = if cold {
            measure_cold_passes(ctx, harness, Drops::EachPass, &mut pass)?
        } else {
            measure_passes(ctx, harness, &mut pass)?
        };
        outcome.notes.push(format!(
            "{} caches; duplicate_files counts every member of a group",
            if cold { "cold" } else { "warm" }
        ));
        Ok(outcome)
    }
}
