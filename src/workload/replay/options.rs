//! The `[workload.replay]` options (`trace`, `timing`) and loading the trace they name:
//! read and checked by `trace::format::read` in `check_options`, before anything is
//! provisioned, so a cut, foreign or escaping trace is bad input (one line, exit 2).

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::trace::format::{self, Trace};
use crate::workload::options;

/// When each call is issued.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Timing {
    /// Every call as soon as the calls it depends on have completed: what the file system
    /// allows, the default.
    #[default]
    Fast,
    /// Every call no earlier than its recorded start after the phase began: the program's
    /// own pauses (think time, CPU work between calls) kept.
    Original,
}

/// `[workload.replay]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayOptions {
    /// The `.fstrace` file (`fsarena record` writes one; `--trace` sets it).
    pub trace: PathBuf,
    /// `fast` (the default) or `original` (`--timing`).
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
    Ok((o, trace))
}

/// Reads and checks the trace at `path`; the error is one line naming the file.
pub fn read_trace(path: &Path) -> Result<Trace, String> {
    let file = std::fs::File::open(path)
        .map_err(|e| format!("trace {}: cannot open it: {e}", path.display()))?;
    let trace = format::read(std::io::BufReader::new(file))
        .map_err(|e| format!("trace {}: {e}", path.display()))?;
    if trace.calls.is_empty() {
        return Err(format!(
            "trace {}: it holds no calls, so there is nothing to replay",
            path.display()
        ));
    }
    Ok(trace)
}

/// Refuses a symlink whose stored text is absolute or climbs out of the root: the replay
/// follows symlinks as the program did, and one of these would take a later call to a
/// path outside the file system the replay was given.
pub fn check_symlinks(trace: &Trace) -> Result<(), String> {
    let links = trace
        .initial
        .iter()
        .filter_map(|e| Some((&e.path, e.target.as_ref()?)))
        .chain(trace.calls.iter().filter_map(|c| {
            (c.op == format::Op::Symlink).then_some((c.path.as_ref()?, c.target.as_ref()?))
        }));
    for (path, target) in links {
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
        if !inside {
            return Err(format!(
                "symlink {path} points to {target:?}, outside the traced root: a replay \
                 following it would reach beyond the file system it is given"
            ));
        }
    }
    Ok(())
}
