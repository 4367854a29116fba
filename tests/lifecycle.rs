//! A run interrupted by SIGINT, SIGTERM or SIGKILL leaves nothing behind (after `cleanup`
//! for SIGKILL), keeps every finished measurement, and `--resume` completes it.

mod common;

use std::collections::HashSet;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{bin, leftovers, require_root, TestRoot};
use fsarena::results::store;
use fsarena::results::Status;

const WORKLOADS: &str = "create,scan,delete";

fn start(out: &Path, work: &Path) -> Child {
    Command::new(bin())
        .args([
            "run", "--target", "ext4", "--target", "xfs", "--target", "btrfs",
        ])
        .args([
            "--workload",
            WORKLOADS,
            "--runs",
            "2",
            "--scale",
            "0.01",
            "--quiet",
        ])
        .arg("--out")
        .arg(out)
        .arg("--work-dir")
        .arg(work)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Measurement lines written so far (the first line is host facts).
fn measured(out: &Path) -> usize {
    std::fs::read_to_string(out.join(store::FILE_NAME))
        .map(|t| t.lines().count().saturating_sub(1))
        .unwrap_or(0)
}

fn wait_for_measurements(child: &mut Child, out: &Path, n: usize) {
    let t0 = Instant::now();
    while measured(out) < n {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before {n} measurements"
        );
        assert!(t0.elapsed() < Duration::from_secs(120), "no progress");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_exit(child: &mut Child) -> i32 {
    let t0 = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s.code().unwrap_or(-1);
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "did not stop within 60 s of the signal"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn every_line_parses(out: &Path) {
    let text = std::fs::read_to_string(out.join(store::FILE_NAME)).unwrap();
    for (i, line) in text.lines().enumerate() {
        assert!(
            serde_json::from_str::<fsarena::results::Record>(line).is_ok(),
            "line {} is not a complete record: {line}",
            i + 1
        );
    }
}

fn no_run_dirs(work: &Path) {
    let left: Vec<_> = std::fs::read_dir(work)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "left in the work dir: {left:?}");
}

fn signal_leaves_nothing(sig: i32, name: &str) {
    require_root();
    let root = TestRoot::new(name);
    let (out, work) = (root.path.join("out"), root.path.join("work"));
    let mut child = start(&out, &work);
    wait_for_measurements(&mut child, &out, 2);
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::from_named_raw(sig).unwrap(),
    )
    .unwrap();
    let code = wait_exit(&mut child);
    assert_eq!(code, 1, "an interrupted run exits 1");
    assert!(
        leftovers(&root.path).is_empty(),
        "{:?}",
        leftovers(&root.path)
    );
    no_run_dirs(&work);
    every_line_parses(&out);
    let loaded = store::load(&out).unwrap();
    assert!(
        loaded
            .measurements
            .iter()
            .filter(|m| m.status == Status::Ok)
            .count()
            >= 2
    );
    assert!(loaded.skipped.is_empty());
}

#[test]
fn sigint_mid_run_leaves_nothing_and_keeps_results() {
    signal_leaves_nothing(libc::SIGINT, "sigint");
}

#[test]
fn sigterm_mid_run_leaves_nothing_and_keeps_results() {
    signal_leaves_nothing(libc::SIGTERM, "sigterm");
}

#[test]
fn kill9_then_cleanup_then_resume_completes_the_run() {
    require_root();
    let root = TestRoot::new("kill9");
    let (out, work) = (root.path.join("out"), root.path.join("work"));
    let mut child = start(&out, &work);
    wait_for_measurements(&mut child, &out, 4);
    // Let it get into the middle of a cell (mounted, working) before killing it.
    std::thread::sleep(Duration::from_millis(150));
    child.kill().unwrap();
    child.wait().unwrap();
    every_line_parses(&out);

    let c = Command::new(bin())
        .arg("cleanup")
        .arg("--work-dir")
        .arg(&work)
        .output()
        .unwrap();
    assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stderr));
    assert!(
        leftovers(&root.path).is_empty(),
        "{:?}",
        leftovers(&root.path)
    );
    no_run_dirs(&work);
    // A second cleanup finds nothing, and touches nothing it did not make.
    let c = Command::new(bin())
        .arg("cleanup")
        .arg("--work-dir")
        .arg(&work)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&c.stdout).contains("nothing to clean up"));

    let before = measured(&out);
    let r = Command::new(bin())
        .args(["run", "--quiet", "--resume"])
        .arg(&out)
        .arg("--work-dir")
        .arg(&work)
        .output()
        .unwrap();
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    assert!(measured(&out) > before, "resume measured nothing");
    assert!(leftovers(&root.path).is_empty());
    no_run_dirs(&work);

    // The result equals an uninterrupted run: every cell exactly once, all ok.
    let loaded = store::load(&out).unwrap();
    let cells: HashSet<_> = loaded
        .measurements
        .iter()
        .map(|m| {
            (
                m.target.clone(),
                m.workload.clone(),
                m.variant.clone(),
                m.repetition,
            )
        })
        .collect();
    let workloads: Vec<&str> = WORKLOADS.split(',').collect();
    for t in ["ext4", "xfs", "btrfs"] {
        for w in &workloads {
            for rep in 0..2 {
                assert!(
                    loaded.measurements.iter().any(|m| m.target == t
                        && m.workload == *w
                        && m.repetition == rep
                        && m.status == Status::Ok),
                    "missing {t} {w} repetition {rep}"
                );
            }
        }
    }
    assert_eq!(cells.len(), loaded.measurements.len());
    assert!(
        loaded.measurements.iter().all(|m| m.status == Status::Ok),
        "{:?}",
        loaded
            .measurements
            .iter()
            .filter(|m| m.status != Status::Ok)
            .map(|m| (&m.target, &m.workload, m.status, &m.error))
            .collect::<Vec<_>>()
    );
}
