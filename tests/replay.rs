//! The `replay` workload through `fsarena run`, on hand-built traces written with
//! `trace::format::write`: a trace using every operation replays verified on ext4 and
//! tmpfs; a tampered trace is a divergence (status invalid, the first divergence named),
//! not a result; a reader never runs before the writer of another thread it depends on;
//! bad traces are refused with one line and exit 2 before anything is provisioned.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{bin, leftovers, measurements, require_root, TestRoot};
use fsarena::trace::format::{write, Call, Initial, Op, Trace};
use serde_json::json;

/// A call from its JSON fields (the format's own names), with no duration.
fn call(thread: u32, start: f64, fields: serde_json::Value) -> Call {
    let mut v = json!({"thread": thread, "start": start, "dur": 0.0});
    if let (Some(o), Some(f)) = (v.as_object_mut(), fields.as_object()) {
        o.extend(f.clone());
    }
    serde_json::from_value(v).expect("a call")
}

/// Calls of thread 0 from their JSON fields, 1 ms apart.
fn one_thread(fields: impl IntoIterator<Item = serde_json::Value>) -> Vec<Call> {
    fields
        .into_iter()
        .enumerate()
        .map(|(n, f)| call(0, n as f64 * 0.001, f))
        .collect()
}

fn entry(v: serde_json::Value) -> Initial {
    serde_json::from_value(v).expect("an initial entry")
}

fn trace(threads: u32, initial: Vec<Initial>, calls: Vec<Call>) -> Trace {
    Trace::new(vec!["hand-built".into()], threads, 0.5, initial, calls)
}

fn save(t: &Trace, path: &Path) -> PathBuf {
    let mut out = Vec::new();
    write(t, &mut out).unwrap();
    std::fs::write(path, out).unwrap();
    path.to_path_buf()
}

/// Two threads, every operation of the format, each ending as it would on any Linux file
/// system: thread 1 lists, stats and reads what thread 0 made.
fn every_op() -> Trace {
    let initial = vec![
        entry(json!({"path": "src", "kind": "dir"})),
        entry(json!({"path": "src/a.c", "kind": "file", "size": 12_000})),
        entry(json!({"path": "src/old.o", "kind": "file", "size": 300})),
        entry(json!({"path": "lib", "kind": "symlink", "target": "src"})),
    ];
    // (thread, call); call n starts at n ms.
    let calls = [
        (
            0,
            json!({"op": "open", "syscall": "openat", "path": "src/a.c", "flags": ["O_RDONLY"], "ret": 3}),
        ),
        (
            0,
            json!({"op": "read", "syscall": "read", "fd": 3, "size": 8192, "ret": 8192}),
        ),
        (
            0,
            json!({"op": "read", "syscall": "read", "fd": 3, "size": 8192, "ret": 3808}),
        ),
        (
            0,
            json!({"op": "read", "syscall": "pread64", "fd": 3, "size": 100, "offset": 11_950, "ret": 50}),
        ),
        (
            0,
            json!({"op": "stat", "syscall": "fstat", "fd": 3, "ret": 0}),
        ),
        (
            0,
            json!({"op": "close", "syscall": "close", "fd": 3, "ret": 0}),
        ),
        (
            0,
            json!({"op": "mkdir", "syscall": "mkdir", "path": "out", "mode": 493, "ret": 0}),
        ),
        (
            0,
            json!({"op": "open", "syscall": "openat", "path": "out/a.tmp", "flags": ["O_WRONLY", "O_CREAT", "O_TRUNC"], "mode": 420, "ret": 4}),
        ),
        (
            0,
            json!({"op": "write", "syscall": "write", "fd": 4, "size": 5000, "ret": 5000}),
        ),
        (
            0,
            json!({"op": "write", "syscall": "pwrite64", "fd": 4, "size": 1000, "offset": 9000, "ret": 1000}),
        ),
        (
            0,
            json!({"op": "fallocate", "syscall": "fallocate", "fd": 4, "offset": 0, "size": 20_000, "mode": 1, "ret": 0}),
        ),
        (
            0,
            json!({"op": "sync_file_range", "syscall": "sync_file_range", "fd": 4, "offset": 0, "size": 10_000, "ret": 0}),
        ),
        (
            0,
            json!({"op": "fdatasync", "syscall": "fdatasync", "fd": 4, "ret": 0}),
        ),
        (
            0,
            json!({"op": "truncate", "syscall": "ftruncate", "fd": 4, "size": 8000, "ret": 0}),
        ),
        (
            0,
            json!({"op": "fsync", "syscall": "fsync", "fd": 4, "ret": 0}),
        ),
        (
            0,
            json!({"op": "close", "syscall": "close", "fd": 4, "ret": 0}),
        ),
        (
            0,
            json!({"op": "rename", "syscall": "rename", "path": "out/a.tmp", "path2": "out/a.o", "ret": 0}),
        ),
        (
            0,
            json!({"op": "link", "syscall": "link", "path": "out/a.o", "path2": "out/a2.o", "ret": 0}),
        ),
        (
            0,
            json!({"op": "symlink", "syscall": "symlink", "path": "out/latest", "target": "a.o", "ret": 0}),
        ),
        (
            0,
            json!({"op": "unlink", "syscall": "unlink", "path": "src/old.o", "ret": 0}),
        ),
        (
            0,
            json!({"op": "truncate", "syscall": "truncate", "path": "out/a2.o", "size": 7000, "ret": 0}),
        ),
        (
            0,
            json!({"op": "mkdir", "syscall": "mkdir", "path": "tmp", "mode": 493, "ret": 0}),
        ),
        (
            0,
            json!({"op": "rmdir", "syscall": "rmdir", "path": "tmp", "ret": 0}),
        ),
        (
            0,
            json!({"op": "stat", "syscall": "newfstatat", "path": "src/old.o", "err": "ENOENT"}),
        ),
        (
            0,
            json!({"op": "mkdir", "syscall": "mkdir", "path": "out", "mode": 493, "err": "EEXIST"}),
        ),
        (
            1,
            json!({"op": "open", "syscall": "openat", "path": "out", "flags": ["O_RDONLY", "O_DIRECTORY"], "ret": 3}),
        ),
        (
            1,
            json!({"op": "getdents", "syscall": "getdents64", "fd": 3, "size": 32_768, "ret": 96}),
        ),
        (
            1,
            json!({"op": "close", "syscall": "close", "fd": 3, "ret": 0}),
        ),
        (
            1,
            json!({"op": "stat", "syscall": "lstat", "path": "out/latest", "ret": 0}),
        ),
        (
            1,
            json!({"op": "stat", "syscall": "access", "path": "lib/a.c", "mode": 4, "ret": 0}),
        ),
        (
            1,
            json!({"op": "open", "syscall": "openat", "path": "out/latest", "flags": ["O_RDONLY"], "ret": 3}),
        ),
        (
            1,
            json!({"op": "read", "syscall": "read", "fd": 3, "size": 65_536, "ret": 7000}),
        ),
        (
            1,
            json!({"op": "read", "syscall": "read", "fd": 3, "size": 65_536, "ret": 0}),
        ),
        (
            1,
            json!({"op": "close", "syscall": "close", "fd": 3, "ret": 0}),
        ),
    ];
    let calls = calls
        .into_iter()
        .enumerate()
        .map(|(n, (t, f))| call(t, n as f64 * 0.001, f))
        .collect();
    trace(2, initial, calls)
}

