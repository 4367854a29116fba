//! A run interrupted by SIGINT, SIGTERM or SIGKILL leaves nothing behind (after `cleanup`
//! for SIGKILL), keeps every finished measurement, and `--resume` completes it.

mod common;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{
    assert_exit, assert_no_leftovers, bin, cleanup, cleanup_ok, glob_images, leftovers, measured,
    no_run_dirs, require_root, resume, run_ids, signal, trace_instances, wait_exit, wait_for_lines,
    TestRoot,
};
use fsarena::results::store;
use fsarena::results::Status;

const WORKLOADS: &str = "create,scan,delete";

fn start(out: &Path, work: &Path) -> Child {
    let args = common::with_targets(
        &["ext4", "xfs", "btrfs"],
        &["--workload", WORKLOADS, "--runs", "2", "--scale", "0.01"],
    );
    common::start(&args, out, work, Stdio::piped())
}

/// Waits until `n` measurements follow the host facts in `out`'s results.
fn wait_for_measurements(child: &mut Child, out: &Path, n: usize) {
    wait_for_lines(child, out, n + 1, 120);
}

fn every_line_parses(out: &Path) {
    let text = std::fs::read_to_string(out.join(store::FILE_NAME)).unwrap();
    for (i, line) in text.lines().enumerate() {
        assert!(
            serde_json::from_str::<fsarena::results::Record>(line).is_ok(),
            "line {} is not a complete record: {line}",
            i + 1
        );
    }
}

fn signal_leaves_nothing(sig: i32, name: &str) {
    require_root();
    let root = TestRoot::new(name);
    let (out, work) = root.out_work();
    let mut child = start(&out, &work);
    wait_for_measurements(&mut child, &out, 2);
    signal(
        &child,
        rustix::process::Signal::from_named_raw(sig).unwrap(),
    );
    let code = wait_exit(&mut child);
    assert_eq!(code, 1, "an interrupted run exits 1");
    assert_no_leftovers(&root.path);
    no_run_dirs(&work);
    every_line_parses(&out);
    let loaded = store::load(&out).unwrap();
    assert!(
        loaded
            .measurements
            .iter()
            .filter(|m| m.status == Status::Ok)
            .count()
            >= 2
    );
    assert!(loaded.skipped.is_empty());
}

#[test]
fn sigint_mid_run_leaves_nothing_and_keeps_results() {
    signal_leaves_nothing(libc::SIGINT, "sigint");
}

#[test]
fn sigterm_mid_run_leaves_nothing_and_keeps_results() {
    signal_leaves_nothing(libc::SIGTERM, "sigterm");
}

#[test]
fn kill9_then_cleanup_then_resume_completes_the_run() {
    require_root();
    let root = TestRoot::new("kill9");
    let (out, work) = root.out_work();
    let mut child = start(&out, &work);
    wait_for_measurements(&mut child, &out, 4);
    // Let it get into the middle of a cell (mounted, working) before killing it.
    std::thread::sleep(Duration::from_millis(150));
    child.kill().unwrap();
    child.wait().unwrap();
    every_line_parses(&out);

    cleanup_leaves_nothing(&work, &root.path);
    no_run_dirs(&work);
    // A second cleanup finds nothing, and touches nothing it did not make.
    let c = cleanup(&work);
    assert!(String::from_utf8_lossy(&c.stdout).contains("nothing to clean up"));

    let before = measured(&out);
    assert_exit(&resume(&out, &work), 0);
    assert!(measured(&out) > before, "resume measured nothing");
    assert_no_leftovers(&root.path);
    no_run_dirs(&work);

    // The result equals an uninterrupted run: every cell exactly once, all ok.
    let loaded = store::load(&out).unwrap();
    let cells: HashSet<_> = loaded
        .measurements
        .iter()
        .map(|m| {
            (
                m.target.clone(),
                m.workload.clone(),
                m.variant.clone(),
                m.repetition,
            )
        })
        .collect();
    let workloads: Vec<&str> = WORKLOADS.split(',').collect();
    for t in ["ext4", "xfs", "btrfs"] {
        for w in &workloads {
            for rep in 0..2 {
                assert!(
                    loaded.measurements.iter().any(|m| m.target == t
                        && m.workload == *w
                        && m.repetition == rep
                        && m.status == Status::Ok),
                    "missing {t} {w} repetition {rep}"
                );
            }
        }
    }
    assert_eq!(cells.len(), loaded.measurements.len());
    // Both processes timed the host's probe before every phase, and the report reads them all.
    assert!(
        loaded
            .measurements
            .iter()
            .all(|m| m.host_probe_ms.is_some_and(|ms| ms > 0.0)),
        "a measurement without its host probe"
    );
    let steadiness = fsarena::report::build(&loaded, None).steadiness;
    assert_eq!(
        steadiness.map(|s| s.probes),
        Some(loaded.measurements.len())
    );
    assert!(
        loaded.measurements.iter().all(|m| m.status == Status::Ok),
        "{:?}",
        loaded
            .measurements
            .iter()
            .filter(|m| m.status != Status::Ok)
            .map(|m| (&m.target, &m.workload, m.status, &m.error))
            .collect::<Vec<_>>()
    );
}

