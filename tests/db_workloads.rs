//! Database workloads that reach the disk: at the default scale the `db` engine runs in a
//! memory cgroup whose page cache budget is a quarter of the database, so its reads miss
//! the cache and reach the device in every repetition; the cgroup is gone afterwards; and a
//! malformed cache option is refused before anything is provisioned.

mod common;

use std::path::Path;
use std::process::Command;

use common::{bin, leftovers, require_root, TestRoot};

/// Every fsarena cgroup under this process's own memory cgroup, where the fsarena it
/// starts makes its cgroups.
fn fsarena_cgroups() -> Vec<String> {
    let Ok(parent) = fsarena::provision::cgroup::parent() else {
        return Vec::new();
    };
    std::fs::read_dir(&parent.dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(fsarena::provision::cgroup::PREFIX))
                .collect()
        })
        .unwrap_or_default()
}

fn measurements(out: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(out.join("results.jsonl"))
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The regression test for "the database fits in the cache": on main a db run on ext4 made
/// 19 device reads in the whole run, and a repetition could make none (no read latency).
#[test]
fn db_reads_reach_the_device_in_every_repetition_at_the_default_scale() {
    require_root();
    fsarena::provision::cgroup::parent().expect("this test needs a memory cgroup");
    let root = TestRoot::new("db-reads");
    let out = root.path.join("out");
    let run = Command::new(bin())
        .args([
            "run",
            "--target",
            "ext4",
            "--workload",
            "db",
            "--runs",
            "2",
            "--quiet",
        ])
        .arg("--work-dir")
        .arg(&root.path)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{err}");
    let ms = measurements(&out);
    assert_eq!(ms.len(), 2, "{ms:?}");
    for m in &ms {
        assert_eq!(m["status"], "ok", "{m}");
        let x = &m["metrics"];
        let f = |k: &str| x[k].as_f64().unwrap_or_else(|| panic!("no {k}: {x}"));
        assert!(f("device_read_ios") > 0.0, "no device reads: {x}");
        assert!(f("device_read_latency_ms") > 0.0, "{x}");
        let db = f("db_initial_bytes");
        assert!((f("cgroup_cache_bytes") - db / 4.0).abs() <= 1.0, "{x}");
        // The cap held: the page cache never came near holding the database.
        assert!(f("cgroup_page_cache_peak_bytes") < db * 0.5, "{x}");
        assert!(f("cgroup_limit_bytes") >= f("cgroup_cache_bytes"), "{x}");
    }
    assert!(leftovers(&root.path).is_empty());
    assert!(fsarena_cgroups().is_empty(), "{:?}", fsarena_cgroups());
}

/// A bad `cache` value is bad input: one line, exit 2, and no run directory was made.
#[test]
fn a_malformed_db_cache_option_is_refused_with_exit_2_before_provisioning() {
    require_root();
    let root = TestRoot::new("db-badopt");
    let plan = root.path.join("plan.toml");
    std::fs::write(
        &plan,
        "workloads = [\"db\"]\ntargets = [\"ext4\"]\n[workload.db]\ncache = \"lots\"\n",
    )
    .unwrap();
    let run = Command::new(bin())
        .arg("run")
        .arg(&plan)
        .arg("--work-dir")
        .arg(root.path.join("work"))
        .arg("--out")
        .arg(root.path.join("out"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("`cache`"), "{err}");
    let made = std::fs::read_dir(root.path.join("work"))
        .map(|rd| rd.count())
        .unwrap_or(0);
    assert_eq!(made, 0, "something was provisioned");
}

/// The fsarena cgroups the fsarena process `pid` made (named `fsarena-TAG-PID-SEQ`), with
/// the processes in each.
fn cgroups_of(pid: u32) -> Vec<(std::path::PathBuf, Vec<i32>)> {
    let Ok(parent) = fsarena::provision::cgroup::parent() else {
        return Vec::new();
    };
    let mark = format!("-{pid}-");
    std::fs::read_dir(&parent.dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name().is_some_and(|n| {
                        let n = n.to_string_lossy();
                        n.starts_with(fsarena::provision::cgroup::PREFIX) && n.contains(&mark)
                    })
                })
                .map(|p| {
                    let procs = fsarena::provision::cgroup::procs(&p);
                    (p, procs)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `pid` is a live (not zombie) process.
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'))
    })
}

/// Waits up to `secs` for `cond`.
fn wait_for(secs: u64, mut cond: impl FnMut() -> bool) -> bool {
    let t0 = std::time::Instant::now();
    while t0.elapsed() < std::time::Duration::from_secs(secs) {
        if cond() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    cond()
}

/// Regression: the db engine (a forked child in the memory cgroup) outlived a `kill -9`
/// of fsarena and went on writing to the target. It now dies with its parent
/// (PR_SET_PDEATHSIG) before any cleanup runs; `fsarena cleanup` then removes the rest.
#[test]
fn db_engine_child_dies_with_fsarena_on_kill_9_without_cleanup() {
    require_root();
    fsarena::provision::cgroup::parent().expect("this test needs a memory cgroup");
    let root = TestRoot::new("db-pdeath");
    let plan = root.path.join("plan.toml");
    std::fs::write(
        &plan,
        "workloads = [\"db\"]\ntargets = [\"ext4\"]\n[workload.db]\nsize = \"8m\"\n\
         duration = 120\nthreads = 2\n",
    )
    .unwrap();
    let work = root.path.join("work");
    let mut run = Command::new(bin())
        .arg("run")
        .arg(&plan)
        .arg("--quiet")
        .arg("--work-dir")
        .arg(&work)
        .arg("--out")
        .arg(root.path.join("out"))
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut engine = Vec::new();
    let started = wait_for(60, || {
        engine = cgroups_of(run.id())
            .into_iter()
            .flat_map(|(_, p)| p)
            .collect();
        !engine.is_empty()
    });
    if !started {
        let _ = run.kill();
        panic!("the db engine never started in a cgroup");
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    run.kill().unwrap(); // SIGKILL
    run.wait().unwrap();
    let gone = wait_for(5, || engine.iter().all(|&p| !alive(p)));
    let left: Vec<i32> = engine.iter().copied().filter(|&p| alive(p)).collect();
    // Clean up before asserting, so a failure leaves nothing behind.
    let cleanup = Command::new(bin())
        .arg("cleanup")
        .arg("--work-dir")
        .arg(&work)
        .output()
        .unwrap();
    assert!(gone, "engine processes {left:?} outlived fsarena");
    assert_eq!(
        cleanup.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&cleanup.stderr)
    );
    assert!(cgroups_of(run.id()).is_empty());
    assert!(leftovers(&root.path).is_empty());
}
