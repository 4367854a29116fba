//! Reports from a fixed results set: snapshot tests of the terminal table, CSV and
//! Markdown (review a changed snapshot by eye, then bless it with UPDATE_SNAPSHOTS=1), and
//! the "incomplete" label of an interrupted run.

mod common;

use std::path::Path;

use fsarena::report::{self, model};
use fsarena::results::store;

fn check_snapshot(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(name);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "missing snapshot {}: run with UPDATE_SNAPSHOTS=1 and review it",
            path.display()
        )
    });
    if expected != actual {
        let diff: Vec<String> = expected
            .lines()
            .zip(actual.lines())
            .enumerate()
            .filter(|(_, (e, a))| e != a)
            .take(5)
            .map(|(i, (e, a))| format!("line {}:\n  want: {e}\n  got:  {a}", i + 1))
            .collect();
        panic!("{name} differs from its snapshot:\n{}", diff.join("\n"));
    }
}

fn fixture(complete: bool) -> (tempfile::TempDir, model::Report) {
    let dir = tempfile::tempdir().unwrap();
    common::fixture::write(dir.path(), complete);
    let loaded = store::load(dir.path()).unwrap();
    let r = model::build(&loaded);
    (dir, r)
}

#[test]
fn terminal_csv_and_markdown_match_their_snapshots() {
    let (_dir, r) = fixture(true);
    check_snapshot("terminal.txt", &report::terminal::render(&r, false));
    check_snapshot("summary.csv", &report::csv::render(&r).unwrap());
    check_snapshot("summary.md", &report::markdown::render(&r));
}

#[test]
fn decisions_marks_and_baseline_comparisons_are_right() {
    let (_dir, r) = fixture(true);
    let s = r
        .sections
        .iter()
        .find(|s| s.workload == "create" && s.threads == 1)
        .unwrap();
    assert_eq!(s.key_metric, "files_per_s");
    // ext4 and xfs are 1 % apart with 3 % jitter: no real difference, so no ✓.
    assert!(
        s.decision
            .contains("no real difference between ext4 and xfs"),
        "{}",
        s.decision
    );
    let mark = |t: &str| s.rows.iter().find(|r| r.target == t).unwrap().mark;
    assert_eq!(mark("ext4"), None);
    assert_eq!(mark("btrfs"), Some(model::Mark::Worst));
    let xfs = s.rows.iter().find(|r| r.target == "xfs").unwrap();
    assert!(
        !xfs.metric("files_per_s")
            .unwrap()
            .vs_baseline
            .as_ref()
            .unwrap()
            .significant
    );
    let btrfs = s.rows.iter().find(|r| r.target == "btrfs").unwrap();
    let c = btrfs
        .metric("files_per_s")
        .unwrap()
        .vs_baseline
        .as_ref()
        .unwrap();
    assert!(c.significant && (c.pct_diff + 75.0).abs() < 2.0, "{c:?}");
    assert!(r.incomplete.is_none());
}

#[test]
fn an_interrupted_run_is_labelled_incomplete_everywhere() {
    let (dir, r) = fixture(false);
    let why = r.incomplete.clone().expect("incomplete");
    assert!(
        why.contains("2 planned measurement cell(s) missing") && why.contains("1 interrupted"),
        "{why}"
    );
    assert!(report::terminal::render(&r, false).starts_with("INCOMPLETE:"));
    assert!(report::markdown::render(&r).contains("**Incomplete:**"));
    report::write_files(dir.path()).unwrap();
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(html.contains("class=\"incomplete\""));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(json["schema_version"], 1);
    assert!(json["incomplete"].as_str().unwrap().contains("missing"));
}

#[test]
fn a_corrupted_results_line_is_skipped_and_said() {
    let (dir, _) = fixture(true);
    let path = dir.path().join(store::FILE_NAME);
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("{\"record\":\"measurement\",\"target\":\n");
    std::fs::write(&path, text).unwrap();
    let r = model::build(&store::load(dir.path()).unwrap());
    assert_eq!(r.skipped_lines.len(), 1);
    let out = report::terminal::render(&r, false);
    assert!(out.contains("skipped"), "{out}");
    assert!(!r.sections.is_empty());
}

#[test]
fn compare_matches_runs_of_the_same_plan() {
    let (a, _) = fixture(true);
    let (b, _) = fixture(true);
    let out = report::compare::render(a.path(), b.path()).unwrap();
    assert!(out.contains("≈"), "{out}");
    assert!(out.contains("ext4") && out.contains("create"));
}