/// Loop devices backed by images of the run(s) under `work`, grouped by target: a master
/// image is `images/TARGET-master.img`, its clones `images/TARGET-SEQ.img` and
/// `images/TARGET-master-first-clone.img` (the copy made ahead of the first cell). The
/// targets here have no `-` in their names.
fn attached_by_target(work: &Path) -> HashMap<String, Vec<String>> {
    let mut by: HashMap<String, Vec<String>> = Default::default();
    for (dev, backing) in fsarena::provision::loopdev::attached() {
        if !backing.starts_with(work) {
            continue;
        }
        let name = backing.file_stem().unwrap().to_string_lossy().into_owned();
        let target = name.split_once('-').map_or(name.clone(), |(t, _)| t.into());
        by.entry(target)
            .or_default()
            .push(format!("{} -> {}", dev.display(), backing.display()));
    }
    by
}

#[test]
fn clones_of_one_image_are_never_attached_together() {
    require_root();
    let root = TestRoot::new("clones");
    let (out, work) = root.out_work();
    let args = [
        "--target",
        "btrfs",
        "--target",
        "ext4",
        "--workload",
        "scan,touch,delete,dupes",
        "--runs",
        "2",
        "--scale",
        "0.01",
    ];
    let mut child = common::start(&args, &out, &work, Stdio::piped());
    let t0 = Instant::now();
    // Clone attachments seen per target: a clone's file is reused from cell to cell, so
    // each time one is attached where none was at the previous look counts once.
    let mut attaches: HashMap<String, usize> = HashMap::new();
    let mut before: HashSet<String> = HashSet::new();
    while child.try_wait().unwrap().is_none() {
        let mut now = HashSet::new();
        for (target, devs) in attached_by_target(&work) {
            assert!(devs.len() <= 1, "{target}: attached together: {devs:?}");
            for d in devs.into_iter().filter(|d| !d.ends_with("-master.img")) {
                if !before.contains(&d) {
                    *attaches.entry(target.clone()).or_default() += 1;
                }
                now.insert(d);
            }
        }
        before = now;
        assert!(t0.elapsed() < Duration::from_secs(300), "no end");
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(wait_exit(&mut child), 0);
    // Not vacuous: the poll saw clones of both targets come and go.
    for t in ["btrfs", "ext4"] {
        let n = attaches.get(t).copied().unwrap_or(0);
        assert!(n >= 2, "{t}: saw {n} clone attachments ({attaches:?})");
    }
    let loaded = store::load(&out).unwrap();
    // Every cell (target × workload × repetition), some with several points.
    assert!(
        loaded.measurements.len() >= 2 * 2 * 3,
        "{}",
        loaded.measurements.len()
    );
    for m in &loaded.measurements {
        assert_eq!(m.status, Status::Ok, "{:?}", m.error);
        let c = m.provenance.clone.as_ref().expect("ran on a clone");
        assert!(
            ["copy", "reflink", "restore"].contains(&c.method.as_str()),
            "{c:?}"
        );
    }
    let restored = loaded
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
        restored > 0,
        "no clone was restored: every cell copied the image whole"
    );
    assert_no_leftovers(&root.path);
    no_run_dirs(&work);
}

