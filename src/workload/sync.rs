//! `sync`: bring a mirror on the target in line with a changed source, the way
//! `rsync -a --delete` (or a mirror tool) does it locally.
//!
//! Preparation (unmeasured): the data set is generated in the scratch area, dated (old,
//! seed-determined times), mirrored onto the target with the `copy` engine (which keeps the
//! times), and then a seed-determined share of the source is changed — `change_fraction`
//! (default 0.1) split evenly into modified, added, deleted and renamed files.
//!
//! Measured: the target is listed (one task per directory, `getdents` + `statx` for size
//! and mtime), then the source is walked; per source directory, entries are compared with
//! the target's by size and modification time (within `modify_window_s`, default 2 s, the
//! FAT-family timestamp granularity, as mirror tools allow). A changed or new file is
//! copied to a temporary name and renamed over the old one (rsync's default, so a reader
//! never sees half a file); a target entry the source lacks is deleted. A rename is seen as
//! a deletion plus an addition, as rsync sees it. Directory times are not synchronised.
//! The phase ends with `syncfs` on the target, inside `seconds`.
//!
//! Verification: the target must equal the changed source's manifest (paths, sizes,
//! hashes, directories), carry its modification times, and the comparison must have copied
//! and deleted exactly the planted changes — a sync that recopies everything is correct but
//! would not measure what a sync measures.

use std::collections::{BTreeSet, HashMap};
use std::ffi::{CStr, CString};
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rustix::fs::{AtFlags, Mode};

use super::copy::{copy_tree, open_rel_dir, verify_mtimes, CopyMode, COPY_BUF};
use super::filetree::{self, age_files, below, shuffle};
use super::{Ctx, Harness, IoContext, Outcome, Point, Workload, WorkloadError};
use crate::dataset::{fill_content, DatasetSpec, FileEntry, Manifest};
use crate::fsops::copy::{copy_file_at, CopyStrategy};
use crate::fsops::{self, Dir, Kind, LatencyLog, Need, WalkOptions};

/// The `sync` workload (named so as not to shadow the `Sync` trait).
pub struct SyncMirror;

/// Content ids of new bytes start here: plain ids (bit 63 clear) far above the generator's.
const NEW_CONTENT_BASE: u64 = 1 << 62;
const CHANGE_SALT: u64 = 0x5EED_C4A6_E5E7_0001;
const DEFAULT_FRACTION: f64 = 0.1;
const DEFAULT_WINDOW_S: f64 = 2.0;

/// The changes made to the source before the measured sync.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChangeSet {
    /// New bytes at existing paths (half keep their size, half get another).
    pub modified: Vec<FileEntry>,
    pub added: Vec<FileEntry>,
    pub deleted: Vec<String>,
    /// (old path, new path).
    pub renamed: Vec<(String, String)>,
}

impl ChangeSet {
    /// Files a correct sync copies: every modified, added and renamed file.
    pub fn expected_copies(&self) -> u64 {
        (self.modified.len() + self.added.len() + self.renamed.len()) as u64
    }
    /// Files a correct sync deletes: every deleted file and every rename's old name.
    pub fn expected_deletes(&self) -> u64 {
        (self.deleted.len() + self.renamed.len()) as u64
    }
}

fn hash_new(spec: &DatasetSpec, content: u64, size: u64, buf: &mut [u8]) -> u64 {
    crate::dataset::content::hash_content(spec, content, size, buf)
}