/// `fsarena run ARGS` at a tiny scale, once; its exit status, stderr and records.
fn run(args: &[&str], root: &Path, out: &str) -> (Option<i32>, String, Vec<serde_json::Value>) {
    let out = root.join(out);
    let run = Command::new(bin())
        .arg("run")
        .args(args)
        .args(["--quiet", "--scale", "0.001", "--runs", "1"])
        .arg("--work-dir")
        .arg(root.join("work"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&run.stderr).into_owned();
    let ms = if out.join("results.jsonl").exists() {
        measurements(&out)
    } else {
        Vec::new()
    };
    (run.status.code(), err, ms)
}

/// `fsarena run --workload replay --trace TRACE ARGS` as [`run`] makes it, in `root/out`:
/// its records, once it is checked that the run exited 0 with every record `ok` (a
/// replay's `ok` means every call ended as recorded and the tree is the one implied).
fn replay_ok(trace: &Path, args: &[&str], root: &Path, out: &str) -> Vec<serde_json::Value> {
    let t = trace.to_str().unwrap();
    let all: Vec<&str> = ["--workload", "replay", "--trace", t]
        .into_iter()
        .chain(args.iter().copied())
        .collect();
    let (code, err, ms) = run(&all, root, out);
    assert_eq!(code, Some(0), "{t}: {err}");
    assert!(
        !ms.is_empty() && ms.iter().all(|m| m["status"] == "ok"),
        "{t}: {ms:?}"
    );
    ms
}

/// A replay of `trace` on ext4 (fast timing, one run) under `strace -f` with `strace_args`
/// (`-e trace=…`, `-y`), its measurements all `ok`: the measurements and strace's log, so a
/// test can count the calls the replay itself made.
fn replay_under_strace(
    trace: &Path,
    root: &Path,
    strace_args: &[&str],
) -> (Vec<serde_json::Value>, String) {
    let log = root.join("strace.log");
    let out = root.join("out");
    let run = Command::new("strace")
        .args(["-f", "-qq"])
        .args(strace_args)
        .arg("-o")
        .arg(&log)
        .arg(bin())
        .args(["run", "--workload", "replay", "--trace"])
        .arg(trace)
        .args(["--target", "ext4", "--timing", "fast", "--quiet"])
        .args(["--scale", "0.001", "--runs", "1", "--work-dir"])
        .arg(root.join("work"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{err}");
    let ms = measurements(&out);
    assert!(ms.iter().all(|m| m["status"] == "ok"), "{ms:?}");
    (ms, std::fs::read_to_string(&log).unwrap())
}

fn metric(m: &serde_json::Value, k: &str) -> f64 {
    m["metrics"][k]
        .as_f64()
        .unwrap_or_else(|| panic!("no {k}: {}", m["metrics"]))
}

#[test]
fn a_trace_of_every_operation_replays_verified_on_ext4_and_tmpfs() {
    require_root();
    let root = TestRoot::new("replay-every");
    let t = save(&every_op(), &root.path.join("every.fstrace"));
    let ms = replay_ok(
        &t,
        &["--target", "ext4", "--target", "tmpfs"],
        &root.path,
        "out",
    );
    assert_eq!(ms.len(), 2, "{ms:?}");
    for m in &ms {
        assert_eq!(metric(m, "calls"), 34.0);
        assert!(metric(m, "calls_per_s") > 0.0);
        assert_eq!(metric(m, "read_ops"), 5.0);
        assert_eq!(metric(m, "fsync_ops"), 1.0);
        assert!(metric(m, "fsync_p99_us") >= metric(m, "fsync_p50_us"));
        // 8192 + 3808 + 50 + 7000 read; 5000 + 1000 written.
        assert_eq!(metric(m, "logical_read_bytes"), 19_050.0);
        assert_eq!(metric(m, "logical_write_bytes"), 6000.0);
        assert!(metric(m, "calls_waiting_on_other_threads") >= 1.0);
        assert_eq!(metric(m, "worker_threads"), 2.0);
        // On a loop target the initial state is the golden image the cell copied.
        if m["target"] == "ext4" {
            assert!(m["provenance"]["clone"].is_object(), "{}", m["provenance"]);
        }
    }
    // Defect: the report titled a two-thread replay "replay, 1 thread" (the cell's
    // `--threads`), its thread count being recorded under a name the titles do not read.
    let summary = std::fs::read_to_string(root.path.join("out/summary.md")).unwrap();
    assert!(summary.contains("## replay, 2 threads"), "{summary}");
    assert!(leftovers(&root.path).is_empty());
}

#[test]
fn a_tampered_trace_is_a_divergence_not_a_result() {
    require_root();
    let root = TestRoot::new("replay-tampered");
    let mut t = every_op();
    // Thread 1 opens a file nothing made, recorded as a success: it cannot succeed.
    t.calls[30].path = Some("out/never-made".into());
    let t = save(&t, &root.path.join("tampered.fstrace"));
    let args = [
        "--workload",
        "replay",
        "--trace",
        t.to_str().unwrap(),
        "--target",
        "tmpfs",
    ];
    let (_, err, ms) = run(&args, &root.path, "out");
    assert_eq!(ms.len(), 1, "{err}");
    assert_eq!(ms[0]["status"], "invalid", "{}", ms[0]);
    let why = ms[0]["error"].as_str().unwrap_or_default();
    assert!(
        why.contains("thread 1, call 30")
            && why.contains("openat out/never-made")
            && why.contains("recorded success (3), replayed ENOENT"),
        "{why}"
    );
    assert!(
        ms[0]["metrics"].get("calls_per_s").is_none(),
        "a divergence has no figures"
    );
}

#[test]
fn a_reader_never_runs_before_the_writer_it_depends_on() {
    require_root();
    let root = TestRoot::new("replay-order");
    // Thread 0 is busy with 2,000 stats before it writes `shared`; thread 1, recorded
    // after the write, reads it at once: only the wait makes its read find the bytes.
    let mut calls = Vec::new();
    for i in 0..2000 {
        calls.push(call(
            0,
            i as f64 * 1e-6,
            json!({"op": "stat", "syscall": "stat", "path": "busy", "ret": 0}),
        ));
    }
    calls.extend([
        call(0, 0.01, json!({"op": "open", "syscall": "openat", "path": "shared", "flags": ["O_WRONLY"], "ret": 3})),
        call(0, 0.011, json!({"op": "write", "syscall": "write", "fd": 3, "size": 65_536, "ret": 65_536})),
        call(0, 0.012, json!({"op": "close", "syscall": "close", "fd": 3, "ret": 0})),
        call(1, 0.013, json!({"op": "open", "syscall": "openat", "path": "shared", "flags": ["O_RDONLY"], "ret": 3})),
        call(1, 0.014, json!({"op": "read", "syscall": "read", "fd": 3, "size": 131_072, "ret": 65_536})),
        call(1, 0.015, json!({"op": "close", "syscall": "close", "fd": 3, "ret": 0})),
    ]);
    let initial = vec![
        entry(json!({"path": "busy", "kind": "file", "size": 1})),
        entry(json!({"path": "shared", "kind": "file", "size": 0})),
    ];
    let t = save(&trace(2, initial, calls), &root.path.join("order.fstrace"));
    for rep in 0..3 {
        // The read's byte count is checked against the recorded 65,536: ok means it got them.
        let ms = replay_ok(&t, &["--target", "tmpfs"], &root.path, &format!("out{rep}"));
        assert_eq!(metric(&ms[0], "logical_read_bytes"), 65_536.0);
    }
}

#[test]
fn bad_traces_are_refused_in_one_line_before_anything_is_provisioned() {
    let root = TestRoot::new("replay-bad");
    let good = every_op();
    let text = {
        let mut v = Vec::new();
        write(&good, &mut v).unwrap();
        String::from_utf8(v).unwrap()
    };
    let cut: String = text.lines().take(10).map(|l| format!("{l}\n")).collect();
    let mut absolute = good.clone();
    absolute.calls[0].path = Some("/etc/passwd".into());
    let mut escaping = good.clone();
    escaping.initial[3].target = Some("../../etc".into());
    escaping.calls[0].path = Some("lib/a.c".into());
    let mut cases = vec![
        ("cut", cut, "cut short"),
        (
            "version",
            text.replacen("\"fstrace\":1", "\"fstrace\":7", 1),
            "version 7",
        ),
        ("escaping", String::new(), "outside the traced root"),
        ("absolute", String::new(), "not inside the root"),
    ];
    for (name, t) in [("absolute", &absolute), ("escaping", &escaping)] {
        let mut v = Vec::new();
        write(t, &mut v).unwrap();
        if let Some(c) = cases.iter_mut().find(|c| c.0 == name) {
            c.1 = String::from_utf8(v).unwrap();
        }
    }
    for (name, body, why) in cases {
        let path = root.path.join(format!("{name}.fstrace"));
        std::fs::write(&path, body).unwrap();
        let args = [
            "--workload",
            "replay",
            "--trace",
            path.to_str().unwrap(),
            "--target",
            "ext4",
        ];
        let (code, err, _) = run(&args, &root.path, name);
        assert_eq!(code, Some(2), "{name}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{name}: {err}");
        assert!(
            err.contains(why) && err.contains(&*path.to_string_lossy()),
            "{name}: {err}"
        );
        assert!(
            !root.path.join(name).exists(),
            "{name}: a run directory was made"
        );
        let made = std::fs::read_dir(root.path.join("work")).map_or(0, |rd| rd.count());
        assert_eq!(made, 0, "{name}: something was provisioned");
    }
    // A plan file's table is read the same way; a missing trace is named too.
    let plan = root.path.join("plan.toml");
    std::fs::write(&plan, "workloads = [\"replay\"]\ntargets = [\"ext4\"]\n[workload.replay]\ntrace = \"/nonexistent.fstrace\"\n").unwrap();
    common::refused_before_provisioning(&root.path, &plan, "/nonexistent.fstrace");
}

/// The three timings on one trace: a first call recorded 0.3 s into the program, then a
/// second 0.4 s after it. `fast` waits for neither, `think` (issue 56) keeps the 0.4 s the
/// program spent between its calls but not the wait for the recorded start (what came
/// before the first traced call is not the program's work on its files), `original` both.
#[test]
fn each_timing_keeps_the_pauses_it_says() {
    require_root();
    let root = TestRoot::new("replay-timing");
    let stat = |start: f64| {
        call(
            0,
            start,
            json!({"op": "stat", "syscall": "stat", "path": "f", "ret": 0}),
        )
    };
    let initial = vec![entry(json!({"path": "f", "kind": "file", "size": 10}))];
    let t = save(
        &trace(1, initial, vec![stat(0.3), stat(0.7)]),
        &root.path.join("gap.fstrace"),
    );
    let mut seconds = Vec::new();
    for timing in ["fast", "think", "original"] {
        let args = ["--timing", timing, "--target", "tmpfs"];
        let ms = replay_ok(&t, &args, &root.path, timing);
        seconds.push(metric(&ms[0], "replay_seconds"));
    }
    assert!(seconds[0] < 0.1, "fast: {seconds:?}");
    assert!((0.4..0.65).contains(&seconds[1]), "think: {seconds:?}");
    assert!(seconds[2] >= 0.7, "original: {seconds:?}");
}

/// Defect (issue 37, fidelity): `--timing original` issued every call at its recorded start,
/// so a call that was slow where it was recorded (strace's stops, a busy disk) paced the
/// replay on every target: tar's 0.04 s replayed in 0.44 s. The pause kept is the think time
/// between one call's end and the next's start; the call's own time is the target's.
#[test]
fn original_timing_keeps_the_think_time_not_the_recorded_call_times() {
    require_root();
    let root = TestRoot::new("replay-think");
    // A stat that took 0.6 s when recorded, then one 0.1 s after it ended.
    let stat = |start: f64, dur: f64| {
        call(
            0,
            start,
            json!({"op": "stat", "syscall": "stat", "path": "f", "ret": 0, "dur": dur}),
        )
    };
    let initial = vec![entry(json!({"path": "f", "kind": "file", "size": 10}))];
    let t = save(
        &trace(1, initial, vec![stat(0.0, 0.6), stat(0.7, 0.0)]),
        &root.path.join("think.fstrace"),
    );
    let args = ["--timing", "original", "--target", "tmpfs"];
    let ms = replay_ok(&t, &args, &root.path, "out");
    let seconds = metric(&ms[0], "replay_seconds");
    assert!((0.1..0.5).contains(&seconds), "{seconds}");
}

/// Defect (issue 56): PostgreSQL's recording diverged, with every timing, where two of its
/// processes raced to create one directory: process 0's `mkdir(d)` is stamped first and
/// succeeds; process 1's `mkdir(d/x)`, stamped while it ran, failed with `ENOENT`, then its
/// `mkdir(d)` found `EEXIST`; both then made `d/x`, process 1 winning. Replayed by recorded
/// start the replay made `d` first ("recorded ENOENT, replayed success"). Overlapping calls
/// go in the order their results show.
#[test]
fn racing_mkdirs_of_two_processes_replay_in_the_order_their_results_show() {
    require_root();
    let root = TestRoot::new("replay-race");
    let mkdir = |thread: u32, start: f64, dur: f64, path: &str, err: Option<&str>| {
        let mut fields = json!({"op": "mkdir", "syscall": "mkdir", "path": path, "mode": 448});
        match err {
            Some(e) => fields["err"] = json!(e),
            None => fields["ret"] = json!(0),
        }
        fields["dur"] = json!(dur);
        call(thread, start, fields)
    };
    let calls = vec![
        mkdir(0, 1.961810, 0.000669, "d", None),
        mkdir(1, 1.961925, 0.0, "d/x", Some("ENOENT")),
        mkdir(1, 1.961925, 0.000574, "d", Some("EEXIST")),
        mkdir(0, 1.962508, 0.000028, "d/x", Some("EEXIST")),
        mkdir(1, 1.962508, 0.000028, "d/x", None),
    ];
    let t = save(&trace(2, vec![], calls), &root.path.join("race.fstrace"));
    for timing in ["fast", "think"] {
        let args = ["--target", "tmpfs", "--timing", timing];
        replay_ok(&t, &args, &root.path, timing);
    }
    assert!(leftovers(&root.path).is_empty());
}

/// Defect found at integration: git's shipped trace diverged at a `newfstatat` of the
/// dangling symlink it makes to probe symlink support, since the trace did not say the call
/// does not follow symlinks and the replay followed it (ENOENT). Every trace shipped in
/// `traces/` must replay verified.
#[test]
fn every_shipped_trace_replays_verified_on_tmpfs() {
    require_root();
    let root = TestRoot::new("replay-shipped");
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&shipped)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.to_string_lossy();
            name.ends_with(".fstrace") || name.ends_with(".fstrace.zst")
        })
        .collect();
    names.sort();
    assert!(names.len() >= 3, "{names:?}");
    // Fast timing: what is checked is every call's result and the tree, and the default's
    // pauses would add the C build's 12 s of compiling to the suite.
    for (i, t) in names.iter().enumerate() {
        let args = ["--target", "tmpfs", "--timing", "fast"];
        replay_ok(t, &args, &root.path, &format!("out{i}"));
    }
    assert!(leftovers(&root.path).is_empty());
}

