//! `fsarena record`: runs a command under strace and turns what it did to the files under a
//! root into a [`Trace`]. The root's tree is snapshotted first (the initial state is picked
//! from it afterwards, see [`super::initial`]); strace writes its lines to a private file
//! beside nothing the program can see, which is read once the command has ended.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::calls::{Converter, Counts};
use super::format::Trace;
use super::initial::Snapshot;
use super::overhead::Clock;
use super::program_time::{micros, ProgramTime};
use super::strace::{Joiner, Ret, Syscall};

/// The system calls strace is asked for: those the trace holds, those record follows
/// descriptors, directories, processes and shared mappings with, and those whose I/O it
/// cannot see (`io_uring_enter`, `io_submit`), counted in the header's `unseen`; `ioctl` for
/// the clones (`FICLONE`, `FICLONERANGE`: `cp` on btrfs and xfs copies with them alone), the
/// others on files under the root counted in `unseen` too.
const TRACED: &str = "open,openat,openat2,creat,close,read,pread64,readv,preadv,preadv2,\
write,pwrite64,writev,pwritev,pwritev2,copy_file_range,sendfile,fsync,fdatasync,\
sync_file_range,stat,lstat,newfstatat,statx,fstat,access,faccessat,faccessat2,getdents,\
getdents64,mkdir,mkdirat,rmdir,unlink,unlinkat,rename,renameat,renameat2,link,linkat,\
symlink,symlinkat,truncate,ftruncate,fallocate,splice,syncfs,sync,msync,setxattr,lsetxattr,\
fsetxattr,getxattr,lgetxattr,fgetxattr,listxattr,llistxattr,flistxattr,removexattr,\
lremovexattr,fremovexattr,flock,lseek,chdir,fchdir,dup,dup2,dup3,fcntl,clone,clone3,fork,vfork,\
mmap,munmap,io_uring_enter,io_submit,chmod,fchmod,fchmodat,chown,fchown,lchown,fchownat,\
utime,utimes,futimesat,utimensat,ioctl";

/// strace's flags for a recording (and its calibration, `super::overhead`): every thread
/// and child, absolute start times and durations, descriptors' paths, no buffer contents, no
/// signals, and only the traced calls stopped (`--seccomp-bpf`).
const FLAGS: [&str; 11] = [
    "-f",
    "-qq",
    "-ttt",
    "-T",
    "-y",
    "-s",
    "0",
    "-e",
    "signal=none",
    "--seccomp-bpf",
    "-e",
];

/// What to record.
#[derive(Debug, Clone)]
pub struct Options {
    /// Paths are made relative to it; calls outside it are counted and left out.
    pub root: PathBuf,
    pub anonymize: bool,
    /// The command and its arguments.
    pub command: Vec<String>,
    /// Where strace writes its lines (a directory the caller journals, so a `kill -9`
    /// leaves nothing `fsarena cleanup` does not find); `None`: the system's temporary
    /// directory.
    pub scratch: Option<PathBuf>,
    /// A cgroup's `cgroup.procs` file that strace enters before it starts, so that the
    /// program and every process it makes are in it: `fsarena cleanup` kills them all
    /// after a `kill -9` of fsarena, even those strace had let go.
    pub cgroup_procs: Option<PathBuf>,
    /// A fresh cgroup v2 directory the program (not strace) is run in, so that its
    /// `cpu.stat` counts the program's own CPU time alone (the header's `user_cpu_s`);
    /// `None`: none is kept.
    pub cpu_cgroup: Option<PathBuf>,
}

/// A recording: the trace, what was left out, and how the command ended.
#[derive(Debug)]
pub struct Recorded {
    pub trace: Trace,
    pub counts: Counts,
    /// strace lines that could not be read.
    pub unreadable_lines: u64,
    /// Directories under the root the snapshot could not read.
    pub unreadable_dirs: u64,
    /// Initial files with more pieces of data than a trace keeps (`super::holes`).
    pub holes_cut: u64,
    /// The command's exit code (strace passes it on); `None` when a signal ended it.
    pub exit_code: Option<i32>,
    /// Wall seconds of the command under strace (the header's `duration_s` has strace's
    /// calibrated overhead taken out, when it could be measured).
    pub traced_s: f64,
}

/// Why nothing was recorded: each a one-line refusal.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("no command to record: give it after `--`, e.g. fsarena record --out app.fstrace -- tar xf src.tar")]
    NoCommand,
    #[error("--root {0}: not a directory")]
    RootNotDir(PathBuf),
    #[error("strace is not installed (./dev deps installs it; or apt-get install strace)")]
    NoStrace,
    #[error("command `{0}` not found")]
    CommandNotFound(String),
    #[error("cannot snapshot the root {path}: {source}")]
    Snapshot {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("strace: {0}")]
    Strace(std::io::Error),
    #[error("interrupted: the command was stopped and no trace was written")]
    Interrupted,
    #[error("strace ran but wrote no trace ({0}); is ptrace allowed here?")]
    NoOutput(String),
}