/// Draws the changes for `before` (deterministic from `spec.seed`) and returns them with
/// the manifest the source has afterwards.
pub fn plan_changes(
    before: &Manifest,
    spec: &DatasetSpec,
    fraction: f64,
) -> Result<(ChangeSet, Manifest), WorkloadError> {
    if !(0.0..=1.0).contains(&fraction) {
        return Err(WorkloadError::Option(format!(
            "change_fraction must be within 0..=1, got {fraction}"
        )));
    }
    let n_files = before.files.len();
    let n = (fraction * n_files as f64).round() as usize;
    let (q, r) = (n / 4, n % 4);
    let counts = [
        q + usize::from(r > 0),
        q + usize::from(r > 1),
        q + usize::from(r > 2),
        q,
    ];
    let [n_mod, n_add, n_del, n_ren] = counts;

    let mut rng = filetree::rng_for(spec.seed, CHANGE_SALT);
    let mut picks: Vec<usize> = (0..n_files).collect();
    shuffle(&mut rng, &mut picks);
    let (mods, rest) = picks.split_at(n_mod.min(n_files));
    let (dels, rest) = rest.split_at(n_del.min(rest.len()));
    let (rens, _) = rest.split_at(n_ren.min(rest.len()));

    let mut taken: BTreeSet<String> = before.files.iter().map(|f| f.path.clone()).collect();
    taken.extend(before.dirs.iter().cloned());
    let mut dirs: Vec<&str> = vec![""];
    dirs.extend(before.dirs.iter().map(String::as_str));
    let join = |d: &str, name: &str| {
        if d.is_empty() {
            name.to_string()
        } else {
            format!("{d}/{name}")
        }
    };
    let fresh_path =
        |rng: &mut rand_chacha::ChaCha8Rng, stem: &str, taken: &mut BTreeSet<String>| {
            let d = dirs[below(rng, dirs.len() as u64) as usize];
            let mut k = 0u32;
            loop {
                let p = join(
                    d,
                    &format!(
                        "{stem}{}",
                        if k == 0 {
                            String::new()
                        } else {
                            format!("-{k}")
                        }
                    ),
                );
                if taken.insert(p.clone()) {
                    return p;
                }
                k += 1;
            }
        };

    let mut buf = vec![0u8; 1 << 20];
    let mut next_content = NEW_CONTENT_BASE;
    let mut changes = ChangeSet::default();
    for (k, &i) in mods.iter().enumerate() {
        let old = &before.files[i];
        let size = if k % 2 == 0 {
            old.size
        } else {
            before.files[below(&mut rng, n_files as u64) as usize].size
        };
        next_content += 1;
        changes.modified.push(FileEntry {
            path: old.path.clone(),
            size,
            content: next_content,
            hash: hash_new(spec, next_content, size, &mut buf),
        });
    }
    for k in 0..n_add {
        let size = before.files[below(&mut rng, n_files.max(1) as u64) as usize].size;
        let path = fresh_path(&mut rng, &format!("sync-added-{k}.bin"), &mut taken);
        next_content += 1;
        changes.added.push(FileEntry {
            path,
            size,
            content: next_content,
            hash: hash_new(spec, next_content, size, &mut buf),
        });
    }
    changes.deleted = dels.iter().map(|&i| before.files[i].path.clone()).collect();
    for (k, &i) in rens.iter().enumerate() {
        let old = &before.files[i].path;
        let base = old.rsplit_once('/').map_or(old.as_str(), |(_, b)| b);
        let to = fresh_path(&mut rng, &format!("renamed-{k}-{base}"), &mut taken);
        changes.renamed.push((old.clone(), to));
    }

    // The manifest afterwards.
    let gone: BTreeSet<&str> = changes
        .deleted
        .iter()
        .map(String::as_str)
        .chain(changes.renamed.iter().map(|(from, _)| from.as_str()))
        .collect();
    let modified: HashMap<&str, &FileEntry> = changes
        .modified
        .iter()
        .map(|f| (f.path.as_str(), f))
        .collect();
    let mut files: Vec<FileEntry> = Vec::with_capacity(n_files + n_add);
    for f in &before.files {
        if gone.contains(f.path.as_str()) {
            continue;
        }
        files.push(
            modified
                .get(f.path.as_str())
                .map_or_else(|| f.clone(), |m| (*m).clone()),
        );
    }
    for (from, to) in &changes.renamed {
        if let Some(f) = before
            .file(from)
            .or_else(|| before.files.iter().find(|f| &f.path == from))
        {
            files.push(FileEntry {
                path: to.clone(),
                ..f.clone()
            });
        }
    }
    files.extend(changes.added.iter().cloned());
    files.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    let mut by_content: HashMap<u64, Vec<usize>> = HashMap::new();
    for (i, f) in files.iter().enumerate() {
        if f.size > 0 {
            by_content.entry(f.content).or_default().push(i);
        }
    }
    let mut groups: Vec<Vec<usize>> = by_content.into_values().filter(|g| g.len() >= 2).collect();
    groups.iter_mut().for_each(|g| g.sort_unstable());
    groups.sort_unstable();
    let after = Manifest {
        files,
        dirs: before.dirs.clone(),
        duplicate_groups: groups,
    };
    Ok((changes, after))
}

