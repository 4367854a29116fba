//! File workloads on several MPI ranks, for real: `mpirun --allow-run-as-root
//! --oversubscribe -np N` starts N fsarena processes on this machine, sharing one `dir:`
//! target. Four ranks write four times the files of one; one rank under mpirun records what
//! a run without MPI does; a rank killed mid-phase ends the job with a clear error, and the
//! journal cleanup leaves nothing behind.
#![cfg(feature = "mpi")]

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{bin, measurements, require_root, TestRoot};

fn mpirun(np: usize) -> Command {
    let mut c = Command::new("mpirun");
    c.args([
        "--allow-run-as-root",
        "--oversubscribe",
        "-np",
        &np.to_string(),
    ]);
    // Ranks on one host talk through shared memory; no network interface is needed.
    c.args(["--mca", "btl", "self,vader"]);
    c.arg(bin());
    c
}

/// The arguments of a small `create` run on `target`, recording into `out`.
fn run_args(target: &Path, out: &Path, work: &Path, scale: &str) -> Vec<String> {
    [
        "run",
        "--target",
        &format!("dir:{}", target.display()),
        "--workload",
        "create",
        "--threads",
        "1",
        "--runs",
        "1",
        "--scale",
        scale,
        "--quiet",
        "--out",
        &out.display().to_string(),
        "--work-dir",
        &work.display().to_string(),
        "--format",
        "json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn check(o: &Output, what: &str) {
    assert!(
        o.status.success(),
        "{what} failed ({:?}):\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn four_ranks_on_a_dir_target_make_four_times_the_files_of_one() {
    require_root();
    let root = TestRoot::new("mpi-four");
    let target = root.path.join("shared");
    std::fs::create_dir(&target).unwrap();
    let work = root.path.join("work");
    let (one, four) = (root.path.join("one"), root.path.join("four"));

    let o = Command::new(bin())
        .args(run_args(&target, &one, &work, "0.002"))
        .output()
        .unwrap();
    check(&o, "the run without MPI");
    let o = mpirun(4)
        .args(run_args(&target, &four, &work, "0.002"))
        .output()
        .unwrap();
    check(&o, "the run on 4 ranks");

    let (m1, m4) = (measurements(&one), measurements(&four));
    // Rank 0 alone recorded: one record per cell, not one per rank.
    assert_eq!((m1.len(), m4.len()), (1, 1), "{m4:?}");
    let (a, b) = (&m1[0], &m4[0]);
    assert_eq!(
        (a["status"].as_str(), b["status"].as_str()),
        (Some("ok"), Some("ok")),
        "{b}"
    );
    let files = |m: &serde_json::Value| m["metrics"]["files"].as_f64().unwrap();
    assert!(files(a) > 100.0, "{a}");
    assert_eq!(
        files(b),
        4.0 * files(a),
        "4 ranks wrote 4 × the files of one"
    );
    assert_eq!(
        b["metrics"]["logical_write_bytes"].as_f64(),
        a["metrics"]["logical_write_bytes"]
            .as_f64()
            .map(|x| 4.0 * x)
    );
    assert_eq!(b["ranks"], 4);
    assert_eq!(
        b["hosts"].as_array().map(Vec::len),
        Some(1),
        "{}",
        b["hosts"]
    );
    // The phase lasts as long as its slowest rank; the spread is kept.
    let metric = |k: &str| {
        b["metrics"][k]
            .as_f64()
            .unwrap_or_else(|| panic!("no {k} in {b}"))
    };
    assert_eq!(metric("seconds"), metric("rank_seconds_max"));
    assert!(metric("rank_seconds_min") <= metric("rank_seconds_median"));
    assert!(metric("rank_seconds_median") <= metric("rank_seconds_max"));
    // Every rank worked in its own subtree, and each was removed with the run.
    assert_eq!(entries(&target), Vec::<String>::new());
    assert_eq!(
        entries(&work),
        Vec::<String>::new(),
        "work directories left"
    );
}

#[test]
fn one_rank_under_mpirun_records_what_a_run_without_mpi_does() {
    require_root();
    let root = TestRoot::new("mpi-one");
    let target = root.path.join("shared");
    std::fs::create_dir(&target).unwrap();
    let work = root.path.join("work");
    let (plain, under) = (root.path.join("plain"), root.path.join("under"));
    let o = Command::new(bin())
        .args(run_args(&target, &plain, &work, "0.002"))
        .output()
        .unwrap();
    check(&o, "the run without MPI");
    let o = mpirun(1)
        .args(run_args(&target, &under, &work, "0.002"))
        .output()
        .unwrap();
    check(&o, "the run on 1 rank");
    let keys = |m: &serde_json::Value, field: &str| -> Vec<String> {
        let obj = if field.is_empty() { m } else { &m[field] };
        let mut k: Vec<String> = obj.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    let (a, b) = (&measurements(&plain)[0], &measurements(&under)[0]);
    assert_eq!(keys(a, ""), keys(b, ""), "record fields");
    // Device figures appear only when the device saw that kind of I/O (reads during a
    // create depend on what else the machine does), so they are left out of the shape.
    let shape = |m: &serde_json::Value| -> Vec<String> {
        keys(m, "metrics")
            .into_iter()
            // So do the figures derived from them, and `below_floor` (set when this phase
            // happened to be shorter than the floor: timing, not shape).
            .filter(|k| {
                !k.starts_with("device_")
                    && !k.starts_with("bytes_per_")
                    && !matches!(
                        k.as_str(),
                        "below_floor" | "write_amplification" | "space_amplification"
                    )
            })
            .collect()
    };
    assert_eq!(shape(a), shape(b), "metrics");
    assert!(!keys(b, "metrics").iter().any(|k| k.starts_with("rank")));
    assert_eq!(a["metrics"]["files"], b["metrics"]["files"]);
    assert!(a.get("ranks").is_none());
}

/// Pids of the fsarena processes whose command line mentions `marker`, with their rank.
fn ranks_running(marker: &str) -> Vec<(u32, Option<usize>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if !cmd.contains(marker) || !cmd.contains("fsarena") || cmd.starts_with("mpirun") {
            continue;
        }
        let env = std::fs::read(e.path().join("environ")).unwrap_or_default();
        let rank = String::from_utf8_lossy(&env)
            .split('\0')
            .find_map(|v| v.strip_prefix("OMPI_COMM_WORLD_RANK=")?.parse().ok());
        out.push((pid, rank));
    }
    out
}

/// The pids named by the run directories under `work` that still exist.
fn owners_alive(work: &Path) -> Vec<String> {
    entries(work)
        .iter()
        .filter_map(|run| {
            let marker = std::fs::read_to_string(
                work.join(run).join(fsarena::provision::workdir::OWNER_FILE),
            )
            .ok()?;
            let pid = marker
                .lines()
                .find_map(|l| l.strip_prefix("pid="))?
                .to_string();
            Path::new("/proc").join(&pid).exists().then_some(pid)
        })
        .collect()
}

#[test]
fn a_rank_killed_mid_phase_ends_the_run_and_cleanup_leaves_nothing() {
    require_root();
    let root = TestRoot::new("mpi-kill");
    let target = root.path.join("shared");
    std::fs::create_dir(&target).unwrap();
    let work = root.path.join("work");
    let out = root.path.join("out");
    let mut child = mpirun(4)
        .args(run_args(&target, &out, &work, "0.05"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let marker = work.display().to_string();
    // Mid-phase: rank 2's tree is being written.
    let t0 = Instant::now();
    let victim = loop {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "rank 2 never started writing"
        );
        let rank2 = target.join("fsarena-rank-2");
        let writing = entries(&rank2)
            .first()
            .map(|inst| entries(&rank2.join(inst).join("fsarena-work")).len() > 2)
            .unwrap_or(false);
        if writing {
            if let Some((pid, _)) = ranks_running(&marker)
                .into_iter()
                .find(|(_, r)| *r == Some(2))
            {
                break pid;
            }
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the job ended before rank 2 wrote"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(victim as i32).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    // The job ends (mpirun stops the other ranks) instead of hanging in a barrier.
    let stderr = failed_within(&mut child, Duration::from_secs(120), "a rank died");
    assert!(
        stderr.contains("rank 2") && stderr.contains("signal 9"),
        "mpirun names the rank that died and why:\n{stderr}"
    );
    // No rank survives its job (mpirun may exit while the last ones are still dying:
    // wait for every pid the run directories name, zombies included).
    let t2 = Instant::now();
    while !ranks_running(&marker).is_empty() || !owners_alive(&work).is_empty() {
        assert!(
            t2.elapsed() < Duration::from_secs(60),
            "ranks left running: {:?}",
            owners_alive(&work)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // The journals name what the killed ranks left; cleanup removes it all.
    let o = Command::new(bin())
        .args(["cleanup", "--work-dir", &marker])
        .output()
        .unwrap();
    check(&o, "fsarena cleanup");
    let said = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        entries(&target),
        Vec::<String>::new(),
        "left in the target; cleanup said:\n{said}"
    );
    assert_eq!(
        entries(&work),
        Vec::<String>::new(),
        "left in the work directory"
    );
    assert!(common::leftovers(&root.path).is_empty());
}

/// The host record's data set: what every rank planned.
fn dataset_of(out: &Path) -> fsarena::dataset::DatasetSpec {
    let text = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    let host: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(host["record"], "host", "{host}");
    serde_json::from_value(host["plan"]["dataset"].clone()).unwrap()
}

/// Polls the one tree rank 0 made in `target` while `child` runs, and returns the largest
/// set of entry names seen at the top of its working directory.
fn watch_shared_top(target: &Path, child: &mut std::process::Child) -> Vec<String> {
    let mut best: Vec<String> = Vec::new();
    while child.try_wait().unwrap().is_none() {
        let trees = entries(target);
        assert!(trees.len() <= 1, "one tree for all ranks, found {trees:?}");
        if let Some(t) = trees.first() {
            let seen = entries(&target.join(t).join("fsarena-work"));
            if seen.len() > best.len() {
                best = seen;
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    best
}

fn shared_args(target: &Path, out: &Path, work: &Path, workload: &str) -> Vec<String> {
    let mut a = run_args(target, out, work, "0.004");
    let w = a.iter().position(|s| s == "create").unwrap();
    a[w] = workload.to_string();
    a.extend(["--rank-dirs".to_string(), "shared".to_string()]);
    a
}

#[test]
fn shared_rank_dirs_put_four_ranks_files_in_the_same_directories_and_delete_empties_them() {
    require_root();
    let root = TestRoot::new("mpi-shared");
    let target = root.path.join("shared");
    std::fs::create_dir(&target).unwrap();
    let work = root.path.join("work");
    let (one, four, del) = (
        root.path.join("one"),
        root.path.join("four"),
        root.path.join("del"),
    );
    // One process: shared is the same as own (nothing to share the tree with).
    let o = Command::new(bin())
        .args(shared_args(&target, &one, &work, "create"))
        .output()
        .unwrap();
    check(&o, "the run without MPI");
    assert!(measurements(&one)[0].get("rank_dirs").is_none());

    let mut child = mpirun(4)
        .args(shared_args(&target, &four, &work, "create"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let top = watch_shared_top(&target, &mut child);
    let o = child.wait_with_output().unwrap();
    check(&o, "create on 4 ranks in one tree");
    let (a, b) = (&measurements(&one)[0], &measurements(&four)[0]);
    assert_eq!(b["status"], "ok", "{b}");
    assert_eq!(b["rank_dirs"], "shared");
    let files = |m: &serde_json::Value| m["metrics"]["files"].as_f64().unwrap();
    assert_eq!(
        files(b),
        4.0 * files(a),
        "4 ranks wrote 4 × the files of one"
    );

    // The top directory held every rank's files side by side, each name tagged with its
    // rank, next to the directories all ranks share: 4 × the files of one rank, no name
    // lost to a collision.
    let manifest = dataset_of(&four).plan().unwrap();
    let mut expected: Vec<String> = manifest
        .dirs
        .iter()
        .filter(|d| !d.contains('/'))
        .cloned()
        .collect();
    let own_top: Vec<&str> = manifest
        .files
        .iter()
        .filter(|f| !f.path.contains('/'))
        .map(|f| f.path.as_str())
        .collect();
    assert!(!own_top.is_empty(), "the data set has files at its top");
    for rank in 0..4 {
        expected.extend(
            own_top
                .iter()
                .map(|n| fsarena::dataset::spec::SharedTree::tag(n, rank)),
        );
    }
    expected.sort();
    assert_eq!(top.len(), expected.len(), "{top:?}");
    assert_eq!(top, expected);
    assert_eq!(entries(&target), Vec::<String>::new(), "the tree went");

    // Delete: each rank unlinks its own files; the directories go after the phase, and
    // rank 0's check that the tree is then empty is part of the record being ok.
    let o = mpirun(4)
        .args(shared_args(&target, &del, &work, "delete"))
        .output()
        .unwrap();
    check(&o, "delete on 4 ranks in one tree");
    let d = &measurements(&del)[0];
    assert_eq!(d["status"], "ok", "{d}");
    assert_eq!(files(d), 4.0 * manifest.files.len() as f64, "{d}");
    assert!(d["notes"].to_string().contains("shared tree"), "{d}");
    assert_eq!(entries(&target), Vec::<String>::new());
    assert_eq!(
        entries(&work),
        Vec::<String>::new(),
        "work directories left"
    );
}

#[test]
fn shared_rank_dirs_refuse_a_workload_that_needs_the_tree_to_itself() {
    require_root();
    let root = TestRoot::new("mpi-shared-refuse");
    let target = root.path.join("shared");
    std::fs::create_dir(&target).unwrap();
    let work = root.path.join("work");
    let o = mpirun(2)
        .args(shared_args(&target, &root.path.join("out"), &work, "dupes"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("--rank-dirs shared does not support dupes"),
        "{err}"
    );
    assert_eq!(entries(&target), Vec::<String>::new());
}

#[test]
fn ctrl_c_to_mpirun_mid_phase_ends_the_job_keeps_the_records_and_leaves_nothing() {
    require_root();
    for mode in ["own", "shared"] {
        let root = TestRoot::new(&format!("mpi-ctrl-c-{mode}"));
        let target = root.path.join("shared");
        std::fs::create_dir(&target).unwrap();
        let work = root.path.join("work");
        let out = root.path.join("out");
        let mut args = run_args(&target, &out, &work, "0.01");
        let runs = args.iter().position(|s| s == "--runs").unwrap();
        args[runs + 1] = "5".into();
        args.extend(["--rank-dirs".to_string(), mode.to_string()]);
        let mut child = mpirun(4)
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // After the first record, mid-phase of a later repetition: the ranks' trees exist.
        let t0 = Instant::now();
        loop {
            assert!(t0.elapsed() < Duration::from_secs(180), "no record yet");
            assert!(child.try_wait().unwrap().is_none(), "the job ended early");
            let recorded = std::fs::read_to_string(out.join("results.jsonl"))
                .is_ok_and(|t| t.contains("\"record\":\"measurement\""));
            if recorded && !entries(&target).is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let kept = measurements(&out);
        rustix::process::kill_process(
            rustix::process::Pid::from_raw(child.id() as i32).unwrap(),
            rustix::process::Signal::INT,
        )
        .unwrap();
        let stderr = failed_within(&mut child, Duration::from_secs(60), "Ctrl-C");
        assert!(
            stderr.contains("fsarena: interrupted: the MPI job ends on every rank now")
                && stderr.contains("results.jsonl"),
            "one clear line from rank 0 ({mode}):\n{stderr}"
        );
        // The records written before Ctrl-C are still there, as they were.
        let after = measurements(&out);
        assert!(after.len() >= kept.len() && !kept.is_empty());
        assert_eq!(after[..kept.len()], kept[..]);
        // Each rank's cleanup outlives the rank by a moment; then nothing is left: no
        // fsarena process of this run, no tree in the target, no run directory, no mount.
        let marker = work.display().to_string();
        let t2 = Instant::now();
        while !ranks_running(&marker).is_empty()
            || !entries(&target).is_empty()
            || !entries(&work).is_empty()
        {
            assert!(
                t2.elapsed() < Duration::from_secs(60),
                "left after Ctrl-C ({mode}): processes {:?}, target {:?}, work {:?}",
                ranks_running(&marker),
                entries(&target),
                entries(&work)
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(common::leftovers(&root.path).is_empty());
    }
}

/// Waits at most `limit` for the job to end after `what`, asserts it failed, and returns
/// what it printed on stderr.
fn failed_within(child: &mut std::process::Child, limit: Duration, what: &str) -> String {
    let t1 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            t1.elapsed() < limit,
            "the job still runs {} s after {what}",
            limit.as_secs()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert!(!status.success(), "{stderr}");
    stderr
}
