//! `fsarena record`: real Debian programs (tar, git, sqlite3) recorded under strace give
//! traces the format's reader accepts, holding the calls those programs are known to make;
//! anonymizing is stable and keeps extensions; calls outside the root are counted, not kept;
//! bad input is one line and exit 2. With `FSARENA_SHIP_TRACES=1` the three recordings are
//! also written to `traces/` (how the shipped example traces are made; traces/README.md).

mod common;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use fsarena::trace::format::{self, Kind, Op, Trace};

/// Records `command` with `root` as the root and the working directory.
fn record(root: &Path, extra: &[&str], command: &[&str]) -> (Output, Trace) {
    let out = root.with_extension("fstrace");
    let output = Command::new(common::bin())
        .current_dir(root)
        .args(["record", "--out"])
        .arg(&out)
        .args(extra)
        .arg("--")
        .args(command)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{err}");
    let file = std::fs::File::open(&out).unwrap();
    let trace = format::read(std::io::BufReader::new(file)).unwrap();
    (output, trace)
}

/// Writes the trace to traces/NAME.fstrace when asked to (FSARENA_SHIP_TRACES=1).
fn ship(root: &Path, name: &str) {
    if std::env::var_os("FSARENA_SHIP_TRACES").is_some() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(
            root.with_extension("fstrace"),
            dir.join(format!("{name}.fstrace")),
        )
        .unwrap();
    }
}

/// A fresh root under a temporary directory.
fn fresh_root(tmp: &tempfile::TempDir, name: &str) -> PathBuf {
    let root = tmp.path().join(name);
    std::fs::create_dir_all(&root).unwrap();
    root.canonicalize().unwrap()
}

fn run(dir: &Path, program: &str, args: &[&str]) {
    let status = Command::new(program)
        .current_dir(dir)
        .args(args)
        .status()
        .unwrap();
    assert!(status.success(), "{program} {args:?}");
}

/// The bytes each created file received: writes through the descriptor its O_CREAT open
/// returned, until that descriptor's close, per thread.
fn written_to_created(trace: &Trace) -> HashMap<String, u64> {
    let mut open: HashMap<(u32, i32), String> = HashMap::new();
    let mut bytes = HashMap::new();
    for call in &trace.calls {
        let key = |fd: i32| (call.thread, fd);
        match call.op {
            Op::Open if call.flags.iter().any(|f| f == "O_CREAT") => {
                if let (Some(path), Some(fd)) = (&call.path, call.ret) {
                    open.insert(key(fd as i32), path.clone());
                    bytes.entry(path.clone()).or_insert(0);
                }
            }
            Op::Write => {
                if let Some(path) = call.fd.and_then(|fd| open.get(&key(fd))) {
                    *bytes.get_mut(path).unwrap() += call.ret.unwrap_or(0) as u64;
                }
            }
            Op::Close => {
                call.fd.map(|fd| open.remove(&key(fd)));
            }
            _ => {}
        }
    }
    bytes
}

fn paths(trace: &Trace, op: Op) -> BTreeSet<String> {
    trace
        .calls
        .iter()
        .filter(|c| c.op == op && c.ret.is_some())
        .filter_map(|c| c.path.clone())
        .collect()
}

/// Every regular file under `dir`, relative to `base`, with its size.
fn files(dir: &Path, base: &Path, out: &mut HashMap<String, u64>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let meta = entry.metadata().unwrap();
        if meta.is_dir() {
            files(&entry.path(), base, out);
        } else if meta.is_file() {
            let rel = entry
                .path()
                .strip_prefix(base)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            out.insert(rel, meta.len());
        }
    }
}

/// A tarball of these directories of this crate in `root` (a source tree of its own).
fn source_tarball(root: &Path, dirs: &[&str]) {
    let crate_dir = env!("CARGO_MANIFEST_DIR");
    let mut args = vec!["cf", "src.tar", "-C", crate_dir];
    args.extend(dirs);
    run(root, "tar", &args);
}