/// Waits for strace. strace blocks SIGINT and SIGTERM while it traces a command it started,
/// so one that fsarena receives (a `kill`, or a Ctrl-C) is passed on to the command's
/// processes; whatever still runs 5 s later is killed. fsarena lives on to remove strace's
/// file. Says whether the run was interrupted.
fn wait(mut child: std::process::Child) -> std::io::Result<(std::process::ExitStatus, bool)> {
    use rustix::process::Signal;
    use signal_hook::consts::{SIGINT, SIGTERM};
    use std::sync::atomic::{AtomicBool, Ordering};
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let handlers = [SIGINT, SIGTERM].map(|s| signal_hook::flag::register(s, stop.clone()));
    let mut stopping: Option<std::time::Instant> = None;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) => {}
            Err(e) => break Err(e),
        }
        let strace = child.id() as i32;
        match stopping {
            None if stop.load(Ordering::SeqCst) => {
                signal(&descendants(strace), Signal::TERM);
                stopping = Some(std::time::Instant::now());
            }
            Some(t) if t.elapsed() > std::time::Duration::from_secs(5) => {
                let mut all = descendants(strace);
                all.push(strace);
                signal(&all, Signal::KILL);
            }
            _ => {}
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    for id in handlers.into_iter().flatten() {
        signal_hook::low_level::unregister(id);
    }
    Ok((status?, stop.load(Ordering::SeqCst)))
}

fn signal(pids: &[i32], sig: rustix::process::Signal) {
    for pid in pids
        .iter()
        .filter_map(|&p| rustix::process::Pid::from_raw(p))
    {
        let _ = rustix::process::kill_process(pid, sig);
    }
}

/// Every process under `pid` (its children, theirs…), from /proc.
fn descendants(pid: i32) -> Vec<i32> {
    let mut parent_of = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(p) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
        // `pid (name) state ppid …`: the name may hold spaces and parentheses.
        let ppid = stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<i32>().ok());
        if let Some(ppid) = ppid {
            parent_of.push((p, ppid));
        }
    }
    let mut found = vec![pid];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(
            parent_of
                .iter()
                .filter(|(_, pp)| *pp == parent)
                .map(|(p, _)| *p),
        );
        i += 1;
    }
    found.split_off(1)
}

