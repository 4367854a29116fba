//! Populate once, clone per cell, as a run does it end to end: which cells run on a copy
//! of a populated image and how that copy was made, which points share one file system,
//! and that nothing is left behind.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{bin, leftovers, no_run_dirs, require_root, TestRoot};
use fsarena::results::store;
use fsarena::results::Status;

/// Runs `fsarena run ARGS` with its results in `root/out` and its work directory in
/// `root/work`, fails unless it exits 0, and returns those two and its stderr.
fn run_ok(root: &TestRoot, args: &[&str]) -> (PathBuf, PathBuf, String) {
    let (out, work) = (root.path.join("out"), root.path.join("work"));
    let ran = Command::new(bin())
        .arg("run")
        .args(args)
        .arg("--out")
        .arg(&out)
        .arg("--work-dir")
        .arg(&work)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&ran.stderr).into_owned();
    assert!(ran.status.success(), "{err}");
    (out, work, err)
}

/// Fails if the run left anything under `root` (mounts, loop devices, images) or any run
/// directory in `work`.
fn left_nothing(root: &TestRoot, work: &Path) {
    assert!(
        leftovers(&root.path).is_empty(),
        "{:?}",
        leftovers(&root.path)
    );
    no_run_dirs(work);
}

/// A warm scan is measured on its cell's cold-scan file system (the cold walk only read
/// it and left it cached), not on a clone of its own; both records carry that one file
/// system's check. A mutating workload's points never share one. On a target without a
/// populated image (tmpfs), the second point finds the tree the first one wrote (it once
/// tried to write it again: "File exists" in every warm scan and size search on tmpfs).
#[test]
fn a_warm_scan_follows_its_cold_scan_on_one_file_system_and_touch_never_shares() {
    require_root();
    let root = TestRoot::new("follow");
    let (out, work, _) = run_ok(
        &root,
        &[
            "--target",
            "ext4",
            "--target",
            "tmpfs",
            "--workload",
            "scan,search,touch",
            "--runs",
            "1",
            "--scale",
            "0.005",
            "--quiet",
        ],
    );
    let loaded = store::load(&out).unwrap();
    for m in &loaded.measurements {
        assert_eq!(
            m.status,
            Status::Ok,
            "{} {} {}: {:?}",
            m.target,
            m.workload,
            m.variant,
            m.error
        );
    }
    let find = |w: &str, v: &str| {
        loaded
            .measurements
            .iter()
            .find(|m| m.target == "ext4" && m.workload == w && m.variant == v)
            .unwrap_or_else(|| panic!("no {w} {v}"))
    };
    let followed = |m: &fsarena::results::Measurement| {
        m.notes
            .iter()
            .any(|n| n.starts_with("measured on the file system of the point before it"))
    };
    for (w, first, second) in [("scan", "cold", "warm"), ("search", "name", "size")] {
        let (a, b) = (find(w, first), find(w, second));
        assert_eq!((a.status, b.status), (Status::Ok, Status::Ok));
        assert!(followed(b), "{w} {second}: {:?}", b.notes);
        assert!(!followed(a), "{w} {first}: {:?}", a.notes);
        // One file system: the same clone (made once) and the same check after both.
        assert_eq!(a.provenance.clone, b.provenance.clone, "{w}");
        assert_eq!(a.provenance.loop_device, b.provenance.loop_device, "{w}");
        assert!(a.health.as_ref().is_some_and(|h| h.passed), "{w} {first}");
        assert_eq!(a.health, b.health, "{w}");
    }
    // The warm scan takes the cold one's last walk as its warm-up, instead of walking again.
    let warm = find("scan", "warm");
    assert!(
        warm.notes
            .iter()
            .any(|n| n == "warmed by the cold point's last walk"),
        "{:?}",
        warm.notes
    );
    let t = find("touch", "");
    assert!(!followed(t), "{:?}", t.notes);
    left_nothing(&root, &work);
}

