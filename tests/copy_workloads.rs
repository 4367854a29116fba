//! The copy-family workloads (copy, sync, dupes, copy-verify, cold-read) on real trees under
//! /var/tmp: each runs and verifies its own work, and each verification catches a planted
//! error.

use std::fs;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use fsarena::dataset::{self, Profile};
use fsarena::results::Status;
use fsarena::workload::{
    cold_read, copy, copy_verify, dupes, source, sync, tree_copy, verify, Outcome, PlainHarness,
    Point, Workload, WorkloadError,
};

mod common;
use common::loop_btrfs::LoopBtrfs;
use common::Env;

impl Env {
    fn run(
        &self,
        w: &dyn Workload,
        variant: &str,
    ) -> Result<(Outcome, PlainHarness), WorkloadError> {
        let point = Point {
            variant: variant.into(),
            ..Point::default()
        };
        let mut h = PlainHarness::default();
        let out = w.run(&self.ctx(), &point, &mut h)?;
        Ok((out, h))
    }
}

/// Inverts one byte in the middle of `path`.
fn flip_byte(path: &Path) {
    let mut f = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let len = f.metadata().unwrap().len();
    assert!(len > 0);
    let at = len / 2;
    let mut b = [0u8; 1];
    f.seek(SeekFrom::Start(at)).unwrap();
    f.read_exact(&mut b).unwrap();
    b[0] ^= 0xff;
    f.seek(SeekFrom::Start(at)).unwrap();
    f.write_all(&b).unwrap();
}

fn assert_verify_error(r: Result<(), WorkloadError>, what: &str) {
    match r {
        Err(WorkloadError::Verify(msg)) => assert!(msg.contains(what), "{msg}"),
        other => panic!("expected a verification failure about {what}, got {other:?}"),
    }
}

fn methods_add_up(out: &Outcome) {
    let m = &out.metrics;
    let sum = m["reflink_files"] + m["copy_file_range_files"] + m["readwrite_files"];
    assert_eq!(sum, out.files as f64, "{m:?}");
}

#[test]
fn copy_from_outside_copies_everything_and_verifies() {
    let env = Env::new();
    let manifest = env.manifest();
    let w = copy::CopyTree;
    let points = w.points(&env.ctx()).unwrap();
    assert_eq!(
        points
            .iter()
            .map(|p| p.variant.as_str())
            .collect::<Vec<_>>(),
        ["from-outside", "within"]
    );
    let (out, h) = env.run(&w, "from-outside").unwrap();
    assert_eq!(h.measured, 1);
    assert_eq!(out.files, manifest.files.len() as u64);
    assert_eq!(out.logical_write_bytes, manifest.total_bytes());
    assert_eq!(out.metrics["bytes_copied"], manifest.total_bytes() as f64);
    assert!(out.seconds > out.metrics["syncfs_seconds"]);
    assert!(out.metrics["file_copy_p99_us"] >= out.metrics["file_copy_p50_us"]);
    methods_add_up(&out);
    // Here scratch and root share /var/tmp, so copy_file_range may run; on a real target
    // it is refused with EXDEV. Either way the notes say what ran.
    assert!(
        out.notes.iter().any(|n| n.starts_with("copied with")),
        "{:?}",
        out.notes
    );

    // The same check the workload ran catches one flipped byte in the copy.
    let src = env.scratch.path().join(source::dated_name(&manifest));
    copy::verify_copy(&src, env.root.path(), &manifest, 2).unwrap();
    let victim = &manifest.files[manifest.files.len() / 2].path;
    flip_byte(&env.root.path().join(victim));
    assert_verify_error(
        copy::verify_copy(&src, env.root.path(), &manifest, 2),
        victim,
    );
}

#[test]
fn copy_verification_catches_a_lost_modification_time() {
    let env = Env::new();
    let manifest = env.manifest();
    env.run(&copy::CopyTree, "from-outside").unwrap();
    let src = env.scratch.path().join(source::dated_name(&manifest));
    let victim = env.root.path().join(&manifest.files[0].path);
    let f = fs::OpenOptions::new().write(true).open(&victim).unwrap();
    f.set_modified(std::time::SystemTime::now()).unwrap();
    assert_verify_error(
        copy::verify_copy(&src, env.root.path(), &manifest, 2),
        "modification time",
    );
}

