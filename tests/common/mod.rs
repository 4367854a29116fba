//! Helpers shared by the integration tests. These tests use real loop devices, real mkfs
//! and real mounts, so they need root (CI runs as root).

#![allow(dead_code)]

pub mod fixture;
pub mod loop_btrfs;
pub mod run;

pub use run::*;

use std::path::{Path, PathBuf};
use std::process::Command;

/// Fails loudly (rather than passing vacuously) when the tests cannot do their job.
pub fn require_root() {
    assert!(
        rustix::process::geteuid().is_root(),
        "these tests create loop devices and mount file systems: run them as root (sudo ./dev test)"
    );
}

/// A private work root under /var/tmp, removed (after checking nothing is left) on drop.
pub struct TestRoot {
    pub path: PathBuf,
}

impl TestRoot {
    pub fn new(name: &str) -> TestRoot {
        let path = PathBuf::from(format!(
            "/var/tmp/fsarena-test-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        TestRoot { path }
    }

    /// The results directory `out` and the work root `work` inside this root.
    pub fn out_work(&self) -> (PathBuf, PathBuf) {
        (self.path.join("out"), self.path.join("work"))
    }
}

impl Drop for TestRoot {
    fn drop(&mut self) {
        // Best effort: never leave a mount or loop device behind even if the test failed.
        // Run directories sit in the root or one level down (`root/work/run-…`).
        let mut r = fsarena::provision::cleanup::CleanupReport::default();
        let children = |d: &Path| -> Vec<PathBuf> {
            std::fs::read_dir(d)
                .map(|rd| rd.flatten().map(|e| e.path()).collect())
                .unwrap_or_default()
        };
        for dir in children(&self.path) {
            for run in std::iter::once(dir.clone()).chain(children(&dir)) {
                if run.join(fsarena::provision::workdir::OWNER_FILE).exists() {
                    fsarena::provision::cleanup::cleanup_run(&run, &mut r);
                }
            }
        }
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Mounts and loop devices that mention `root`.
pub fn leftovers(root: &Path) -> Vec<String> {
    let mut out: Vec<String> = fsarena::provision::mounts::under(root)
        .into_iter()
        .map(|m| format!("mount {}", m.target.display()))
        .collect();
    for (dev, backing) in fsarena::provision::loopdev::attached() {
        if backing.starts_with(root) {
            out.push(format!("loop {} -> {}", dev.display(), backing.display()));
        }
    }
    out
}

/// Path to the fsarena binary cargo built for these tests.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_fsarena"))
}

/// A fresh root and scratch directory under /var/tmp plus everything a workload `Ctx`
/// borrows, for running workloads directly (without the runner) at a tiny scale.
pub struct Env {
    pub root: tempfile::TempDir,
    pub scratch: tempfile::TempDir,
    pub spec: fsarena::dataset::DatasetSpec,
    pub options: toml::Table,
    pub cancel: std::sync::atomic::AtomicBool,
}

pub fn var_tmp_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("fsarena-wl-")
        .tempdir_in("/var/tmp")
        .unwrap()
}

impl Env {
    pub fn new() -> Env {
        Env {
            root: var_tmp_dir(),
            scratch: var_tmp_dir(),
            spec: fsarena::dataset::DatasetSpec {
                scale: 0.001,
                ..Default::default()
            },
            options: toml::Table::new(),
            cancel: std::sync::atomic::AtomicBool::new(false),
        }
    }

    pub fn ctx(&self) -> fsarena::workload::Ctx<'_> {
        self.ctx_at(self.root.path())
    }

    pub fn ctx_at<'a>(&'a self, root: &'a Path) -> fsarena::workload::Ctx<'a> {
        fsarena::workload::Ctx {
            root,
            scratch: self.scratch.path(),
            sources: None,
            threads: 2,
            dataset: &self.spec,
            options: &self.options,
            cancel: &self.cancel,
            deadline: None,
            populated: false,
            log_root: None,
            follows: false,
            in_turn: None,
        }
    }

    pub fn manifest(&self) -> fsarena::dataset::Manifest {
        self.spec.plan().unwrap()
    }
}

/// The measurement records of a results directory (the host line and anything else left
/// out), in file order.
pub fn measurements(out: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(out.join("results.jsonl")).expect("results.jsonl");
    text.lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("json line"))
        .filter(|v| v["record"] == "measurement")
        .collect()
}

/// Whether `pid` is a live (not zombie) process.
pub fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'))
    })
}

