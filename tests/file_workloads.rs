//! The six file-management workloads on real trees under /var/tmp: each runs and verifies
//! its own work, and each verification catches a planted error.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use fsarena::dataset::Manifest;
use fsarena::results::Status;
use fsarena::workload::{
    self, chmod, create, delete, scan, search, touch, verify, Outcome, PlainHarness, Point,
    Workload, WorkloadError,
};

mod common;
use common::Env;

fn run_point(w: &dyn Workload, env: &Env, variant: &str) -> Result<Outcome, WorkloadError> {
    let ctx = env.ctx();
    let point = w
        .points(&ctx)
        .unwrap()
        .into_iter()
        .find(|p| p.variant == variant)
        .unwrap_or_else(|| panic!("{} has no point {variant:?}", w.spec().name));
    let mut h = PlainHarness::default();
    let out = w.run(&ctx, &point, &mut h);
    assert_eq!(
        h.measured,
        usize::from(out.is_ok()),
        "{}: measured once",
        w.spec().name
    );
    out
}

fn first_file(m: &Manifest) -> PathBuf {
    PathBuf::from(&m.files[0].path)
}

#[test]
fn all_six_are_registered() {
    let names = workload::names();
    for n in ["create", "scan", "search", "touch", "chmod", "delete"] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
        assert!(workload::by_name(n).is_some());
    }
}

#[test]
fn create_writes_the_data_set_and_verify_catches_changes() {
    let env = Env::new();
    let m = env.manifest();
    let out = run_point(&create::Create, &env, "").unwrap();
    assert_eq!(out.files, m.files.len() as u64);
    assert_eq!(out.logical_write_bytes, m.total_bytes());
    assert!(out.seconds > 0.0);
    assert!(out.metrics["file_create_p99_us"] >= out.metrics["file_create_p50_us"]);
    let root = env.root.path();
    verify::tree(root, &m, 2).unwrap();

    // A size change.
    let victim = root.join(first_file(&m));
    let f = fs::OpenOptions::new().append(true).open(&victim).unwrap();
    f.set_len(m.files[0].size + 1).unwrap();
    let err = verify::tree(root, &m, 2).unwrap_err().to_string();
    assert!(err.contains("size"), "{err}");
    // Same size, one byte different.
    f.set_len(m.files[0].size).unwrap();
    verify::tree(root, &m, 2).unwrap();
    let mut bytes = fs::read(&victim).unwrap();
    bytes[0] ^= 1;
    fs::write(&victim, &bytes).unwrap();
    let err = verify::tree(root, &m, 2).unwrap_err().to_string();
    assert!(err.contains("content differs"), "{err}");
    bytes[0] ^= 1;
    fs::write(&victim, &bytes).unwrap();
    // An extra file.
    fs::write(root.join("stray.txt"), b"x").unwrap();
    let err = verify::tree(root, &m, 2).unwrap_err().to_string();
    assert!(err.contains("unexpected file stray.txt"), "{err}");
}

#[test]
fn scan_cold_and_warm_total_the_tree_and_verify_catches_a_grown_file() {
    for variant in ["cold", "warm"] {
        let env = Env::new();
        let m = env.manifest();
        let out = run_point(&scan::Scan, &env, variant).unwrap();
        assert_eq!(out.files, m.files.len() as u64);
        assert_eq!(out.metrics["logical_bytes"], m.total_bytes() as f64);
        assert!(out.metrics["allocated_bytes"] > 0.0);
        assert!(out.metrics["space_amplification"] > 0.5);
        assert!(out.metrics.contains_key("statx_p99_us"));
    }
    let env = Env::new();
    let m = env.manifest();
    let ctx = env.ctx();
    fsarena::dataset::materialize(&env.spec, &m, env.root.path(), 2).unwrap();
    let usage = scan::analyze(env.root.path(), 2, &ctx).unwrap();
    scan::verify(&usage, &m).unwrap();
    assert_eq!(usage.per_dir[""].logical, m.total_bytes());
    let f = fs::OpenOptions::new()
        .append(true)
        .open(env.root.path().join(first_file(&m)))
        .unwrap();
    f.set_len(m.files[0].size + 4096).unwrap();
    let usage = scan::analyze(env.root.path(), 2, &ctx).unwrap();
    let err = scan::verify(&usage, &m).unwrap_err().to_string();
    assert!(
        err.contains("logical bytes") && err.contains("extension"),
        "{err}"
    );
}