#[test]
fn tar_unpacking_a_source_tarball_is_recorded_with_every_file_and_its_size() {
    let tmp = tempfile::tempdir().unwrap();
    let root = fresh_root(&tmp, "tar");
    // The whole crate's sources: a few hundred files, a few MB.
    source_tarball(&root, &["src", "docs"]);
    let tar_size = std::fs::metadata(root.join("src.tar")).unwrap().len();
    let (_, trace) = record(&root, &[], &["tar", "xf", "src.tar"]);
    ship(&root, "tar-xf");
    let mut extracted = HashMap::new();
    files(&root.join("src"), &root, &mut extracted);
    files(&root.join("docs"), &root, &mut extracted);
    assert!(extracted.len() > 10, "{extracted:?}");
    let written = written_to_created(&trace);
    for (path, size) in &extracted {
        assert_eq!(written.get(path), Some(size), "{path}");
    }
    // The tarball was there before and is the initial state; what tar made is not.
    let initial: Vec<_> = trace
        .initial
        .iter()
        .map(|i| (i.path.as_str(), i.kind, i.size))
        .collect();
    assert_eq!(initial, [("src.tar", Kind::File, Some(tar_size))]);
    assert!(paths(&trace, Op::Mkdir).contains("src/trace"));
    // tar restores every file's times (and, as root, its owner and mode): each is kept
    // for the replay (defect: record left these calls out).
    let set = trace.calls.iter().filter(|c| c.op == Op::Setattr).count();
    assert!(
        set >= extracted.len(),
        "{set} setattr calls, {} files",
        extracted.len()
    );
    let read: u64 = trace
        .calls
        .iter()
        .filter(|c| c.op == Op::Read)
        .filter_map(|c| c.ret)
        .sum::<i64>() as u64;
    assert!(read >= tar_size - 10240, "read {read} of {tar_size}");
    assert_eq!(trace.header.threads, 1);
    assert!(
        trace.header.outside_root > 0,
        "the loader's opens are outside"
    );
}