/// Waits up to `secs` for `cond`.
pub fn wait_for(secs: u64, mut cond: impl FnMut() -> bool) -> bool {
    let t0 = std::time::Instant::now();
    while t0.elapsed() < std::time::Duration::from_secs(secs) {
        if cond() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    cond()
}

/// Files under `dir` (recursively) whose name starts with `prefix`.
pub fn files_named(dir: &Path, prefix: &str) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        if e.file_name().to_string_lossy().starts_with(prefix) {
            out.push(p.clone());
        }
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(files_named(&p, prefix));
        }
    }
    out
}

/// A sparse file of `bytes` at `path`, made by `truncate` so that this process never holds
/// it open: tests run side by side, and a child another test forks (fsarena's helpers fork,
/// then exec) keeps a copy of every open descriptor until its exec, so an image this process
/// had open could be seen "open in another process" by the guard a moment later.
pub fn sparse_file(path: &Path, bytes: u64) {
    let st = std::process::Command::new("truncate")
        .args(["-s", &bytes.to_string()])
        .arg(path)
        .status()
        .unwrap();
    assert!(st.success(), "truncate {}", path.display());
}

/// Live processes whose command line mentions `path` (a postmaster names its data
/// directory).
pub fn processes_naming(path: &Path) -> Vec<i32> {
    let needle = path.to_string_lossy().into_owned();
    std::fs::read_dir("/proc")
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
                .filter(|&pid| {
                    std::fs::read(format!("/proc/{pid}/cmdline"))
                        .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&needle))
                        && alive(pid)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `fsarena run ARGS --quiet --out OUT --work-dir WORK`, waited for.
pub fn run_quiet(args: &[&str], out: &Path, work: &Path) -> std::process::Output {
    run_command(args, out, work).output().unwrap()
}

/// `fsarena run PLAN` exits 2 with one line naming `what`, and neither provisions anything in
/// `root/work` nor makes the run directory `root/out`.
pub fn refused_before_provisioning(root: &Path, plan: &Path, what: &str) {
    let run = Command::new(bin())
        .arg("run")
        .arg(plan)
        .arg("--work-dir")
        .arg(root.join("work"))
        .arg("--out")
        .arg(root.join("out"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{}: {err}", plan.display());
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains(what), "{err}");
    let made = std::fs::read_dir(root.join("work"))
        .map(|rd| rd.count())
        .unwrap_or(0);
    assert_eq!(made, 0, "something was provisioned");
    assert!(!root.join("out").exists(), "a run directory was made");
}

/// `fsarena cleanup --work-dir WORK`, which must succeed.
pub fn cleanup_ok(work: &Path) {
    assert_exit(&cleanup(work), 0);
}

/// The names of fsarena's trace instances (each records one clone's writes) that exist now,
/// with tracefs mounted for the look if it is mounted nowhere.
pub fn trace_instances() -> Vec<String> {
    use fsarena::provision::write_trace;
    let list = |tracefs: &Path| -> Vec<String> {
        std::fs::read_dir(tracefs.join("instances"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(write_trace::INSTANCE_PREFIX))
            .collect()
    };
    if let Some(t) = write_trace::mounted_tracefs() {
        return list(&t);
    }
    let dir = tempfile::TempDir::new_in("/var/tmp").unwrap();
    let ok = Command::new("mount")
        .args(["-t", "tracefs", "nodev"])
        .arg(dir.path())
        .status()
        .unwrap()
        .success();
    assert!(ok, "cannot mount tracefs to look for trace instances");
    let names = list(dir.path());
    let _ = Command::new("umount").arg(dir.path()).status();
    names
}

/// The run directories (`run-…`) under a work root, by name.
pub fn run_ids(work: &Path) -> Vec<String> {
    std::fs::read_dir(work)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("run-"))
        .collect()
}

/// Fails unless the run removed every directory it made under `work`.
pub fn no_run_dirs(work: &Path) {
    let left: Vec<_> = std::fs::read_dir(work)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "left in the work dir: {left:?}");
}

/// A workload harness with a phase floor, so workloads that repeat their pass to it do. The
/// cache drops between cold passes are real (the suite runs as root).
pub struct Floored(pub std::time::Duration);

impl fsarena::workload::Harness for Floored {
    fn drop_caches(&mut self) -> std::io::Result<()> {
        fsarena::sys::drop_caches()
    }
    fn measure(
        &mut self,
        work: &mut fsarena::workload::Phase<'_>,
    ) -> Result<fsarena::workload::Outcome, fsarena::workload::WorkloadError> {
        work()
    }
    fn phase_floor(&self) -> std::time::Duration {
        self.0
    }
}

/// Every image file in the runs under `work`.
pub fn glob_images(work: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for run in std::fs::read_dir(work).into_iter().flatten().flatten() {
        for img in std::fs::read_dir(run.path().join("images"))
            .into_iter()
            .flatten()
            .flatten()
        {
            out.push(img.path().display().to_string());
        }
    }
    out
}
