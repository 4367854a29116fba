//! The rest of issue 13 for the database workloads: a host without PostgreSQL skips the
//! `pg` cells with the reason (and `doctor` says so) instead of failing them.

mod common;

use std::path::Path;
use std::process::Command;

use common::{bin, leftovers, require_root, TestRoot};

/// The results file's host facts (its first line) and its measurements (the records the
/// run also writes, such as the run's end, left out).
fn results(out: &Path) -> (serde_json::Value, Vec<serde_json::Value>) {
    let text = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    let mut lines = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap());
    let host = lines.next().unwrap();
    (
        host,
        lines.filter(|m| m["record"] == "measurement").collect(),
    )
}

/// `fsarena run PLAN` with `FSARENA_PG_ROOT` at an empty directory: PostgreSQL is missing.
fn run_without_pg(root: &Path, plan: &str) -> std::process::Output {
    let no_pg = root.join("no-postgresql");
    std::fs::create_dir_all(&no_pg).unwrap();
    let file = root.join("plan.toml");
    std::fs::write(&file, plan).unwrap();
    Command::new(bin())
        .arg("run")
        .arg(&file)
        .arg("--quiet")
        .arg("--work-dir")
        .arg(root.join("work"))
        .arg("--out")
        .arg(root.join("out"))
        .env("FSARENA_PG_ROOT", &no_pg)
        .output()
        .unwrap()
}

#[test]
fn pg_cells_are_skipped_with_the_reason_where_postgresql_is_missing() {
    require_root();
    let root = TestRoot::new("pg-missing");
    let run = run_without_pg(
        &root.path,
        "workloads = [\"pg\", \"create\"]\ntargets = [\"tmpfs\"]\n",
    );
    let err = String::from_utf8_lossy(&run.stderr);
    // The plan asked for pg and it was not measured: not a full success (issue 41).
    assert_eq!(run.status.code(), Some(1), "{err}");
    assert!(
        err.contains("skipping workload pg: PostgreSQL is not installed"),
        "{err}"
    );
    assert!(
        err.contains("not measured: workload pg (PostgreSQL is not installed"),
        "{err}"
    );
    let (host, ms) = results(&root.path.join("out"));
    let skipped = &host["skipped_workloads"];
    assert_eq!(skipped[0][0], "pg", "{host}");
    assert!(
        skipped[0][1]
            .as_str()
            .unwrap()
            .contains("no-postgresql/<version>/bin"),
        "{host}"
    );
    assert!(!ms.is_empty());
    for m in &ms {
        assert_eq!(m["workload"], "create", "{m}");
        assert_eq!(m["status"], "ok", "{m}");
    }
    // The report does not count the skipped cells as missing.
    let rep = Command::new(bin())
        .arg("report")
        .arg(root.path.join("out"))
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&rep.stdout).to_string() + &String::from_utf8_lossy(&rep.stderr);
    assert!(rep.status.success(), "{text}");
    assert!(!text.contains("incomplete"), "{text}");
    assert!(leftovers(&root.path).is_empty());
}

#[test]
fn a_plan_of_only_pg_without_postgresql_is_refused_before_provisioning() {
    require_root();
    let root = TestRoot::new("pg-only-missing");
    let run = run_without_pg(&root.path, "workloads = [\"pg\"]\ntargets = [\"ext4\"]\n");
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("no workload can run here (pg: PostgreSQL is not installed"));
    let made = std::fs::read_dir(root.path.join("work"))
        .map(|rd| rd.count())
        .unwrap_or(0);
    assert_eq!(made, 0, "something was provisioned");
}

#[test]
fn doctor_says_pg_is_skipped_where_postgresql_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(bin())
        .arg("doctor")
        .env("FSARENA_PG_ROOT", dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    // The entry may wrap: read it up to the next heading, whitespace collapsed.
    let start = text
        .find("PostgreSQL (pg):")
        .unwrap_or_else(|| panic!("{text}"));
    // The entry ends where the next one starts: a line that does not begin with a space.
    let end = text[start..]
        .match_indices('\n')
        .map(|(i, _)| start + i + 1)
        .find(|&i| text[i..].chars().next().is_some_and(|c| !c.is_whitespace()))
        .unwrap_or(text.len());
    let entry = text[start..end]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(entry.contains("NO: PostgreSQL is not installed"), "{entry}");
    assert!(entry.ends_with("pg cells are skipped"), "{entry}");
}
