//! `scan`: disk-space analysis, as `du`/`dust`/`gdu` do it: walk everything, `statx` every
//! entry for its logical size and allocated blocks, total them per directory (recursively)
//! and per extension. Two points: `cold` (caches dropped first) and `warm` (one unmeasured
//! walk first).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::Instant;

use serde_json::json;

use super::contract::Workload;
use super::ctx::Ctx;
use super::error::WorkloadError;
use super::harness::Harness;
use super::in_turn::Tree;
use super::outcome::Outcome;
use super::passes::{measure_cold_passes, measure_passes, Drops};
use super::point::Point;
use super::prepare::prepare;
use super::spec::{StartState, WorkloadSpec};
use crate::dataset::Manifest;
use crate::fsops::ext_of;
use crate::fsops::{self, Dir, Kind, LatencyLog, Need, WalkOptions};

pub struct Scan;

/// Totals of one extension (`""` for files without one).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExtTotals {
    pub files: u64,
    pub logical: u64,
    pub allocated: u64,
}

/// Totals of one directory and everything below it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DirTotals {
    pub logical: u64,
    pub allocated: u64,
}

/// The result of an analysis.
#[derive(Debug, Clone, Default)]
pub struct Usage {
    pub files: u64,
    /// Directories below the root (the root itself is not counted).
    pub dirs: u64,
    /// Sum of regular files' sizes.
    pub logical: u64,
    /// Space allocated to regular files (`st_blocks × 512`).
    pub file_allocated: u64,
    /// Space allocated to the directories themselves.
    pub dir_allocated: u64,
    pub per_ext: BTreeMap<String, ExtTotals>,
    /// Recursive totals per directory, keyed by relative path (`""` is the root).
    pub per_dir: BTreeMap<String, DirTotals>,
    pub stat_ns: Vec<u64>,
}

impl Usage {
    /// Files plus directories: everything the file system holds for this tree.
    pub fn allocated(&self) -> u64 {
        self.file_allocated + self.dir_allocated
    }
}

impl Workload for Scan {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            // In a shared tree every rank walks the whole tree (every rank's files).
            shares_dirs: true,
            start: StartState::DataSet,
            ..WorkloadSpec::new("scan", "disk-space analysis: stat every entry, total logical and allocated bytes per directory and extension")
        }
    }
    fn drops_caches(&self, _options: &toml::Table) -> Option<&'static str> {
        Some("its cold point")
    }

    /// The warm point on the cold point's file system: a cold walk reads and changes
    /// nothing but directory access times, and leaves the tree cached, which is where the
    /// warm point's own unmeasured walk would put it.
    fn follows_on_same_fs(&self, done: &Point, next: &Point) -> bool {
        done.variant == "cold" && next.variant == "warm"
    }

    /// Read-only passes over a tree laid down the same way on any file system.
    fn in_turn(&self, _point: &Point) -> bool {
        true
    }
    fn points(&self, _ctx: &Ctx) -> Result<Vec<Point>, WorkloadError> {
        Ok(["cold", "warm"]
            .into_iter()
            .map(|v| Point {
                variant: v.into(),
                params: [("cache".to_string(), json!(v))].into_iter().collect(),
            })
            .collect())
    }

    fn run(
        &self,
        ctx: &Ctx,
        point: &Point,
        harness: &mut dyn Harness,
    ) -> Result<Outcome, WorkloadError> {
        let manifest = prepare(ctx)?;
        let mut warmed_by = "one unmeasured walk";
        match point.variant.as_str() {
            "cold" => harness
                .drop_caches()
                .map_err(|e| WorkloadError::io("dropping caches", e))?,
            // After the cold point on this same file system (`follows_on_same_fs`), whose
            // last pass walked the whole tree, a warm-up walk would only read it from the
            // caches once more: a warm pass's seconds per cell (~0.5 s at scale 0.2).
            "warm" if ctx.follows => warmed_by = "the cold point's last walk",
            "warm" => {
                analyze(ctx.root, ctx.threads, ctx)?;
            }
            other => {
                return Err(WorkloadError::Option(format!(
                    "unknown scan variant {other:?}"
                )))
            }
        }
        let mut usage: [Usage; 2] = Default::default();
        let mut outcome = {
            let mut pass = |tree: Tree| {
                let t0 = Instant::now();
                let mut u = analyze(ctx.root_of(tree), ctx.threads, ctx)?;
                let mut out = Outcome {
                    seconds: t0.elapsed().as_secs_f64(),
                    files: u.files,
                    ..Outcome::default()
                };
                usage_metrics(&mut u, &mut out.metrics);
                usage[tree.index()] = u;
                Ok(out)
            };
            // A warm walk changes nothing and repeats to the floor; a cold one repeats too,
            // with the caches dropped before each pass.
            if point.variant == "warm" {
                measure_passes(ctx, harness, &mut pass)?
            } else {
                measure_cold_passes(ctx, harness, Drops::EachTurn, &mut pass)?
            }
        };
        let whole = super::prepare::whole_tree(ctx, manifest)?;
        for tree in ctx.trees() {
            verify(&usage[tree.index()], &whole)?;
        }
        outcome.notes.push(format!(
            "{} cache; space_amplification = (file + directory blocks) / logical bytes",
            point.variant
        ));
        if point.variant == "warm" {
            outcome.notes.push(format!("warmed by {warmed_by}"));
        }
        Ok(outcome)
    }
}