/// Whether `program` can be run: a path that is a file, or a name found on `PATH`.
fn runnable(program: &str) -> bool {
    if program.contains('/') {
        return Path::new(program).is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// The refusals that need nothing run: checked before anything starts.
pub fn check(options: &Options) -> Result<PathBuf, RecordError> {
    let program = options.command.first().ok_or(RecordError::NoCommand)?;
    let root = options
        .root
        .canonicalize()
        .ok()
        .filter(|r| r.is_dir())
        .ok_or_else(|| RecordError::RootNotDir(options.root.clone()))?;
    if !runnable("strace") {
        return Err(RecordError::NoStrace);
    }
    if !runnable(program) {
        return Err(RecordError::CommandNotFound(program.clone()));
    }
    Ok(root)
}

/// Records `options.command`: snapshot, run under strace, read its lines, build the trace.
pub fn record(options: &Options) -> Result<Recorded, RecordError> {
    let root = check(options)?;
    let snapshot = Snapshot::take(&root).map_err(|source| RecordError::Snapshot {
        path: root.clone(),
        source,
    })?;
    let cwd = std::env::current_dir()
        .and_then(|d| d.canonicalize())
        .map_err(RecordError::Strace)?;
    let before = super::overhead::calibrate(&FLAGS[..FLAGS.len() - 1]);
    let ran = run_strace(options)?;
    let read = read_calls(ran.lines, &root, &cwd)?;
    let (spans, first, last) = (&read.spans, read.first, read.last);
    let overhead = super::overhead::mean(
        before,
        super::overhead::calibrate(&FLAGS[..FLAGS.len() - 1]),
    );
    let clock = Clock::new(spans, overhead.as_ref());
    let converter = read.converter;
    let initial = snapshot.initial(&converter.used, &converter.listed);
    let holes_cut = snapshot.cut(&initial);
    let unseen = converter.unseen();
    let mut trace = assemble(
        options,
        converter.threads(),
        initial,
        converter.calls,
        &clock,
    );
    trace.header.duration_s = micros(clock.at(last));
    trace.header.strace_overhead = overhead;
    trace.header.outside_root = converter.counts.outside_root;
    trace.header.file_mmaps = converter.counts.file_mmaps;
    trace.header.unseen = unseen;
    trace.header.fs_type = crate::sys::fs_name(&root);
    trace.header.user_cpu_s = ran.user_cpu_s;
    trace.header.program_time = overhead.map(|o| {
        let time = ProgramTime::measured(last - first, spans.len(), o.call_s + o.gap_s);
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        ran.user_cpu_s.map_or(time, |user| {
            time.computing_at_least(user, cpus.min(1 + read.made))
        })
    });
    if options.anonymize {
        super::anonymize::trace(&mut trace);
    }
    Ok(Recorded {
        trace,
        counts: converter.counts,
        unreadable_lines: read.unreadable,
        unreadable_dirs: snapshot.unreadable,
        holes_cut,
        exit_code: ran.status.code(),
        traced_s: micros(last - first),
    })
}

/// What a command run under strace left: how it ended, its user CPU seconds (from its
/// cgroup's `cpu.stat`, when it had one), and strace's lines.
struct Ran {
    status: std::process::ExitStatus,
    user_cpu_s: Option<f64>,
    /// Already unlinked: nothing of the run is left in the scratch directory.
    lines: std::fs::File,
}

/// Runs the command under strace on one CPU. strace writes its lines to a file of the
/// scratch directory, opened and removed as soon as the command ends, however it ended.
fn run_strace(options: &Options) -> Result<Ran, RecordError> {
    let scratch = options.scratch.clone().unwrap_or_else(std::env::temp_dir);
    let out = scratch.join(format!(
        "fsarena-record-{}-{}.strace",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    let status = super::overhead::spawn_on_one_cpu(
        strace_command(options.cgroup_procs.as_deref())
            .args(FLAGS)
            .arg(format!("trace={TRACED}"))
            .arg("-o")
            .arg(&out)
            .arg("--")
            .args(joining(options.cpu_cgroup.as_deref()))
            .args(&options.command),
    )
    .and_then(wait);
    let user_cpu_s = options
        .cpu_cgroup
        .as_deref()
        .and_then(|cg| std::fs::read_to_string(cg.join("cpu.stat")).ok())
        .and_then(|stat| user_seconds(&stat));
    let lines = std::fs::File::open(&out);
    let _ = std::fs::remove_file(&out);
    let status = match status.map_err(RecordError::Strace)? {
        (_, true) => return Err(RecordError::Interrupted),
        (status, false) => status,
    };
    let lines = lines.map_err(|e| RecordError::NoOutput(e.to_string()))?;
    Ok(Ran {
        status,
        user_cpu_s,
        lines,
    })
}

/// strace's lines joined into whole calls and converted, with each call's (start,
/// duration), the first start and the last end among them, and the threads and processes
/// the program made.
struct Read {
    converter: Converter,
    /// Lines that could not be read ([`Joiner`]'s count).
    unreadable: u64,
    spans: Vec<(f64, f64)>,
    first: f64,
    last: f64,
    /// Calls that made a thread or process ([`makes_a_thread`]).
    made: usize,
}

/// Reads strace's lines; refuses output without one call in it.
fn read_calls(lines: std::fs::File, root: &Path, cwd: &Path) -> Result<Read, RecordError> {
    let mut converter = Converter::new(&root.to_string_lossy(), &cwd.to_string_lossy());
    let mut joiner = Joiner::default();
    let mut spans = Vec::new();
    let mut made = 0;
    for line in std::io::BufReader::new(lines).lines() {
        let line = line.map_err(RecordError::Strace)?;
        if let Some(call) = joiner.push(&line) {
            spans.push((call.time, call.dur));
            made += usize::from(makes_a_thread(&call));
            converter.push(&call);
        }
    }
    let Some(first) = spans.iter().map(|s| s.0).min_by(f64::total_cmp) else {
        // Not even the loader's calls: strace could not trace (ptrace refused) or start it.
        return Err(RecordError::NoOutput("not one call in it".into()));
    };
    let last = spans.iter().map(|s| s.0 + s.1).fold(first, f64::max);
    Ok(Read {
        converter,
        unreadable: joiner.unreadable,
        spans,
        first,
        last,
        made,
    })
}

/// The words before the command that make it join the cgroup `cpu` (a cgroup v2 directory)
/// and then become the command: a shell that moves itself in (`echo 0` into
/// `cgroup.procs`) and `exec`s it, so the program and every process it makes are counted
/// there and strace, which stays outside, is not. The shell's few calls are outside the
/// root (counted in `outside_root`, not kept). Should the move fail the command runs all
/// the same, and the cgroup, having counted nothing, gives no time ([`user_seconds`]).
fn joining(cpu: Option<&Path>) -> Vec<std::ffi::OsString> {
    let Some(cpu) = cpu else {
        return Vec::new();
    };
    vec![
        "sh".into(),
        "-c".into(),
        r#"echo 0 2>/dev/null >"$0"; exec "$@""#.into(),
        cpu.join("cgroup.procs").into_os_string(),
    ]
}

/// Whether `call` made a thread or process: every one of the program's threads but the first
/// comes from such a call, so they count how many CPUs the program could have used at once.
fn makes_a_thread(call: &Syscall) -> bool {
    matches!(call.name.as_str(), "clone" | "clone3" | "fork" | "vfork")
        && matches!(call.ret, Ret::Value(v, _) if v > 0)
}

/// The user-mode CPU seconds in a cgroup v2 `cpu.stat`: `None` when it is not there or the
/// cgroup counted no time at all (nothing ran in it). The kernel splits a task's time
/// between user and system mode by sampling at its tick (4 ms at 250 Hz) and scales the two
/// to the exactly measured total, so a short program's figure is good to a few ticks.
fn user_seconds(cpu_stat: &str) -> Option<f64> {
    let field = |name: &str| {
        cpu_stat.lines().find_map(|l| {
            let (key, value) = l.split_once(' ')?;
            (key == name).then(|| value.trim().parse::<u64>().ok())?
        })
    };
    let (usage, user) = (field("usage_usec")?, field("user_usec")?);
    (usage > 0).then(|| micros(user as f64 / 1e6))
}

/// strace, made to die with fsarena: it gets SIGKILL when fsarena is killed (`kill -9`),
/// and, where this strace has `--kill-on-exit`, the kernel then kills every process it
/// traces; an older strace (Debian 12's 6.1) lets them go on, untraced, and they are
/// stopped by `fsarena cleanup` through the cgroup whose `cgroup.procs` is `procs`, which
/// strace enters before it starts. strace stays in fsarena's process group, so a program
/// that reads the terminal still can; strace itself blocks the terminal's SIGINT while it
/// traces (`-o FILE` with a command), and fsarena stops the program ([`wait`]).
fn strace_command(procs: Option<&Path>) -> Command {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new("strace");
    if let Some(procs) = procs.and_then(|p| std::ffi::CString::new(p.as_os_str().as_bytes()).ok()) {
        // SAFETY: only async-signal-safe system calls on memory prepared before the fork.
        unsafe {
            cmd.pre_exec(move || {
                let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let n = libc::write(fd, b"0".as_ptr().cast(), 1);
                libc::close(fd);
                if n != 1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    crate::sys::dies_with_parent(&mut cmd, libc::SIGKILL);
    if kills_on_exit() {
        cmd.arg("--kill-on-exit");
    }
    cmd
}

/// Whether this strace has `--kill-on-exit` (strace 6.4 and later; not Debian 12's 6.1):
/// its help lists it.
fn kills_on_exit() -> bool {
    Command::new("strace")
        .arg("-h")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("--kill-on-exit"))
}

/// The trace: calls in the order they started, their starts from the first one and their
/// durations on `clock` (strace's overhead taken out).
fn assemble(
    options: &Options,
    threads: u32,
    initial: Vec<super::format::Initial>,
    mut calls: Vec<(f64, super::format::Call)>,
    clock: &Clock,
) -> Trace {
    calls.sort_by(|a, b| a.0.total_cmp(&b.0));
    let t0 = calls.first().map_or(0.0, |c| clock.at(c.0));
    // Threads renumbered in order of their first call once the calls are in start order.
    let mut renumber = std::collections::HashMap::new();
    let calls: Vec<_> = calls
        .into_iter()
        .map(|(t, mut call)| {
            let next = renumber.len() as u32;
            call.thread = *renumber.entry(call.thread).or_insert(next);
            call.dur = micros(clock.at(t + call.dur) - clock.at(t));
            call.start = micros(clock.at(t) - t0);
            call
        })
        .collect();
    Trace::new(options.command.clone(), threads, 0.0, initial, calls)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_user_time_is_read_from_cpu_stat_and_only_when_something_ran() {
        let stat = "usage_usec 230000\nuser_usec 40123\nsystem_usec 189877\nnr_periods 0\n";
        assert_eq!(user_seconds(stat), Some(0.040123));
        // A cgroup the command never joined counted nothing: no figure, not zero.
        let empty = "usage_usec 0\nuser_usec 0\nsystem_usec 0\n";
        assert_eq!(user_seconds(empty), None);
        assert_eq!(user_seconds("nr_periods 0\n"), None);
    }

    #[test]
    fn the_command_joins_the_cgroup_through_a_shell_only_when_there_is_one() {
        assert!(joining(None).is_empty());
        let words = joining(Some(Path::new("/sys/fs/cgroup/unified/fsarena-x")));
        assert_eq!(words[0], "sh");
        assert_eq!(words[3], "/sys/fs/cgroup/unified/fsarena-x/cgroup.procs");
    }
}
