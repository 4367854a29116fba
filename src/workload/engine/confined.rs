//! Running the engine's measured phase in a child process inside a memory cgroup.
//!
//! SQLite runs in-process, and the kernel charges a page cache page to the memory cgroup of
//! the *process* (its mm owner) that faults it in, not of the thread: moving the worker
//! threads into a cgroup would not confine the cache their reads use. So the measured phase
//! forks: the child moves itself into the cgroup, opens its connections, spawns and parks
//! its threads and says it is ready; only then does the parent measure the engine's own
//! memory (heap, stacks, kernel objects), set the limit to that plus the page-cache budget
//! and slack, and let it go. Meanwhile a keeper thread keeps the limit above the engine's
//! own memory as it grows, so the budget is what the database files get — neither less (the
//! engine's heap would squeeze them) nor more.
//!
//! Why the order and the keeper matter (cgroup v1, OOM killer off): a charge the kernel
//! cannot meet by reclaiming page cache stalls a *page fault* until the limit is raised, but
//! fails a *system call* at once — a `pwrite` to the WAL or a `pread` into a fresh buffer
//! returns ENOMEM (SQLite: "disk I/O error"), a `clone` EAGAIN ("failed to spawn thread").
//! Setting the limit before the engine allocated its connections and threads, and keeping it
//! from a 10 ms poll that a loaded machine delays by far more, made cells fail that way.

use std::fs::{self, File};
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::plan::size::human_bytes;
use crate::provision::cgroup::MemoryCgroup;
use crate::workload::ctx::Ctx;
use crate::workload::error::WorkloadError;