/// Writes the changes into the source tree at `root` (unmeasured). Modified and added
/// files get the current time as mtime, years after the dated originals.
pub fn apply_changes(root: &Path, spec: &DatasetSpec, c: &ChangeSet) -> Result<(), WorkloadError> {
    for p in &c.deleted {
        let path = root.join(p);
        std::fs::remove_file(&path).ctx(|| format!("deleting {}", path.display()))?;
    }
    for (from, to) in &c.renamed {
        let (a, b) = (root.join(from), root.join(to));
        std::fs::rename(&a, &b).ctx(|| format!("renaming {} to {}", a.display(), b.display()))?;
    }
    let mut buf = vec![0u8; 1 << 20];
    for f in c.modified.iter().chain(&c.added) {
        let path = root.join(&f.path);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .ctx(|| format!("writing {}", path.display()))?;
        let mut off = 0u64;
        while off < f.size {
            let n = buf.len().min((f.size - off) as usize);
            fill_content(spec, f.content, off, &mut buf[..n]);
            file.write_all(&buf[..n])
                .ctx(|| format!("writing {}", path.display()))?;
            off += n as u64;
        }
    }
    Ok(())
}

/// One target directory as listed before the comparison: names in one arena, entries
/// sorted by name for binary search.
#[derive(Debug, Default)]
struct Listing {
    names: Vec<u8>,
    ents: Vec<ListEnt>,
}

#[derive(Debug, Clone, Copy)]
struct ListEnt {
    start: u32,
    end: u32,
    kind: Kind,
    size: u64,
    mtime: (i64, u32),
}

impl Listing {
    fn name(&self, e: &ListEnt) -> &[u8] {
        &self.names[e.start as usize..e.end as usize]
    }
    fn find(&self, name: &[u8]) -> Option<usize> {
        self.ents.binary_search_by(|e| self.name(e).cmp(name)).ok()
    }
}

/// Lists every directory of the target (one task per directory) with sizes and mtimes.
fn list_target(
    ctx: &Ctx,
    root: &Path,
    threads: usize,
) -> Result<HashMap<PathBuf, Listing>, WorkloadError> {
    let opts = WalkOptions::new(threads, Need::SIZE | Need::MTIME);
    let (_, parts) = fsops::walk_with(
        root,
        &opts,
        Vec::new,
        |out: &mut Vec<(PathBuf, Listing)>, d: &Dir| {
            ctx.check()?;
            let mut l = Listing {
                names: Vec::new(),
                ents: Vec::with_capacity(d.len()),
            };
            for e in d.entries() {
                let start = l.names.len() as u32;
                l.names.extend_from_slice(e.name.to_bytes());
                l.ents.push(ListEnt {
                    start,
                    end: l.names.len() as u32,
                    kind: e.kind,
                    size: e.meta.size,
                    mtime: e.meta.mtime,
                });
            }
            let Listing { names, mut ents } = l;
            ents.sort_unstable_by(|a, b| {
                names[a.start as usize..a.end as usize]
                    .cmp(&names[b.start as usize..b.end as usize])
            });
            out.push((d.rel().to_path_buf(), Listing { names, ents }));
            Ok::<(), WorkloadError>(())
        },
    )?;
    Ok(parts.into_iter().flatten().collect())
}