/// Defect (issue 37, fidelity): a trace's starts were strace's clock, the program's pace
/// slowed ~10x by two ptrace stops a call, and `--timing original` replayed that. The
/// recording calibrates strace's cost per call and takes it out: 4,000 one-byte calls (a
/// few ms untraced, a few hundred under strace) keep less than half of strace's cost.
#[test]
fn a_recording_takes_strace_s_own_cost_out_of_its_timing() {
    let tmp = tempfile::tempdir().unwrap();
    let root = fresh_root(&tmp, "pace");
    let dd = [
        "dd",
        "if=/dev/zero",
        "of=out",
        "bs=1",
        "count=2000",
        "status=none",
    ];
    let untraced = (0..3)
        .map(|_| {
            let t0 = std::time::Instant::now();
            run(&root, dd[0], &dd[1..]);
            t0.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min);
    // Up to three recordings: the machine's load moves the cost of a stop while a
    // recording runs, which its calibration (just before and after) cannot see.
    let mut seen = Vec::new();
    for _ in 0..3 {
        let (output, trace) = record(&root, &[], &dd);
        let err = String::from_utf8_lossy(&output.stderr);
        let traced: f64 = err
            .split_once("after ")
            .and_then(|(_, rest)| rest.split_once(" s under strace"))
            .and_then(|(s, _)| s.parse().ok())
            .unwrap_or_else(|| panic!("no traced seconds in: {err}"));
        let o = trace.header.strace_overhead.expect("a calibrated overhead");
        assert!(o.call_s > 0.0 && o.gap_s > 0.0, "{o:?}");
        let paced = trace.header.duration_s;
        // At least half of strace's own cost taken out. In the integrated suite the
        // corrected clock kept 0.06–0.12 s of 0.25–0.42 s against 0.007 s untraced: most of
        // the cost goes, but a bound near the untraced time failed by a millisecond.
        if paced - untraced < (traced - untraced) / 2.0 {
            return;
        }
        seen.push((paced, traced));
    }
    panic!("(paced, under strace) seconds {seen:?}, untraced {untraced} s");
}

#[test]
fn a_git_add_commit_status_cycle_is_recorded() {
    let tmp = tempfile::tempdir().unwrap();
    let root = fresh_root(&tmp, "git");
    let proj = root.join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    source_tarball(&proj, &["src/trace", "docs"]);
    run(&proj, "tar", &["xf", "src.tar"]);
    std::fs::remove_file(proj.join("src.tar")).unwrap();
    let script = "cd proj && git -c init.defaultBranch=main init -q && git add . && \
                  git -c user.name=fsarena -c user.email=fsarena@example.org commit -qm first && \
                  echo more >> docs/trace-format.md && git status --short";
    let (output, trace) = record(&root, &[], &["sh", "-c", script]);
    ship(&root, "git-commit");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "M docs/trace-format.md"
    );
    let renames: BTreeSet<_> = trace
        .calls
        .iter()
        .filter(|c| c.op == Op::Rename && c.ret.is_some())
        .filter_map(|c| Some((c.path.clone()?, c.path2.clone()?)))
        .collect();
    assert!(
        renames.contains(&("proj/.git/index.lock".into(), "proj/.git/index".into())),
        "{renames:?}"
    );
    let opened = paths(&trace, Op::Open);
    assert!(
        opened.contains("proj/src/trace/format.rs"),
        "git add reads the sources"
    );
    assert!(paths(&trace, Op::Mkdir).contains("proj/.git/objects"));
    // The sources were there before; nothing of .git was.
    let initial: BTreeSet<_> = trace.initial.iter().map(|i| i.path.as_str()).collect();
    assert!(initial.contains("proj") && initial.contains("proj/src/trace/format.rs"));
    assert!(!initial.iter().any(|p| p.contains(".git")), "{initial:?}");
    // The appended line: an O_APPEND open of the shell's and a write of 5 bytes.
    assert!(trace.calls.iter().any(|c| c.op == Op::Open
        && c.path.as_deref() == Some("proj/docs/trace-format.md")
        && c.flags.iter().any(|f| f == "O_APPEND")));
}

#[test]
fn sqlite_transactions_are_recorded_with_their_journal_and_syncs() {
    let tmp = tempfile::tempdir().unwrap();
    let root = fresh_root(&tmp, "sqlite");
    let sql = "PRAGMA journal_mode=DELETE; CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT); \
               BEGIN; WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i<2000) \
               INSERT INTO t(v) SELECT hex(randomblob(40)) FROM n; COMMIT; \
               BEGIN; UPDATE t SET v=lower(v) WHERE k%3=0; COMMIT; \
               DELETE FROM t WHERE k%5=0; SELECT count(*) FROM t;";
    let (output, trace) = record(&root, &[], &["sqlite3", "app.db", sql]);
    ship(&root, "sqlite3-transactions");
    assert!(String::from_utf8_lossy(&output.stdout).contains("1600"));
    let created = written_to_created(&trace);
    let db_size = std::fs::metadata(root.join("app.db")).unwrap().len();
    // Pages are written more than once: at least the file's size went to it.
    assert!(
        created.get("app.db").is_some_and(|&b| b >= db_size),
        "{created:?}"
    );
    assert!(created.contains_key("app.db-journal"));
    assert!(paths(&trace, Op::Unlink).contains("app.db-journal"));
    let positional = trace
        .calls
        .iter()
        .filter(|c| c.syscall == "pwrite64" && c.offset.is_some());
    assert!(positional.count() > 10);
    let syncs = trace
        .calls
        .iter()
        .filter(|c| matches!(c.op, Op::Fsync | Op::Fdatasync))
        .count();
    assert!(syncs >= 4, "{syncs} syncs");
    assert!(
        trace.initial.is_empty(),
        "the database did not exist before"
    );
}