/// `fsarena run ARGS --dry-run` with no history beside its results: its stdout with the
/// lines' wrapping undone, and its exit status.
fn dry_run(args: &[&str], root: &Path) -> (Option<i32>, String) {
    let run = Command::new(bin())
        .arg("run")
        .args(args)
        .args([
            "--dry-run",
            "--target",
            "ext4",
            "--scale",
            "0.1",
            "--runs",
            "1",
        ])
        .arg("--work-dir")
        .arg(root.join("work"))
        .arg("--out")
        .arg(root.join("history").join("out"))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&run.stdout);
    let err = String::from_utf8_lossy(&run.stderr);
    let text = out.split_whitespace().collect::<Vec<_>>().join(" ");
    (run.status.code(), format!("{text} {err}"))
}

/// Defect (issue 37): a replay's dry run, space check and cost estimate described the
/// default data set ("data set: small at scale 0.01 … 2500 files", and a disk figure and
/// estimate that belong to it) instead of its trace's initial state. A plan that runs a
/// replay beside a data-set workload is described with both.
#[test]
fn a_replays_dry_run_describes_its_traces_initial_state_not_the_data_set() {
    let root = TestRoot::new("replay-dry-run");
    // One 3 MiB file the program found, to which it appends 1 MiB.
    let initial = vec![entry(json!({"path": "f", "kind": "file", "size": 3 << 20}))];
    let calls = vec![
        call(
            0,
            0.0,
            json!({"op": "open", "syscall": "openat", "path": "f",
            "flags": ["O_WRONLY", "O_APPEND"], "ret": 3}),
        ),
        call(
            0,
            0.1,
            json!({"op": "write", "syscall": "write", "fd": 3,
            "size": 1 << 20, "ret": 1 << 20}),
        ),
        call(
            0,
            0.2,
            json!({"op": "close", "syscall": "close", "fd": 3, "ret": 0}),
        ),
    ];
    let t = save(&trace(1, initial, calls), &root.path.join("t.fstrace"));
    let t = t.to_str().unwrap();
    let (code, out) = dry_run(&["--workload", "replay", "--trace", t], &root.path);
    assert_eq!(code, Some(0), "{out}");
    let state = format!(
        "initial state of replay: 1 file, 3.0 MiB, from {t} (up to 4.0 MiB with what its phase adds)"
    );
    assert!(out.contains(&state), "{out}");
    assert!(!out.contains("data set: "), "{out}");
    assert!(
        out.contains("written once with a workload's initial state"),
        "{out}"
    );
    // The data set at scale 0.1 (25k files, 390 MiB) needs about 1.8 GiB of disk and ~8 s
    // by the coarse model; the trace a few hundred MiB (the fixed part) and ~2.4 s.
    let disk = out.split("disk: up to ").nth(1).unwrap_or_default();
    assert!(
        disk.split(" at once").next().unwrap().ends_with("MiB"),
        "{out}"
    );
    let estimate = out.split("estimate: about ").nth(1).unwrap_or_default();
    let secs = humantime::parse_duration(estimate.split(' ').next().unwrap()).unwrap();
    assert!(secs.as_secs() < 4, "{out}");
    // Beside a workload that starts from the data set: both.
    let (code, out) = dry_run(&["--workload", "replay,scan", "--trace", t], &root.path);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains(&state), "{out}");
    assert!(out.contains("data set: small at scale 0.1"), "{out}");
}