/// Removes the directory `rel` under `dst_fd` with everything in it; returns files removed.
fn remove_tree(dst: &Path, rel: &Path) -> Result<(u64, u64), WorkloadError> {
    let top = dst.join(rel);
    let opts = WalkOptions::new(1, Need::NONE);
    let (_, parts) = fsops::walk_with(
        &top,
        &opts,
        || (0u64, Vec::<PathBuf>::new()),
        |acc: &mut (u64, Vec<PathBuf>), d: &Dir| {
            for e in d.entries() {
                if e.kind == Kind::Dir {
                    acc.1.push(d.path_of(e.name));
                } else {
                    rustix::fs::unlinkat(d.fd(), e.name, AtFlags::empty())
                        .map_err(std::io::Error::from)
                        .ctx(|| format!("deleting {}", top.join(d.path_of(e.name)).display()))?;
                    if e.kind == Kind::File {
                        acc.0 += 1;
                    }
                }
            }
            Ok::<(), WorkloadError>(())
        },
    )?;
    let mut files = 0;
    let mut dirs: Vec<PathBuf> = Vec::new();
    for (f, d) in parts {
        files += f;
        dirs.extend(d);
    }
    dirs.sort_unstable_by_key(|d| std::cmp::Reverse(d.components().count()));
    for d in dirs
        .iter()
        .map(|d| top.join(d))
        .chain(std::iter::once(top.clone()))
    {
        std::fs::remove_dir(&d).ctx(|| format!("deleting directory {}", d.display()))?;
    }
    Ok((files, dirs.len() as u64 + 1))
}

/// What the measured sync did.
#[derive(Debug, Default)]
pub struct SyncStats {
    /// Source files compared.
    pub files: u64,
    pub files_copied: u64,
    pub bytes_copied: u64,
    pub files_deleted: u64,
    pub dirs_created: u64,
    pub dirs_deleted: u64,
    pub latency: LatencyLog,
}

struct Worker {
    buf: Vec<u8>,
    seen: Vec<bool>,
    stats: SyncStats,
}

struct SyncCtx<'a> {
    ctx: &'a Ctx<'a>,
    dst: &'a Path,
    dst_root: OwnedFd,
    listings: HashMap<PathBuf, Listing>,
    strategy: CopyStrategy,
    window_ns: i128,
}

/// Brings `dst` in line with `src`: copies what is new or differs in size or mtime,
/// deletes what the source lacks. One task per source directory.
pub fn sync_tree(
    ctx: &Ctx,
    src: &Path,
    dst: &Path,
    threads: usize,
    window_s: f64,
) -> Result<SyncStats, WorkloadError> {
    let sc = SyncCtx {
        ctx,
        dst,
        dst_root: filetree::open_dir(dst)?,
        listings: list_target(ctx, dst, threads)?,
        strategy: CopyStrategy::new(false, true),
        window_ns: (window_s * 1e9) as i128,
    };
    let opts = WalkOptions::new(threads, Need::SIZE | Need::MTIME | Need::MODE);
    let (_, workers) = fsops::walk_with(
        src,
        &opts,
        || Worker {
            buf: vec![0u8; COPY_BUF],
            seen: Vec::new(),
            stats: SyncStats::default(),
        },
        |w: &mut Worker, d: &Dir| sync_dir(&sc, w, d),
    )?;
    let mut total = SyncStats::default();
    let mut logs = Vec::new();
    for w in workers {
        let s = w.stats;
        total.files += s.files;
        total.files_copied += s.files_copied;
        total.bytes_copied += s.bytes_copied;
        total.files_deleted += s.files_deleted;
        total.dirs_created += s.dirs_created;
        total.dirs_deleted += s.dirs_deleted;
        logs.push(s.latency);
    }
    total.latency = LatencyLog::merge(logs);
    Ok(total)
}

fn ns(t: (i64, u32)) -> i128 {
    i128::from(t.0) * 1_000_000_000 + i128::from(t.1)
}

/// Removes whatever the target has under `name` (file, link or whole directory).
fn remove_entry(
    sc: &SyncCtx,
    w: &mut Worker,
    dst_fd: BorrowedFd<'_>,
    rel_dir: &Path,
    name: &CStr,
    kind: Kind,
) -> Result<(), WorkloadError> {
    let rel = rel_dir.join(std::ffi::OsStr::from_bytes(name.to_bytes()));
    if kind == Kind::Dir {
        let (files, dirs) = remove_tree(sc.dst, &rel)?;
        w.stats.files_deleted += files;
        w.stats.dirs_deleted += dirs;
    } else {
        rustix::fs::unlinkat(dst_fd, name, AtFlags::empty())
            .map_err(std::io::Error::from)
            .ctx(|| format!("deleting {}", sc.dst.join(&rel).display()))?;
        if kind == Kind::File {
            w.stats.files_deleted += 1;
        }
    }
    Ok(())
}

