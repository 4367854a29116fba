//! `fsarena run study:NAME`: the built-in studies are listed, resolve like plan files, and a
//! study name that does not exist is refused in one line with exit 2 before anything is made.

mod common;

use std::process::Command;

use common::bin;

#[test]
fn list_shows_every_study() {
    let out = Command::new(bin()).arg("list").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for s in fsarena::plan::study::all() {
        assert!(text.contains(s.name), "{} missing from:\n{text}", s.name);
    }
}

#[test]
fn an_unknown_study_is_refused_with_exit_2_and_one_line() {
    let work = tempfile::tempdir().unwrap();
    let out = Command::new(bin())
        .args(["run", "study:no-such-study", "--work-dir"])
        .arg(work.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("no-such-study") && err.contains("database"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 0);
}

#[test]
fn every_study_resolves_to_a_plan_with_its_dry_run() {
    for s in fsarena::plan::study::all() {
        let out = Command::new(bin())
            .args(["run", &format!("study:{}", s.name), "--dry-run"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}: {out:?}", s.name);
    }
}