/// Defect (issue 56): a replay's cell ran on any CPU whatever its trace's threads (the
/// replay takes no `--threads`, so its thread count was unknown to `--cpus auto`), while a
/// cell of one thread, and the corpus's real program of a one-thread trace, ran on one CPU
/// with its FUSE daemon: `cp -a`'s replay on ntfs crossed vCPUs on every request and took
/// 0.79 s against the program's 0.34 s. A replay is placed by its trace's threads.
#[test]
fn a_replay_is_placed_by_its_traces_threads_as_a_cell_of_that_many_threads() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert!(cpus >= 2, "this test needs a host with two CPUs or more");
    let root = TestRoot::new("replay-placement");
    let stat = |t: u32| {
        call(
            t,
            0.0,
            json!({"op": "stat", "syscall": "newfstatat", "path": "f", "ret": 0}),
        )
    };
    let initial = || vec![entry(json!({"path": "f", "kind": "file", "size": 10}))];
    let one = save(
        &trace(1, initial(), vec![stat(0)]),
        &root.path.join("one.fstrace"),
    );
    let (code, out) = dry_run(
        &["--workload", "replay", "--trace", one.to_str().unwrap()],
        &root.path,
    );
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("CPUs: 1-thread cells on CPU "), "{out}");
    assert!(out.contains("with their file system's daemon"), "{out}");
    // As many threads as CPUs: anywhere, as a cell of that many --threads.
    let calls = (0..cpus as u32).map(stat).collect();
    let many = save(
        &trace(cpus as u32, initial(), calls),
        &root.path.join("many.fstrace"),
    );
    let (code, out) = dry_run(
        &["--workload", "replay", "--trace", many.to_str().unwrap()],
        &root.path,
    );
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("CPUs: every cell on any CPU"), "{out}");
}

