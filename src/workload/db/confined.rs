//! Running the engine's measured phase in a child process inside a memory cgroup.
//!
//! SQLite runs in-process, and the kernel charges a page cache page to the memory cgroup of
//! the *process* (its mm owner) that faults it in, not of the thread: moving the worker
//! threads into a cgroup would not confine the cache their reads use. So the measured phase
//! forks: the child moves itself into the cgroup before it opens a connection, runs the
//! workers, writes what it counted to a file and exits; the parent waits, stops it on a
//! cancel or the deadline, and meanwhile keeps the cgroup's limit at the engine's own memory
//! (heap, stacks, kernel objects) plus the page-cache budget, so the budget is what the
//! database files get — neither less (the engine's heap would squeeze them) nor more.

use std::fs;
use std::path::Path;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::provision::cgroup::MemoryCgroup;
use crate::workload::{Ctx, WorkloadError};

/// Room above the engine's memory and the budget, so a burst of allocation between two
/// adjustments is absorbed by reclaiming cache rather than stalling the engine.
const SLACK: u64 = 256 << 10;
/// How often the parent adjusts the limit and looks for a cancel.
const POLL: Duration = Duration::from_millis(10);

/// What the cgroup saw during the phase.
#[derive(Debug, Default, Clone)]
pub(crate) struct CgroupFigures {
    /// The page-cache budget.
    pub(crate) cache_budget: u64,
    /// The highest limit the parent set.
    pub(crate) limit_max: u64,
    /// The kernel's peak of everything charged.
    pub(crate) peak: Option<u64>,
    /// The highest page cache seen at a poll.
    pub(crate) page_cache_peak: u64,
    /// Times the limit was reached.
    pub(crate) limit_hits: Option<u64>,
}

impl CgroupFigures {
    /// The figures as measurement metrics (`cgroup_*`), the same for every engine.
    pub(crate) fn add_metrics(&self, m: &mut std::collections::BTreeMap<String, f64>) {
        m.insert("cgroup_cache_bytes".into(), self.cache_budget as f64);
        m.insert("cgroup_limit_bytes".into(), self.limit_max as f64);
        if let Some(p) = self.peak {
            m.insert("cgroup_peak_bytes".into(), p as f64);
        }
        m.insert(
            "cgroup_page_cache_peak_bytes".into(),
            self.page_cache_peak as f64,
        );
        if let Some(h) = self.limit_hits {
            m.insert("cgroup_limit_hits".into(), h as f64);
        }
    }
}

/// A workload error as the child reports it.
#[derive(Debug, Serialize, Deserialize)]
struct ChildError {
    status: String,
    message: String,
    errno: Option<i32>,
}

impl ChildError {
    fn of(e: &WorkloadError) -> ChildError {
        let errno = match e {
            WorkloadError::Io { source, .. } => source.raw_os_error(),
            _ => None,
        };
        let status = match e {
            WorkloadError::Interrupted => "interrupted",
            WorkloadError::Timeout => "timeout",
            WorkloadError::Verify(_) => "verify",
            WorkloadError::Unsupported(_) => "unsupported",
            WorkloadError::Io { .. } => "io",
            _ => "tool",
        };
        ChildError {
            status: status.into(),
            message: e.to_string(),
            errno,
        }
    }

    fn into_error(self) -> WorkloadError {
        match (self.status.as_str(), self.errno) {
            ("interrupted", _) => WorkloadError::Interrupted,
            ("timeout", _) => WorkloadError::Timeout,
            ("verify", _) => WorkloadError::Verify(self.message),
            ("unsupported", _) => WorkloadError::Unsupported(self.message),
            ("io", Some(n)) => {
                WorkloadError::io(self.message, std::io::Error::from_raw_os_error(n))
            }
            _ => WorkloadError::Tool(self.message),
        }
    }
}

#[derive(Serialize, Deserialize)]
enum Report<T> {
    Ok(T),
    Err(ChildError),
}

/// Runs `work` in a forked child inside `cg`, returning its result and the cgroup's
/// figures. `cache_budget` is the page cache the child may hold.
pub(super) fn run<T: Serialize + DeserializeOwned>(
    ctx: &Ctx,
    cg: &MemoryCgroup,
    cache_budget: u64,
    work: impl FnOnce() -> Result<T, WorkloadError>,
) -> Result<(T, CgroupFigures), WorkloadError> {
    let report = ctx.scratch.join("db-engine-report.json");
    let _ = fs::remove_file(&report);
    let procs = cg.procs_file();
    let mut fig = start_figures(cg, cache_budget)?;
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the child touches only its own copies of the data, opens fresh SQLite
    // connections (none is carried across the fork), allocates through glibc's fork-safe
    // malloc, and leaves through `_exit` without running the parent's destructors.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(WorkloadError::io(
            "fork for the db engine",
            std::io::Error::last_os_error(),
        ));
    }
    if pid == 0 {
        child(parent, &procs, &report, work);
    }
    let waited = supervise(ctx, cg, pid, &mut fig);
    fig.peak = cg.peak();
    fig.limit_hits = cg.limit_hits();
    let status = waited?;
    let text = fs::read_to_string(&report).map_err(|_| {
        WorkloadError::Tool(format!(
            "the db engine process ended ({status}) without a report"
        ))
    })?;
    let _ = fs::remove_file(&report);
    match serde_json::from_str::<Report<T>>(&text) {
        Ok(Report::Ok(t)) => Ok((t, fig)),
        Ok(Report::Err(e)) => Err(e.into_error()),
        Err(e) => Err(WorkloadError::Tool(format!(
            "unreadable db engine report: {e}"
        ))),
    }
}

