//! `cleanup`'s own tests, beside it to keep that file to its size.

use super::*;

/// A cleanup dropped a run's journal while a directory it names was left for holding a
/// file of someone else's: once that file was moved, nothing found the directory any
/// more. The journal now stays until everything it names is gone.
#[test]
fn cleanup_keeps_the_journal_while_what_it_names_holds_something_foreign() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run-1-2");
    let mnt = run.join("mnt");
    let point = mnt.join("ext4-1");
    fs::create_dir_all(&point).unwrap();
    fs::write(run.join(OWNER_FILE), "pid=1\nstart=0\n").unwrap();
    let j = Journal::open(&run.join(Journal::FILE_NAME)).unwrap();
    for d in [&mnt, &point] {
        j.record(journal::Op::Create, Kind::Dir, d, None).unwrap();
    }
    let notes = point.join("notes.txt");
    fs::write(&notes, "not fsarena's").unwrap();

    let mut first = CleanupReport::default();
    cleanup_run(&run, &mut first);
    assert!(first.errors.is_empty(), "{:?}", first.errors);
    // The mount point, and the directory that holds it.
    assert_eq!(first.kept, vec![point.clone(), mnt.clone()]);
    assert_eq!(first.foreign, vec![notes.clone()]);
    let live = journal::live(&journal::read(&run.join(Journal::FILE_NAME)).unwrap());
    assert!(live.iter().any(|e| e.path == point), "{live:?}");
    assert!(run.join(OWNER_FILE).is_file());

    fs::remove_file(&notes).unwrap();
    let mut second = CleanupReport::default();
    cleanup_run(&run, &mut second);
    assert!(
        second.errors.is_empty() && second.kept.is_empty(),
        "{second:?}"
    );
    assert!(!run.exists(), "{second:?}");
}

#[test]
fn helper_arguments_match_only_the_runs_own_paths_and_devices() {
    let run = "/var/tmp/fsarena/run-1-2";
    let loops = vec!["/dev/loop1".to_string()];
    assert!(names_run("/var/tmp/fsarena/run-1-2/mnt/xfs-4", run, &loops));
    assert!(names_run(run, run, &loops));
    assert!(names_run("/dev/loop1", run, &loops));
    assert!(names_run("--filename=/dev/loop1", run, &loops));
    assert!(names_run(
        "--directory=/var/tmp/fsarena/run-1-2/mnt/a",
        run,
        &loops
    ));
    assert!(!names_run("/dev/loop10", run, &loops));
    assert!(!names_run("/var/tmp/fsarena/run-1-23/mnt", run, &loops));
    assert!(!names_run("/var/tmp/fsarena", run, &loops));
    assert!(!names_run("-n", run, &loops));
}