#[test]
fn anonymizing_is_stable_keeps_extensions_and_hides_names() {
    let tmp = tempfile::tempdir().unwrap();
    let mut traces = Vec::new();
    for name in ["a", "b"] {
        let root = fresh_root(&tmp, name);
        source_tarball(&root, &["src/trace", "docs"]);
        let (_, trace) = record(&root, &["--anonymize"], &["tar", "xf", "src.tar"]);
        let text = std::fs::read_to_string(root.with_extension("fstrace")).unwrap();
        for plain in ["format.rs", "trace-format", "src.tar", "\"docs"] {
            assert!(
                !text.contains(plain),
                "{plain} left in the anonymized trace"
            );
        }
        assert!(trace.header.anonymized);
        traces.push(trace);
    }
    let names = |t: &Trace| paths(t, Op::Open);
    assert_eq!(names(&traces[0]), names(&traces[1]));
    assert_eq!(traces[0].header.command, traces[1].header.command);
    // The program's name stays; its other arguments may be names, so they are hashed.
    assert_eq!(traces[0].header.command[0], "tar");
    assert_ne!(traces[0].header.command[1], "xf");
    assert!(traces[0].header.command[2].ends_with(".tar"));
    assert!(names(&traces[0]).iter().any(|p| p.ends_with(".rs")));
    assert!(names(&traces[0]).iter().any(|p| p.ends_with(".md")));
}

/// The user and system CPU seconds of `command` run untraced in `dir`, from the
/// kernel's count for that one child and what it waited for (`wait4`, which reaps it:
/// clippy cannot see that), so that other tests' children do not count.
#[allow(clippy::zombie_processes)]
fn child_seconds(dir: &Path, command: &[&str]) -> (f64, f64) {
    let child = Command::new(command[0])
        .current_dir(dir)
        .args(&command[1..])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid value for wait4 to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32);
    assert_eq!(status, 0, "{command:?}");
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (seconds(usage.ru_utime), seconds(usage.ru_stime))
}

/// Issue 56: the program's computing is measured outside strace. A shell loop (computing,
/// almost no calls): the trace's `user_cpu_s` is the program's user time untraced.
/// The loop is alone so that the kernel's tick-sampled user/system split has nothing to
/// split: a loop beside thousands of traced calls put the recorded share anywhere from
/// 0.6 to 1.45 of the untraced one (`a_recording_keeps_the_program_s_user_time_and_not_
/// strace_s` was flaky for that; the calls are the next test's).
#[test]
fn a_recording_keeps_the_program_s_user_time() {
    common::require_root();
    let tmp = tempfile::tempdir().unwrap();
    let root = fresh_root(&tmp, "computing");
    let command = [
        "sh",
        "-c",
        "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done",
    ];
    // Untraced runs on both sides of the recording: a virtual machine's CPU changes speed
    // in spells of seconds (the same loop took 0.155 and 0.254 s of user time minutes
    // apart, bench/journal/default-run.md, "What varies a warm cell"), so the recording is
    // held to the range its neighbours in time span, not to one of them.
    let mut untraced: Vec<f64> = (0..2).map(|_| child_seconds(&root, &command).0).collect();
    let (_, trace) = record(&root, &[], &command);
    untraced.extend((0..2).map(|_| child_seconds(&root, &command).0));
    untraced.sort_by(f64::total_cmp);
    let user = trace.header.user_cpu_s.expect("the program's user time");
    // Within a quarter of that range, and five ticks of the kernel's count (4 ms at 250 Hz).
    let (low, high) = (untraced[0] * 0.75 - 0.02, untraced[3] * 1.25 + 0.02);
    assert!(
        (low..=high).contains(&user),
        "recorded {user} s of user time, untraced {untraced:?}"
    );
}