#[test]
fn search_by_name_and_size_and_verify_catches_a_missed_file() {
    for variant in ["name", "size"] {
        let env = Env::new();
        let out = run_point(&search::Search, &env, variant).unwrap();
        assert!(out.metrics["matches"] > 0.0, "{variant}: nothing found");
    }
    let env = Env::new();
    let m = env.manifest();
    let ctx = env.ctx();
    fsarena::dataset::materialize(&env.spec, &m, env.root.path(), 2).unwrap();
    let q = search::Query::Name("*.jpg".into());
    let want = search::expected(&m, &q).unwrap();
    assert!(!want.is_empty());
    let found = search::search(env.root.path(), 2, &q, &ctx).unwrap();
    search::verify(&found.paths, &want).unwrap();
    fs::remove_file(env.root.path().join(&want[0])).unwrap();
    let found = search::search(env.root.path(), 2, &q, &ctx).unwrap();
    let err = search::verify(&found.paths, &want).unwrap_err().to_string();
    assert!(err.contains(&want[0]), "{err}");
    let sq = search::Query::Size { min: 0, max: 4095 };
    let small = search::search(env.root.path(), 2, &sq, &ctx).unwrap();
    assert!(small.stat_calls > 0);
    let mut m2 = m.clone();
    m2.files.retain(|f| f.path != want[0]);
    search::verify(&small.paths, &search::expected(&m2, &sq).unwrap()).unwrap();
}

#[test]
fn search_rejects_bad_options() {
    let mut env = Env::new();
    env.options
        .insert("min_size".into(), toml::Value::Integer(10));
    env.options
        .insert("max_size".into(), toml::Value::Integer(5));
    let err = search::Search.points(&env.ctx()).unwrap_err();
    assert!(matches!(err, WorkloadError::Option(_)), "{err}");
    env.options.clear();
    env.options
        .insert("pattern".into(), toml::Value::String("[".into()));
    assert!(search::Search.points(&env.ctx()).is_err());
}

#[test]
fn touch_sets_mtimes_and_verify_catches_a_reverted_one() {
    let env = Env::new();
    let m = env.manifest();
    let out = run_point(&touch::Touch, &env, "").unwrap();
    assert_eq!(out.files, m.files.len() as u64);
    assert!(out.metrics.contains_key("utimensat_p99_us"));
    let when = touch::target_time(env.spec.seed);
    touch::verify(env.root.path(), 2, &m, when).unwrap();
    let f = fs::File::options()
        .write(true)
        .open(env.root.path().join(first_file(&m)))
        .unwrap();
    f.set_modified(std::time::SystemTime::now()).unwrap();
    let err = touch::verify(env.root.path(), 2, &m, when)
        .unwrap_err()
        .to_string();
    assert!(err.contains(&m.files[0].path), "{err}");
}

#[test]
fn chmod_sets_modes_and_xattrs_and_verify_catches_a_reverted_one() {
    let env = Env::new();
    let m = env.manifest();
    let out = run_point(&chmod::Chmod, &env, "").unwrap();
    assert_eq!(out.files, m.files.len() as u64);
    // /var/tmp is on ext4 here: both are supported.
    assert_eq!(out.metrics["mode_supported"], 1.0);
    assert_eq!(out.metrics["xattr_supported"], 1.0);
    assert!(out.metrics.contains_key("chmod_p99_us"));
    let expect = chmod::Expect {
        mode: Some(chmod::TARGET_MODE),
        mode_stored: true,
        xattr: Some(chmod::xattr_value(env.spec.seed)),
    };
    chmod::verify(env.root.path(), 2, &m, &expect).unwrap();
    let victim = env.root.path().join(first_file(&m));
    fs::set_permissions(&victim, fs::Permissions::from_mode(0o644)).unwrap();
    let err = chmod::verify(env.root.path(), 2, &m, &expect)
        .unwrap_err()
        .to_string();
    assert!(err.contains("mode 644"), "{err}");
    fs::set_permissions(&victim, fs::Permissions::from_mode(chmod::TARGET_MODE)).unwrap();
    rustix::fs::removexattr(&victim, chmod::XATTR_NAME).unwrap();
    let err = chmod::verify(env.root.path(), 2, &m, &expect)
        .unwrap_err()
        .to_string();
    assert!(err.contains("xattr missing"), "{err}");
}

#[test]
fn delete_empties_the_root_and_verify_catches_a_leftover() {
    let env = Env::new();
    let m = env.manifest();
    let out = run_point(&delete::Delete, &env, "").unwrap();
    assert_eq!(out.files, m.files.len() as u64);
    assert_eq!(out.metrics["dirs_removed"], m.dirs.len() as f64);
    assert!(out.metrics.contains_key("unlink_p99_us"));
    delete::verify(env.root.path()).unwrap();
    fs::create_dir(env.root.path().join("left")).unwrap();
    fs::write(env.root.path().join("left/behind"), b"x").unwrap();
    let err = delete::verify(env.root.path()).unwrap_err().to_string();
    assert!(
        err.contains("left/behind") || err.contains("2 entries"),
        "{err}"
    );
}

#[test]
fn a_cancelled_run_stops_with_interrupted() {
    let env = Env::new();
    env.cancel.store(true, std::sync::atomic::Ordering::Relaxed);
    let ctx = env.ctx();
    let mut h = PlainHarness::default();
    let err = create::Create
        .run(&ctx, &Point::default(), &mut h)
        .unwrap_err();
    assert!(matches!(err, WorkloadError::Interrupted), "{err}");
    let err = touch::Touch
        .run(&ctx, &Point::default(), &mut h)
        .unwrap_err();
    assert_eq!(err.status(), Status::Interrupted);
}