/// `copy`'s `within` point and `sync` read a dated data set on the target: they run on
/// copies of a dated populated image (restored from the second repetition on) instead of
/// writing the whole data set onto the target in every cell, while `copy`'s
/// `from-outside` still starts from an empty, freshly made file system. Every cell checks
/// its own work as before (the copy hashed, the mirror equal to the changed source).
#[test]
fn copy_within_and_sync_run_on_a_dated_populated_image_and_from_outside_on_an_empty_one() {
    require_root();
    let root = TestRoot::new("dated");
    let (out, work, err) = run_ok(
        &root,
        &[
            "--target",
            "xfs",
            "--workload",
            "copy,sync",
            "--runs",
            "2",
            "--scale",
            "0.005",
        ],
    );
    assert!(
        err.contains("with the dated data set (once per run)"),
        "{err}"
    );
    let loaded = store::load(&out).unwrap();
    assert_eq!(
        loaded.measurements.len(),
        6,
        "2 × (from-outside, within, sync)"
    );
    for m in &loaded.measurements {
        assert_eq!(m.status, Status::Ok, "{:?}", m.error);
        let how = m.provenance.clone.as_ref().map(|c| c.method.as_str());
        match (m.workload.as_str(), m.variant.as_str(), m.repetition) {
            ("copy", "from-outside", _) => {
                assert_eq!(how, None, "an empty file system, made fresh");
                assert!(m.provenance.mkfs_command.is_some());
            }
            (_, _, 0) => assert!(
                matches!(how, Some("copy" | "reflink" | "restore")),
                "{how:?}"
            ),
            (w, v, _) => assert_eq!(how, Some("restore"), "{w} {v}"),
        }
    }
    left_nothing(&root, &work);
}

/// Every populated image is made before the first cell, and each one's first copy on a
/// second thread meanwhile: the first cell of each target starts on that copy (its
/// provenance says so), every later cell on a restore of it, and the run leaves nothing.
#[test]
fn every_image_is_populated_before_the_first_cell_and_first_copied_meanwhile() {
    require_root();
    let root = TestRoot::new("ahead");
    let (out, work, err) = run_ok(
        &root,
        &[
            "--target",
            "ext4",
            "--target",
            "xfs",
            "--workload",
            "scan,touch",
            "--runs",
            "2",
            "--scale",
            "0.005",
        ],
    );
    let at = |s: &str| err.find(s).unwrap_or_else(|| panic!("no {s:?} in {err}"));
    let first_cell = at("[1/8]");
    for t in ["ext4", "xfs"] {
        assert!(
            at(&format!("populating an image of {t} ")) < first_cell,
            "{err}"
        );
    }
    let loaded = store::load(&out).unwrap();
    assert_eq!(loaded.measurements.len(), 12, "2 × 2 × (cold, warm, touch)");
    let ahead = "the clone was copied whole before the run's first cell";
    for m in &loaded.measurements {
        assert_eq!(m.status, Status::Ok, "{:?}", m.error);
        let how = m.provenance.clone.as_ref().map(|c| c.method.as_str());
        let noted = m.provenance.notes.iter().any(|n| n.starts_with(ahead));
        // Cells run target by target, scan before touch, the first repetition first.
        let first = m.repetition == 0 && m.workload == "scan";
        assert_eq!(
            noted, first,
            "{} {}: {:?}",
            m.target, m.workload, m.provenance.notes
        );
        let want = if first { "copy" } else { "restore" };
        assert_eq!(
            how,
            Some(want),
            "{} {} {}",
            m.target,
            m.workload,
            m.repetition
        );
        // Only the first cell on each image is charged for building it, within its time.
        match (first, m.image_seconds, m.cell_seconds) {
            (true, Some(image), Some(cell)) => assert!(image > 0.0 && image < cell),
            (false, None, Some(_)) => {}
            other => panic!("{} {}: {other:?}", m.target, m.workload),
        }
        // And it carries the image's build by step: where the time before the first cell
        // went (none of it in the cell's own steps).
        let steps: Vec<&str> = m.image_steps.keys().map(String::as_str).collect();
        let built = ["mkfs", "mount", "write", "unmount", "check"];
        for step in built {
            let timed = m.image_steps.get(step).is_some_and(|s| *s > 0.0);
            assert_eq!(timed, first, "{} {}: {steps:?}", m.target, m.workload);
            assert!(!m.harness_seconds.contains_key("write"), "{steps:?}");
        }
    }
    left_nothing(&root, &work);
}