/// Issue 56: 20,000 one-byte writes, whose stops cost strace user time and the kernel
/// system time many times the program's own user time (nearly none): the trace's
/// `user_cpu_s` stays near the program's, not strace's nor the stops'.
#[test]
fn a_recording_keeps_strace_s_time_out_of_the_program_s_user_time() {
    common::require_root();
    let tmp = tempfile::tempdir().unwrap();
    let root = fresh_root(&tmp, "calls");
    let dd = [
        "dd",
        "if=/dev/zero",
        "of=out",
        "bs=1",
        "count=20000",
        "status=none",
    ];
    let strace: Vec<&str> = ["strace", "-f", "-qq", "-o", "/dev/null", "--"]
        .into_iter()
        .chain(dd)
        .collect();
    let (strace_user, strace_system) = child_seconds(&root, &strace);
    let (untraced, _) = child_seconds(&root, &dd);
    let (_, trace) = record(&root, &[], &dd);
    let user = trace.header.user_cpu_s.expect("the program's user time");
    // Five ticks of the kernel's count above the untraced user time: well under what
    // strace and the stops cost (at least 0.05 s of user and 0.5 s of system time here).
    assert!(
        user <= untraced + 0.06,
        "recorded {user} s of user time: untraced {untraced} s; strace and its program \
         {strace_user} s user, {strace_system} s system"
    );
    assert!(
        strace_user + strace_system > 0.3,
        "the test needs strace's cost ({strace_user} + {strace_system} s) well above 0.06 s"
    );
}

/// Issue 56, item 4: the self-check needs the program's time without strace, which the
/// trace's clock gets wrong by factors on a program of many cheap calls. 8,000 one-byte
/// writes (strace's stops many times the program's own time): the header's bracket holds
/// the command's untraced wall time, and `fsarena record` says it.
#[test]
fn a_recording_brackets_the_program_s_untraced_time() {
    let tmp = tempfile::tempdir().unwrap();
    let root = fresh_root(&tmp, "bracket");
    let command = [
        "dd",
        "if=/dev/zero",
        "of=out",
        "bs=1",
        "count=8000",
        "status=none",
    ];
    let mut untraced: Vec<f64> = (0..3)
        .map(|_| {
            let t0 = std::time::Instant::now();
            let ok = Command::new(command[0])
                .current_dir(&root)
                .args(&command[1..])
                .status()
                .unwrap();
            assert!(ok.success());
            t0.elapsed().as_secs_f64()
        })
        .collect();
    untraced.sort_by(f64::total_cmp);
    let (output, trace) = record(&root, &[], &command);
    let p = trace.header.program_time.expect("the program's time");
    assert!(
        p.least_s <= untraced[0] && untraced[2] <= p.most_s,
        "{p:?} against untraced {untraced:?}"
    );
    assert!(p.least_s <= p.estimate_s() && p.estimate_s() <= p.most_s);
    assert!(
        p.strace_s > p.estimate_s(),
        "strace's stops dominate: {p:?}"
    );
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(err.contains("the program's own time, untraced"), "{err}");
}

#[test]
fn calls_outside_the_root_are_counted_and_left_out() {
    let tmp = tempfile::tempdir().unwrap();
    let root = fresh_root(&tmp, "outside");
    let (output, trace) = record(&root, &[], &["sh", "-c", "cat /etc/os-release > copy.txt"]);
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(err.contains("calls outside the root"), "{err}");
    assert!(trace.header.outside_root > 0);
    for call in &trace.calls {
        for p in [&call.path, &call.path2].into_iter().flatten() {
            assert!(!p.contains("etc") && !p.starts_with('/'), "{p}");
        }
    }
    assert!(paths(&trace, Op::Open).contains("copy.txt"));
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("x.fstrace");
    let out = out.to_str().unwrap();
    let missing = tmp.path().join("no/such/dir/x.fstrace");
    let cases: [(Vec<&str>, &str); 4] = [
        (vec!["record", "--out", out], "no command"),
        (
            vec![
                "record",
                "--out",
                out,
                "--root",
                "/no/such/dir",
                "--",
                "true",
            ],
            "not a directory",
        ),
        (
            vec!["record", "--out", missing.to_str().unwrap(), "--", "true"],
            "cannot write",
        ),
        (
            vec!["record", "--out", out, "--", "no-such-program-xyz"],
            "not found",
        ),
    ];
    for (args, needle) in cases {
        let output = Command::new(common::bin()).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{needle} not in {err}");
    }
    assert!(!Path::new(out).exists(), "a refused record writes nothing");
}

