//! `fsarena cleanup`: removes what a killed run (kill -9, power loss) left behind — its
//! mounts, loop devices, images and directories — found through the run journals and the
//! owner marker, and touches nothing else.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::journal::{self, Journal, Kind};
use super::workdir::{start_time_of, OWNER_FILE};
use super::{cgroup, fscrypt, loopdev, mounts, write_trace};

/// What a cleanup did and what it left alone.
#[derive(Debug, Default)]
pub struct CleanupReport {
    pub unmounted: Vec<PathBuf>,
    pub detached: Vec<PathBuf>,
    pub removed: Vec<PathBuf>,
    /// fscrypt keys removed from a still-mounted file system, as `mount point (identifier)`.
    pub keys: Vec<String>,
    /// Runs still in progress (their owner process is alive).
    pub live: Vec<PathBuf>,
    /// Things found in a run directory that its journal does not name (a file someone put
    /// there, a bind mount): reported and left where they are.
    pub foreign: Vec<PathBuf>,
    /// What a run's journal names that was left because it holds something foreign (a
    /// directory with a file or a mount of someone else's in it). The run's journal and
    /// marker stay while any is there, so a later `fsarena cleanup` still finds it.
    pub kept: Vec<PathBuf>,
    pub errors: Vec<String>,
}

/// How long a cleanup waits for a run's owner that is already exiting (killed, its threads
/// still finishing direct I/O in the kernel, or not yet back from it to act on the kill)
/// before calling the run still in progress.
const EXIT_GRACE: Duration = Duration::from_secs(10);

/// Linux's `PF_EXITING`, in the flags of `/proc/<pid>/stat`: the task is in `do_exit`.
const PF_EXITING: u64 = 0x4;

/// Whether the process that made `run` is still running (pid and start time both match,
/// so a recycled pid does not count). One that is exiting (a `kill -9` a moment ago) is
/// waited for, up to [`EXIT_GRACE`], and one whose every thread has exited (a zombie its
/// parent has not reaped yet) holds nothing any more and is not running.
pub fn owner_alive(run: &Path) -> bool {
    let Ok(text) = fs::read_to_string(run.join(OWNER_FILE)) else {
        return false;
    };
    let field = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(k))
            .map(str::trim)
            .map(str::to_string)
    };
    let (Some(pid), Some(start)) = (field("pid="), field("start=")) else {
        return false;
    };
    if !start_time_of(&pid).is_some_and(|s| s.to_string() == start) {
        return false;
    }
    let deadline = Instant::now() + EXIT_GRACE;
    loop {
        match threads_exiting(&pid) {
            // Gone meanwhile, or every thread done: nothing of the run is held any more.
            None | Some((_, 0)) => return false,
            Some((true, _)) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(50))
            }
            Some(_) => return true,
        }
    }
}

/// Whether a SIGKILL is pending for the thread at `task` (`/proc/<pid>/task/<tid>`): the
/// kernel marks every thread of a killed process at once, but a thread busy in the kernel
/// (direct I/O, a mount, waiting on a child) starts exiting only when it gets back.
fn kill_pending(task: &Path) -> bool {
    const SIGKILL_BIT: u64 = 1 << 8;
    let Ok(status) = fs::read_to_string(task.join("status")) else {
        return false;
    };
    status.lines().any(|l| {
        ["SigPnd:", "ShdPnd:"].iter().any(|k| {
            l.strip_prefix(k)
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
                .is_some_and(|mask| mask & SIGKILL_BIT != 0)
        })
    })
}

/// For process `pid`: whether any of its threads is exiting (or has been killed), and how
/// many have not yet finished (neither zombie nor dead); `None` when it is gone.
fn threads_exiting(pid: &str) -> Option<(bool, usize)> {
    let tasks = fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let (mut exiting, mut running) = (false, 0);
    for task in tasks.flatten() {
        let Ok(stat) = fs::read_to_string(task.path().join("stat")) else {
            continue; // that thread is gone
        };
        // After the command name (which may hold spaces and parentheses): the state, then
        // the flags as the seventh field.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next().unwrap_or("");
        let flags: u64 = fields.nth(5).and_then(|f| f.parse().ok()).unwrap_or(0);
        exiting |= flags & PF_EXITING != 0 || kill_pending(&task.path());
        if !matches!(state, "Z" | "X" | "x") {
            running += 1;
        }
    }
    Some((exiting, running))
}

/// How long a dead run's helper processes get to finish before they are stopped.
const HELPER_GRACE: Duration = Duration::from_secs(5);