/// Room above the engine's memory and the budget, so a burst of allocation between two
/// adjustments is absorbed by reclaiming cache rather than stalling the engine. (More room
/// lets the page cache past its budget on a disk file system: where the cache cannot be
/// reclaimed, [`GROWTH_ROOM`] adds what is needed.)
const SLACK: u64 = 256 << 10;
/// How often the keeper adjusts the limit (and the parent looks for a cancel).
const POLL: Duration = Duration::from_millis(5);
/// How often the keeper looks at a cgroup whose limit cannot bind (it is above the
/// machine's memory: a cache far above the database, the setting that measures what the
/// cgroup itself costs): there is nothing to adjust, only the page-cache peak to sample,
/// and each look (reading `memory.stat`) costs ~85 µs of CPU, 1.7 % of a core every 5 ms.
const UNBINDABLE_POLL: Duration = Duration::from_millis(200);
/// Adjustments' worth of the engine's recent growth kept as room above its memory and the
/// budget when the cgroup's page cache is mostly tmpfs pages (and more than the slack): a
/// WAL on tmpfs grows by hundreds of MB/s, no reclaim can shrink it, and a charge in a
/// system call that finds no page cache to reclaim fails instead of waiting for the keeper.
const GROWTH_ROOM: u64 = 8;
/// A limit that never binds (cgroup v1 rounds it down to its own maximum).
pub(crate) const NO_LIMIT: u64 = 1 << 50;

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
    /// Room above the engine's memory and the budget.
    pub(crate) slack: u64,
    /// The engine's own memory when the limit was first set.
    pub(crate) own_at_start: u64,
    /// Times the keeper found the engine stalled at the limit (page cache it could not
    /// reclaim, such as dirty pages) and raised the limit by the slack to free it.
    pub(crate) stall_raises: u64,
    /// Whether the keeper ran at real-time priority (it does when it may).
    pub(crate) keeper_realtime: bool,
    /// The engine's own memory at the last adjustment, and its recent growth per
    /// adjustment (the largest, decaying): on tmpfs the room above the budget grows with
    /// it, since a syscall that outruns the limit fails.
    last_own: u64,
    growth: u64,
    /// The largest room above own memory + budget the keeper gave.
    pub(crate) headroom_max: u64,
    /// The limit is at or above the machine's memory, so it can never be reached: the
    /// keeper only samples, every [`UNBINDABLE_POLL`].
    pub(crate) unbindable: bool,
    /// When the keeper last looked at the cgroup.
    last_look: Option<std::time::Instant>,
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
        m.insert("cgroup_stall_raises".into(), self.stall_raises as f64);
    }

    /// The record's note: what the limit was made of and whether it was reached.
    pub(crate) fn note(&self, label: &str, db_bytes: u64) -> String {
        let hits = match self.limit_hits {
            Some(0) => "never reached".to_string(),
            Some(n) => format!("reached {n} times (page cache reclaimed)"),
            None => "reached an unknown number of times".to_string(),
        };
        format!(
            "engine confined to a memory cgroup ({label}): page cache budget {} of a {} \
             database; limit = the engine's own memory once ready ({}) + budget + slack {} \
             (up to {} while it grew fast on tmpfs), kept every {} ms by a {}keeper thread (highest {}); the limit was {hits}{}; \
             peak page cache seen {}{}",
            human_bytes(self.cache_budget),
            human_bytes(db_bytes),
            human_bytes(self.own_at_start),
            human_bytes(self.slack),
            human_bytes(self.headroom_max),
            POLL.as_millis(),
            if self.keeper_realtime { "real-time " } else { "" },
            human_bytes(self.limit_max),
            match self.stall_raises {
                0 => String::new(),
                n => format!(", raised {n} times to free a stalled engine"),
            },
            human_bytes(self.page_cache_peak),
            if self.unbindable {
                format!(
                    " (the limit is above the machine's memory and cannot bind: the cgroup \
                     was only looked at every {} ms)",
                    UNBINDABLE_POLL.as_millis()
                )
            } else {
                String::new()
            }
        )
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

/// The work a confined child runs: it calls `ready` once it has allocated what it can up
/// front, and starts its measured phase only when that returns.
pub(crate) type Ready<'a> = &'a mut dyn FnMut() -> Result<(), WorkloadError>;

/// Runs `work` in a forked child inside `cg`, returning its result and the cgroup's
/// figures. `cache_budget` is the page cache the child may hold.
pub(crate) fn run<T: Serialize + DeserializeOwned>(
    ctx: &Ctx,
    cg: &MemoryCgroup,
    cache_budget: u64,
    work: impl FnOnce(Ready) -> Result<T, WorkloadError>,
) -> Result<(T, CgroupFigures), WorkloadError> {
    let report = ctx.scratch.join("db-engine-report.json");
    let _ = fs::remove_file(&report);
    let procs = cg.procs_file();
    // Unconfined until the child says it is ready.
    cg.set_limit(NO_LIMIT)
        .map_err(|e| WorkloadError::Tool(e.to_string()))?;
    let (ready_r, ready_w) = pipe("ready")?;
    let (go_r, go_w) = pipe("go")?;
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
        drop((ready_r, go_w));
        child(parent, &procs, &report, ready_w, go_r, work);
    }
    drop((ready_w, go_r));
    let mut fig = CgroupFigures {
        cache_budget,
        slack: SLACK,
        ..Default::default()
    };
    let waited = supervise(ctx, cg, pid, ready_r, go_w, &mut fig);
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

/// A close-on-exec pipe: (read end, write end).
fn pipe(what: &str) -> Result<(File, File), WorkloadError> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills both descriptors, which we then own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(WorkloadError::io(
            format!("pipe for the db engine's {what} handshake"),
            std::io::Error::last_os_error(),
        ));
    }
    // SAFETY: fresh descriptors owned by nothing else.
    Ok(unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) })
}