/// The child: tied to the parent's life, into the cgroup, run, report, `_exit`. Never
/// returns.
fn child<T: Serialize>(
    parent: libc::pid_t,
    procs: &Path,
    report: &Path,
    work: impl FnOnce() -> Result<T, WorkloadError>,
) -> ! {
    // SAFETY: resetting dispositions in a single-threaded child. The parent's handlers
    // would forward a terminal's Ctrl-C into the parent's signal pipe a second time (and
    // read as a second Ctrl-C); the parent stops the child itself.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
        libc::signal(libc::SIGTERM, libc::SIG_DFL);
    }
    // The engine dies with fsarena: after `kill -9` of the parent nothing would stop it,
    // and it would go on writing to a target whose cleanup is about to unmount it. The
    // death signal fires when the forking thread exits; that thread waits for this child
    // in `supervise`, so it outlives it on every path but the parent's own death. A parent
    // that died before the prctl took effect is caught by the ppid check.
    // SAFETY: plain syscalls in the child.
    unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        if libc::getppid() != parent {
            libc::_exit(1);
        }
    }
    let code = match fs::write(procs, "0") {
        Err(e) => write_report::<T>(
            report,
            &Report::Err(ChildError::of(&WorkloadError::io(
                format!("entering {}", procs.display()),
                e,
            ))),
        ),
        Ok(()) => match std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)) {
            Ok(Ok(t)) => write_report(report, &Report::Ok(t)),
            Ok(Err(e)) => write_report::<T>(report, &Report::Err(ChildError::of(&e))),
            Err(_) => 101,
        },
    };
    // SAFETY: ends the child without unwinding into the parent's frames.
    unsafe { libc::_exit(code) }
}

fn write_report<T: Serialize>(path: &Path, r: &Report<T>) -> i32 {
    match serde_json::to_vec(r).map(|b| fs::write(path, b)) {
        Ok(Ok(())) => 0,
        _ => 1,
    }
}

/// Waits for the child, keeping the limit at its own memory plus the budget; on a cancel
/// or the deadline kills it and returns that error. The result describes how it ended.
fn supervise(
    ctx: &Ctx,
    cg: &MemoryCgroup,
    pid: libc::pid_t,
    fig: &mut CgroupFigures,
) -> Result<String, WorkloadError> {
    let (status, _) = wait_child(ctx, pid, "waiting for the db engine", &mut || {
        keep_limit(cg, fig)
    })?;
    Ok(if libc::WIFEXITED(status) {
        format!("exit {}", libc::WEXITSTATUS(status))
    } else {
        format!("signal {}", libc::WTERMSIG(status))
    })
}

/// Waits for our child `pid`, polling every [`POLL`] and calling `tick` between polls (the
/// cgroup limit keeper); when the run is cancelled or past its deadline, kills and reaps
/// the child and returns that error. Returns the raw wait status and the child's CPU and
/// memory usage. Shared by the `db` engine child and `pg`'s pgbench.
pub(crate) fn wait_child(
    ctx: &Ctx,
    pid: libc::pid_t,
    what: &str,
    tick: &mut dyn FnMut(),
) -> Result<(i32, libc::rusage), WorkloadError> {
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid value for wait4 to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: our own child; wait4 fills `usage` with its CPU times when it is reaped.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            return Ok((status, usage));
        }
        if r < 0 {
            return Err(WorkloadError::io(what, std::io::Error::last_os_error()));
        }
        if let Err(e) = ctx.check() {
            // SAFETY: our own child, not yet reaped, so the pid cannot be recycled.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return Err(e);
        }
        tick();
        std::thread::sleep(POLL);
    }
}

/// One adjustment: raises the limit to the engine's own memory (everything charged but
/// reclaimable page cache) plus the budget, and records the page cache seen. Called every
/// [`POLL`] by whoever supervises an engine in `cg` (the `db` child's parent, the `pg`
/// server's keeper thread).
pub(crate) fn keep_limit(cg: &MemoryCgroup, fig: &mut CgroupFigures) {
    if let Some((total, cache, shmem)) = cg.usage() {
        fig.page_cache_peak = fig.page_cache_peak.max(cache);
        let own = total.saturating_sub(cache) + shmem;
        let want = own + fig.cache_budget + SLACK;
        if want > fig.limit_max && cg.set_limit(want).is_ok() {
            fig.limit_max = want;
        }
    }
}

/// Starts confining `cg` to `cache_budget` of page cache: sets the limit to the memory of
/// what already runs in it (nothing for `db`'s fresh cgroup, a running server for `pg`)
/// plus the budget and slack, and returns the figures [`keep_limit`] then maintains.
/// (cgroup v1 refuses, with EBUSY, a limit below what it cannot reclaim.)
pub(crate) fn start_figures(
    cg: &MemoryCgroup,
    cache_budget: u64,
) -> Result<CgroupFigures, WorkloadError> {
    let own = cg.usage().map_or(0, |(total, cache, shmem)| {
        total.saturating_sub(cache) + shmem
    });
    let fig = CgroupFigures {
        cache_budget,
        limit_max: own + cache_budget + SLACK,
        ..Default::default()
    };
    cg.set_limit(fig.limit_max)
        .map_err(|e| WorkloadError::Tool(e.to_string()))?;
    Ok(fig)
}