/// A `create` cell that runs before every cell copying the data set leaves exactly the
/// data set on its file system, checked: that file system is kept as the target's populated
/// image instead of writing the data set a second time before the first cell (the scale-0.2
/// plan of issue 61 spent 28.7 s of its 166.9 s there). Every copy of it says where it came
/// from; a later `create` cell's file system is removed as before; and where a copying cell
/// comes first, the image is populated ahead as before and no `create` file system is kept.
#[test]
fn a_create_cells_file_system_is_kept_as_the_image_the_later_cells_copy() {
    require_root();
    let root = TestRoot::new("keep");
    let args = |workloads: &'static str, threads: &'static str| {
        [
            "--target",
            "ext4",
            "--target",
            "xfs",
            "--workload",
            workloads,
            "--runs",
            "2",
            "--scale",
            "0.005",
            "--threads",
            threads,
        ]
    };
    let kept = "this file system, checked, was kept as the target's populated image";
    let origin = "the populated image is the file system the create cell of repetition 1 \
                  (1 thread(s))";
    let (out, work, err) = run_ok(&root, &args("create,scan", "1"));
    assert!(!err.contains("populating an image"), "{err}");
    let loaded = store::load(&out).unwrap();
    assert_eq!(
        loaded.measurements.len(),
        12,
        "2 × 2 × (create, cold, warm)"
    );
    for m in &loaded.measurements {
        assert_eq!(m.status, Status::Ok, "{:?}", m.error);
        assert!(
            m.health.as_ref().is_some_and(|h| h.passed),
            "{:?}",
            m.health
        );
        let noted = |what: &str, notes: &[String]| notes.iter().any(|n| n.starts_with(what));
        let is_kept = noted(kept, &m.notes);
        let copied = noted(origin, &m.provenance.notes);
        // The first scan's clone was copied beside the kept file system's unmount and check.
        let beside = noted(
            "the clone was copied whole while the file system kept as the image was unmounted",
            &m.provenance.notes,
        );
        match (m.workload.as_str(), m.repetition) {
            ("create", 0) => assert!(is_kept && !copied, "{:?}", m.notes),
            ("create", _) => assert!(!is_kept && !copied, "{:?}", m.notes),
            (_, r) => assert!(
                copied && !is_kept && beside == (r == 0),
                "{:?}",
                m.provenance.notes
            ),
        }
    }
    left_nothing(&root, &work);
    std::fs::remove_dir_all(&out).unwrap();

    // A copying cell first, or a `create` written by more threads than an image is: the
    // image is populated as before.
    for (workloads, threads) in [("scan,create", "1"), ("create,scan", "2")] {
        populated_ahead(&root, &args(workloads, threads), kept);
    }
}

/// Runs `args`, which populate every image ahead: no cell's file system is kept.
fn populated_ahead(root: &TestRoot, args: &[&str], kept: &str) {
    let (out, work, err) = run_ok(root, args);
    for t in ["ext4", "xfs"] {
        assert!(
            err.contains(&format!("populating an image of {t} ")),
            "{err}"
        );
    }
    for m in &store::load(&out).unwrap().measurements {
        assert_eq!(m.status, Status::Ok, "{:?}", m.error);
        assert!(
            !m.notes.iter().any(|n| n.starts_with(kept)),
            "{:?}",
            m.notes
        );
    }
    left_nothing(root, &work);
    std::fs::remove_dir_all(&out).unwrap();
}