/// A tiny tmpfs, unmounted (lazily) when dropped, even if the test fails.
struct TmpfsGuard(PathBuf);

impl Drop for TmpfsGuard {
    fn drop(&mut self) {
        let _ = rustix::mount::unmount(&self.0, rustix::mount::UnmountFlags::DETACH);
    }
}

#[test]
fn enospc_keeps_its_os_error_and_status() {
    let env = Env::new();
    let mnt = env.scratch.path().join("tiny");
    fs::create_dir(&mnt).unwrap();
    rustix::mount::mount(
        "fsarena-test",
        &mnt,
        "tmpfs",
        rustix::mount::MountFlags::empty(),
        c"size=1m",
    )
    .unwrap();
    let _guard = TmpfsGuard(mnt.clone());
    let ctx = env.ctx_at(&mnt);
    let mut h = PlainHarness::default();
    let err = create::Create
        .run(&ctx, &Point::default(), &mut h)
        .unwrap_err();
    match &err {
        WorkloadError::Io { source, .. } => assert_eq!(source.raw_os_error(), Some(libc::ENOSPC)),
        other => panic!("expected an I/O error, got {other}"),
    }
    assert_eq!(err.status(), Status::Enospc);
}

/// An exFAT image on a loop device mounted through FUSE; unmounted, detached and deleted
/// when dropped, even if the test fails.
struct ExfatGuard {
    image: PathBuf,
    mnt: PathBuf,
    loop_dev: Option<String>,
    mounted: bool,
}

impl ExfatGuard {
    fn run(cmd: &str, args: &[&str]) -> std::process::Output {
        std::process::Command::new(cmd)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("{cmd}: {e}"))
    }

    /// None when the exFAT tools are not installed on this machine.
    fn new(dir: &Path) -> Option<ExfatGuard> {
        for tool in ["mkfs.exfat", "mount.exfat-fuse", "losetup"] {
            if which(tool).is_none() {
                eprintln!("skipping: {tool} not installed");
                return None;
            }
        }
        let mut g = ExfatGuard {
            image: dir.join("exfat.img"),
            mnt: dir.join("exfat"),
            loop_dev: None,
            mounted: false,
        };
        fs::File::create(&g.image)
            .unwrap()
            .set_len(96 << 20)
            .unwrap();
        fs::create_dir(&g.mnt).unwrap();
        let img = g.image.to_str().unwrap().to_string();
        assert!(Self::run("mkfs.exfat", &[&img]).status.success());
        let out = Self::run("losetup", &["--find", "--show", &img]);
        assert!(out.status.success(), "{out:?}");
        g.loop_dev = Some(String::from_utf8(out.stdout).unwrap().trim().to_string());
        let dev = g.loop_dev.clone().unwrap();
        let out = Self::run("mount.exfat-fuse", &[&dev, g.mnt.to_str().unwrap()]);
        assert!(out.status.success(), "{out:?}");
        g.mounted = true;
        Some(g)
    }
}

impl Drop for ExfatGuard {
    fn drop(&mut self) {
        if self.mounted {
            let _ = Self::run("umount", &[self.mnt.to_str().unwrap_or("")]);
        }
        if let Some(dev) = &self.loop_dev {
            let _ = Self::run("losetup", &["-d", dev]);
        }
        let _ = fs::remove_file(&self.image);
    }
}

fn which(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .chain(["/sbin".into(), "/usr/sbin".into()])
        .map(|d| d.join(tool))
        .find(|p| p.exists())
}

/// exFAT folds case, keeps no mode bits and no xattrs, and stores times coarsely: the
/// data set, touch and chmod must still be right there.
#[test]
fn exfat_create_touch_and_chmod_report_what_the_file_system_supports() {
    let env = Env::new();
    let Some(g) = ExfatGuard::new(env.scratch.path()) else {
        return;
    };
    let m = env.manifest();
    for (w, sub) in [
        (&create::Create as &dyn Workload, "c"),
        (&touch::Touch, "t"),
        (&chmod::Chmod, "m"),
    ] {
        let root = g.mnt.join(sub);
        fs::create_dir(&root).unwrap();
        let ctx = env.ctx_at(&root);
        let mut h = PlainHarness::default();
        let out = w
            .run(&ctx, &Point::default(), &mut h)
            .unwrap_or_else(|e| panic!("{} on exFAT: {e}", w.spec().name));
        assert_eq!(out.files, m.files.len() as u64, "{}", w.spec().name);
        if w.spec().name == "chmod" {
            assert_eq!(out.metrics["xattr_supported"], 0.0);
            assert_eq!(out.metrics["mode_supported"], 0.0);
            assert!(
                out.notes
                    .iter()
                    .any(|n| n.contains("xattrs are not supported")),
                "{:?}",
                out.notes
            );
            assert!(out.metrics.contains_key("chmod_p99_us"));
        }
    }
}