/// Unmounts the journaled mounts that are still there, newest first. A mount the journal
/// does not name (a bind mount someone added inside the run directory) is left alone.
fn unmount_all(live: &[journal::Entry], report: &mut CleanupReport) {
    let mut targets: Vec<PathBuf> = Vec::new();
    for e in live.iter().rev().filter(|e| e.kind == Kind::Mount) {
        if !targets.contains(&e.path) && mounts::find(&e.path).is_some() {
            targets.push(e.path.clone());
        }
    }
    for t in targets {
        match mounts::unmount(&t) {
            Ok(()) => report.unmounted.push(t),
            Err(e) => report.errors.push(format!("{}: {e}", t.display())),
        }
    }
}

/// Processes other than this one whose command line names a path inside `run` or one of
/// the loop devices backed by its images: the mkfs, mount, fsck or fio a run was waiting
/// for when it died. Nothing else is ever matched.
pub fn helpers(run: &Path) -> Vec<u32> {
    let run_s = run.to_string_lossy().into_owned();
    let loops: Vec<String> = loopdev::attached()
        .into_iter()
        .filter(|(_, b)| b.starts_with(run))
        .map(|(d, _)| d.to_string_lossy().into_owned())
        .collect();
    let me = std::process::id();
    let Ok(rd) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            let Ok(raw) = fs::read(format!("/proc/{pid}/cmdline")) else {
                return false;
            };
            raw.split(|&b| b == 0)
                .map(String::from_utf8_lossy)
                .any(|a| names_run(&a, &run_s, &loops))
        })
        .collect()
}

/// Whether one command-line argument names the run directory (or something in it) or one
/// of its loop devices (`/dev/loop1` or `--filename=/dev/loop1`, never `/dev/loop10`).
fn names_run(arg: &str, run: &str, loops: &[String]) -> bool {
    let under = |s: &str| {
        s.strip_prefix(run)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    };
    let value = arg.rsplit_once('=').map_or(arg, |(_, v)| v);
    under(arg) || under(value) || loops.iter().any(|l| arg == l || value == l)
}

/// Waits up to `grace` for a dead run's helpers to exit, then SIGKILLs the rest and waits
/// (bounded) for them to go. Returns whether there were any.
fn settle_helpers(run: &Path, grace: Duration) -> bool {
    let first = helpers(run);
    if first.is_empty() {
        return false;
    }
    let t0 = Instant::now();
    let mut left = first;
    while !left.is_empty() && t0.elapsed() < grace {
        std::thread::sleep(Duration::from_millis(50));
        left = helpers(run);
    }
    for pid in &left {
        if let Some(pid) = rustix::process::Pid::from_raw(*pid as i32) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    }
    // A process in uninterruptible sleep dies when its system call returns.
    let t1 = Instant::now();
    while !helpers(run).is_empty() && t1.elapsed() < 2 * grace {
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}

/// Removes every journaled fscrypt key whose file system is still mounted.
fn remove_keys(live: &[journal::Entry], report: &mut CleanupReport) {
    for e in live.iter().filter(|e| e.kind == Kind::Key) {
        let Some(id) = e.detail.as_deref().and_then(fscrypt::KeyId::parse) else {
            continue;
        };
        if mounts::find(&e.path).is_none() {
            continue;
        }
        match fscrypt::remove_key(&e.path, &id) {
            Ok(_) => report
                .keys
                .push(format!("{} ({})", e.path.display(), id.hex())),
            Err(err) => report.errors.push(format!(
                "fscrypt key {} on {}: {err}",
                id.hex(),
                e.path.display()
            )),
        }
    }
}

/// Removes every journaled trace instance that still exists, by name, under the system's
/// tracefs (or one mounted in the run directory for the moment if the system has none).
fn remove_traces(run: &Path, live: &[journal::Entry], report: &mut CleanupReport) {
    for e in live.iter().filter(|e| e.kind == Kind::Trace) {
        let Some(name) = e.path.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            continue;
        };
        match write_trace::remove_instance_named(&name, &run.join("tracefs-cleanup")) {
            Ok(true) => report.removed.push(e.path.clone()),
            Ok(false) => {}
            Err(err) => report.errors.push(format!("trace instance {name}: {err}")),
        }
    }
}

/// Cleans every abandoned run directory under `root`.
pub fn cleanup(root: &Path) -> CleanupReport {
    cleanup_matching(root, |_| true)
}