/// The child: tied to the parent's life, into the cgroup, run, report, `_exit`. Never
/// returns.
fn child<T: Serialize>(
    parent: libc::pid_t,
    procs: &Path,
    report: &Path,
    mut ready_w: File,
    mut go_r: File,
    work: impl FnOnce(Ready) -> Result<T, WorkloadError>,
) -> ! {
    // SAFETY: resetting dispositions in a single-threaded child. The parent's handlers
    // would forward a terminal's Ctrl-C into the parent's signal pipe a second time (and
    // read as a second Ctrl-C); the parent stops the child itself.
    // A group of its own besides: a terminal's Ctrl-C (SIGINT to the foreground group) would
    // kill the engine mid-measurement, a false failure; the parent stops it on a cancel.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
        libc::signal(libc::SIGTERM, libc::SIG_DFL);
        libc::setpgid(0, 0);
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
    // Ready: tell the parent, then wait for its go (end of file: it could not set the
    // limit, or it is gone).
    let mut ready = || -> Result<(), WorkloadError> {
        let handshake = |e| WorkloadError::io("the db engine's handshake with fsarena", e);
        ready_w.write_all(b"r").map_err(handshake)?;
        let mut go = [0u8; 1];
        match go_r.read(&mut go).map_err(handshake)? {
            1 => Ok(()),
            _ => Err(WorkloadError::Tool(
                "fsarena did not start the confined db engine (see its error)".into(),
            )),
        }
    };
    let code = match fs::write(procs, "0") {
        Err(e) => write_report::<T>(
            report,
            &Report::Err(ChildError::of(&WorkloadError::io(
                format!("entering {}", procs.display()),
                e,
            ))),
        ),
        Ok(()) => match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(&mut ready)))
        {
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

/// Waits for the child while a keeper thread answers its handshake (measures, sets the
/// limit, says go) and then keeps the limit; on a cancel or the deadline kills it and
/// returns that error. The result describes how it ended.
fn supervise(
    ctx: &Ctx,
    cg: &MemoryCgroup,
    pid: libc::pid_t,
    ready_r: File,
    go_w: File,
    fig: &mut CgroupFigures,
) -> Result<String, WorkloadError> {
    let stop = AtomicBool::new(false);
    let (waited, kept) = std::thread::scope(|s| {
        let keeper = std::thread::Builder::new()
            .name("db-cgroup-keeper".into())
            .spawn_scoped(s, || keeper(cg, fig, ready_r, go_w, &stop));
        let waited = match &keeper {
            Ok(_) => wait_child(ctx, pid, "waiting for the db engine", &mut || {}),
            Err(e) => {
                // Without a keeper nobody says go: the child reads end of file and reports.
                let e = WorkloadError::io("spawning the db cgroup keeper thread", e.kind().into());
                wait_child(ctx, pid, "waiting for the db engine", &mut || {}).and(Err(e))
            }
        };
        stop.store(true, Ordering::Relaxed);
        let kept = match keeper {
            Ok(h) => h.join().unwrap_or_else(|_| {
                Err(WorkloadError::Tool("the db cgroup keeper panicked".into()))
            }),
            Err(_) => Ok(()),
        };
        (waited, kept)
    });
    let (status, _) = waited?;
    kept?;
    Ok(if libc::WIFEXITED(status) {
        format!("exit {}", libc::WEXITSTATUS(status))
    } else {
        format!("signal {}", libc::WTERMSIG(status))
    })
}

/// The keeper thread: at real-time priority where it may (a late adjustment is what fails
/// the engine, and on a loaded machine an ordinary thread's 5 ms sleep can last far
/// longer), waits for the child's ready, sets the limit and says go, then keeps the limit
/// every [`POLL`] until `stop`. An error setting the first limit is returned after closing
/// the go pipe, so the child gives up instead of running unconfined.
fn keeper(
    cg: &MemoryCgroup,
    fig: &mut CgroupFigures,
    mut ready_r: File,
    go_w: File,
    stop: &AtomicBool,
) -> Result<(), WorkloadError> {
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: changes only this thread's scheduling policy.
    fig.keeper_realtime = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } == 0;
    // Waiting for ready, a POLL at a time so a stop (the child ended) is seen.
    let mut byte = [0u8; 1];
    loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        let mut pfd = libc::pollfd {
            fd: ready_r.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut pfd, 1, POLL.as_millis() as libc::c_int) };
        if n > 0 {
            match ready_r.read(&mut byte) {
                Ok(1) => break,
                // End of file: the child ended before it was ready.
                _ => return Ok(()),
            }
        }
    }
    if let Err(e) = start(cg, fig) {
        drop(go_w);
        return Err(e);
    }
    let mut go_w = go_w;
    // A failed write means the child is gone; the waiter sees how it ended.
    let _ = go_w.write_all(b"g");
    drop(go_w);
    while !stop.load(Ordering::Relaxed) {
        // A wake-up costs microseconds; a look at the cgroup (see keep_limit) far more.
        keep_limit(cg, fig);
        std::thread::sleep(POLL);
    }
    Ok(())
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
/// reclaimable page cache) plus the budget and slack, and records the page cache seen. When
/// the engine is nevertheless stalled at the limit (v1 `under_oom`: the cache it holds could
/// not be reclaimed, e.g. dirty pages not yet written back), the limit goes up by the slack
/// so the stalled fault can finish. Called every [`POLL`] by whoever supervises an engine in
/// `cg` (the `db` child's keeper, the `pg` server's keeper thread).
pub(crate) fn keep_limit(cg: &MemoryCgroup, fig: &mut CgroupFigures) {
    let now = std::time::Instant::now();
    if fig.unbindable && fig.last_look.is_some_and(|t| now - t < UNBINDABLE_POLL) {
        return;
    }
    fig.last_look = Some(now);
    if let Some((total, cache, shmem)) = cg.usage() {
        fig.page_cache_peak = fig.page_cache_peak.max(cache);
        let own = total.saturating_sub(cache) + shmem;
        // Where the cgroup's page cache is mostly pages no reclaim can shrink (a tmpfs
        // target: its WAL), nothing makes room for the engine's growth but the limit, so it
        // gets room for its recent growth; on a disk file system the clean cache makes
        // that room, and the budget stays the budget.
        let grew = own.saturating_sub(fig.last_own);
        fig.last_own = own;
        fig.growth = grew.max(fig.growth - fig.growth / 16);
        let headroom = if shmem > cache.saturating_sub(shmem) {
            fig.slack.max(GROWTH_ROOM * fig.growth)
        } else {
            fig.slack
        };
        fig.headroom_max = fig.headroom_max.max(headroom);
        let mut want = own + fig.cache_budget + headroom;
        if cg.under_oom() {
            want = want.max(fig.limit_max + fig.slack);
            fig.stall_raises += 1;
        }
        if want > fig.limit_max && cg.set_limit(want).is_ok() {
            fig.limit_max = want;
        }
    }
}