/// A pass's figures from what it found (`u`), into `m`; takes its latency log.
fn usage_metrics(u: &mut Usage, m: &mut BTreeMap<String, f64>) {
    m.insert("dirs".into(), u.dirs as f64);
    m.insert("logical_bytes".into(), u.logical as f64);
    m.insert("allocated_bytes".into(), u.allocated() as f64);
    m.insert("file_allocated_bytes".into(), u.file_allocated as f64);
    m.insert("dir_allocated_bytes".into(), u.dir_allocated as f64);
    if u.logical > 0 {
        m.insert(
            "space_amplification".into(),
            u.allocated() as f64 / u.logical as f64,
        );
    }
    m.insert("extensions".into(), u.per_ext.len() as f64);
    LatencyLog(std::mem::take(&mut u.stat_ns)).add_metrics("statx", m);
}

/// Walks `root`, stats every entry, and totals sizes per directory and per extension.
/// Polls `ctx.check()` once per directory.
pub fn analyze(root: &Path, threads: usize, ctx: &Ctx) -> Result<Usage, WorkloadError> {
    let mut opts = WalkOptions::new(threads, Need::SIZE | Need::BLOCKS);
    opts.time_stats = true;
    let (stats, parts) = fsops::walk_with(root, &opts, Part::default, |p: &mut Part, d: &Dir| {
        ctx.check()?;
        p.add_dir(d);
        Ok::<(), WorkloadError>(())
    })?;
    let mut u = Usage {
        stat_ns: stats.stat_ns,
        ..Usage::default()
    };
    let mut direct: BTreeMap<String, DirTotals> = BTreeMap::new();
    let mut own: Vec<(String, u64)> = Vec::new();
    for p in parts {
        u.files += p.files;
        u.dirs += p.dirs;
        u.logical += p.logical;
        u.file_allocated += p.file_allocated;
        u.dir_allocated += p.dir_allocated;
        for (ext, t) in p.per_ext {
            let e = u
                .per_ext
                .entry(String::from_utf8_lossy(&ext).into_owned())
                .or_default();
            e.files += t.files;
            e.logical += t.logical;
            e.allocated += t.allocated;
        }
        direct.extend(p.per_dir);
        own.extend(p.child_dirs);
    }
    for (dir, bytes) in own {
        direct.entry(dir).or_default().allocated += bytes;
    }
    roll_up(&direct, &mut u.per_dir);
    Ok(u)
}

/// One walker task's totals: each task counts on its own, without locks, and
/// [`analyze`] adds the parts up once the walk is over.
#[derive(Default)]
struct Part {
    files: u64,
    dirs: u64,
    logical: u64,
    file_allocated: u64,
    dir_allocated: u64,
    per_ext: HashMap<Vec<u8>, ExtTotals>,
    /// (relative dir, direct logical, direct allocated incl. its own blocks)
    per_dir: Vec<(String, DirTotals)>,
    /// Own blocks of subdirectories, attributed to them (relative path, bytes).
    child_dirs: Vec<(String, u64)>,
}

impl Part {
    /// Counts the entries of one directory: its files by extension and in its direct
    /// totals, its subdirectories' own blocks for them (their task never sees those).
    fn add_dir(&mut self, d: &Dir) {
        let mut here = DirTotals::default();
        for e in d.entries() {
            let alloc = e.meta.blocks * 512;
            match e.kind {
                Kind::File => {
                    self.files += 1;
                    self.logical += e.meta.size;
                    self.file_allocated += alloc;
                    here.logical += e.meta.size;
                    here.allocated += alloc;
                    let ext = ext_of(e.name_bytes()).unwrap_or(b"");
                    let t = match self.per_ext.get_mut(ext) {
                        Some(t) => t,
                        None => self.per_ext.entry(ext.to_vec()).or_default(),
                    };
                    t.files += 1;
                    t.logical += e.meta.size;
                    t.allocated += alloc;
                }
                Kind::Dir => {
                    self.dirs += 1;
                    self.dir_allocated += alloc;
                    self.child_dirs
                        .push((d.path_of(e.name).to_string_lossy().into_owned(), alloc));
                }
                Kind::Symlink | Kind::Other => {}
            }
        }
        self.per_dir
            .push((d.rel().to_string_lossy().into_owned(), here));
    }
}