#[test]
fn copy_within_reports_the_method_it_used() {
    let env = Env::new();
    let manifest = env.manifest();
    let (out, _) = env.run(&copy::CopyTree, "within").unwrap();
    assert_eq!(out.files, manifest.files.len() as u64);
    assert_eq!(out.logical_read_bytes, manifest.total_bytes());
    methods_add_up(&out);
    // /var/tmp: ext4 refuses FICLONE and takes copy_file_range; btrfs/xfs would reflink.
    let m = &out.metrics;
    assert_eq!(m["readwrite_files"], 0.0, "{m:?} {:?}", out.notes);
    if m["reflink_files"] == 0.0 {
        assert!(
            out.notes
                .iter()
                .any(|n| n.starts_with("reflink (FICLONE) refused")),
            "{:?}",
            out.notes
        );
    }
    let dated = env.root.path().join(fsarena::workload::prepare::DATED_DIR);
    assert!(env.root.path().join("copy").is_dir() && dated.is_dir());
}

#[test]
fn copy_tree_falls_back_when_copy_file_range_is_refused() {
    let env = Env::new();
    let manifest = env.manifest();
    let src = env.scratch.path();
    dataset::materialize(&env.spec, &manifest, src, 2).unwrap();
    let t = tree_copy::copy_tree(
        &env.ctx(),
        src,
        env.root.path(),
        2,
        tree_copy::CopyMode::RefusedRange,
    )
    .unwrap();
    assert_eq!(t.readwrite_files, manifest.files.len() as u64);
    assert_eq!(t.copy_file_range_files + t.reflink_files, 0);
    assert_eq!(t.refusals.len(), 1, "{:?}", t.refusals);
    copy::verify_copy(src, env.root.path(), &manifest, 2).unwrap();
}

#[test]
fn copy_keeps_directory_modes_and_symlinks() {
    let env = Env::new();
    let src = env.scratch.path();
    fs::create_dir(src.join("d")).unwrap();
    fs::write(src.join("d/f"), b"hello").unwrap();
    fs::set_permissions(src.join("d"), fs::Permissions::from_mode(0o750)).unwrap();
    std::os::unix::fs::symlink("d/f", src.join("link")).unwrap();
    let t = tree_copy::copy_tree(
        &env.ctx(),
        src,
        env.root.path(),
        2,
        tree_copy::CopyMode::Fast { reflink: false },
    )
    .unwrap();
    assert_eq!((t.files, t.dirs, t.symlinks), (1, 1, 1));
    let dst = env.root.path();
    assert_eq!(
        fs::metadata(dst.join("d")).unwrap().permissions().mode() & 0o7777,
        0o750
    );
    assert_eq!(fs::read_link(dst.join("link")).unwrap(), Path::new("d/f"));
    assert_eq!(fs::read(dst.join("link")).unwrap(), b"hello");
}

/// A tiny tmpfs mounted for one test and always unmounted, even when the test panics.
struct TinyTmpfs {
    dir: tempfile::TempDir,
}

impl TinyTmpfs {
    fn mount(bytes: u64) -> TinyTmpfs {
        let dir = common::var_tmp_dir();
        rustix::mount::mount(
            "fsarena-test",
            dir.path(),
            "tmpfs",
            rustix::mount::MountFlags::empty(),
            std::ffi::CString::new(format!("size={bytes}"))
                .unwrap()
                .as_c_str(),
        )
        .expect("mount tmpfs (the tests run as root)");
        TinyTmpfs { dir }
    }
}

impl Drop for TinyTmpfs {
    fn drop(&mut self) {
        let _ = rustix::mount::unmount(self.dir.path(), rustix::mount::UnmountFlags::DETACH);
    }
}

