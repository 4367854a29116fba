//! Issue 13, items 4 and 5 for the database workloads: `threads = "auto"` for `db` and `pg`
//! (a short unmeasured search, then one measured phase at the chosen count, the curve kept
//! in the record), and malformed search options refused before anything is provisioned.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{bin, leftovers, measurements, require_root, TestRoot};

/// Writes a plan of `workload` on ext4 with `options` in its table.
fn plan(root: &Path, workload: &str, options: &str) -> PathBuf {
    let plan = root.join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "workloads = [\"{workload}\"]\ntargets = [\"ext4\"]\n[workload.{workload}]\n{options}\n"
        ),
    )
    .unwrap();
    plan
}

/// `fsarena run PLAN --runs 1` into `root`/out; the measurements.
fn run_plan(root: &Path, plan: &Path) -> Vec<serde_json::Value> {
    let out = root.join("out");
    let run = Command::new(bin())
        .arg("run")
        .arg(plan)
        .args(["--runs", "1", "--quiet"])
        .arg("--work-dir")
        .arg(root.join("work"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{err}");
    assert!(leftovers(root).is_empty());
    measurements(&out)
}

/// The search's figures in one measurement: it chose `want`, tried 1 first, and kept a
/// curve entry for every count it tried.
fn check_search(m: &serde_json::Value, want: f64, count_metric: &str) {
    assert_eq!(m["status"], "ok", "{m}");
    let x = &m["metrics"];
    let f = |k: &str| x[k].as_f64().unwrap_or_else(|| panic!("no {k}: {x}"));
    assert_eq!(f("auto_threads"), want, "{x}");
    assert_eq!(
        f(count_metric),
        want,
        "the measured phase ran at the chosen count: {x}"
    );
    assert!(
        f("auto_curve_1_tps") > 0.0 && f("auto_curve_1_p99_ms") > 0.0,
        "{x}"
    );
    let curve = x
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| k.starts_with("auto_curve_") && k.ends_with("_tps"))
        .count();
    assert_eq!(curve as f64, f("auto_trials"), "{x}");
    let notes = m["notes"].to_string();
    assert!(notes.contains("threads = \\\"auto\\\""), "{notes}");
}

/// db on ext4 under its default cache limit: a limit no read meets settles on 1 after one
/// trial; a limit every read meets climbs to the top of the range (1, 2, 4 → 3 trials).
#[test]
fn db_auto_threads_settles_on_1_under_a_tiny_limit_and_reaches_the_top_under_a_huge_one() {
    require_root();
    fsarena::provision::cgroup::parent().expect("this test needs a memory cgroup");
    for (limit, want, trials) in [("0.000001", 1.0, 1.0), ("1000000", 4.0, 3.0)] {
        let root = TestRoot::new("db-auto");
        let p = plan(
            &root.path,
            "db",
            &format!(
                "duration = 1\nthreads = \"auto\"\np99_limit_ms = {limit}\n\
                 auto_max_threads = 4\nauto_trial_seconds = 0.5"
            ),
        );
        let ms = run_plan(&root.path, &p);
        assert_eq!(ms.len(), 1, "exactly one measured phase per cell: {ms:?}");
        check_search(&ms[0], want, "worker_threads");
        assert_eq!(ms[0]["metrics"]["auto_trials"].as_f64(), Some(trials));
        // The search kept the engine's reads on the device too (the cache limit held).
        assert!(ms[0]["metrics"]["device_read_ios"].as_f64().unwrap() > 0.0);
    }
}

/// pg: the same search with pgbench trials of the point's mode (select-only: p99 read
/// latency); the workload's own check counts the trials' transactions.
#[test]
fn pg_auto_threads_settles_on_1_under_a_tiny_limit_and_reaches_the_top_under_a_huge_one() {
    require_root();
    fsarena::workload::pg::install::locate().expect("this test needs PostgreSQL (./dev deps)");
    fsarena::provision::cgroup::parent().expect("this test needs a memory cgroup");
    for (limit, mode, want) in [("0.000001", "select-only", 1.0), ("1000000", "tpcb", 3.0)] {
        let root = TestRoot::new("pg-auto");
        let p = plan(
            &root.path,
            "pg",
            &format!(
                "seconds = 1\nmodes = [\"{mode}\"]\nthreads = \"auto\"\np99_limit_ms = {limit}\n\
                 auto_max_threads = 3"
            ),
        );
        let ms = run_plan(&root.path, &p);
        assert_eq!(ms.len(), 1, "{ms:?}");
        check_search(&ms[0], want, "clients");
        if mode == "tpcb" {
            // 1, 2, then 3 (the top): the history rows of all three trials were verified.
            assert_eq!(ms[0]["metrics"]["auto_trials"].as_f64(), Some(3.0));
            assert!(ms[0]["notes"].to_string().contains("history rows"));
        }
    }
}

/// A malformed `threads` or `p99_limit_ms` is bad input: one line, exit 2, nothing made.
#[test]
fn malformed_auto_threads_options_are_refused_with_exit_2_before_provisioning() {
    require_root();
    for (workload, options, what) in [
        ("db", "threads = \"fast\"", "`threads`"),
        (
            "db",
            "threads = \"auto\"\np99_limit_ms = -1",
            "`p99_limit_ms`",
        ),
        ("pg", "threads = \"fast\"", "`threads`"),
        (
            "pg",
            "threads = \"auto\"\np99_limit_ms = -1",
            "`p99_limit_ms`",
        ),
        ("db", "p99_limit_ms = 20", "only with `threads = \"auto\"`"),
        (
            "db",
            "threads = \"auto\"\nmix = { insert = 1 }",
            "has no reads",
        ),
    ] {
        let root = TestRoot::new("auto-badopt");
        let p = plan(&root.path, workload, options);
        let run = Command::new(bin())
            .arg("run")
            .arg(&p)
            .arg("--work-dir")
            .arg(root.path.join("work"))
            .arg("--out")
            .arg(root.path.join("out"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{options}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(what), "{options}: {err}");
        let made = std::fs::read_dir(root.path.join("work"))
            .map(|rd| rd.count())
            .unwrap_or(0);
        assert_eq!(made, 0, "something was provisioned for {options}");
    }
}

/// pg with `maintenance = true`: each mode is measured twice, plainly and as
/// `MODE-maintenance`, where CHECKPOINTs are issued (and counted) during the measured phase;
/// a malformed interval is refused before anything is provisioned.
#[test]
fn pg_maintenance_measures_a_maintained_point_beside_each_mode() {
    require_root();
    fsarena::workload::pg::install::locate().expect("this test needs PostgreSQL (./dev deps)");
    let root = TestRoot::new("pg-maint");
    let p = plan(
        &root.path,
        "pg",
        "modes = [\"tpcb\"]\nseconds = 2\ncache = \"off\"\nmaintenance = true\nmaintenance_interval_ms = 200",
    );
    let ms = run_plan(&root.path, &p);
    let variants: Vec<&str> = ms.iter().map(|m| m["variant"].as_str().unwrap()).collect();
    assert_eq!(variants, ["tpcb", "tpcb-maintenance"], "{ms:?}");
    for m in &ms {
        assert_eq!(m["status"], "ok", "{m}");
        assert!(
            m["metrics"]["transactions_per_s"].as_f64().unwrap() > 0.0,
            "{m}"
        );
    }
    let x = &ms[1]["metrics"];
    let checkpoints = x["maintenance_checkpoints"].as_f64().unwrap();
    // 2 s at one CHECKPOINT per 200 ms: several, fewer than the phase has slots.
    assert!((3.0..=10.0).contains(&checkpoints), "{x}");
    assert!(
        x["maintenance_actions"].as_f64().unwrap() >= checkpoints,
        "{x}"
    );
    assert!(ms[0]["metrics"].get("maintenance_actions").is_none());

    let bad = plan(&root.path, "pg", "maintenance_interval_ms = 100");
    let o = Command::new(bin())
        .arg("run")
        .arg(&bad)
        .arg("--work-dir")
        .arg(root.path.join("work2"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("maintenance = true") && err.lines().count() == 1,
        "{err}"
    );
    assert!(!root.path.join("work2").exists() || leftovers(&root.path).is_empty());
}
