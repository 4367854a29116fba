//! `sync`: bring a mirror on the target in line with a changed source, the way
//! `rsync -a --delete` (or a mirror tool) does it locally.
//!
//! Preparation (unmeasured): the mirror is the data set, dated (old, seed-determined
//! times), in `prepare::DATED_DIR` on the target — a copy of the run's dated populated
//! image, or laid down there on targets that have none; the source is a copy of the same
//! dated data set outside the target in which a seed-determined share was changed —
//! `change_fraction` (default 0.1) split evenly into modified, added, deleted and renamed
//! files. Both trees are made once per run and only read ([`super::source`]).
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
//! would not measure what a sync measures. On a copy of the populated image (ext4, xfs,
//! btrfs, tmpfs) the mirror is not read back before the phase, which reads none of its data:
//! the files the sync wrote are hashed, the ones it left alone must keep the inode and change
//! time they had before (`identity`), and one in 64 of those is hashed all the same.

mod changes;
mod identity;
mod mirror;

use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

use serde::Deserialize;

pub use changes::{apply_changes, plan_changes, ChangeSet};
pub use mirror::{sync_tree, SyncStats};

use super::contract::Workload;
use super::ctx::Ctx;
use super::error::{IoContext, WorkloadError};
use super::harness::Harness;
use super::outcome::Outcome;
use super::point::Point;
use super::prepare::{check_threads, dated_on_target_with, prep_threads, WARM_MIN_THREADS};
use super::spec::{StartState, WorkloadSpec};
use super::tree_copy::{copy_tree, CopyMode};
use super::{options, source, verify};
use crate::dataset::Manifest;

/// The `sync` workload (named so as not to shadow the `Sync` trait).
pub struct SyncMirror;

/// `[workload.sync]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SyncOptions {
    /// Share of the files changed before the sync, in (0, 1], split evenly into modified,
    /// added, deleted and renamed files.
    #[serde(default = "default_fraction")]
    pub change_fraction: f64,
    /// Modification times this many seconds apart count as equal (rsync --modify-window);
    /// the default, 2 s, is the FAT-family timestamp granularity.
    #[serde(default = "default_window_s")]
    pub modify_window_s: f64,
}

fn default_fraction() -> f64 {
    0.1
}
fn default_window_s() -> f64 {
    2.0
}

impl SyncOptions {
    /// Parses and checks the table: everything that can be judged before provisioning.
    pub fn from_table(table: &toml::Table) -> Result<SyncOptions, String> {
        let o: SyncOptions = options::parse("sync", table)?;
        if !(o.change_fraction > 0.0 && o.change_fraction <= 1.0) {
            return Err(format!(
                "[workload.sync]: change_fraction must be within (0, 1], got {}",
                o.change_fraction
            ));
        }
        if !(o.modify_window_s.is_finite() && o.modify_window_s >= 0.0) {
            return Err(format!(
                "[workload.sync]: modify_window_s must be ≥ 0, got {}",
                o.modify_window_s
            ));
        }
        Ok(o)
    }
}

/// The check after `sync`: the target equals the changed source's manifest (paths, sizes,
/// hashes, directories), carries the source's modification times, and the comparison
/// copied and deleted exactly the planted changes.
pub fn verify_sync(
    src: &std::path::Path,
    dst: &std::path::Path,
    after: &Manifest,
    changes: &ChangeSet,
    stats: &SyncStats,
    threads: usize,
) -> Result<(), WorkloadError> {
    verify::tree(dst, after, threads)?;
    verify::mtimes(src, dst, threads)?;
    verify_counts(changes, stats)
}

/// The comparison copied and deleted exactly the planted changes: a sync that recopies
/// everything is correct but would not measure what a sync measures.
fn verify_counts(changes: &ChangeSet, stats: &SyncStats) -> Result<(), WorkloadError> {
    if stats.files_copied != changes.expected_copies()
        || stats.files_deleted != changes.expected_deletes()
    {
        return Err(WorkloadError::Verify(format!(
            "the comparison copied {} and deleted {} files; the changes were {} copies and {} deletions",
            stats.files_copied,
            stats.files_deleted,
            changes.expected_copies(),
            changes.expected_deletes()
        )));
    }
    Ok(())
}