/// The clones' writes are traced on one trace instance per clone attached at once for the
/// whole run (two: a candidate's and the baseline's beside it), handed from each clone to
/// the next (making and removing one per clone cost ~65 ms each), made once, released
/// once, and journaled so: the kept work directory's journal shows it.
#[test]
fn one_trace_instance_serves_every_clone_of_the_run() {
    use fsarena::provision::journal::{self, Kind, Op};
    require_root();
    let root = TestRoot::new("onetrace");
    let (out, work, _) = run_ok(
        &root,
        &[
            "--target",
            "ext4",
            "--target",
            "xfs",
            "--keep",
            "--workload",
            "scan,touch",
            "--runs",
            "2",
            "--scale",
            "0.005",
        ],
    );
    let runs: Vec<_> = std::fs::read_dir(&work).unwrap().flatten().collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let entries = journal::read(&runs[0].path().join(journal::Journal::FILE_NAME)).unwrap();
    let traces = |op: Op| {
        entries
            .iter()
            .filter(|e| e.kind == Kind::Trace && e.op == op)
            .count()
    };
    // Two: the scans' clones of ext4's image beside xfs's (measured in turn) are attached
    // with them, and take a second instance, handed on like the first.
    assert_eq!(
        (traces(Op::Create), traces(Op::Release)),
        (2, 2),
        "{entries:?}"
    );
    let restored = store::load(&out)
        .unwrap()
        .measurements
        .iter()
        .filter(|m| {
            m.provenance
                .clone
                .as_ref()
                .is_some_and(|c| c.method == "restore")
        })
        .count();
    assert!(
        restored >= 4,
        "later clones were traced and restored: {restored}"
    );
    // (With --keep the run's own directories stay journaled; no mount or instance does.)
    let live = journal::live(&entries);
    let held: Vec<_> = live
        .iter()
        .filter(|e| matches!(e.kind, Kind::Trace | Kind::Mount))
        .collect();
    assert!(held.is_empty(), "{held:?}");
    std::fs::remove_dir_all(runs[0].path()).unwrap();
    assert!(
        leftovers(&root.path).is_empty(),
        "{:?}",
        leftovers(&root.path)
    );
}

/// A cold scan is the first walk of its copy of the populated image, as `du` is the first
/// walk of a tree just laid down: under `relatime` it gives every directory a new access
/// time, and btrfs writes those as copy-on-write metadata. Defect: with several cold passes
/// (a small tree) the writes went out in the cache drop between passes, outside the measured
/// time and the monitor, so the phase recorded 0 device writes (199 directories: 0; 799, one
/// pass: 471) and `du; sync -f` on the same tree paid for what fsarena's scan did not. The
/// warm scan after it, on the same file system, has nothing left to write.
#[test]
fn a_cold_scan_of_several_passes_counts_the_access_time_writes_of_its_first_walk() {
    require_root();
    let root = TestRoot::new("atime");
    let args = "--target btrfs --workload scan --runs 1 --scale 0.005 --quiet";
    let (out, work, _) = run_ok(&root, &args.split(' ').collect::<Vec<_>>());
    let loaded = store::load(&out).unwrap();
    let find = |v: &str| {
        let m = loaded
            .measurements
            .iter()
            .find(|m| m.workload == "scan" && m.variant == v)
            .unwrap_or_else(|| panic!("no scan {v}"));
        assert_eq!(m.status, Status::Ok, "{v}: {:?}", m.error);
        m
    };
    let (cold, warm) = (find("cold"), find("warm"));
    assert!(cold.metrics["passes"] >= 2.0, "{:?}", cold.metrics);
    assert!(
        cold.metrics["device_write_ios"] > 0.0,
        "the first walk's access times were not written inside the phase: {:?}",
        cold.metrics
    );
    assert_eq!(warm.metrics["device_write_ios"], 0.0, "{:?}", warm.metrics);
    left_nothing(&root, &work);
}