/// The calls issue #56 names beyond the first format's: the sync family with its flags,
/// an msync'd shared mapping, attributes, locks, renameat2's flags, pwritev2's RWF_DSYNC, a
/// splice into a file, a punched hole, O_APPEND and O_DSYNC. Each replays and ends as
/// recorded on tmpfs, and the run's self-check counts the bytes as the trace does, times the
/// replay against the program on the type it was recorded on, and warns of the io_uring
/// calls the trace could not hold.
#[test]
fn calls_of_every_newer_kind_replay_verified_with_their_self_check() {
    require_root();
    let root = TestRoot::new("replay-newer");
    let initial = vec![
        entry(json!({"path": "db", "kind": "file", "size": 65_536})),
        entry(json!({"path": "x", "kind": "file", "size": 10})),
        entry(json!({"path": "y", "kind": "file", "size": 20})),
    ];
    let calls = [
        (
            0,
            json!({"op": "open", "syscall": "openat", "path": "db", "flags": ["O_RDWR"], "ret": 3}),
        ),
        (
            0,
            json!({"op": "lock", "syscall": "fcntl", "fd": 3, "flags": ["F_SETLKW", "F_WRLCK"], "ret": 0}),
        ),
        (
            0,
            json!({"op": "write", "syscall": "pwritev2", "fd": 3, "size": 4096, "offset": 8192, "flags": ["RWF_DSYNC"], "ret": 4096}),
        ),
        (
            0,
            json!({"op": "msync", "syscall": "msync", "path": "db", "offset": 57_344, "size": 8192, "flags": ["MS_SYNC"], "ret": 0}),
        ),
        (
            0,
            json!({"op": "sync_file_range", "syscall": "sync_file_range", "fd": 3, "offset": 0, "size": 0, "flags": ["SYNC_FILE_RANGE_WAIT_BEFORE", "SYNC_FILE_RANGE_WRITE", "SYNC_FILE_RANGE_WAIT_AFTER"], "ret": 0}),
        ),
        (
            0,
            json!({"op": "fallocate", "syscall": "fallocate", "fd": 3, "offset": 0, "size": 4096, "mode": 3, "ret": 0}),
        ),
        (
            0,
            json!({"op": "setxattr", "syscall": "fsetxattr", "fd": 3, "size": 5, "ret": 0}),
        ),
        (
            0,
            json!({"op": "getxattr", "syscall": "fgetxattr", "fd": 3, "size": 128, "ret": 5}),
        ),
        (
            0,
            json!({"op": "getxattr", "syscall": "listxattr", "path": "db", "size": 0, "ret": 13}),
        ),
        (
            0,
            json!({"op": "removexattr", "syscall": "removexattr", "path": "db", "ret": 0}),
        ),
        (
            0,
            json!({"op": "lock", "syscall": "fcntl", "fd": 3, "flags": ["F_SETLK", "F_UNLCK"], "ret": 0}),
        ),
        (
            0,
            json!({"op": "syncfs", "syscall": "syncfs", "fd": 3, "ret": 0}),
        ),
        (
            0,
            json!({"op": "close", "syscall": "close", "fd": 3, "ret": 0}),
        ),
        (
            1,
            json!({"op": "open", "syscall": "openat", "path": "log", "flags": ["O_WRONLY", "O_CREAT", "O_APPEND", "O_DSYNC"], "mode": 420, "ret": 3}),
        ),
        (
            1,
            json!({"op": "lock", "syscall": "flock", "fd": 3, "flags": ["LOCK_EX"], "ret": 0}),
        ),
        (
            1,
            json!({"op": "write", "syscall": "write", "fd": 3, "size": 100, "ret": 100}),
        ),
        (
            1,
            json!({"op": "write", "syscall": "splice", "fd": 3, "size": 512, "ret": 512}),
        ),
        (
            1,
            json!({"op": "close", "syscall": "close", "fd": 3, "ret": 0}),
        ),
        (
            1,
            json!({"op": "rename", "syscall": "renameat2", "path": "x", "path2": "y", "flags": ["RENAME_EXCHANGE"], "ret": 0}),
        ),
        (
            1,
            json!({"op": "rename", "syscall": "renameat2", "path": "x", "path2": "y", "flags": ["RENAME_NOREPLACE"], "err": "EEXIST"}),
        ),
        (1, json!({"op": "sync", "syscall": "sync", "ret": 0})),
    ];
    let calls = calls
        .into_iter()
        .enumerate()
        .map(|(n, (t, f))| call(t, n as f64 * 0.001, f))
        .collect();
    let mut t = trace(2, initial, calls);
    t.header.fs_type = Some("tmpfs".into());
    t.header.unseen.insert("io_uring_enter".into(), 2);
    let t = save(&t, &root.path.join("newer.fstrace"));
    let ms = replay_ok(&t, &["--target", "tmpfs"], &root.path, "out");
    let m = &ms[0];
    // 4096 + 8192 (the msync) + 100 + 512 written, all of it synced on the way.
    for what in ["written", "synced"] {
        assert_eq!(
            metric(m, &format!("trace_{what}_bytes")),
            12_900.0,
            "{what}"
        );
        assert_eq!(
            metric(m, &format!("replayed_{what}_bytes")),
            12_900.0,
            "{what}"
        );
    }
    assert_eq!(metric(m, "replayed_lock_calls"), 3.0);
    assert_eq!(metric(m, "replay_unseen_io"), 2.0);
    assert_eq!(metric(m, "replay_incomplete"), 1.0);
    assert!(metric(m, "replay_time_gap_pct").is_finite());
    let notes = m["notes"].to_string();
    assert!(
        notes.contains("self-check: 21 calls replayed, 0 left out"),
        "{notes}"
    );
    assert!(notes.contains("2 io_uring_enter calls"), "{notes}");
    assert!(leftovers(&root.path).is_empty());
}

/// Defect (issue #56): the trace holds a `copy_file_range` as a read of one descriptor and a
/// write of the other, and the replay issued them as a read and a write, moving every byte
/// through itself. `cp -a` copies with copy_file_range, which xfs serves by sharing the
/// extents, so its replay was twice as slow against ext4 as the program (0.88 against 0.48).
/// Replayed as the copy it was, the 8 MiB copy writes next to nothing on xfs and the whole
/// file on ext4, a sendfile between two files is issued as one too, and every call still
/// ends as recorded (the tree check sees both copies' sizes).
#[test]
fn a_copy_file_range_replays_as_a_copy_so_xfs_shares_the_extents() {
    require_root();
    let root = TestRoot::new("replay-copy");
    const SIZE: u64 = 8 << 20;
    let initial = vec![entry(json!({"path": "src", "kind": "file", "size": SIZE}))];
    let half = |op: &str, fd: i32, moved: u64| json!({"op": op, "syscall": "copy_file_range", "fd": fd, "size": moved, "ret": moved});
    let calls = [
        json!({"op": "open", "syscall": "openat", "path": "src", "flags": ["O_RDONLY"], "ret": 3}),
        json!({"op": "open", "syscall": "openat", "path": "dst", "flags": ["O_WRONLY", "O_CREAT", "O_EXCL"], "mode": 420, "ret": 4}),
        half("read", 3, SIZE),
        half("write", 4, SIZE),
        half("read", 3, 0),
        half("write", 4, 0),
        json!({"op": "close", "syscall": "close", "fd": 4, "ret": 0}),
        // sendfile from a position in the source, which stays where it was.
        json!({"op": "open", "syscall": "openat", "path": "part", "flags": ["O_WRONLY", "O_CREAT"], "mode": 420, "ret": 4}),
        json!({"op": "read", "syscall": "sendfile", "fd": 3, "size": 4096, "offset": 8192, "ret": 4096}),
        json!({"op": "write", "syscall": "sendfile", "fd": 4, "size": 4096, "ret": 4096}),
        json!({"op": "close", "syscall": "close", "fd": 4, "ret": 0}),
        json!({"op": "close", "syscall": "close", "fd": 3, "ret": 0}),
    ];
    // The two halves of one call start together.
    let starts = [
        0.0, 0.001, 0.002, 0.002, 0.003, 0.003, 0.004, 0.005, 0.006, 0.006, 0.007, 0.008,
    ];
    let calls = calls
        .into_iter()
        .zip(starts)
        .map(|(f, s)| call(0, s, f))
        .collect();
    let t = save(&trace(1, initial, calls), &root.path.join("copy.fstrace"));
    let args = ["--target", "ext4", "--target", "xfs", "--timing", "fast"];
    let ms = replay_ok(&t, &args, &root.path, "out");
    let written = |fs: &str| {
        let m = ms.iter().find(|m| m["target"] == fs).expect(fs);
        assert_eq!(
            metric(m, "logical_write_bytes"),
            (SIZE + 4096) as f64,
            "{m}"
        );
        assert_eq!(metric(m, "calls"), 12.0, "{m}");
        let notes = m["notes"].to_string();
        assert!(notes.contains("3 copies between two files"), "{notes}");
        metric(m, "device_write_bytes")
    };
    let (ext4, xfs) = (written("ext4"), written("xfs"));
    assert!(ext4 >= SIZE as f64, "ext4 wrote {ext4} bytes");
    assert!(xfs < (SIZE / 4) as f64, "xfs wrote {xfs} bytes");
    assert!(leftovers(&root.path).is_empty());
}

