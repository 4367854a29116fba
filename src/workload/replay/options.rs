//! The `[workload.replay]` options (`trace`, `timing`) and loading the trace they name:
//! read and checked by `trace::format::read` in `check_options`, before anything is
//! provisioned, so a cut, foreign or escaping trace is bad input (one line, exit 2).

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::trace::bounds::Limits;
use crate::trace::format::{self, Trace};
use crate::workload::options;

/// When each call is issued.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Timing {
    /// Every call as soon as the calls it depends on have completed: what the file system
    /// allows. A program that computes between its calls for longer than they take (a
    /// compiler) is replayed as its file calls alone, which exaggerates the file systems'
    /// differences (a C build's ntfs/ext4 ratio of 1.1 replayed as 12).
    Fast,
    /// The default. As `fast`, except that a call the program reached after computing for a while (a
    /// recorded pause of at least [`super::pace::THINK_MIN`] since the call it follows)
    /// also waits that pause: the program's own work kept, strace's cost left out. Where
    /// the trace holds the program's user CPU time (`user_cpu_s`), every pause is kept,
    /// scaled so that they add up to it (`super::pace::computing`); an older trace drops
    /// the pauses under the threshold. It keeps what dilutes the file systems' differences
    /// in the real program.
    #[default]
    Think,
    /// Every call no earlier than its recorded start after the phase began: the program's
    /// own pauses (think time, CPU work between calls) kept.
    Original,
}

impl Timing {
    /// The name `--timing` takes.
    pub fn name(self) -> &'static str {
        match self {
            Timing::Fast => "fast",
            Timing::Think => "think",
            Timing::Original => "original",
        }
    }
}

/// `[workload.replay]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayOptions {
    /// The `.fstrace` file (`fsarena record` writes one; `--trace` sets it).
    pub trace: PathBuf,
    /// `think` (the default), `fast` or `original` (`--timing`).
    #[serde(default)]
    pub timing: Timing,
}

/// The options and the trace they name, read and checked.
pub fn load(table: &toml::Table) -> Result<(ReplayOptions, Trace), String> {
    if !table.contains_key("trace") {
        return Err(
            "the replay workload needs a trace: --trace FILE, or `trace = \"FILE\"` in [workload.replay]"
                .into(),
        );
    }
    let o: ReplayOptions = options::parse("replay", table)?;
    let trace = read_trace(&o.trace)?;
    check_symlinks(&trace).map_err(|e| format!("trace {}: {e}", o.trace.display()))?;
    check_buffers(&trace, &o.trace)?;
    Ok((o, trace))
}

/// Reads and checks the trace at `path`; the error is one line naming the file. Only a
/// regular file is read (a device such as `/dev/zero` never ends, a pipe is gone after the
/// first of the several reads a run makes), and no more of it than a quarter of the host's
/// available memory: the trace is held whole while it is replayed.
pub fn read_trace(path: &Path) -> Result<Trace, String> {
    let refuse = |e: &dyn std::fmt::Display| format!("trace {}: {e}", path.display());
    // Asked before opening: opening a named pipe waits for a writer.
    let meta = std::fs::metadata(path).map_err(|e| refuse(&format!("cannot open it: {e}")))?;
    if !meta.is_file() {
        return Err(refuse(
            &"not a regular file (a device, a pipe or a directory): give a file `fsarena record` wrote",
        ));
    }
    let file = std::fs::File::open(path).map_err(|e| refuse(&format!("cannot open it: {e}")))?;
    let limits = Limits {
        total: memory_for_traces(),
        ..Limits::default()
    };
    let lines = format::lines_of(file).map_err(|e| refuse(&format!("cannot read it: {e}")))?;
    let trace = format::read_with(lines, &limits).map_err(|e| refuse(&e))?;
    if trace.calls.is_empty() {
        return Err(refuse(&"it holds no calls, so there is nothing to replay"));
    }
    Ok(trace)
}