#[test]
fn kill9_with_a_populated_image_and_a_clone_then_cleanup_removes_both() {
    require_root();
    let root = TestRoot::new("kill9clone");
    let (out, work) = root.out_work();
    let args = [
        "--target",
        "xfs",
        "--workload",
        "scan,touch",
        "--runs",
        "3",
        "--scale",
        "0.01",
    ];
    let mut child = common::start(&args, &out, &work, Stdio::piped());
    // Kill once a clone is attached beside its (detached) master image, its writes traced.
    let t0 = Instant::now();
    let traced = |runs: &[String]| {
        trace_instances()
            .into_iter()
            .filter(|n| runs.iter().any(|r| n.contains(r.as_str())))
            .collect::<Vec<_>>()
    };
    let images = loop {
        let clone_attached = attached_by_target(&work)
            .get("xfs")
            .is_some_and(|d| d.iter().any(|b| !b.ends_with("-master.img")));
        let imgs: Vec<_> = glob_images(&work);
        if clone_attached
            && imgs.iter().any(|p| p.ends_with("xfs-master.img"))
            && imgs.len() >= 2
            && !traced(&run_ids(&work)).is_empty()
        {
            break imgs;
        }
        assert!(child.try_wait().unwrap().is_none(), "the run ended first");
        assert!(t0.elapsed() < Duration::from_secs(120), "no clone seen");
        std::thread::sleep(Duration::from_millis(2));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(images.iter().all(|p| Path::new(p).exists()));
    let runs = run_ids(&work);
    cleanup_leaves_nothing(&work, &root.path);
    for p in &images {
        assert!(!Path::new(p).exists(), "{p} survived cleanup");
    }
    assert_eq!(
        traced(&runs),
        Vec::<String>::new(),
        "trace instances survived cleanup"
    );
    no_run_dirs(&work);
}

/// Runs `fsarena cleanup` and checks it succeeded and left no mount or loop device of ours.
fn cleanup_leaves_nothing(work: &Path, root: &Path) {
    cleanup_ok(work);
    assert_no_leftovers(root);
}

/// Complete lines (ending in a newline) of the results file.
fn complete_lines(out: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(out.join(store::FILE_NAME)).unwrap_or_default();
    let mut v: Vec<String> = text.split_inclusive('\n').map(String::from).collect();
    if v.last().is_some_and(|l| !l.ends_with('\n')) {
        v.pop();
    }
    v
}

/// Issue 11: ≥ 20 interruptions at random points — SIGINT, SIGTERM, or kill -9 followed by
/// `cleanup` — each followed by `--resume`: after every one nothing of ours is left
/// mounted or attached, no line already written is lost or changed, and the last resume
/// completes the plan with every cell recorded `ok` exactly once.
#[test]
fn twenty_random_interruptions_lose_nothing_and_leave_nothing() {
    use rand::SeedableRng;
    require_root();
    let seed: u64 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    eprintln!("interruption seed {seed}");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let root = TestRoot::new("kill20");
    let work = root.path.join("work");
    let t_all = Instant::now();
    // A plan that completes before its share of the kills is checked, and a fresh one takes
    // the rest: at least 20 interruptions whatever the machine's speed.
    let mut kills = 0;
    let mut plans = 0;
    while kills < 20 {
        let out = root.path.join(format!("out{plans}"));
        interrupt_until_complete(&out, &work, &root.path, &mut rng, &mut kills);
        plans += 1;
    }
    eprintln!(
        "{kills} interruptions over {plans} plan(s) in {:.0?}",
        t_all.elapsed()
    );
}

/// Runs (and resumes) one plan into `out`, interrupting it at random points until `kills`
/// reaches 20 or the plan completes; after each interruption nothing is left and no line is
/// lost or changed; at the end every cell is `ok` exactly once.
fn interrupt_until_complete(
    out: &Path,
    work: &Path,
    root: &Path,
    rng: &mut rand_chacha::ChaCha8Rng,
    kills: &mut u32,
) {
    use rand::Rng;
    let spawn = |resume: bool| {
        let mut c = Command::new(bin());
        if resume {
            c.args(["run", "--quiet", "--resume"]).arg(out);
        } else {
            c.args(["run", "--target", "tmpfs", "--target", "ext4"])
                .args(["--workload", "create,scan,delete", "--runs", "4"])
                .args(["--scale", "0.002", "--quiet", "--out"])
                .arg(out);
        }
        c.arg("--work-dir")
            .arg(work)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let mut seen: Vec<String> = Vec::new();
    let mut finished = false;
    while *kills < 20 {
        let mut child = spawn(out.join(store::FILE_NAME).exists());
        let wait = Duration::from_millis(rng.gen_range(150..1500));
        let t0 = Instant::now();
        while t0.elapsed() < wait && child.try_wait().unwrap().is_none() {
            std::thread::sleep(Duration::from_millis(5));
        }
        if let Some(s) = child.try_wait().unwrap() {
            // It finished before the kill: the plan is complete.
            assert_eq!(s.code(), Some(0), "a resume that ran to its end");
            finished = true;
            break;
        }
        let sig = match rng.gen_range(0..3) {
            0 => rustix::process::Signal::INT,
            1 => rustix::process::Signal::TERM,
            _ => rustix::process::Signal::KILL,
        };
        signal(&child, sig);
        let code = wait_exit(&mut child);
        *kills += 1;
        if sig == rustix::process::Signal::KILL {
            cleanup_leaves_nothing(work, root);
        } else {
            assert!(code == 1 || code == 0, "{sig:?} gave exit {code}");
        }
        assert!(
            leftovers(root).is_empty(),
            "after kill {kills} ({sig:?}): {:?}",
            leftovers(root)
        );
        no_run_dirs(work);
        let now = complete_lines(out);
        assert!(now.len() >= seen.len(), "lines lost after kill {kills}");
        assert_eq!(
            &now[..seen.len()],
            &seen[..],
            "a line changed after kill {kills}"
        );
        seen = now;
    }
    // Finish the plan.
    if !finished {
        assert_exit(&resume(out, work), 0);
    }
    let now = complete_lines(out);
    assert_eq!(&now[..seen.len()], &seen[..], "a line changed at the end");
    every_line_parses(out);
    assert_no_leftovers(root);
    no_run_dirs(work);
    let loaded = store::load(out).unwrap();
    assert!(loaded.skipped.is_empty(), "{:?}", loaded.skipped);
    for t in ["tmpfs", "ext4"] {
        for w in ["create", "scan", "delete"] {
            for rep in 0..4 {
                let n = loaded
                    .measurements
                    .iter()
                    .filter(|m| m.target == t && m.workload == w && m.repetition == rep)
                    .filter(|m| m.status == Status::Ok)
                    .count();
                let want = if w == "scan" { 2 } else { 1 };
                assert_eq!(n, want, "{t} {w} repetition {rep}");
            }
        }
    }
}