/// Cleans the abandoned run directories under `root` that `wanted` picks (a `--resume`
/// takes only its own earlier run's, [`super::workdir::runs_for`]).
pub fn cleanup_matching(root: &Path, wanted: impl Fn(&Path) -> bool) -> CleanupReport {
    let mut report = CleanupReport::default();
    // The journal names absolute paths, and so do /proc/mounts and losetup: a relative
    // `--work-dir` matched none of them and left a run's mount and loop device (57.5).
    let root = &super::workdir::absolute(root);
    let Ok(rd) = fs::read_dir(root) else {
        return report;
    };
    let mut runs: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join(OWNER_FILE).is_file() && wanted(p))
        .collect();
    runs.sort();
    for run in runs {
        let held = hold(&run);
        if matches!(held, Hold::Gone) {
            continue; // another cleaner finished it meanwhile
        }
        if owner_alive(&run) {
            report.live.push(run);
        } else {
            cleanup_run(&run, &mut report);
        }
    }
    report
}

/// What [`hold`] found on a run directory.
enum Hold {
    /// The run is no longer there to clean: its marker went with a cleaner that finished it
    /// while this one waited.
    Gone,
    /// Held exclusively until dropped (the lock goes with the descriptor).
    Locked { _fd: std::os::fd::OwnedFd },
    /// The directory's file system cannot lock it: cleaned without the lock, as before.
    Unlocked,
}

/// Takes the lock one cleaner holds on a run directory while it looks at and takes down
/// that run. Several cleanups can sweep the same work directory at once (every MPI rank
/// that mpirun ends starts one, and each removes every dead run it finds): unserialized,
/// two removed the same trees side by side, each failed on what the other had just
/// removed, and one could take the run's marker while the other still emptied the
/// directory, which no later cleanup then recognised as a run.
fn hold(run: &Path) -> Hold {
    use rustix::fs::{flock, open, FlockOperation, Mode, OFlags};
    let fd = match open(
        run,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Hold::Gone,
        Err(_) => return Hold::Unlocked,
    };
    let locked = flock(&fd, FlockOperation::LockExclusive).is_ok();
    if !run.join(OWNER_FILE).is_file() {
        Hold::Gone
    } else if locked {
        Hold::Locked { _fd: fd }
    } else {
        Hold::Unlocked
    }
}

/// Takes down everything belonging to one run directory: a dead run's, from [`cleanup`]
/// with the run held; and the run's own, at its end or in the emergency teardown on a
/// second Ctrl-C, when the run's unwinding may be stuck. Those two need no [`hold`]: other
/// cleaners leave a run whose owner is alive alone, and the emergency one must not wait on
/// a teardown stuck in the kernel.
pub fn cleanup_run(run: &Path, report: &mut CleanupReport) {
    let errors_before = report.errors.len();
    let entries = journal::read(&run.join(Journal::FILE_NAME)).unwrap_or_default();
    let live = journal::live(&entries);

    // 0. Database servers and the memory cgroups their engines ran in: their processes
    //    hold files open on the targets, so they go before the unmounts.
    stop_servers(&live, report);
    // 0. fscrypt keys a dead run added, removed while their file system is still mounted
    //    (unmounting would drop them too, but a key must not outlive the run by chance).
    remove_keys(&live, report);
    // 0. Trace instances recording a clone's writes, while the tracefs they were made under
    //    may still be mounted (it is one of the run's mounts when the host had none).
    remove_traces(run, &live, report);

    // 1. Mounts: everything mounted inside the run directory, deepest first, plus any
    //    journaled mount elsewhere that is still there. Unmounting first lets FUSE daemons
    //    (ntfs-3g, exfat) exit on their own.
    unmount_all(&live, report);

    // 2. A killed run's helpers (mkfs, mount, fsck, fio) outlive it as orphans and keep
    //    working on its devices: an orphaned `mount` can even finish after step 1. Wait
    //    for them, stop them if they linger, then look for mounts once more.
    if settle_helpers(run, HELPER_GRACE) {
        unmount_all(&live, report);
    }

    // 3. Loop devices whose backing file is one of this run's images. One still held open
    //    may be under a mount a helper finished after step 1 looked (it was between fork
    //    and exec when the run died): unmount again, and it lets go (`losetup -d` left it
    //    to clear itself once free). Each only while still bound to that image: another
    //    run may have bound it since it was listed (`loopdev::detach`).
    let mut busy = Vec::new();
    for (dev, backing) in loopdev::attached() {
        let b = PathBuf::from(backing.to_string_lossy().trim_end_matches(" (deleted)"));
        let journaled = live.iter().any(|e| e.kind != Kind::Mount && e.path == b);
        if b.starts_with(run) || journaled {
            match loopdev::detach(&dev, &b) {
                Ok(()) => report.detached.push(dev),
                Err(_) => busy.push((dev, b)),
            }
        }
    }
    if !busy.is_empty() {
        settle_helpers(run, HELPER_GRACE);
        unmount_all(&live, report);
        for (dev, b) in busy {
            let gone = || !loopdev::backed_by(&dev, &b);
            match loopdev::detach(&dev, &b) {
                Ok(()) => report.detached.push(dev),
                Err(_) if gone() => report.detached.push(dev),
                Err(e) => report.errors.push(format!("{}: {e}", dev.display())),
            }
        }
    }

    // 4. Working directories fsarena made inside `dir:` targets (journaled as trees).
    for e in live
        .iter()
        .filter(|e| e.kind == Kind::Dir && e.detail.as_deref() == Some("tree"))
    {
        let named_by_us = e
            .path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("fsarena-"));
        if named_by_us && e.path.exists() && !e.path.starts_with(run) {
            match remove_tree(&e.path) {
                Ok(()) => report.removed.push(e.path.clone()),
                Err(err) => report.errors.push(format!("{}: {err}", e.path.display())),
            }
        }
    }

    // 5. The run directory: what the journal names (images, the trees and mount points
    //    fsarena made) and its own two files go; anything else found there is reported
    //    and left, and so is the directory that holds it.
    remove_journaled(run, &live, report, errors_before);
}