fn sync_dir(sc: &SyncCtx, w: &mut Worker, d: &Dir) -> Result<(), WorkloadError> {
    sc.ctx.check()?;
    let rel = d.rel();
    let where_ = |name: &CStr| sc.dst.join(d.path_of(name)).display().to_string();
    let owned = open_rel_dir(&sc.dst_root, rel)
        .ctx(|| format!("opening {}", sc.dst.join(rel).display()))?;
    let dst_fd = owned.as_ref().map_or(sc.dst_root.as_fd(), |o| o.as_fd());
    let empty = Listing::default();
    let listing = sc.listings.get(rel).unwrap_or(&empty);
    w.seen.clear();
    w.seen.resize(listing.ents.len(), false);

    for e in d.entries() {
        let found = listing.find(e.name.to_bytes());
        if let Some(i) = found {
            w.seen[i] = true;
        }
        let theirs = found.map(|i| listing.ents[i]);
        match e.kind {
            Kind::Dir => match theirs {
                Some(t) if t.kind == Kind::Dir => {}
                other => {
                    if let Some(t) = other {
                        remove_entry(sc, w, dst_fd, rel, e.name, t.kind)?;
                    }
                    rustix::fs::mkdirat(dst_fd, e.name, Mode::from_raw_mode(e.meta.mode & 0o7777))
                        .map_err(std::io::Error::from)
                        .ctx(|| format!("creating directory {}", where_(e.name)))?;
                    w.stats.dirs_created += 1;
                }
            },
            Kind::File => {
                w.stats.files += 1;
                sc.ctx.check()?;
                let same = theirs.is_some_and(|t| {
                    t.kind == Kind::File
                        && t.size == e.meta.size
                        && (ns(t.mtime) - ns(e.meta.mtime)).abs() <= sc.window_ns
                });
                if same {
                    continue;
                }
                if let Some(t) = theirs.filter(|t| t.kind != Kind::File) {
                    remove_entry(sc, w, dst_fd, rel, e.name, t.kind)?;
                }
                let t0 = Instant::now();
                let mut tmp = Vec::with_capacity(e.name.to_bytes().len() + 16);
                tmp.push(b'.');
                tmp.extend_from_slice(e.name.to_bytes());
                tmp.extend_from_slice(b".fsarena-sync");
                let tmp = CString::new(tmp)
                    .map_err(|_| WorkloadError::Verify("NUL in a file name".into()))?;
                let r = copy_file_at(d.fd(), e.name, dst_fd, &tmp, &sc.strategy, &mut w.buf)
                    .ctx(|| format!("copying to {}", where_(e.name)))?;
                rustix::fs::renameat(dst_fd, &tmp, dst_fd, e.name)
                    .map_err(std::io::Error::from)
                    .ctx(|| format!("renaming into {}", where_(e.name)))?;
                w.stats.latency.0.push(t0.elapsed().as_nanos() as u64);
                w.stats.files_copied += 1;
                w.stats.bytes_copied += r.bytes;
            }
            Kind::Symlink => {
                let target = rustix::fs::readlinkat(d.fd(), e.name, Vec::new())
                    .map_err(std::io::Error::from)
                    .ctx(|| format!("reading link {}", where_(e.name)))?;
                if let Some(t) = theirs {
                    if t.kind == Kind::Symlink {
                        let current = rustix::fs::readlinkat(dst_fd, e.name, Vec::new())
                            .map_err(std::io::Error::from)
                            .ctx(|| format!("reading link {}", where_(e.name)))?;
                        if current == target {
                            continue;
                        }
                    }
                    remove_entry(sc, w, dst_fd, rel, e.name, t.kind)?;
                }
                rustix::fs::symlinkat(target.as_c_str(), dst_fd, e.name)
                    .map_err(std::io::Error::from)
                    .ctx(|| format!("creating link {}", where_(e.name)))?;
            }
            Kind::Other => {}
        }
    }

    // What the target has and the source does not: gone.
    for i in 0..listing.ents.len() {
        if w.seen[i] {
            continue;
        }
        let t = listing.ents[i];
        let name = CString::new(listing.name(&t))
            .map_err(|_| WorkloadError::Verify("NUL in a file name".into()))?;
        remove_entry(sc, w, dst_fd, rel, &name, t.kind)?;
    }
    Ok(())
}

