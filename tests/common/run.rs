//! Starting fsarena the ways the tests need (waited for, in the background, as a terminal's
//! foreground job), watching its results file grow, signalling it, and the checks of how it
//! ended: written once here so every test starts, stops and judges a run alike.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::{bin, leftovers};

/// `fsarena ARGS --work-dir WORK`, waited for.
pub fn fsarena(args: &[&str], work: &Path) -> Output {
    Command::new(bin())
        .args(args)
        .arg("--work-dir")
        .arg(work)
        .output()
        .unwrap()
}

/// `--target TARGET --workload create --runs RUNS --scale 0.001`: the smallest real run,
/// for the tests that stop one mid-way.
pub fn tiny_create<'a>(target: &'a str, runs: &'a str) -> [&'a str; 8] {
    [
        "--target",
        target,
        "--workload",
        "create",
        "--runs",
        runs,
        "--scale",
        "0.001",
    ]
}

/// `--target T` for each of `targets`, then `rest`: the argument list of a run over several
/// file systems, so a test names its targets once instead of spelling every flag.
pub fn with_targets<'a>(targets: &[&'a str], rest: &[&'a str]) -> Vec<&'a str> {
    let flags = targets.iter().flat_map(|t| ["--target", t]);
    flags.chain(rest.iter().copied()).collect()
}

/// `fsarena run ARGS --quiet --out OUT --work-dir WORK`, not started yet.
pub fn run_command(args: &[&str], out: &Path, work: &Path) -> Command {
    let mut c = Command::new(bin());
    c.arg("run")
        .args(args)
        .args(["--quiet", "--out"])
        .arg(out)
        .arg("--work-dir")
        .arg(work);
    c
}

/// [`run_command`] in the background, its stdout discarded and its stderr to `stderr`.
pub fn start(args: &[&str], out: &Path, work: &Path, stderr: Stdio) -> Child {
    run_command(args, out, work)
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap()
}

/// [`start`] as a shell starts a foreground job: leader of a process group of its own, so
/// [`signal_group`] reaches it and every child it did not move out, as a terminal's Ctrl-C
/// does. The work directory is made first.
pub fn start_group(args: &[&str], out: &Path, work: &Path, stderr: Stdio) -> Child {
    use std::os::unix::process::CommandExt;
    std::fs::create_dir_all(work).unwrap();
    run_command(args, out, work)
        .stdout(Stdio::null())
        .stderr(stderr)
        .process_group(0)
        .spawn()
        .unwrap()
}

/// Sends `sig` to the whole process group `child` leads.
pub fn signal_group(child: &Child, sig: rustix::process::Signal) {
    let pgid = rustix::process::Pid::from_child(child);
    rustix::process::kill_process_group(pgid, sig).unwrap();
}

/// Sends `sig` to `child` alone.
pub fn signal(child: &Child, sig: rustix::process::Signal) {
    rustix::process::kill_process(rustix::process::Pid::from_child(child), sig).unwrap();
}

/// Stops `child` with SIGSTOP whenever `held` (something of the run's is in place) and
/// keeps it stopped only if `held` still holds once it cannot move, so a kill -9 that
/// follows lands while it holds that; false if the run ended or `secs` passed first.
pub fn freeze_when(child: &mut Child, secs: u64, mut held: impl FnMut() -> bool) -> bool {
    use rustix::process::Signal;
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(secs) {
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        if held() {
            signal(child, Signal::STOP);
            if held() {
                return true;
            }
            signal(child, Signal::CONT);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

/// `fsarena run --quiet --resume OUT --work-dir WORK`, waited for.
pub fn resume(out: &Path, work: &Path) -> Output {
    Command::new(bin())
        .args(["run", "--quiet", "--resume"])
        .arg(out)
        .arg("--work-dir")
        .arg(work)
        .output()
        .unwrap()
}

/// `fsarena cleanup --work-dir WORK`, waited for (whatever its exit).
pub fn cleanup(work: &Path) -> Output {
    Command::new(bin())
        .arg("cleanup")
        .arg("--work-dir")
        .arg(work)
        .output()
        .unwrap()
}

/// Lines in `out`'s results file so far (the first is the host facts), 0 before it exists.
pub fn results_lines(out: &Path) -> usize {
    std::fs::read_to_string(out.join(fsarena::results::store::FILE_NAME))
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// Measurement lines in `out`'s results file so far (not the host facts, nor the other
/// records a run writes, such as its end).
pub fn measured(out: &Path) -> usize {
    std::fs::read_to_string(out.join(fsarena::results::store::FILE_NAME))
        .map(|t| {
            (t.lines())
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .filter(|r| r["record"] == "measurement")
                .count()
        })
        .unwrap_or(0)
}

/// Waits until `out`'s results file holds `lines` lines, failing if `child` ends first or
/// `secs` pass.
pub fn wait_for_lines(child: &mut Child, out: &Path, lines: usize, secs: u64) {
    let t0 = Instant::now();
    while results_lines(out) < lines {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before its results held {lines} lines"
        );
        assert!(
            t0.elapsed() < Duration::from_secs(secs),
            "no progress: fewer than {lines} results lines after {secs} s"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Waits up to 60 s for `child` to exit (after a signal) and returns its exit code (-1 when
/// a signal ended it).
pub fn wait_exit(child: &mut Child) -> i32 {
    let t0 = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s.code().unwrap_or(-1);
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "did not stop within 60 s of the signal"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Fails, showing stderr, unless the process exited with `code`.
pub fn assert_exit(o: &Output, code: i32) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Exit code 2 and one stderr line holding every needle; returns that line.
pub fn refused(o: &Output, needles: &[&str]) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "want one line, got: {err}");
    for n in needles {
        assert!(lines[0].contains(n), "`{n}` missing from: {}", lines[0]);
    }
    lines[0].to_string()
}

/// Fails, naming them, if any mount or loop device under `root` is left.
pub fn assert_no_leftovers(root: &Path) {
    let left = leftovers(root);
    assert!(left.is_empty(), "left behind: {left:?}");
}