impl Workload for SyncMirror {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            key_metric: ("seconds", false),
            columns: super::spec::WRITE_COLUMNS,
            source_trees: 2,
            // The mirror is the dated data set on the target: a copy of the dated populated image
            // instead of the whole data set copied onto the target in every cell.
            start: StartState::DatedDataSet,
            ..WorkloadSpec::new("sync", "mirror a changed source onto the target like rsync -a --delete (size + mtime compare)")
        }
    }
    fn check_options(&self, table: &toml::Table) -> Result<(), String> {
        SyncOptions::from_table(table).map(drop)
    }
    fn run(
        &self,
        ctx: &Ctx,
        _point: &Point,
        harness: &mut dyn Harness,
    ) -> Result<Outcome, WorkloadError> {
        let opts = SyncOptions::from_table(ctx.options).map_err(WorkloadError::Option)?;
        let (fraction, window_s) = (opts.change_fraction, opts.modify_window_s);
        let prep = prep_threads(ctx);
        // The dated source is only what the changed one is made from (once per run): the
        // phase and its check never read it, so it is not read back into the cache.
        let (before_dir, before) = source::dated_made(ctx)?;
        // The mirror: the dated data set on the target (a copy of the dated populated
        // image, or laid down here), the same files and times as the dated source.
        // On a copy of the populated image the mirror arrives cold. The phase reads its
        // directories and inodes, never its data: walking it for the identities the check
        // compares with loads exactly that (where the file system keeps identities a user
        // cannot forge); elsewhere it is read back whole and checked by hash, as before.
        let unread = ctx.populated && crate::sys::keeps_identities(ctx.root);
        let (mirror, _) = dated_on_target_with(ctx, !unread)?;
        let identities = if unread {
            Some(identity::identities(&mirror, prep.max(WARM_MIN_THREADS))?)
        } else {
            None
        };
        let (changes, after) = plan_changes(&before, ctx.dataset, fraction)?;
        // The changed source, made once per run beside the dated one (it is only read).
        let name = source::changed_name(&before, fraction);
        let src = source::made_once(ctx, &name, |dir| {
            copy_tree(
                ctx,
                &before_dir,
                dir,
                prep,
                CopyMode::Fast { reflink: true },
            )?;
            apply_changes(dir, ctx.dataset, &changes)
        })?;
        source::keep_warm(&src, &after, prep)?;

        let mut result = None;
        let mut outcome = harness.measure(&mut || {
            let (out, s) = sync_pass(ctx, &src, &mirror, window_s)?;
            result = Some(s);
            Ok(out)
        })?;
        let s = result.ok_or_else(|| WorkloadError::Verify("measured phase did not run".into()))?;
        let checked = MirrorCheck {
            src: &src,
            mirror: &mirror,
            after: &after,
            changes: &changes,
            stats: &s,
        };
        if let Some(note) = checked.verify(ctx, identities.as_ref(), check_threads(ctx))? {
            outcome.notes.push(note);
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

/// The measured phase: one sync of `src` onto `mirror` and the `syncfs` that puts it on
/// the device (a sync is done when its data is there), with what it did as metrics.
fn sync_pass(
    ctx: &Ctx,
    src: &Path,
    mirror: &Path,
    window_s: f64,
) -> Result<(Outcome, SyncStats), WorkloadError> {
    let t = Instant::now();
    let s = sync_tree(ctx, src, mirror, ctx.threads, window_s)?;
    let s0 = Instant::now();
    crate::sys::syncfs(mirror).ctx(|| format!("syncfs {}", mirror.display()))?;
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
    Ok((out, s))
}

/// What the check after the measured sync compares: the trees, the planted changes and
/// what the sync says it did.
struct MirrorCheck<'a> {
    src: &'a Path,
    mirror: &'a Path,
    after: &'a Manifest,
    changes: &'a ChangeSet,
    stats: &'a SyncStats,
}

impl MirrorCheck<'_> {
    /// Checks the mirror: hashed whole where it was read back before the phase, else by the
    /// identities taken before it (`before`), so the check reads only what the sync wrote
    /// plus a sample. Returns the note that says how, for the second way.
    fn verify(
        &self,
        ctx: &Ctx,
        before: Option<&HashMap<String, identity::Identity>>,
        threads: usize,
    ) -> Result<Option<String>, WorkloadError> {
        let (src, mirror, after, changes) = (self.src, self.mirror, self.after, self.changes);
        let Some(before) = before else {
            verify_sync(src, mirror, after, changes, self.stats, threads)?;
            return Ok(None);
        };
        let seed = ctx.dataset.seed;
        let c = identity::check(mirror, after, changes, before, seed, threads)?;
        verify::mtimes(src, mirror, threads)?;
        verify_counts(changes, self.stats)?;
        Ok(Some(format!(
            "check: the {} files the sync wrote hashed; the {} it left alone by inode and change time, 1 in {} of them hashed too ({} in all)",
            after.files.len() - c.untouched,
            c.untouched,
            identity::SAMPLE_ONE_IN,
            c.hashed
        )))
    }
}

/// A small data set and fresh directories under /var/tmp (a real file system, unlike the
/// tmpfs /tmp may be) for the unit tests of `sync` and its parts.
#[cfg(test)]
pub(crate) mod testenv {
    use std::sync::atomic::AtomicBool;