impl Workload for SyncMirror {
    fn name(&self) -> &'static str {
        "sync"
    }
    fn describe(&self) -> &'static str {
        "mirror a changed source onto the target like rsync -a --delete (size + mtime compare)"
    }
    fn key_metric(&self) -> (&'static str, bool) {
        ("seconds", false)
    }
    fn columns(&self) -> &'static [&'static str] {
        super::WRITE_COLUMNS
    }
    fn option_keys(&self) -> &'static [&'static str] {
        &["change_fraction", "modify_window_s"]
    }
    fn run(
        &self,
        ctx: &Ctx,
        _point: &Point,
        harness: &mut dyn Harness,
    ) -> Result<Outcome, WorkloadError> {
        let fraction = super::options::f64_or(ctx, "change_fraction", DEFAULT_FRACTION)?;
        let window_s = super::options::f64_or(ctx, "modify_window_s", DEFAULT_WINDOW_S)?;
        if !(window_s.is_finite() && window_s >= 0.0) {
            return Err(WorkloadError::Option(format!(
                "modify_window_s must be ≥ 0, got {window_s}"
            )));
        }
        let src = ctx.scratch.join("sync-source");
        std::fs::create_dir(&src).ctx(|| format!("creating {}", src.display()))?;
        let prep = filetree::prep_threads(ctx);
        let before = filetree::generate(ctx, ctx.dataset, &src, prep)?;
        age_files(&src, &before, ctx.dataset.seed, prep)?;
        copy_tree(ctx, &src, ctx.root, prep, CopyMode::Fast { reflink: false })?;
        let (changes, after) = plan_changes(&before, ctx.dataset, fraction)?;
        apply_changes(&src, ctx.dataset, &changes)?;
        // Both trees written back before the clock starts (the source stays cached).
        for d in [src.as_path(), ctx.root] {
            crate::sys::syncfs(d).ctx(|| format!("syncfs {}", d.display()))?;
        }

        let mut result = None;
        let mut outcome = harness.measure(&mut || {
            let t = Instant::now();
            let s = sync_tree(ctx, &src, ctx.root, ctx.threads, window_s)?;
            let s0 = Instant::now();
            crate::sys::syncfs(ctx.root).ctx(|| format!("syncfs {}", ctx.root.display()))?;
            let mut out = Outcome {
                seconds: t.elapsed().as_secs_f64(),
                files: s.files,
                logical_read_bytes: 0,
                logical_write_bytes: s.bytes_copied,
                ..Outcome::default()
            };
            let m = &mut out.metrics;
            m.insert("files_copied".into(), s.files_copied as f64);
            m.insert("files_deleted".into(), s.files_deleted as f64);
            m.insert("bytes_copied".into(), s.bytes_copied as f64);
            m.insert("dirs_created".into(), s.dirs_created as f64);
            m.insert("dirs_deleted".into(), s.dirs_deleted as f64);
            m.insert("syncfs_seconds".into(), s0.elapsed().as_secs_f64());
            s.latency.clone().add_metrics("file_copy", m);
            result = Some(s);
            Ok(out)
        })?;
        let s = result.ok_or_else(|| WorkloadError::Verify("measured phase did not run".into()))?;
        super::create::verify(ctx.root, &after, prep)?;
        verify_mtimes(&src, ctx.root, prep)?;
        if s.files_copied != changes.expected_copies()
            || s.files_deleted != changes.expected_deletes()
        {
            return Err(WorkloadError::Verify(format!(
                "the comparison copied {} and deleted {} files; the changes were {} copies and {} deletions",
                s.files_copied,
                s.files_deleted,
                changes.expected_copies(),
                changes.expected_deletes()
            )));
        }
        outcome.notes.push(format!(
            "changes: {} modified, {} added, {} deleted, {} renamed",
            changes.modified.len(),
            changes.added.len(),
            changes.deleted.len(),
            changes.renamed.len()
        ));
        outcome
            .notes
            .push("latency op = copy one file to a temporary name and rename it in place".into());
        Ok(outcome)
    }
}