/// A candidate's read-only points are measured in turn with the baseline: each of xfs's
/// search and cold-read records carries ext4's figures from the same phase (as many
/// passes, from a copy of ext4's populated image for the search and a fresh ext4 for the
/// cold read, whose install it lays down there too), its comparison is the paired test in
/// turn, and the baseline's own cells and every mutating point stay alone. `--in-turn off`
/// measures every point alone. Nothing is left behind either way.
#[test]
fn a_candidates_read_only_points_are_measured_in_turn_with_the_baseline() {
    require_root();
    let root = TestRoot::new("in-turn");
    let args = [
        "--target",
        "ext4",
        "--target",
        "xfs",
        "--workload",
        "search,cold-read,touch",
        "--runs",
        "2",
        "--scale",
        "0.002",
        "--quiet",
    ];
    let (out, work, _) = run_ok(&root, &args);
    let loaded = store::load(&out).unwrap();
    for m in &loaded.measurements {
        assert_eq!(
            m.status,
            Status::Ok,
            "{} {}: {:?}",
            m.target,
            m.workload,
            m.error
        );
        let key = if m.workload == "search" {
            "files_per_s"
        } else {
            "seconds_per_pass"
        };
        match (&m.in_turn, m.target.as_str(), m.workload.as_str()) {
            (None, "ext4", _) | (None, _, "touch") => {}
            (Some(t), "xfs", "search" | "cold-read") => {
                assert_eq!(t.target, "ext4");
                assert_eq!(t.provenance.fs_type, "ext4");
                let clone = t.provenance.clone.is_some();
                assert_eq!(
                    clone,
                    m.workload == "search",
                    "{}: {:?}",
                    m.workload,
                    t.provenance
                );
                assert_eq!(t.metrics["passes"], m.metrics["passes"]);
                assert!(t.metrics[key] > 0.0, "{:?}", t.metrics);
                assert!(m.notes.iter().any(|n| n.contains("in turn with ext4")));
            }
            (t, target, w) => panic!("{target} {w}: in turn {t:?}"),
        }
    }
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let tests: Vec<(String, String)> = (summary["sections"].as_array().unwrap().iter())
        .flat_map(|s| {
            let key = s["key_metric"].as_str().unwrap().to_string();
            let w = s["workload"].as_str().unwrap().to_string();
            (s["rows"].as_array().unwrap().iter())
                .filter(|r| r["target"] == "xfs")
                .map(move |r| {
                    (
                        w.clone(),
                        r["metrics"][&key]["vs_baseline"]["test"].to_string(),
                    )
                })
        })
        .collect();
    for (w, test) in &tests {
        assert_eq!(test == "\"in_turn\"", w != "touch", "{w}: {test}");
    }
    // Every output says so beside the table, and what the figure is.
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    let said = "in turn: ext4 was measured beside xfs in each of its cells";
    assert_eq!(
        md.matches(said).count(),
        4,
        "two points each of search and cold-read: {md}"
    );
    left_nothing(&root, &work);

    let root = TestRoot::new("alone");
    let (out, work, _) = run_ok(&root, &[&args[..], &["--in-turn", "off"]].concat());
    let loaded = store::load(&out).unwrap();
    assert!(loaded.measurements.iter().all(|m| m.in_turn.is_none()));
    left_nothing(&root, &work);
}

/// Defect: a warm scan measured in turn after its cold scan warmed the tree the cold
/// phase's last pass had not read, just before its phase, and the access times that walk
/// dirtied (the cold phase had reset them) were written by the phase's closing `syncfs`:
/// btrfs's warm scan wrote 451 I/Os in turn and none alone. The walk is written back
/// before the phase now, so a warm read-only phase writes nothing in turn either.
#[test]
fn a_warm_scan_in_turn_after_a_cold_one_writes_nothing_in_its_phase() {
    require_root();
    let root = TestRoot::new("warm-in-turn");
    let args = [
        "--target",
        "ext4",
        "--target",
        "btrfs",
        "--workload",
        "scan",
        "--runs",
        "2",
        "--scale",
        "0.02",
        "--quiet",
    ];
    let (out, work, _) = run_ok(&root, &args);
    let loaded = store::load(&out).unwrap();
    let warm: Vec<_> = (loaded.measurements.iter())
        .filter(|m| m.target == "btrfs" && m.variant == "warm")
        .collect();
    assert_eq!(warm.len(), 2);
    for m in warm {
        assert!(m.in_turn.is_some(), "{:?}", m.notes);
        assert_eq!(
            m.metrics.get("device_write_ios"),
            Some(&0.0),
            "{:?}",
            m.metrics
        );
    }
    left_nothing(&root, &work);
}