/// Threads removing a tree: unlinking waits on the file system's journal more than it
/// computes, and more unlinks in flight finish sooner (8: 250,000 files in 8 s instead of
/// 21 s on the 2-CPU dev machine).
const REMOVE_THREADS: usize = 8;

/// Removes the tree at `path` with [`REMOVE_THREADS`] threads (a run's source trees hold the
/// whole data set, twice for `sync`).
fn remove_tree(path: &Path) -> std::io::Result<()> {
    crate::fsops::remove_tree(path, REMOVE_THREADS).map_err(|e| e.source)
}

/// ENOTEMPTY (`io::ErrorKind::DirectoryNotEmpty` needs a newer Rust than the crate's MSRV).
fn not_empty(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(rustix::io::Errno::NOTEMPTY.raw_os_error())
}

/// Removes the journaled images and directories inside `run`, then, when nothing it
/// tried to take down failed since `errors_before` and nothing it names was left for
/// holding something foreign, fsarena's marker and journal, then `run` if nothing else is
/// in it. Never removes a tree with a mount in it.
fn remove_journaled(
    run: &Path,
    live: &[journal::Entry],
    report: &mut CleanupReport,
    errors_before: usize,
) {
    let foreign_mounts: Vec<PathBuf> = mounts::under(run)
        .into_iter()
        .map(|m| m.target)
        .filter(|t| !journaled_mount(live, t))
        .collect();
    report.foreign.extend(foreign_mounts);
    let kept_before = report.kept.len();
    remove_images(run, live, report);
    remove_dirs(run, live, report);
    // Something the journal names could not be removed: the journal stays, so the next
    // `fsarena cleanup` finds the run and finishes it instead of seeing nothing to do.
    if report.errors.len() > errors_before {
        report.errors.push(format!(
            "{}: kept its journal, since not everything it names could be removed; run \
             `fsarena cleanup` again once that is fixed",
            run.display()
        ));
        return;
    }
    // Something it names holds what is not ours: the journal stays (dropped, it left
    // that directory nobody's to remove).
    if report.kept.len() == kept_before {
        remove_run_dir(run, report);
    }
}

/// Whether the journal names a mount at `p` (a mount it does not name is someone else's).
fn journaled_mount(live: &[journal::Entry], p: &Path) -> bool {
    live.iter().any(|e| e.kind == Kind::Mount && e.path == p)
}

/// The journaled images inside `run`, and partial files, that are still there.
fn remove_images(run: &Path, live: &[journal::Entry], report: &mut CleanupReport) {
    let own = |e: &&journal::Entry| e.kind == Kind::Image && e.path.starts_with(run);
    for e in live.iter().filter(|e| own(e) || e.kind == Kind::Partial) {
        if e.path.exists() {
            match fs::remove_file(&e.path) {
                Ok(()) => report.removed.push(e.path.clone()),
                Err(err) => report.errors.push(format!("{}: {err}", e.path.display())),
            }
        }
    }
}