/// Defect (issue #56): changes of mode, owner and times were neither recorded nor replayed
/// (`cp -a` makes one per file). Each form replays on tmpfs and ends as recorded — a chmod
/// of a missing file fails with ENOENT as it did — and the self-check counts them.
#[test]
fn changes_of_mode_owner_and_times_replay_as_recorded() {
    require_root();
    let root = TestRoot::new("replay-setattr");
    let initial = vec![
        entry(json!({"path": "d", "kind": "dir"})),
        entry(json!({"path": "d/x", "kind": "file", "size": 100})),
        entry(json!({"path": "l", "kind": "symlink", "target": "d/x"})),
    ];
    let setattr = |syscall: &str, at: serde_json::Value| {
        let mut v = json!({"op": "setattr", "syscall": syscall, "ret": 0});
        v.as_object_mut()
            .unwrap()
            .extend(at.as_object().unwrap().clone());
        v
    };
    let calls = [
        setattr(
            "utimensat",
            json!({"path": "l", "flags": ["AT_SYMLINK_NOFOLLOW"]}),
        ),
        setattr("fchmodat", json!({"path": "d/x", "mode": 0o600})),
        setattr("fchownat", json!({"path": "d", "owner": [0, 0]})),
        setattr(
            "lchown",
            json!({"path": "l", "owner": [1, -1], "flags": ["AT_SYMLINK_NOFOLLOW"]}),
        ),
        json!({"op": "open", "syscall": "openat", "path": "d/x", "flags": ["O_RDONLY"], "ret": 3}),
        setattr("fchmod", json!({"fd": 3, "mode": 0o644})),
        setattr("fchown", json!({"fd": 3, "owner": [-1, 1000]})),
        setattr("utimensat", json!({"fd": 3})),
        json!({"op": "setattr", "syscall": "chmod", "path": "y", "mode": 0o755, "err": "ENOENT"}),
        json!({"op": "close", "syscall": "close", "fd": 3, "ret": 0}),
    ];
    let calls = one_thread(calls);
    let t = save(
        &trace(1, initial, calls),
        &root.path.join("setattr.fstrace"),
    );
    let args = ["--target", "tmpfs", "--timing", "fast"];
    let ms = replay_ok(&t, &args, &root.path, "out");
    assert_eq!(metric(&ms[0], "replayed_setattr_calls"), 8.0);
    assert!(leftovers(&root.path).is_empty());
}

/// Defect (issue #56): exFAT keeps no extended attributes and no owners, so `cp -a`'s
/// recorded `fsetxattr`s (EOPNOTSUPP there) and a chown to another owner (EPERM) made the
/// replay a divergence, and no exFAT result at all. The program would have met the same
/// refusals on exFAT; the replay ends `ok` and its self-check counts them.
#[test]
fn attributes_exfat_does_not_keep_are_counted_not_a_divergence() {
    require_root();
    let root = TestRoot::new("replay-not-kept");
    let initial = vec![entry(json!({"path": "f", "kind": "file", "size": 100}))];
    let calls = [
        json!({"op": "open", "syscall": "openat", "path": "f", "flags": ["O_RDWR"], "ret": 3}),
        json!({"op": "setxattr", "syscall": "fsetxattr", "fd": 3, "size": 28, "ret": 0}),
        json!({"op": "setattr", "syscall": "fchown", "fd": 3, "owner": [1000, 1000], "ret": 0}),
        json!({"op": "setattr", "syscall": "fchmod", "fd": 3, "mode": 0o600, "ret": 0}),
        json!({"op": "close", "syscall": "close", "fd": 3, "ret": 0}),
    ];
    let calls = one_thread(calls);
    let t = save(&trace(1, initial, calls), &root.path.join("attrs.fstrace"));
    let args = ["--target", "exfat", "--timing", "fast"];
    let ms = replay_ok(&t, &args, &root.path, "out");
    assert_eq!(metric(&ms[0], "replay_attrs_not_kept"), 2.0);
    let notes = ms[0]["notes"].to_string();
    assert!(
        notes.contains("2 attribute calls (1 setxattr, 1 setattr)"),
        "{notes}"
    );
    assert!(leftovers(&root.path).is_empty());
}

/// Defect (issue 56): a mapping of a file opened with `O_DIRECT` was replayed as `pread`s
/// through that descriptor, and the last, unaligned piece of a 10,000-byte file failed with
/// EINVAL: the cell ended invalid. The program's loads went through the page cache whatever
/// its descriptor's flags; the replay reads the range through a buffered descriptor of the
/// same file, and its self-check counts the bytes.
#[test]
fn a_mapping_of_a_file_opened_with_o_direct_is_read_through_the_page_cache() {
    require_root();
    let root = TestRoot::new("replay-direct-map");
    let initial = vec![entry(json!({"path": "f", "kind": "file", "size": 10_000}))];
    let calls = one_thread([
        json!({"op": "open", "syscall": "openat", "path": "f", "flags": ["O_RDONLY", "O_DIRECT"], "ret": 3}),
        json!({"op": "map_read", "syscall": "mmap", "fd": 3, "flags": ["PROT_READ", "MAP_SHARED"], "size": 12_288, "offset": 0, "ret": 10_000}),
        json!({"op": "read", "syscall": "pread64", "fd": 3, "size": 4096, "offset": 4096, "ret": 4096}),
        json!({"op": "close", "syscall": "close", "fd": 3, "ret": 0}),
    ]);
    let t = save(&trace(1, initial, calls), &root.path.join("direct.fstrace"));
    let args = ["--target", "ext4", "--timing", "fast"];
    let ms = replay_ok(&t, &args, &root.path, "out");
    assert_eq!(metric(&ms[0], "replayed_map_read_bytes"), 10_000.0);
    assert_eq!(metric(&ms[0], "replayed_read_bytes"), 4096.0);
    assert!(leftovers(&root.path).is_empty());
}

/// Defect (issue 56): each range a program read through a mapping was replayed as an
/// `fstat` (to bound it by the file) and its reads, where the program's page faults make
/// no call at all. On ntfs-3g every `fstat` is a round trip to the daemon (~18 µs): git's
/// 10,172 mapped objects cost its replay ~0.2 s the program never spent, so the replay ran
/// slower on ntfs than git did. The replay now asks the file system for the reads only
/// (strace on it; the flag query that finds an `O_DIRECT` descriptor is answered by the
/// kernel from the open file), still bounded by the file: a range past its end reads what
/// the file holds.
#[test]
fn a_mapping_s_reads_are_replayed_without_a_stat_before_each() {
    require_root();
    let root = TestRoot::new("replay-map-reads-only");
    let initial = vec![entry(json!({"path": "f", "kind": "file", "size": 10_000}))];
    let map = |offset: u64, ret: u64| json!({"op": "map_read", "syscall": "mmap", "fd": 3, "flags": ["PROT_READ", "MAP_PRIVATE"], "size": 8192, "offset": offset, "ret": ret});
    let calls = one_thread([
        json!({"op": "open", "syscall": "openat", "path": "f", "flags": ["O_RDONLY"], "ret": 3}),
        map(0, 8192),
        map(4096, 5904),
        map(8192, 8192),
        json!({"op": "close", "syscall": "close", "fd": 3, "ret": 0}),
    ]);
    let t = save(&trace(1, initial, calls), &root.path.join("maps.fstrace"));
    let (ms, text) = replay_under_strace(
        &t,
        &root.path,
        &[
            "-y",
            "-e",
            "trace=fstat,newfstatat,statx,fcntl,pread64,mmap",
        ],
    );
    // 8,192 + 5,904 + the 1,808 the file holds past 8,192.
    assert_eq!(metric(&ms[0], "replayed_map_read_bytes"), 15_904.0);
    let on_f: Vec<&str> = text.lines().filter(|l| l.contains("/f>")).collect();
    let reads = on_f
        .iter()
        .filter(|l| l.contains("pread64(") || l.contains("mmap("))
        .count();
    let flags = on_f.iter().filter(|l| l.contains("F_GETFL")).count();
    assert_eq!(
        reads + flags,
        on_f.len(),
        "stats besides the reads: {on_f:#?}"
    );
    assert!(reads >= 3, "{on_f:#?}");
    assert!(leftovers(&root.path).is_empty());
}