/// Rolls each directory's direct totals up into all of its ancestors: what `du` shows is
/// a directory with everything below it.
fn roll_up(direct: &BTreeMap<String, DirTotals>, per_dir: &mut BTreeMap<String, DirTotals>) {
    for (dir, t) in direct {
        let mut cur: &str = dir;
        loop {
            let e = per_dir.entry(cur.to_string()).or_default();
            e.logical += t.logical;
            e.allocated += t.allocated;
            if cur.is_empty() {
                break;
            }
            cur = cur.rsplit_once('/').map_or("", |(parent, _)| parent);
        }
    }
}

/// What the manifest says the totals per extension are.
pub fn expected_per_ext(manifest: &Manifest) -> BTreeMap<String, (u64, u64)> {
    let mut m: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for f in &manifest.files {
        let name = f.path.rsplit_once('/').map_or(f.path.as_str(), |(_, n)| n);
        let ext = ext_of(name.as_bytes()).unwrap_or(b"");
        let e = m
            .entry(String::from_utf8_lossy(ext).into_owned())
            .or_default();
        e.0 += 1;
        e.1 += f.size;
    }
    m
}

/// Checks an analysis against the manifest: file and directory counts, the logical total,
/// the root's recursive total, and the count and logical bytes of every extension.
pub fn verify(usage: &Usage, manifest: &Manifest) -> Result<(), WorkloadError> {
    let mut problems = Vec::new();
    if usage.files != manifest.files.len() as u64 {
        problems.push(format!(
            "{} files instead of {}",
            usage.files,
            manifest.files.len()
        ));
    }
    if usage.dirs != manifest.dirs.len() as u64 {
        problems.push(format!(
            "{} directories instead of {}",
            usage.dirs,
            manifest.dirs.len()
        ));
    }
    if usage.logical != manifest.total_bytes() {
        problems.push(format!(
            "{} logical bytes instead of {}",
            usage.logical,
            manifest.total_bytes()
        ));
    }
    let root = usage.per_dir.get("").copied().unwrap_or_default();
    if root.logical != usage.logical || root.allocated != usage.allocated() {
        problems.push(format!(
            "root total {:?} disagrees with the sums ({} logical, {} allocated)",
            root,
            usage.logical,
            usage.allocated()
        ));
    }
    let got: BTreeMap<String, (u64, u64)> = usage
        .per_ext
        .iter()
        .map(|(k, t)| (k.clone(), (t.files, t.logical)))
        .collect();
    let want = expected_per_ext(manifest);
    if got != want {
        for (ext, w) in &want {
            if got.get(ext) != Some(w) {
                problems.push(format!(
                    "extension {ext:?}: (files, bytes) {:?} instead of {:?}",
                    got.get(ext),
                    w
                ));
            }
        }
        for ext in got.keys().filter(|k| !want.contains_key(*k)) {
            problems.push(format!("unexpected extension {ext:?}"));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        problems.truncate(20);
        Err(WorkloadError::Verify(format!(
            "scan totals: {}",
            problems.join("; ")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::sync::testenv::Env;
    use crate::workload::PlainHarness;

    fn warm() -> Point {
        Point {
            variant: "warm".into(),
            ..Point::default()
        }
    }

    /// The warm point that follows the cold one on its file system takes the cold walk as
    /// its warm-up, and is still held to the whole data set; one on a file system of its
    /// own walks once first.
    #[test]
    fn a_warm_scan_after_the_cold_one_walks_no_warm_up_and_still_checks_the_tree() {
        let env = Env::new();
        let mut ctx = env.ctx();
        let manifest = prepare(&ctx).unwrap();
        ctx.populated = true;
        let own = Scan
            .run(&ctx, &warm(), &mut PlainHarness::default())
            .unwrap();
        assert!(own
            .notes
            .iter()
            .any(|n| n == "warmed by one unmeasured walk"));
        ctx.follows = true;
        let after_cold = Scan
            .run(&ctx, &warm(), &mut PlainHarness::default())
            .unwrap();
        assert!(
            after_cold
                .notes
                .iter()
                .any(|n| n == "warmed by the cold point's last walk"),
            "{:?}",
            after_cold.notes
        );
        assert_eq!(after_cold.files, manifest.files.len() as u64);
        std::fs::remove_file(env.root.path().join(&manifest.files[0].path)).unwrap();
        let err = Scan
            .run(&ctx, &warm(), &mut PlainHarness::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("files instead of"), "{err}");
    }
}
