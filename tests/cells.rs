//! The harness's own time per cell made smaller without weakening a cell (issue 41): an
//! ntfs cell's fresh file system copied from the blank mkfs made once, images removed off
//! the cell's path — and still nothing left behind, and every record saying where the
//! harness's time went.

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{
    assert_no_leftovers, cleanup_ok, glob_images, leftovers, no_run_dirs, require_root, signal,
    tiny_create, wait_exit, wait_for_lines, TestRoot,
};
use fsarena::plan::catalogue;
use fsarena::provision::journal::{self, Kind};
use fsarena::provision::{host, Instance, InstanceSpec, WorkDir};

fn ntfs_here() -> bool {
    let ok = host::support(&catalogue::get("ntfs").unwrap()).is_ok();
    if !ok {
        eprintln!("skipping: no ntfs-3g here");
    }
    ok
}

#[test]
fn a_later_fresh_ntfs_file_system_is_a_copy_of_the_blank_and_finds_nothing_of_the_last() {
    require_root();
    if !ntfs_here() {
        return;
    }
    let root = TestRoot::new("blank");
    let work = WorkDir::create(&root.path).unwrap();
    let t = catalogue::get("ntfs").unwrap();
    let spec = |seq| InstanceSpec {
        target: &t,
        seq,
        size: 1 << 30,
        allow_device: false,
        wipe: false,
        daemon_cpus: None,
    };
    let first = Instance::provision(&spec(1), &work).unwrap();
    assert!(!first.provenance.notes.iter().any(|n| n.contains("blank")));
    std::fs::write(first.root.join("left-by-the-first"), [7u8; 8192]).unwrap();
    let (health, res) = first.teardown(true);
    res.unwrap();
    assert!(health.is_some_and(|h| h.passed));

    let second = Instance::provision(&spec(2), &work).unwrap();
    let p = &second.provenance;
    assert!(
        p.notes.iter().any(|n| n.contains("(the blank)")),
        "{:?}",
        p.notes
    );
    assert!(
        p.mkfs_command
            .as_ref()
            .is_some_and(|c| c[0].contains("mkntfs")),
        "{p:?}"
    );
    assert_eq!(p.fs_type, "fuseblk");
    assert!(!second.root.join("left-by-the-first").exists(), "not fresh");
    std::fs::write(second.root.join("new"), [1u8; 4096]).unwrap();
    let (health, res) = second.teardown(true);
    res.unwrap();
    assert!(
        health.is_some_and(|h| h.passed),
        "the copy passes its check"
    );

    // The run's end: removals waited for, the blank removed, the journal holding no image.
    work.removals.wait();
    work.blanks.remove_all(&work.journal);
    assert_eq!(glob_images(&root.path), Vec::<String>::new());
    let live = journal::live(&journal::read(work.journal.path()).unwrap());
    let live: Vec<_> = live
        .iter()
        .filter(|e| matches!(e.kind, Kind::Image))
        .collect();
    assert!(live.is_empty(), "journal still holds {live:?}");
    assert!(leftovers(&root.path).is_empty());
}

#[test]
fn kill9_with_a_blank_then_cleanup_removes_it() {
    require_root();
    if !ntfs_here() {
        return;
    }
    let root = TestRoot::new("kill9blank");
    let (out, work) = root.out_work();
    let mut child = common::start(&tiny_create("ntfs", "5"), &out, &work, Stdio::piped());
    let t0 = Instant::now();
    let seen = loop {
        let imgs = glob_images(&work);
        if imgs.iter().any(|p| p.contains("/ntfs-blank-")) {
            break imgs;
        }
        assert!(child.try_wait().unwrap().is_none(), "the run ended first");
        assert!(t0.elapsed() < Duration::from_secs(60), "no blank seen");
        std::thread::sleep(Duration::from_millis(2));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    cleanup_ok(&work);
    assert_no_leftovers(&root.path);
    for p in &seen {
        assert!(!Path::new(p).exists(), "{p} survived cleanup");
    }
    no_run_dirs(&work);
}

/// SIGINT while cells' images are being removed off their path (each fresh ntfs and ext4
/// cell's): the run waits for them, leaves nothing, and every record it kept says where the
/// harness's time went, within its cell's.
#[test]
fn sigint_during_removals_leaves_nothing_and_records_the_harness_steps() {
    require_root();
    let root = TestRoot::new("sigintrm");
    let (out, work) = root.out_work();
    let mut targets = vec!["ext4"];
    if ntfs_here() {
        targets.push("ntfs");
    }
    let args = common::with_targets(
        &targets,
        &["--workload", "create", "--runs", "6", "--scale", "0.001"],
    );
    let mut child = common::start(&args, &out, &work, Stdio::piped());
    wait_for_lines(&mut child, &out, 4, 120);
    signal(&child, rustix::process::Signal::INT);
    assert_eq!(wait_exit(&mut child), 1, "an interrupted run exits 1");
    assert_no_leftovers(&root.path);
    no_run_dirs(&work);
    let ok: Vec<_> = common::measurements(&out)
        .into_iter()
        .filter(|m| m["status"] == "ok")
        .collect();
    assert!(ok.len() >= 3, "{ok:?}");
    for m in &ok {
        let steps = m["harness_seconds"].as_object().expect("harness_seconds");
        for step in [
            "mount",
            "unmount",
            "check",
            "losetup",
            "workload_prepare",
            "workload_check",
            "phase_edges",
        ] {
            assert!(steps.contains_key(step), "{step} missing: {steps:?}");
        }
        let sum: f64 = steps.values().map(|v| v.as_f64().unwrap()).sum();
        let cell = m["cell_seconds"].as_f64().unwrap();
        let phase = m["metrics"]["seconds"].as_f64().unwrap();
        assert!(
            sum + phase <= cell + 0.01,
            "{sum} + {phase} > {cell}: {steps:?}"
        );
    }
}