/// Defect (issue 56): a range a program read through a mapping was replayed as `pread`s,
/// so the replay made none of the program's mapping work: git's 10,267 `mmap`s and 10,193
/// `munmap`s (111 ms inside the kernel on ext4, the same on every file system), which left
/// its replay's ratios between file systems steeper than git's (ntfs against ext4 +12 %
/// paired over five runs). Each range is now mapped with the recorded length, its pages
/// faulted in (`MADV_POPULATE_READ`) and unmapped (strace on the replay); a range the
/// replay's file ends inside is read up to that end, as before.
#[test]
fn a_mapped_range_is_replayed_as_a_mapping_faulted_in_and_unmapped() {
    require_root();
    let root = TestRoot::new("replay-map-as-map");
    let initial = vec![entry(json!({"path": "f", "kind": "file", "size": 20_000}))];
    let map = |offset: u64, ret: u64| json!({"op": "map_read", "syscall": "mmap", "fd": 3, "flags": ["PROT_READ", "MAP_PRIVATE"], "size": 12_288, "offset": offset, "ret": ret});
    let calls = one_thread([
        json!({"op": "open", "syscall": "openat", "path": "f", "flags": ["O_RDONLY"], "ret": 3}),
        map(0, 12_288),
        map(8192, 11_808),
        json!({"op": "close", "syscall": "close", "fd": 3, "ret": 0}),
    ]);
    let t = save(&trace(1, initial, calls), &root.path.join("maps.fstrace"));
    let (ms, text) = replay_under_strace(
        &t,
        &root.path,
        &["-y", "-e", "trace=pread64,mmap,madvise,munmap"],
    );
    assert_eq!(metric(&ms[0], "replayed_map_read_bytes"), 24_096.0);
    let maps: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("mmap(") && l.contains("/f>"))
        .collect();
    assert_eq!(maps.len(), 2, "{maps:#?}");
    // The replay's descriptor numbers are its own; the offsets strace prints in hex.
    assert!(
        maps[0].contains(", 12288, PROT_READ, MAP_PRIVATE, "),
        "{maps:#?}"
    );
    assert!(maps[0].contains("/f>, 0) = 0x"), "{maps:#?}");
    assert!(
        maps[1].contains(", 11808, PROT_READ, MAP_PRIVATE, "),
        "{maps:#?}"
    );
    assert!(maps[1].contains("/f>, 0x2000) = 0x"), "{maps:#?}");
    let populated = text
        .lines()
        .filter(|l| l.contains("MADV_POPULATE_READ) = 0"))
        .count();
    assert_eq!(populated, 2, "{text}");
    let preads_on_f = text
        .lines()
        .filter(|l| l.contains("pread64(") && l.contains("/f>"))
        .count();
    assert_eq!(preads_on_f, 0, "{text}");
    assert!(leftovers(&root.path).is_empty());
}

/// Records `script` (python3) in `dir` with `fsarena record`, to `trace`.
fn record_python(dir: &Path, trace: &Path, script: &str) {
    std::fs::create_dir_all(dir).unwrap();
    let rec = Command::new(bin())
        .current_dir(dir)
        .args(["record", "--out"])
        .arg(trace)
        .args(["--", "python3", "-c", script])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&rec.stderr);
    assert_eq!(rec.status.code(), Some(0), "{err}");
}

/// Issue 56: a lock was an ordering point only and made no call, so a program's locks cost
/// the replay nothing, and a program that was refused a lock (flock conflicts between two
/// open files, even in one process) replayed it as taken: a divergence. Recorded for real
/// (python's flock and lockf: flock, and fcntl F_SETLKW on one byte at 100), each lock is
/// issued on the replayed descriptor with its kind and range, never blocking (strace on the
/// replay counts them), the refusal is the program's, and the self-check counts the calls.
#[test]
fn advisory_locks_are_issued_non_blocking_with_their_kind_and_range() {
    require_root();
    let root = TestRoot::new("replay-locks");
    let t = root.path.join("locks.fstrace");
    record_python(
        &root.path.join("rec"),
        &t,
        "import fcntl\n\
         a = open('f', 'w'); b = open('f', 'r+')\n\
         fcntl.flock(a, fcntl.LOCK_EX)\n\
         try:\n    fcntl.flock(b, fcntl.LOCK_EX | fcntl.LOCK_NB)\nexcept BlockingIOError:\n    pass\n\
         fcntl.flock(a, fcntl.LOCK_UN)\n\
         fcntl.flock(b, fcntl.LOCK_SH | fcntl.LOCK_NB)\n\
         fcntl.lockf(a, fcntl.LOCK_EX, 1, 100)\n\
         fcntl.lockf(a, fcntl.LOCK_UN, 1, 100)\n",
    );
    let (ms, text) = replay_under_strace(&t, &root.path, &["-y", "-e", "trace=flock,fcntl"]);
    assert_eq!(metric(&ms[0], "replayed_lock_calls"), 6.0);
    // The replay's own calls on the replayed file (strace -y names it), every one
    // non-blocking: the refused flock refused again, with the program's EWOULDBLOCK.
    let on_f = |l: &&str| l.contains("/f>");
    let flocks: Vec<&str> = text
        .lines()
        .filter(on_f)
        .filter(|l| l.contains("flock("))
        .collect();
    assert_eq!(flocks.len(), 4, "{flocks:?}");
    assert!(
        flocks
            .iter()
            .all(|l| l.contains("LOCK_NB") || l.contains("LOCK_UN")),
        "{flocks:?}"
    );
    assert_eq!(
        flocks.iter().filter(|l| l.contains("EAGAIN")).count(),
        1,
        "{flocks:?}"
    );
    let ranges: Vec<&str> = text
        .lines()
        .filter(on_f)
        .filter(|l| l.contains("F_SETLK,") && l.contains("l_start=100, l_len=1"))
        .collect();
    assert_eq!(ranges.len(), 2, "{text}");
    assert!(leftovers(&root.path).is_empty());
}

/// Defect (issue 56): `fallocate -l 8M f && fallocate -p -o 1M -l 2M f` (and a keep-size
/// one), recorded on ext4, ended invalid replayed on ntfs-3g and exfat-fuse: both refuse
/// every fallocate mode with EOPNOTSUPP, where the program had success. That refusal is
/// what the program would have met there: the replay ends `ok`, its self-check counts the
/// calls the target refused, and the plain fallocate leaves the size it asked for (as
/// glibc's posix_fallocate leaves it where the file system has none), so the tree agrees.
#[test]
fn fallocates_a_fuse_file_system_refuses_are_counted_not_a_divergence() {
    require_root();
    let root = TestRoot::new("replay-falloc-fuse");
    let calls = one_thread([
        json!({"op": "open", "syscall": "openat", "path": "f", "flags": ["O_WRONLY", "O_CREAT"], "mode": 0o644, "ret": 3}),
        json!({"op": "fallocate", "syscall": "fallocate", "fd": 3, "offset": 0, "size": 8 << 20, "mode": 0, "ret": 0}),
        json!({"op": "close", "syscall": "close", "fd": 3, "ret": 0}),
        json!({"op": "open", "syscall": "openat", "path": "f", "flags": ["O_WRONLY"], "ret": 3}),
        json!({"op": "fallocate", "syscall": "fallocate", "fd": 3, "offset": 1 << 20, "size": 2 << 20, "mode": 3, "ret": 0}),
        json!({"op": "fallocate", "syscall": "fallocate", "fd": 3, "offset": 8 << 20, "size": 1 << 20, "mode": 1, "ret": 0}),
        json!({"op": "close", "syscall": "close", "fd": 3, "ret": 0}),
    ]);
    let t = save(&trace(1, vec![], calls), &root.path.join("falloc.fstrace"));
    for fs in ["ntfs", "exfat"] {
        let args = ["--target", fs, "--timing", "fast"];
        let ms = replay_ok(&t, &args, &root.path, &format!("out-{fs}"));
        assert_eq!(metric(&ms[0], "replayed_fallocate_calls"), 3.0);
        assert_eq!(metric(&ms[0], "refused_fallocate_calls"), 3.0, "{fs}");
        let notes = ms[0]["notes"].to_string();
        assert!(
            notes.contains("3 calls (3 fallocate) were refused"),
            "{notes}"
        );
    }
    // Where the file system does them, nothing is refused.
    let ms = replay_ok(&t, &["--target", "ext4"], &root.path, "out-ext4");
    assert!(ms[0]["metrics"].get("refused_fallocate_calls").is_none());
    assert!(leftovers(&root.path).is_empty());
}