/// The journaled directories inside `run`, deepest first, so a mount point goes before the
/// tree that holds it; one with a mount still inside is left (an error when that mount is
/// the run's own), and one holding what fsarena did not make is left as foreign.
fn remove_dirs(run: &Path, live: &[journal::Entry], report: &mut CleanupReport) {
    let mounted_inside = |p: &Path| mounts::under(p).into_iter().next().map(|m| m.target);
    let mut dirs: Vec<&journal::Entry> = live
        .iter()
        .filter(|e| e.kind == Kind::Dir && e.path.starts_with(run) && e.path != run)
        .collect();
    dirs.sort_by_key(|e| std::cmp::Reverse(e.path.components().count()));
    for e in dirs {
        if !e.path.exists() {
            continue;
        }
        if let Some(m) = mounted_inside(&e.path) {
            if journaled_mount(live, &m) {
                report.errors.push(format!(
                    "{} left in place: {} is still mounted",
                    e.path.display(),
                    m.display()
                ));
            } else {
                keep_holder(&e.path, report);
            }
            continue;
        }
        let r = if e.detail.as_deref() == Some("tree") {
            remove_tree(&e.path)
        } else {
            fs::remove_dir(&e.path)
        };
        match r {
            Ok(()) => report.removed.push(e.path.clone()),
            Err(err) if not_empty(&err) => keep_holder(&e.path, report),
            Err(err) => report.errors.push(format!("{}: {err}", e.path.display())),
        }
    }
}

/// Keeps the journaled directory `dir` (and its journal), which holds something foreign:
/// what is in it and not reported yet is.
fn keep_holder(dir: &Path, report: &mut CleanupReport) {
    if !report.kept.iter().any(|k| k == dir) {
        report.kept.push(dir.to_path_buf());
    }
    for e in fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        let known = |f: &PathBuf| f.starts_with(&p) || p.starts_with(f);
        if !report.foreign.iter().any(known) && !report.kept.contains(&p) {
            report.foreign.push(p);
        }
    }
}

/// fsarena's own two files in `run`, then `run` itself; what else is found there is
/// reported as foreign and left, with the directory that holds it.
fn remove_run_dir(run: &Path, report: &mut CleanupReport) {
    for own in [Journal::FILE_NAME, OWNER_FILE] {
        let p = run.join(own);
        if let Err(err) = fs::remove_file(&p) {
            if err.kind() != std::io::ErrorKind::NotFound {
                report.errors.push(format!("{}: {err}", p.display()));
            }
        }
    }
    match fs::remove_dir(run) {
        Ok(()) => report.removed.push(run.to_path_buf()),
        Err(err) if not_empty(&err) => {
            for e in fs::read_dir(run).into_iter().flatten().flatten() {
                let p = e.path();
                if !report
                    .foreign
                    .iter()
                    .any(|f| f.starts_with(&p) || p.starts_with(f))
                {
                    report.foreign.push(p);
                }
            }
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => report.errors.push(format!("{}: {err}", run.display())),
    }
}

/// How long a journaled server gets to shut down on SIGQUIT before it is killed.
const SERVER_GRACE: Duration = Duration::from_secs(5);

/// Stops each journaled server still running (its command line still names its data
/// directory, so a recycled pid is left alone), then every journaled cgroup's processes,
/// and removes the cgroups. A server gets SIGQUIT first: the journaled servers are
/// PostgreSQL postmasters, for which it is an immediate shutdown that also removes the
/// server's shared memory (a SIGKILL leaves a System V segment and `/dev/shm` files on the
/// host); SIGKILL follows after [`SERVER_GRACE`].
fn stop_servers(live: &[journal::Entry], report: &mut CleanupReport) {
    for e in live.iter().filter(|e| e.kind == Kind::Server) {
        let Some(pid) = e
            .detail
            .as_deref()
            .and_then(|d| d.strip_prefix("pid="))
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        let data = e.path.to_string_lossy();
        let named = fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|raw| {
            raw.split(|&b| b == 0)
                .any(|a| String::from_utf8_lossy(a) == data)
        });
        if let (true, Some(p)) = (named, rustix::process::Pid::from_raw(pid)) {
            use rustix::process::{kill_process, Signal};
            let _ = kill_process(p, Signal::QUIT);
            let t0 = Instant::now();
            let running = || threads_exiting(&pid.to_string()).is_some_and(|(_, n)| n > 0);
            while running() && t0.elapsed() < SERVER_GRACE {
                std::thread::sleep(Duration::from_millis(20));
            }
            if running() {
                let _ = kill_process(p, Signal::KILL);
            }
            report.removed.push(PathBuf::from(format!("/proc/{pid}")));
        }
    }
    for e in live.iter().filter(|e| e.kind == Kind::Cgroup) {
        if !e.path.exists() {
            continue;
        }
        match cgroup::remove_path(&e.path) {
            Ok(()) => report.removed.push(e.path.clone()),
            Err(err) => report.errors.push(format!("{}: {err}", e.path.display())),
        }
    }
}

#[cfg(test)]
#[path = "cleanup_tests.rs"]
mod tests;