/// Starts confining `cg` to its figures' budget of page cache: sets the limit to the memory
/// of what already runs in it (the `db` engine once ready, a running server for `pg`) plus
/// the budget and slack. (cgroup v1 reclaims page cache to meet a lower limit, and refuses,
/// with EBUSY, a limit below what it cannot reclaim.)
pub(crate) fn start(cg: &MemoryCgroup, fig: &mut CgroupFigures) -> Result<(), WorkloadError> {
    let own = cg.usage().map_or(0, |(total, cache, shmem)| {
        total.saturating_sub(cache) + shmem
    });
    fig.own_at_start = own;
    fig.last_own = own;
    fig.headroom_max = fig.slack;
    fig.limit_max = own + fig.cache_budget + fig.slack;
    fig.unbindable = memory_total().is_some_and(|total| fig.limit_max >= total);
    cg.set_limit(fig.limit_max)
        .map_err(|e| WorkloadError::Tool(e.to_string()))
}

/// The machine's memory (`MemTotal`).
fn memory_total() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    crate::monitor::meminfo::parse(&text).ok().map(|m| m.total)
}

/// [`start`] for a fresh set of figures with the base slack.
pub(crate) fn start_figures(
    cg: &MemoryCgroup,
    cache_budget: u64,
) -> Result<CgroupFigures, WorkloadError> {
    let mut fig = CgroupFigures {
        cache_budget,
        slack: SLACK,
        ..Default::default()
    };
    start(cg, &mut fig)?;
    Ok(fig)
}