#[test]
fn an_interrupted_recording_leaves_no_trace_and_no_strace_file() {
    let tmp = tempfile::tempdir().unwrap();
    let root = fresh_root(&tmp, "interrupted");
    let out = root.with_extension("fstrace");
    let child = Command::new(common::bin())
        .current_dir(&root)
        .args(["record", "--out"])
        .arg(&out)
        .args(["--", "sleep", "30"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(1));
    // Only fsarena is signalled (as a `kill` would): it must stop strace and the command.
    let pid = child.id().to_string();
    run(&root, "kill", &["-INT", &pid]);
    let started = std::time::Instant::now();
    let output = child.wait_with_output().unwrap();
    assert!(
        started.elapsed().as_secs() < 10,
        "the command was not stopped"
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("interrupted"));
    assert!(
        !out.exists(),
        "no trace is written for an interrupted recording"
    );
    let prefix = format!("fsarena-record-{pid}-");
    let left: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .collect();
    assert!(left.is_empty(), "strace's file left behind: {left:?}");
}

/// The pid of a live child of `parent` whose command name is `comm`.
fn child_named(parent: i32, comm: &str) -> Option<i32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
        let (head, rest) = stat.rsplit_once(") ")?;
        let ppid: i32 = rest.split_whitespace().nth(1)?.parse().ok()?;
        (ppid == parent && head.split_once(" (")?.1 == comm && common::alive(pid)).then_some(pid)
    })
}

/// Starts `fsarena record --work-dir WORK -- sleep 600` in a process group of its own (as a
/// terminal starts it) and waits until strace and the program run: (fsarena, strace, sleep).
fn recording_a_sleep(root: &Path, work: &Path) -> (std::process::Child, i32, i32) {
    use std::os::unix::process::CommandExt;
    let child = Command::new(common::bin())
        .current_dir(root)
        .args(["record", "--work-dir"])
        .arg(work)
        .arg("--out")
        .arg(root.with_extension("fstrace"))
        .args(["--", "sleep", "600"])
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let me = child.id() as i32;
    let (mut strace, mut sleep) = (None, None);
    assert!(
        common::wait_for(20, || {
            strace = child_named(me, "strace");
            sleep = strace.and_then(|s| child_named(s, "sleep"));
            sleep.is_some()
        }),
        "strace and its program did not start"
    );
    (child, strace.unwrap(), sleep.unwrap())
}

/// `kill -9` of the recording fsarena `child`, and its strace dying with it.
fn kill_9(root: &Path, child: &mut std::process::Child, strace: i32) {
    run(root, "kill", &["-KILL", &child.id().to_string()]);
    child.wait().unwrap();
    assert!(
        common::wait_for(5, || !common::alive(strace)),
        "strace outlived fsarena's kill -9"
    );
}

/// Issue 39 leftover: a `kill -9` of `fsarena record` left strace and the traced program
/// running, and `fsarena cleanup` knew nothing of them (strace wrote to /tmp, nothing was
/// journaled). Now strace dies with fsarena, and `fsarena cleanup` stops the program
/// (which strace 6.1 lets go on) and removes the recording's directory.
#[test]
fn kill_9_of_record_then_cleanup_leaves_no_strace_no_program_and_no_files() {
    common::require_root();
    let work = common::TestRoot::new("record-kill9");
    let tmp = tempfile::tempdir().unwrap();
    let root = fresh_root(&tmp, "killed");
    let (mut child, strace, sleep) = recording_a_sleep(&root, &work.path);
    kill_9(&root, &mut child, strace);
    common::cleanup_ok(&work.path);
    assert!(
        common::wait_for(5, || !common::alive(sleep)),
        "the recorded program outlived kill -9 + fsarena cleanup"
    );
    common::no_run_dirs(&work.path);
}