    use crate::dataset::DatasetSpec;
    use crate::workload::ctx::Ctx;

    pub struct Env {
        pub root: tempfile::TempDir,
        pub scratch: tempfile::TempDir,
        pub spec: DatasetSpec,
        pub options: toml::Table,
        pub cancel: AtomicBool,
    }

    pub fn var_tmp_dir() -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix("fsarena-sync-")
            .tempdir_in("/var/tmp")
            .expect("temp dir under /var/tmp")
    }

    impl Env {
        pub fn new() -> Env {
            Env {
                root: var_tmp_dir(),
                scratch: var_tmp_dir(),
                spec: DatasetSpec {
                    scale: 0.001,
                    ..DatasetSpec::default()
                },
                options: toml::Table::new(),
                cancel: AtomicBool::new(false),
            }
        }

        pub fn ctx(&self) -> Ctx<'_> {
            let (root, scratch) = (self.root.path(), self.scratch.path());
            Ctx {
                threads: 2,
                ..Ctx::new(root, scratch, &self.spec, &self.options, &self.cancel)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testenv::Env;
    use super::*;
    use crate::workload::harness::PlainHarness;

    fn table(src: &str) -> toml::Table {
        src.parse().expect("test table")
    }

    #[test]
    fn options_check_values_before_anything_runs() {
        let ok = SyncOptions::from_table(&table("")).unwrap();
        assert_eq!((ok.change_fraction, ok.modify_window_s), (0.1, 2.0));
        let one = SyncOptions::from_table(&table("change_fraction = 1\nmodify_window_s = 0"));
        assert_eq!(one.unwrap().change_fraction, 1.0);
        for bad in [
            "change_fraction = 0.0",
            "change_fraction = 1.5",
            "change_fraction = -0.1",
            "modify_window_s = -1",
            "modify_window_s = nan",
            "modify_window_s = inf",
            "change_fraction = \"a lot\"",
        ] {
            let e = SyncOptions::from_table(&table(bad)).unwrap_err();
            assert!(e.starts_with("[workload.sync]: "), "{bad}: {e}");
        }
        let e = SyncMirror
            .check_options(&table("fraction = 0.2"))
            .unwrap_err();
        assert!(
            e.contains("`fraction`") && e.contains("valid: change_fraction, modify_window_s"),
            "{e}"
        );
    }

    #[test]
    fn a_populated_mirror_is_checked_without_being_read_back_and_a_rewrite_is_caught() {
        let env = Env::new();
        // The mirror as a populated image holds it, then a cell on that image.
        crate::workload::prepare::dated_on_target(&env.ctx()).unwrap();
        let populated = Ctx {
            populated: true,
            ..env.ctx()
        };
        let mirror = env.root.path().join(crate::workload::prepare::DATED_DIR);
        let before = identity::identities(&mirror, 2).unwrap();
        let mut h = PlainHarness::default();
        let out = SyncMirror
            .run(&populated, &Point::default(), &mut h)
            .unwrap();
        assert!(
            out.notes
                .iter()
                .any(|n| n.contains("by inode and change time")),
            "{:?}",
            out.notes
        );
        let (changes, after) = plan_changes(&env.spec.plan().unwrap(), &env.spec, 0.1).unwrap();
        let seed = env.spec.seed;
        let c = identity::check(&mirror, &after, &changes, &before, seed, 2).unwrap();
        assert_eq!(
            c.untouched,
            after.files.len() - changes.expected_copies() as usize
        );
        assert!(
            c.hashed > changes.expected_copies() as usize,
            "the sample is hashed too"
        );

        // A file the source did not change, rewritten in place with its size and time kept.
        let wrote = |p: &str| {
            changes
                .modified
                .iter()
                .chain(&changes.added)
                .any(|m| m.path == p)
                || changes.renamed.iter().any(|(_, new)| new == p)
        };
        let kept = after
            .files
            .iter()
            .find(|f| f.size > 0 && !wrote(&f.path))
            .unwrap();
        let path = mirror.join(&kept.path);
        let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&path, vec![b'x'; kept.size as usize]).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        let e = identity::check(&mirror, &after, &changes, &before, seed, 2).unwrap_err();
        assert!(e.to_string().contains(&kept.path), "{e}");
        assert!(e.to_string().contains("written or replaced"), "{e}");

        // A file the sync wrote, holding other bytes.
        let before = identity::identities(&mirror, 2).unwrap();
        let wrote = &changes.added[0];
        std::fs::write(mirror.join(&wrote.path), vec![b'y'; wrote.size as usize]).unwrap();
        let e = identity::check(&mirror, &after, &changes, &before, seed, 2).unwrap_err();
        assert!(e.to_string().contains(&wrote.path), "{e}");
        assert!(e.to_string().contains("content differs"), "{e}");
    }

    /// Counts, at the start of the measured phase, the files of a tree that are not wholly
    /// in the page cache.
    struct ColdAtPhase<'a> {
        tree: &'a std::path::Path,
        manifest: &'a Manifest,
        cold: Option<usize>,
    }

    impl Harness for ColdAtPhase<'_> {
        fn drop_caches(&mut self) -> std::io::Result<()> {
            unreachable!("sync drops no cache")
        }
        fn measure(
            &mut self,
            work: &mut crate::workload::Phase<'_>,
        ) -> Result<Outcome, WorkloadError> {
            self.cold = Some(cold_files(self.tree, self.manifest));
            work()
        }
    }

    fn cold_files(tree: &std::path::Path, manifest: &Manifest) -> usize {
        use std::os::fd::AsFd;
        (manifest.files.iter())
            .filter(|f| {
                let file = std::fs::File::open(tree.join(&f.path)).unwrap();
                !crate::fsops::cached::wholly_cached(file.as_fd(), f.size).unwrap()
            })
            .count()
    }

    fn evict(tree: &std::path::Path, manifest: &Manifest) {
        for f in &manifest.files {
            crate::sys::evict_file(&tree.join(&f.path)).unwrap();
        }
    }

    /// Regression: every `sync` cell read the run's dated source back into the page cache
    /// (39 MiB at the default scale, from the disk after a cold pass's cache drop), though
    /// only the changed source made from it once is read by the phase. The changed source
    /// still starts the phase wholly cached; the dated one is left as the cell found it.
    #[test]
    fn sync_does_not_read_back_the_dated_source_its_phase_never_reads() {
        let env = Env::new();
        let sources = super::testenv::var_tmp_dir();
        let mut ctx = env.ctx();
        ctx.sources = Some(sources.path());
        // A first cell makes both sources.
        SyncMirror
            .run(&ctx, &Point::default(), &mut PlainHarness::default())
            .unwrap();
        let before = env.spec.plan().unwrap();
        let (_, after) = plan_changes(&before, &env.spec, 0.1).unwrap();
        let dated = sources.path().join(source::dated_name(&before));
        let changed = sources.path().join(source::changed_name(&before, 0.1));
        // As a cold pass's cache drop leaves them.
        evict(&dated, &before);
        evict(&changed, &after);
        let (root, scratch) = (super::testenv::var_tmp_dir(), super::testenv::var_tmp_dir());
        let next = Ctx {
            root: root.path(),
            scratch: scratch.path(),
            ..ctx
        };
        let mut h = ColdAtPhase {
            tree: &changed,
            manifest: &after,
            cold: None,
        };
        SyncMirror.run(&next, &Point::default(), &mut h).unwrap();
        assert_eq!(
            h.cold,
            Some(0),
            "the changed source starts the phase cached"
        );
        let written = before.files.iter().filter(|f| f.size > 0).count();
        assert_eq!(
            cold_files(&dated, &before),
            written,
            "the dated source was read back"
        );
    }

    #[test]
    fn the_workloads_check_catches_a_stale_file_and_a_wrong_count() {
        let env = Env::new();
        let mut h = PlainHarness::default();
        SyncMirror
            .run(&env.ctx(), &Point::default(), &mut h)
            .unwrap();
        assert_eq!(h.measured, 1);

        let before = env.spec.plan().unwrap();
        let (changes, after) = plan_changes(&before, &env.spec, 0.1).unwrap();
        let src = env
            .scratch
            .path()
            .join(crate::workload::source::changed_name(&before, 0.1));
        let dst = &env.root.path().join(crate::workload::prepare::DATED_DIR);
        let exact = SyncStats {
            files_copied: changes.expected_copies(),
            files_deleted: changes.expected_deletes(),
            ..SyncStats::default()
        };
        verify_sync(&src, dst, &after, &changes, &exact, 2).unwrap();

        // A sync that recopied one file too many is caught by the count.
        let recopied = SyncStats {
            files_copied: changes.expected_copies() + 1,
            ..exact
        };
        let e = verify_sync(&src, dst, &after, &changes, &recopied, 2).unwrap_err();
        assert!(e.to_string().contains("the comparison copied"), "{e}");

        // A file the sync should have deleted is caught by the tree check.
        let (gone, _) = &changes.renamed[0];
        std::fs::write(dst.join(gone), b"stale").unwrap();
        let exact = SyncStats {
            files_copied: changes.expected_copies(),
            files_deleted: changes.expected_deletes(),
            ..SyncStats::default()
        };
        let e = verify_sync(&src, dst, &after, &changes, &exact, 2).unwrap_err();
        assert!(
            matches!(&e, WorkloadError::Verify(m) if m.contains(gone.as_str())),
            "{e}"
        );
    }
}
