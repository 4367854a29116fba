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