/// A terminal's Ctrl-C (SIGINT to the whole group: fsarena, strace and the program) stops
/// the program and strace, writes no trace and leaves nothing in the work directory.
#[test]
fn a_terminal_ctrl_c_of_record_stops_the_program_and_strace_and_writes_no_trace() {
    common::require_root();
    let work = common::TestRoot::new("record-ctrl-c");
    let tmp = tempfile::tempdir().unwrap();
    let root = fresh_root(&tmp, "ctrl-c");
    let (child, strace, sleep) = recording_a_sleep(&root, &work.path);
    run(&root, "kill", &["-INT", "--", &format!("-{}", child.id())]);
    let output = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert!(
        !root.with_extension("fstrace").exists(),
        "a trace was written"
    );
    assert!(!common::alive(strace) && !common::alive(sleep));
    common::no_run_dirs(&work.path);
}

/// Defect (issue 37): `record --out F` emptied F at its start (to check it could write it)
/// and wrote it as it went, so a `kill -9` left F empty or cut and an earlier trace there
/// was lost. The trace is written beside F under a name of the run's own and renamed over F
/// once whole: a killed recording leaves F as it was, and `fsarena cleanup` removes the
/// partial file.
#[test]
fn kill_9_of_record_leaves_an_existing_out_file_as_it_was_and_cleanup_removes_the_partial() {
    common::require_root();
    let work = common::TestRoot::new("record-kill9-out");
    let tmp = tempfile::tempdir().unwrap();
    let root = fresh_root(&tmp, "kept");
    let out = root.with_extension("fstrace");
    std::fs::write(&out, "an earlier trace\n").unwrap();
    let beside = |dir: &Path| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("kept.fstrace"))
            .collect();
        names.sort();
        names
    };
    let (mut child, strace, _sleep) = recording_a_sleep(&root, &work.path);
    let during = beside(tmp.path());
    assert_eq!(during.len(), 2, "the partial file beside it: {during:?}");
    kill_9(&root, &mut child, strace);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "an earlier trace\n");
    common::cleanup_ok(&work.path);
    assert_eq!(beside(tmp.path()), vec!["kept.fstrace".to_string()]);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "an earlier trace\n");
    common::no_run_dirs(&work.path);
    // A recording that completes replaces it.
    let (_, trace) = record(&root, &[], &["true"]);
    assert_eq!(trace.header.command, vec!["true".to_string()]);
    assert_eq!(beside(tmp.path()), vec!["kept.fstrace".to_string()]);
}

/// The traces shipped in `traces/` to start from (issue 56): every one is read by the
/// format's reader, holds calls, is small enough to ship (≤ 3 MB), and is a row of the table
/// in traces/README.md (which says what was recorded); every trace the table lists is there.
#[test]
fn every_shipped_trace_is_read_small_and_listed_in_the_readme() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces");
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let mut shipped = BTreeSet::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        // The largest ship compressed with zstd, which the reader takes as it is.
        if !(name.ends_with(".fstrace") || name.ends_with(".fstrace.zst")) {
            continue;
        }
        let bytes = std::fs::metadata(&path).unwrap().len();
        assert!(bytes <= 3 << 20, "{name}: {bytes} bytes");
        let file = std::fs::File::open(&path).unwrap();
        let lines = format::lines_of(file).unwrap();
        let trace = format::read(lines).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!trace.calls.is_empty(), "{name} holds no calls");
        assert!(
            readme.contains(&format!("`{name}`")),
            "{name} not in the README"
        );
        shipped.insert(name);
    }
    // The table's rows: `| `NAME.fstrace` | what was recorded |`.
    let listed: BTreeSet<String> = readme
        .lines()
        .filter_map(|l| l.strip_prefix("| `")?.split('`').next())
        .filter(|name| name.ends_with(".fstrace") || name.ends_with(".fstrace.zst"))
        .map(str::to_string)
        .collect();
    assert_eq!(listed, shipped, "the README's traces and the files differ");
    assert!(shipped.len() >= 7, "{shipped:?}");
}