/// A quarter of the host's available memory (what a trace and the replay's buffers may
/// take); 1 GiB when `/proc/meminfo` cannot be read.
fn memory_for_traces() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| crate::monitor::meminfo::parse(&t).ok())
        .map_or(1 << 30, |m| m.available / 4)
}

/// Refuses a trace whose replay buffers (the content its writes take, each thread's read
/// buffer, sized by what the calls moved) would not fit in a quarter of the host's
/// available memory.
pub fn check_buffers(trace: &Trace, path: &Path) -> Result<(), String> {
    let script = super::script::resolve(trace);
    let need = super::content::buffer_bytes(&script);
    let have = memory_for_traces();
    if need > have {
        return Err(format!(
            "trace {}: its replay needs {need} bytes of buffers (its largest writes and reads), more than the {have} this host can spare",
            path.display()
        ));
    }
    Ok(())
}

/// Refuses a trace in which a call would follow a symlink whose stored text is absolute or
/// climbs out of the root: the replay follows symlinks as the program did, and such a link
/// would take that call to a path outside the file system the replay was given. Making the
/// link is harmless (its text is only stored): `tar xf` of a tree with absolute links
/// replays, and so does any program that never goes through them.
pub fn check_symlinks(trace: &Trace) -> Result<(), String> {
    let links: Vec<(&String, &String)> = trace
        .initial
        .iter()
        .filter_map(|e| Some((&e.path, e.target.as_ref()?)))
        .chain(trace.calls.iter().filter_map(|c| {
            (c.op == format::Op::Symlink).then_some((c.path.as_ref()?, c.target.as_ref()?))
        }))
        .collect();
    for (path, target) in links.iter().filter(|(p, t)| escapes(p, t)) {
        if let Some(call) = trace.calls.iter().find(|c| may_follow(c, path)) {
            return Err(format!(
                "symlink {path} points to {target:?}, outside the traced root, and the \
                 {} of {} would follow it beyond the file system the replay is given",
                call.syscall,
                call.path.as_deref().unwrap_or(path)
            ));
        }
    }
    Ok(())
}

/// Whether the link at `path` with stored text `target` leads out of the root.
fn escapes(path: &str, target: &str) -> bool {
    let mut depth = path.matches('/').count() as i64;
    let mut inside = !target.starts_with('/');
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." => depth -= 1,
            _ => depth += 1,
        }
        inside &= depth >= 0;
    }
    !inside
}

/// Whether `call` may resolve a path through the symlink at `link`: a path under it, the
/// link itself for a call that follows its last component, a rename that moves it (or a
/// directory above it) where the checks above no longer see it, or a path this textual
/// check cannot place (`.` or `..` in it). Errs towards refusing.
fn may_follow(call: &format::Call, link: &str) -> bool {
    use format::Op;
    let under = |p: &str| {
        p.strip_prefix(link)
            .is_some_and(|rest| rest.starts_with('/'))
    };
    let unplaced =
        |p: &str| p != format::ROOT && p.split('/').any(|part| part == "." || part == "..");
    let follows_last = match call.op {
        Op::Open => !call
            .flags
            .iter()
            .any(|f| f == "O_NOFOLLOW" || f == "O_EXCL"),
        Op::Stat => {
            !matches!(call.syscall.as_str(), "lstat" | "lstat64")
                && !call.flags.iter().any(|f| f == "AT_SYMLINK_NOFOLLOW")
        }
        Op::Truncate => true,
        Op::Link => call.flags.iter().any(|f| f == "AT_SYMLINK_FOLLOW"),
        _ => false,
    };
    let paths = [call.path.as_deref(), call.path2.as_deref()];
    paths.into_iter().flatten().any(|p| {
        under(p)
            || unplaced(p)
            || (p == link && follows_last)
            || (call.op == Op::Rename && (p == link || link.starts_with(&format!("{p}/"))))
    })
}