/// Defect (issue 56): `mv a/x b/` recorded on ext4 (coreutils renames with
/// `RENAME_NOREPLACE`) ended invalid replayed on ntfs-3g: a FUSE daemon without renameat2
/// makes the kernel refuse the flag with EINVAL, where `mv` there checks that the new name
/// is free and renames without it. The replay does the same and counts it.
#[test]
fn a_rename_ntfs_refuses_noreplace_for_is_done_as_mv_does_there() {
    require_root();
    let root = TestRoot::new("replay-noreplace");
    let initial = vec![
        entry(json!({"path": "a", "kind": "dir"})),
        entry(json!({"path": "a/x", "kind": "file", "size": 100})),
        entry(json!({"path": "b", "kind": "dir"})),
    ];
    let calls = one_thread([
        json!({"op": "rename", "syscall": "renameat2", "path": "a/x", "path2": "b", "flags": ["RENAME_NOREPLACE"], "err": "EEXIST"}),
        json!({"op": "rename", "syscall": "renameat2", "path": "a/x", "path2": "b/x", "flags": ["RENAME_NOREPLACE"], "ret": 0}),
    ]);
    let t = save(&trace(1, initial, calls), &root.path.join("mv.fstrace"));
    let args = ["--target", "ntfs", "--timing", "fast"];
    let ms = replay_ok(&t, &args, &root.path, "out");
    assert_eq!(metric(&ms[0], "renames_without_their_flags"), 1.0);
    assert!(leftovers(&root.path).is_empty());
}

/// Defect (issue 56): record kept an initial file's size, not its holes, and the replay laid
/// it down whole. `cp --sparse=always big copy` walks its source with `SEEK_DATA` and
/// `SEEK_HOLE`; from the end of the source's one piece of data (1 MiB at 8 MiB of 32 MiB)
/// `SEEK_DATA` found ENXIO for the program and data in the replay's whole file, so the
/// replay ended invalid on every file system. Recorded for real, the trace keeps the piece,
/// and the replay lays the file down with its holes: ok, every call as recorded.
/// On a file system that keeps no holes the file is whole and the difference is counted.
#[test]
fn an_initial_sparse_file_is_laid_down_with_its_holes_so_seek_data_replays_as_recorded() {
    require_root();
    let root = TestRoot::new("replay-holes");
    let dir = root.path.join("rec");
    std::fs::create_dir_all(&dir).unwrap();
    let made = Command::new("sh")
        .current_dir(&dir)
        .args(["-c", "truncate -s 32M big && dd if=/dev/urandom of=big bs=1M count=1 seek=8 conv=notrunc iflag=fullblock status=none"])
        .status()
        .unwrap();
    assert!(made.success());
    let t = root.path.join("cp.fstrace");
    let rec = Command::new(bin())
        .current_dir(&dir)
        .args(["record", "--out"])
        .arg(&t)
        .args(["--", "sh", "-c", "cp --sparse=always big copy && sync"])
        .output()
        .unwrap();
    assert_eq!(
        rec.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&rec.stderr)
    );
    for fs in ["ext4", "xfs"] {
        let args = ["--target", fs, "--timing", "fast"];
        let ms = replay_ok(&t, &args, &root.path, &format!("out-{fs}"));
        assert!(
            ms[0]["metrics"].get("initial_holes_not_kept").is_none(),
            "{fs}"
        );
    }
    // ntfs-3g answers SEEK_DATA and SEEK_HOLE as if every byte were data: there the
    // program's ENXIO is data found, warned of and counted, not a divergence.
    let ms = replay_ok(
        &t,
        &["--target", "ntfs", "--timing", "fast"],
        &root.path,
        "out-ntfs",
    );
    assert_eq!(metric(&ms[0], "initial_holes_not_kept"), 1.0);
    assert_eq!(metric(&ms[0], "seeks_into_holes_not_kept"), 1.0);
    let file = std::fs::File::open(&t).unwrap();
    let trace = fsarena::trace::format::read(std::io::BufReader::new(file)).unwrap();
    let big = trace.initial.iter().find(|e| e.path == "big").unwrap();
    assert_eq!(big.data, Some(vec![[8 << 20, 1 << 20]]));
    // The program met the end of the data: the call that diverged before.
    let enxio = |c: &&Call| c.op == Op::Seek && c.err.as_deref() == Some("ENXIO");
    assert!(trace.calls.iter().any(|c| enxio(&c)), "{:?}", trace.calls);
    assert!(leftovers(&root.path).is_empty());
}

/// Defect: each mapping of a descriptor opened with `O_DIRECT` opened and closed a buffered
/// twin of the file (through `/proc/self/fd`) to read its range: two calls the program did
/// not make, timed in every `map_read`'s latency. The twin is now opened at the descriptor's
/// first mapping and closed with it: three mappings of one open file and one of a second
/// open of it make two twins (strace on the replay counts them), where they made four.
#[test]
fn an_o_direct_descriptor_s_mappings_share_one_buffered_twin_until_it_closes() {
    require_root();
    let root = TestRoot::new("replay-direct-twin");
    let initial = vec![entry(json!({"path": "f", "kind": "file", "size": 10_000}))];
    let open = json!({"op": "open", "syscall": "openat", "path": "f", "flags": ["O_RDONLY", "O_DIRECT"], "ret": 3});
    let map = json!({"op": "map_read", "syscall": "mmap", "fd": 3, "flags": ["PROT_READ", "MAP_SHARED"], "size": 12_288, "offset": 0, "ret": 10_000});
    let close = json!({"op": "close", "syscall": "close", "fd": 3, "ret": 0});
    let calls = one_thread([
        open.clone(),
        map.clone(),
        map.clone(),
        map.clone(),
        close.clone(),
        open,
        map,
        close,
    ]);
    let t = save(&trace(1, initial, calls), &root.path.join("twin.fstrace"));
    let (ms, text) = replay_under_strace(&t, &root.path, &["-e", "trace=open,openat"]);
    assert_eq!(metric(&ms[0], "replayed_map_read_bytes"), 40_000.0);
    let twins = text
        .lines()
        .filter(|l| l.contains("\"/proc/self/fd/"))
        .count();
    assert_eq!(twins, 2, "{text}");
    assert!(leftovers(&root.path).is_empty());
}
