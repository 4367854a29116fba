//! Several data sets in one plan (`--profile small,medium`, `profile = [..]` in a plan
//! file): every cell runs on each, each data set gets its own populated image, the records
//! and the report keep them apart, and a bad list is refused before anything is made.

mod common;

use std::process::Command;

use common::{bin, measurements, require_root, TestRoot};

#[test]
fn every_cell_runs_on_each_data_set_and_the_report_keeps_them_apart() {
    require_root();
    let root = TestRoot::new("datasets");
    let out = root.path.join("out");
    let run = Command::new(bin())
        .args(["run", "--target", "ext4", "--workload", "delete,create"])
        .args([
            "--profile",
            "small,large",
            "--scale",
            "0.002",
            "--runs",
            "1",
        ])
        .args(["--quiet", "--format", "json", "--work-dir"])
        .arg(root.path.join("work"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{err}");
    let ms = measurements(&out);
    let mut seen: Vec<(String, String, f64)> = ms
        .iter()
        .map(|m| {
            assert_eq!(m["status"], "ok", "{m}");
            (
                m["workload"].as_str().unwrap().to_string(),
                m["dataset"].as_str().expect("a dataset label").to_string(),
                m["metrics"]["files"].as_f64().unwrap(),
            )
        })
        .collect();
    seen.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    let labels: Vec<(&str, &str)> = seen
        .iter()
        .map(|(w, d, _)| (w.as_str(), d.as_str()))
        .collect();
    assert_eq!(
        labels,
        [
            ("create", "large"),
            ("create", "small"),
            ("delete", "large"),
            ("delete", "small")
        ]
    );
    // Each cell worked on its own data set: the two profiles' file counts differ (small:
    // 500 files at this scale, large: a couple), and delete removed what create made.
    let files = |w: &str, d: &str| {
        seen.iter()
            .find(|(a, b, _)| a == w && b == d)
            .map(|x| x.2)
            .unwrap()
    };
    assert!(files("create", "small") > 10.0 * files("create", "large"));
    assert_eq!(files("create", "small"), files("delete", "small"));
    assert_eq!(files("create", "large"), files("delete", "large"));
    // The summary has one section per (workload, data set).
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let mut sections: Vec<String> = summary["sections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| format!("{} {}", s["workload"], s["dataset"]))
        .collect();
    sections.sort();
    assert_eq!(sections.len(), 4, "{sections:?}");
    sections.dedup();
    assert_eq!(sections.len(), 4, "{sections:?}");
}

#[test]
fn a_bad_profile_list_is_refused_before_anything_is_made() {
    for (list, says) in [
        ("small,small", "named twice"),
        ("small,tiny", "tiny"),
        ("small,", "profile"),
    ] {
        let work = tempfile::tempdir().unwrap();
        let out = Command::new(bin())
            .args(["run", "--target", "tmpfs", "--profile", list, "--work-dir"])
            .arg(work.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{list}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{list}: {err}");
        assert!(err.contains(says), "{list}: {err}");
        assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 0);
    }
}
