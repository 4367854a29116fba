//! A database workload's log on a second target of the plan (`log_target`, issue 13 item 5):
//! PostgreSQL's WAL is written to a fresh file system of the named target, monitored as its
//! own device; bad names, memory targets and SQLite (which cannot move its WAL) are refused
//! before anything is provisioned; and a kill -9 + `fsarena cleanup` leaves neither target's
//! file system nor the server behind.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{
    alive, bin, cleanup_ok, files_named, leftovers, measurements, processes_naming,
    refused_before_provisioning, require_root, wait_for, TestRoot,
};

/// A plan of `workload` on ext4 (the data) and xfs, with `options` in its table.
fn plan(root: &Path, workload: &str, targets: &str, options: &str) -> PathBuf {
    let plan = root.join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "workloads = [\"{workload}\"]\ntargets = [{targets}]\nruns = 1\nthreads = [2]\n\
             [workload.{workload}]\n{options}\n"
        ),
    )
    .unwrap();
    plan
}

fn needs_pg() {
    require_root();
    fsarena::workload::pg::install::locate().expect("this test needs PostgreSQL (./dev deps)");
}

#[test]
fn pg_writes_its_wal_to_the_log_target_and_both_devices_are_reported() {
    needs_pg();
    let root = TestRoot::new("logtarget");
    let plan = plan(
        &root.path,
        "pg",
        "\"ext4\", \"xfs\"",
        "seconds = 2\nmodes = [\"tpcb\"]\nlog_target = \"xfs\"",
    );
    let (work, out) = (root.path.join("work"), root.path.join("out"));
    let run = Command::new(bin())
        .arg("run")
        .arg(&plan)
        .args(["--quiet", "--work-dir"])
        .arg(&work)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{err}");
    let ms = measurements(&out);
    assert_eq!(ms.len(), 2, "{ms:?}");
    let on = |t: &str| ms.iter().find(|m| m["target"] == t).expect(t).clone();
    let (ext4, xfs) = (on("ext4"), on("xfs"));
    for m in [&ext4, &xfs] {
        assert_eq!(m["status"], "ok", "{m}");
    }
    // The ext4 cell: data on ext4, WAL on a fresh xfs of its own, watched as a second device.
    let x = &ext4["metrics"];
    let f = |k: &str| x[k].as_f64().unwrap_or_else(|| panic!("no {k}: {x}"));
    let log = &ext4["provenance"]["log"];
    assert_eq!(log["target"], "xfs", "{log}");
    assert_eq!(log["provenance"]["fs_type"], "xfs", "{log}");
    assert_ne!(
        log["provenance"]["block_device"], ext4["provenance"]["block_device"],
        "the log had a device of its own"
    );
    assert!(f("wal_bytes") > 0.0, "{x}");
    // PostgreSQL writes whole WAL pages, often the same page again: at least the WAL itself
    // reached the log device, so it cannot have stayed beside the data.
    assert!(
        f("log_device_write_bytes") >= f("wal_bytes"),
        "log device wrote {} for {} WAL bytes",
        f("log_device_write_bytes"),
        f("wal_bytes")
    );
    assert!(f("log_device_write_latency_ms") > 0.0, "{x}");
    let notes = ext4["notes"].to_string();
    assert!(notes.contains("WAL on the log target"), "{notes}");
    // The xfs cell is the log target itself: its log stays beside its data, and it says so.
    assert!(
        xfs["provenance"].get("log").is_none(),
        "{}",
        xfs["provenance"]
    );
    assert!(xfs["metrics"].get("log_device_write_bytes").is_none());
    assert!(
        xfs["notes"]
            .to_string()
            .contains("is the plan's log_target"),
        "{}",
        xfs["notes"]
    );
    assert!(
        leftovers(&root.path).is_empty(),
        "{:?}",
        leftovers(&root.path)
    );
    assert!(processes_naming(&work).is_empty());
}

#[test]
fn a_log_target_that_is_no_target_of_the_plan_is_refused_before_provisioning() {
    require_root();
    let root = TestRoot::new("logtarget-name");
    let p = plan(
        &root.path,
        "pg",
        "\"ext4\", \"xfs\"",
        "log_target = \"btrfs\"",
    );
    refused_before_provisioning(&root.path, &p, "targets: ext4, xfs");
}

#[test]
fn a_memory_log_target_is_refused_before_provisioning() {
    require_root();
    let root = TestRoot::new("logtarget-tmpfs");
    let p = plan(
        &root.path,
        "pg",
        "\"ext4\", \"tmpfs\"",
        "log_target = \"tmpfs\"",
    );
    refused_before_provisioning(&root.path, &p, "memory file system");
}

#[test]
fn sqlite_refuses_a_log_target_and_says_why() {
    require_root();
    let root = TestRoot::new("logtarget-db");
    let p = plan(
        &root.path,
        "db",
        "\"ext4\", \"xfs\"",
        "log_target = \"xfs\"",
    );
    refused_before_provisioning(&root.path, &p, "keeps its WAL beside the database file");
}

/// kill -9 in the middle of a measured pgbench with the WAL on the log target, then
/// `fsarena cleanup`: no server, no mount or loop device of either target.
#[test]
fn kill_9_with_a_log_target_then_cleanup_leaves_neither_target_nor_the_server() {
    needs_pg();
    let root = TestRoot::new("logtarget-kill");
    let p = plan(
        &root.path,
        "pg",
        "\"ext4\", \"xfs\"",
        "seconds = 120\nmodes = [\"tpcb\"]\nlog_target = \"xfs\"",
    );
    let work = root.path.join("work");
    let mut run = Command::new(bin())
        .arg("run")
        .arg(&p)
        .args(["--quiet", "--work-dir"])
        .arg(&work)
        .arg("--out")
        .arg(root.path.join("out"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let measuring = wait_for(90, || !files_named(&work, "pgbench_log").is_empty());
    // Both targets' file systems are mounted while the server runs.
    let mounted = fsarena::provision::mounts::under(&work).len();
    let server = processes_naming(&work);
    unsafe { libc::kill(run.id() as i32, libc::SIGKILL) };
    let _ = run.wait();
    cleanup_ok(&work);
    assert!(measuring, "pgbench never started");
    assert!(
        mounted >= 2,
        "expected the data and the log file systems, saw {mounted}"
    );
    assert!(!server.is_empty(), "no server seen");
    assert!(
        wait_for(5, || server.iter().all(|&p| !alive(p))),
        "{server:?}"
    );
    assert!(processes_naming(&work).is_empty());
    assert!(
        leftovers(&root.path).is_empty(),
        "{:?}",
        leftovers(&root.path)
    );
}
