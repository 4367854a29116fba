//! Several data sets in one plan (`--profile small,medium`, `profile = [..]` in a plan
//! file): every cell runs on each, each data set gets its own populated image, the records
//! and the report keep them apart, and a bad list is refused before anything is made. A
//! scale series (`--scale 0.001,0.002`) is such a plan too, and its verdicts are checked
//! across the sizes.

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
        refused_up_front(&["--profile", list], says);
    }
}

/// `fsarena run --target tmpfs ARGS` exits 2 with one line that `says`, making nothing.
fn refused_up_front(args: &[&str], says: &str) {
    let work = tempfile::tempdir().unwrap();
    let out = Command::new(bin())
        .args(["run", "--target", "tmpfs"])
        .args(args)
        .arg("--work-dir")
        .arg(work.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    assert!(err.contains(says), "{args:?}: {err}");
    assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 0);
}

/// A scale series (`--scale 0.001,0.002`): every cell runs at each size, the records carry
/// the size labels, summary.json says each data set's size and checks every comparison
/// across the sizes, and every headline (terminal, Markdown, HTML) states the size.
#[test]
fn a_scale_series_checks_each_verdict_across_sizes_and_the_headline_states_them() {
    require_root();
    let root = TestRoot::new("scales");
    let (a, b, out) = (
        root.path.join("a"),
        root.path.join("b"),
        root.path.join("out"),
    );
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let run = Command::new(bin())
        .arg("run")
        .arg("--target")
        .arg(format!("dir:{}", a.display()))
        .arg("--target")
        .arg(format!("dir:{}", b.display()))
        .args([
            "--workload",
            "create",
            "--scale",
            "0.001,0.002",
            "--runs",
            "2",
        ])
        .arg("--work-dir")
        .arg(root.path.join("work"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let (stdout, err) = (
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr),
    );
    assert_eq!(run.status.code(), Some(0), "{err}");
    let sizes = ["250 files · 3.9 MiB", "500 files · 7.8 MiB"];
    let mut labels: Vec<String> = measurements(&out)
        .iter()
        .map(|m| m["dataset"].as_str().expect("a size label").to_string())
        .collect();
    labels.sort();
    labels.dedup();
    assert_eq!(labels, sizes);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let check = &summary["scale_check"];
    let comparisons = check["comparisons"].as_array().expect("scale_check");
    assert_eq!(comparisons.len(), 1, "{check}");
    let c = &comparisons[0];
    assert_eq!(c["workload"], "create");
    let steps: Vec<&str> = c["per_scale"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["dataset"].as_str().unwrap())
        .collect();
    assert_eq!(steps, sizes, "smallest first");
    let outcome = c["outcome"].as_str().unwrap();
    assert!(["holds", "flips", "undecided"].contains(&outcome), "{c}");
    let tally = ["holds", "flips", "undecided"].map(|k| check[k].as_u64().unwrap());
    assert_eq!(tally.iter().sum::<u64>(), 1, "{check}");
    assert_eq!(summary["sizes"][1]["files"], 500);
    assert_eq!(summary["sizes"][1]["page_cache"], "fits in page cache");
    // Every headline states the sizes, and the check.
    let said = "measured at 2 data sets: 250 files · 3.9 MiB; 500 files · 7.8 MiB, each fits";
    let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat(&stdout).contains(said), "{stdout}");
    assert!(flat(&stdout).contains("across scales: "), "{stdout}");
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains(said) && md.contains("## Across scales"), "{md}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("id=\"size\"") && html.contains(said),
        "size missing"
    );
    assert!(html.contains("id=\"scales\"") && html.contains("files in the data set"));
}

#[test]
fn a_bad_scale_list_or_two_statements_of_size_are_refused_before_anything_is_made() {
    let plan = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(plan.path(), "scale = [0.01, \"x\"]\n").unwrap();
    let from_file = plan.path().to_str().unwrap();
    for (args, says) in [
        (&["--scale", "0.01,0.01"][..], "named twice"),
        (&["--scale", "0.01,"], "empty item"),
        (
            &["--scale", "0.01", "--files", "100"],
            "--files also states",
        ),
        (&["--data", "1G", "--files", "100"], "--data also states"),
        (
            &["--files", "100", "--profile", "small,large"],
            "one generated profile",
        ),
        (&["--file-size", "1"], "at least 32"),
        (&[from_file], "invalid scale `[0.01, x]`"),
    ] {
        refused_up_front(args, says);
    }
}