#[test]
fn a_full_target_surfaces_as_enospc() {
    let env = Env::new();
    let manifest = env.manifest();
    assert!(manifest.total_bytes() > 2 << 20);
    let target = TinyTmpfs::mount(1 << 20);
    let ctx = env.ctx_at(target.dir.path());
    let mut h = PlainHarness::default();
    let err = copy::CopyTree
        .run(&ctx, &Point::default(), &mut h)
        .unwrap_err();
    assert_eq!(err.status(), Status::Enospc, "{err}");
    match err {
        WorkloadError::Io { source, .. } => assert_eq!(source.raw_os_error(), Some(libc::ENOSPC)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn copy_verify_measures_both_phases_and_catches_a_flipped_byte() {
    let env = Env::new();
    let manifest = env.manifest();
    let (out, h) = env.run(&copy_verify::CopyVerify, "").unwrap();
    assert_eq!(h.measured, 1);
    assert_eq!(out.files, manifest.files.len() as u64);
    let m = &out.metrics;
    assert!(m["copy_seconds"] > 0.0 && m["verify_seconds"] > 0.0);
    assert!((m["copy_seconds"] + m["verify_seconds"] - out.seconds).abs() < 1e-9);
    assert_eq!(out.logical_read_bytes, manifest.total_bytes());
    assert_eq!(m["readwrite_files"], out.files as f64);
    assert!(m.contains_key("file_verify_p50_us"));
    assert!(
        out.notes.iter().any(|n| n.contains("cache drop")),
        "{:?}",
        out.notes
    );

    // Source hashes from a hashing copy, then a flipped byte in the copy.
    let dst = common::var_tmp_dir();
    let src = env.scratch.path().join(source::dated_name(&manifest));
    let copied = tree_copy::copy_tree(
        &env.ctx(),
        &src,
        dst.path(),
        2,
        tree_copy::CopyMode::Hashing,
    )
    .unwrap();
    assert_eq!(copied.source_hashes.len(), manifest.files.len());
    let rb = copy_verify::read_back(&env.ctx(), dst.path(), 2).unwrap();
    copy_verify::compare_with_source(&copied.source_hashes, &rb.files).unwrap();
    let victim = &manifest.files[1].path;
    flip_byte(&dst.path().join(victim));
    let rb = copy_verify::read_back(&env.ctx(), dst.path(), 2).unwrap();
    assert_verify_error(
        copy_verify::compare_with_source(&copied.source_hashes, &rb.files),
        victim,
    );
}

#[test]
fn copy_verify_warm_skips_the_cache_drop() {
    let mut env = Env::new();
    env.options
        .insert("verify_cold".into(), toml::Value::Boolean(false));
    let (out, _) = env.run(&copy_verify::CopyVerify, "").unwrap();
    assert!(
        out.notes.iter().any(|n| n.contains("warm")),
        "{:?}",
        out.notes
    );
    env.options
        .insert("verify_cold".into(), toml::Value::from("yes"));
    assert!(matches!(
        env.run(&copy_verify::CopyVerify, ""),
        Err(WorkloadError::Option(_))
    ));
}

#[test]
fn sync_copies_and_deletes_exactly_the_changes_and_catches_a_stale_file() {
    let env = Env::new();
    let before = env.manifest();
    let (changes, after) = sync::plan_changes(&before, &env.spec, 0.1).unwrap();
    // 10 % of the files, split four ways.
    let n = (0.1 * before.files.len() as f64).round() as usize;
    assert_eq!(
        changes.modified.len()
            + changes.added.len()
            + changes.deleted.len()
            + changes.renamed.len(),
        n
    );
    assert!(!changes.renamed.is_empty() && !changes.deleted.is_empty());

    let (out, h) = env.run(&sync::SyncMirror, "").unwrap();
    assert_eq!(h.measured, 1);
    let m = &out.metrics;
    assert_eq!(m["files_copied"], changes.expected_copies() as f64);
    assert_eq!(m["files_deleted"], changes.expected_deletes() as f64);
    let copied_bytes: u64 = changes
        .modified
        .iter()
        .chain(&changes.added)
        .map(|f| f.size)
        .chain(
            changes
                .renamed
                .iter()
                .map(|(from, _)| before.file(from).unwrap().size),
        )
        .sum();
    assert_eq!(m["bytes_copied"], copied_bytes as f64);
    assert!(out.seconds > m["syncfs_seconds"]);
    assert_eq!(out.files, after.files.len() as u64);

    // The workload's check passes on the synced mirror (the dated data set on the
    // target), then fails on a stale leftover.
    let mirror = env.root.path().join(fsarena::workload::prepare::DATED_DIR);
    fsarena::workload::verify::tree(&mirror, &after, 2).unwrap();
    let (gone, _) = &changes.renamed[0];
    fs::write(mirror.join(gone), b"stale").unwrap();
    assert_verify_error(fsarena::workload::verify::tree(&mirror, &after, 2), gone);
}

#[test]
fn sync_rejects_a_bad_fraction() {
    let mut env = Env::new();
    env.options
        .insert("change_fraction".into(), toml::Value::Float(1.5));
    assert!(matches!(
        env.run(&sync::SyncMirror, ""),
        Err(WorkloadError::Option(_))
    ));
}

#[test]
fn dupes_finds_exactly_the_planted_groups() {
    let mut env = Env::new();
    env.options
        .insert("cold".into(), toml::Value::Boolean(false));
    let manifest = env.manifest();
    assert!(manifest.duplicate_groups.len() >= 2);
    let (out, h) = env.run(&dupes::Dupes, "").unwrap();
    assert_eq!(h.dropped, 0);
    let m = &out.metrics;
    assert_eq!(m["groups"], manifest.duplicate_groups.len() as f64);
    let members: usize = manifest.duplicate_groups.iter().map(Vec::len).sum();
    assert_eq!(m["duplicate_files"], members as f64);
    assert_eq!(out.files, manifest.files.len() as u64);
    // The stages prune: fewer files get a full hash than a prefix hash.
    assert!(m["full_hashed_files"] < m["prefix_hashed_files"], "{m:?}");
    assert!(m["bytes_hashed"] < manifest.total_bytes() as f64, "{m:?}");
}

#[test]
fn a_cold_dupes_search_repeats_to_the_floor_and_checks_every_pass() {
    let env = Env::new();
    let manifest = env.manifest();
    let mut h = common::Floored(std::time::Duration::from_millis(200));
    let out = dupes::Dupes
        .run(&env.ctx(), &Point::default(), &mut h)
        .unwrap();
    let passes = out.metrics["passes"];
    assert!(passes >= 2.0, "{passes} passes");
    assert_eq!(out.files as f64, passes * manifest.files.len() as f64);
    assert_eq!(
        out.metrics["groups"],
        manifest.duplicate_groups.len() as f64
    );
    assert!(out.metrics["seconds_per_pass"] * passes >= 0.2);
}

#[test]
fn dupes_verification_catches_a_missing_duplicate() {
    let env = Env::new();
    let manifest = env.manifest();
    dataset::materialize(&env.spec, &manifest, env.root.path(), 2).unwrap();
    let s = dupes::find_duplicates(&env.ctx(), env.root.path(), 2).unwrap();
    let found = dupes::groups_in_manifest(&s, &manifest).unwrap();
    dupes::check_groups(&found, &manifest).unwrap();

    let group = &manifest.duplicate_groups[0];
    let victim = &manifest.files[group[group.len() - 1]].path;
    fs::remove_file(env.root.path().join(victim)).unwrap();
    let s = dupes::find_duplicates(&env.ctx(), env.root.path(), 2).unwrap();
    let found = dupes::groups_in_manifest(&s, &manifest).unwrap();
    assert_verify_error(dupes::check_groups(&found, &manifest), "not found");
}

#[test]
fn dupes_is_not_fooled_by_a_last_byte_difference() {
    let env = Env::new();
    let manifest = env.manifest();
    dataset::materialize(&env.spec, &manifest, env.root.path(), 2).unwrap();
    // Make a large planted duplicate differ in its very last byte only.
    let group = manifest
        .duplicate_groups
        .iter()
        .find(|g| manifest.files[g[0]].size > 3 * dupes::PARTIAL)
        .expect("a planted group of files above 12 KiB");
    let victim = env.root.path().join(&manifest.files[group[0]].path);
    let mut f = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&victim)
        .unwrap();
    let mut b = [0u8; 1];
    f.seek(SeekFrom::End(-1)).unwrap();
    f.read_exact(&mut b).unwrap();
    f.seek(SeekFrom::End(-1)).unwrap();
    f.write_all(&[b[0] ^ 1]).unwrap();
    drop(f);
    let s = dupes::find_duplicates(&env.ctx(), env.root.path(), 2).unwrap();
    let found = dupes::groups_in_manifest(&s, &manifest).unwrap();
    assert!(!found.iter().any(|g| g.contains(&group[0])), "{found:?}");
    assert!(dupes::check_groups(&found, &manifest).is_err());
}

#[test]
fn cold_read_loads_the_install_and_catches_a_flipped_byte() {
    let env = Env::new();
    let spec = cold_read::install_spec(&env.spec);
    assert_eq!(spec.profile, Profile::Smallfolder);
    let manifest = spec.plan().unwrap();
    let w = cold_read::ColdRead;
    assert!(!w.spec().uses_threads);
    let (out, h) = env.run(&w, "").unwrap();
    assert_eq!((h.dropped, h.measured), (1, 1));
    assert_eq!(out.files, manifest.files.len() as u64);
    assert_eq!(out.logical_read_bytes, manifest.total_bytes());
    assert!(out.metrics.contains_key("file_read_p99_us"));

    let order = cold_read::read_order(&manifest, spec.seed);
    let root_fd = rustix::fs::open(
        env.root.path(),
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY,
        rustix::fs::Mode::empty(),
    )
    .unwrap();
    let victim = &manifest.files[order[3]].path;
    flip_byte(&env.root.path().join(victim));
    let r = cold_read::read_all(&env.ctx(), &root_fd, &manifest, &order).unwrap();
    assert_verify_error(
        cold_read::verify_reads(&manifest, &order, &r.hashes),
        victim,
    );
}

#[test]
fn a_cancelled_run_stops_with_interrupted() {
    let env = Env::new();
    env.cancel.store(true, std::sync::atomic::Ordering::Relaxed);
    let err = env.run(&copy::CopyTree, "from-outside").unwrap_err();
    assert!(matches!(err, WorkloadError::Interrupted), "{err:?}");
}

#[test]
fn the_workloads_are_registered() {
    let names = fsarena::workload::names();
    for n in ["copy", "sync", "dupes", "copy-verify", "cold-read"] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
}

/// `copy`'s within point run on a fresh btrfs loop file system: the file system (kept
/// mounted while it lives), the cell's root, the data set's manifest and the outcome.
fn copy_within_on_btrfs() -> (LoopBtrfs, std::path::PathBuf, dataset::Manifest, Outcome) {
    let fsys = LoopBtrfs::new(256 << 20);
    let root = fsys.mnt().join("cell");
    fs::create_dir(&root).unwrap();
    let env = Env::new();
    let within = Point {
        variant: "within".into(),
        ..Point::default()
    };
    let out = copy::CopyTree
        .run(&env.ctx_at(&root), &within, &mut PlainHarness::default())
        .unwrap();
    (fsys, root, env.manifest(), out)
}

#[test]
fn copy_within_btrfs_uses_reflinks() {
    let (_fsys, _root, manifest, out) = copy_within_on_btrfs();
    assert_eq!(
        out.metrics["reflink_files"],
        manifest.files.len() as f64,
        "{:?}",
        out.notes
    );
    assert!(
        out.notes
            .iter()
            .any(|n| n.starts_with("copied with reflink")),
        "{:?}",
        out.notes
    );
    assert!(
        out.notes
            .iter()
            .any(|n| n.starts_with("copy checked by its block map")),
        "{:?}",
        out.notes
    );
}

/// A reflinked copy is checked by where its blocks are, not read back; a file rewritten
/// after the copy (same length, one byte different, so on new blocks) is hashed and caught,
/// and one rewritten with its own bytes is hashed and passes.
#[test]
fn a_reflinked_copy_is_checked_by_its_block_map_and_a_rewritten_file_is_caught() {
    let (_fsys, root, manifest, _) = copy_within_on_btrfs();
    let (src, dst) = (root.join("dated"), root.join("copy"));
    let clean = verify::copy_within(&src, &dst, &manifest, 2).unwrap();
    assert_eq!(clean.shared + clean.hashed, manifest.files.len());
    assert!(clean.shared > 0, "{clean:?}");

    // The largest file is not inline in btrfs metadata: it was on its source's blocks.
    let big = manifest.files.iter().max_by_key(|f| f.size).unwrap();
    let same = fs::read(dst.join(&big.path)).unwrap();
    fs::write(dst.join(&big.path), &same).unwrap();
    rustix::fs::syncfs(fs::File::open(&dst).unwrap()).unwrap();
    let rewritten = verify::copy_within(&src, &dst, &manifest, 2).unwrap();
    assert_eq!(rewritten.shared, clean.shared - 1);

    flip_byte(&dst.join(&big.path));
    rustix::fs::syncfs(fs::File::open(&dst).unwrap()).unwrap();
    assert_verify_error(
        verify::copy_within(&src, &dst, &manifest, 2).map(drop),
        "content differs",
    );
}
