//! The transaction mix: worker threads drawing transaction types by weight and running them
//! against SQLite, a background checkpointer, and what happens when the database is busy.
//!
//! Every worker replays the same stream of random choices for a given seed (one ChaCha
//! stream per worker index), drawn before any attempt so that retries and timing do not
//! change what is asked.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rusqlite::{Connection, OptionalExtension};
use xxhash_rust::xxh3::xxh3_64;

use super::options::{Config, Op};
use super::outcome::{CheckpointStats, MaintenanceStats, ThreadIo, WorkerStats};
use super::schema::{fill_body, is_busy, sql_err, Built, BODY_MAX};
use super::timed::{self, thread_cpu_ns};
use crate::workload::ctx::Ctx;
use crate::workload::error::WorkloadError;

/// What the measured phase produced: each worker's statistics, the checkpointer's, and the
/// wall-clock seconds from the first transaction to the last thread's end. Serializable
/// because a confined engine reports it from a child process.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Measured {
    pub(super) stats: Vec<WorkerStats>,
    pub(super) ckpt: CheckpointStats,
    pub(super) seconds: f64,
    /// The WAL file's size when the workers stopped.
    pub(super) wal_file_bytes: u64,
    /// The engine's reads, writes and syncs per file over the phase.
    pub(super) files: timed::Snapshot,
    /// The maintenance thread's counts (the `maintenance` variant).
    pub(super) maint: MaintenanceStats,
}

/// The background threads' connections: the checkpointer's and the maintenance variant's.
pub(super) struct Background {
    pub(super) checkpoint: Option<Connection>,
    pub(super) maintenance: Option<Connection>,
}

/// Runs the mix for `cfg.duration`: one thread per connection in `conns`, plus the
/// checkpointer when its connection is given and checkpoints are on (and the maintenance
/// thread likewise in the `maintenance` variant). Every thread is
/// spawned and parked first, then `ready` is called (a confined engine's handshake: its
/// supervisor measures the engine's memory and sets the cgroup limit) and only then does
/// the clock start and the threads run. The first failure (an engine error, a cancel, the
/// deadline, a refused handshake) stops every thread and is returned.
pub(super) fn run(
    cfg: &Config,
    ctx: &Ctx,
    built: &Built,
    seed: u64,
    conns: Vec<Connection>,
    background: Background,
    ready: &mut dyn FnMut() -> Result<(), WorkloadError>,
) -> Result<Measured, WorkloadError> {
    let sh = Shared::new(cfg, ctx, built, seed);
    let gate = Gate::default();
    let workers_done = AtomicBool::new(false);
    let (stats, (ckpt, maint), start, files) = thread::scope(|s| {
        let (sh, done, gate) = (&sh, &workers_done, &gate);
        let mut spawn_failed = None;
        let ckpt = background
            .checkpoint
            .zip(cfg.checkpoint_interval)
            .and_then(|(c, every)| {
                keeper(s, "db-checkpoint", gate, &mut spawn_failed, move || {
                    checkpointer(c, every, sh, done)
                })
            });
        let maint = background
            .maintenance
            .zip(cfg.maintain)
            .and_then(|(c, every)| {
                keeper(s, "db-maintenance", gate, &mut spawn_failed, move || {
                    maintainer(c, every, sh, done)
                })
            });
        let handles = spawn_workers(s, sh, gate, conns, &mut spawn_failed);
        // Everything that allocates is done: the engine is ready for its limit.
        let go = match spawn_failed {
            Some(e) => Err(WorkloadError::io("spawning a db engine thread", e)),
            None => ready(),
        };
        let start = Instant::now();
        let db_path = sh.ctx.root.join(super::schema::DB_FILE);
        let files0 = timed::Snapshot::now(&db_path);
        sh.let_go(go, gate, start + cfg.duration);
        let stats: Vec<WorkerStats> = handles
            .into_iter()
            .filter_map(|h| h.join().ok().flatten())
            .collect();
        workers_done.store(true, Ordering::Relaxed);
        let ckpt = ckpt.and_then(|h| h.join().ok()).unwrap_or_default();
        let maint = maint.and_then(|h| h.join().ok()).unwrap_or_default();
        (
            stats,
            (ckpt, maint),
            start,
            files0.since(&timed::Snapshot::now(&db_path)),
        )
    });
    let seconds = start.elapsed().as_secs_f64();
    if let Some(err) = sh.failure.lock().ok().and_then(|mut f| f.take()) {
        return Err(err);
    }
    if stats.len() != cfg.threads {
        return Err(WorkloadError::Tool("a db worker thread panicked".into()));
    }
    let wal = format!("{}-wal", sh.ctx.root.join(super::schema::DB_FILE).display());
    Ok(Measured {
        stats,
        ckpt,
        seconds,
        wal_file_bytes: std::fs::metadata(wal).map_or(0, |m| m.len()),
        files,
        maint,
    })
}

/// Starts a background keeper of the engine (checkpoints, maintenance) named `name`: it
/// waits at `gate` with the workers and runs `work` once the gate opens, or ends with
/// empty figures when the engine never starts. A thread that cannot be spawned leaves its
/// error in `failed` (the engine then does not start).
fn keeper<'s, T: Default + Send + 's>(
    s: &'s thread::Scope<'s, '_>,
    name: &str,
    gate: &'s Gate,
    failed: &mut Option<std::io::Error>,
    work: impl FnOnce() -> T + Send + 's,
) -> Option<thread::ScopedJoinHandle<'s, T>> {
    thread::Builder::new()
        .name(name.into())
        .spawn_scoped(s, move || if gate.wait() { work() } else { T::default() })
        .map_err(|e| *failed = Some(e))
        .ok()
}

/// Spawns one parked worker per connection, named `db-worker-N`; each runs once `gate`
/// opens to run, or ends without figures. Stops at the first thread that cannot be spawned
/// and leaves its error in `failed` (the engine then does not start).
fn spawn_workers<'s>(
    s: &'s thread::Scope<'s, '_>,
    sh: &'s Shared<'s>,
    gate: &'s Gate,
    conns: Vec<Connection>,
    failed: &mut Option<std::io::Error>,
) -> Vec<thread::ScopedJoinHandle<'s, Option<WorkerStats>>> {
    let mut handles = Vec::with_capacity(conns.len());
    for (i, c) in conns.into_iter().enumerate() {
        let spawned = thread::Builder::new()
            .name(format!("db-worker-{i}"))
            .spawn_scoped(s, move || gate.wait().then(|| worker(i, c, sh)));
        match spawned {
            Ok(h) => handles.push(h),
            Err(e) => {
                *failed = Some(e);
                break;
            }
        }
    }
    handles
}

/// Where the spawned threads wait until the engine may start: `true` to run, `false` to
/// give up (a failed spawn or handshake).
#[derive(Default)]
struct Gate {
    open: Mutex<Option<bool>>,
    cv: Condvar,
}

impl Gate {
    fn wait(&self) -> bool {
        let mut g = self.open.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(go) = *g {
                return go;
            }
            g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }
    fn open(&self, go: bool) {
        *self.open.lock().unwrap_or_else(|e| e.into_inner()) = Some(go);
        self.cv.notify_all();
    }
}

/// Draws a transaction type by weight.
fn pick(cfg: &Config, rng: &mut ChaCha8Rng) -> Op {
    let total: u32 = cfg.mix.iter().sum();
    let mut x = rng.gen_range(0..total);
    for op in Op::ALL {
        let w = cfg.mix[op as usize];
        if x < w {
            return op;
        }
        x -= w;
    }
    Op::Read
}

/// State shared by the workers.
struct Shared<'a> {
    cfg: &'a Config,
    ctx: &'a Ctx<'a>,
    built: &'a Built,
    seed: u64,
    /// Highest row id in use: deletes, replaces and reads aim below it.
    max_id: AtomicI64,
    /// The item timestamp clock.
    clock: AtomicI64,
    stop: AtomicBool,
    /// When the measured phase ends; set when the parked threads are let go.
    end: OnceLock<Instant>,
    failure: Mutex<Option<WorkloadError>>,
    /// The queue writers (and blocking checkpoints) wait in before `BEGIN IMMEDIATE`, like an
    /// engine's log writer queue. Without it, SQLite's busy handler polls with 1–100 ms
    /// sleeps, so write latency would mostly show that sleep schedule rather than the file
    /// system, and a RESTART checkpoint could starve for seconds behind a stream of writers.
    write_queue: Mutex<()>,
}

impl<'a> Shared<'a> {
    /// The state of a fresh run over `built`: row ids and the item clock continue after
    /// the built rows, nothing stopped or failed yet.
    fn new(cfg: &'a Config, ctx: &'a Ctx<'a>, built: &'a Built, seed: u64) -> Self {
        Shared {
            cfg,
            ctx,
            built,
            seed,
            max_id: AtomicI64::new(built.rows as i64),
            clock: AtomicI64::new(built.rows as i64 + 1),
            stop: AtomicBool::new(false),
            end: OnceLock::new(),
            failure: Mutex::new(None),
            write_queue: Mutex::new(()),
        }
    }

    /// Lets the parked threads go once the clock has started: to run until `end` when the
    /// engine is ready (`go`), or to end at once with `go`'s error as the run's failure.
    fn let_go(&self, go: Result<(), WorkloadError>, gate: &Gate, end: Instant) {
        match go {
            Ok(()) => {
                let _ = self.end.set(end);
                gate.open(true);
            }
            Err(e) => {
                self.fail(e);
                gate.open(false);
            }
        }
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, ()> {
        self.write_queue.lock().unwrap_or_else(|e| e.into_inner())
    }
    fn fail(&self, e: WorkloadError) {
        if let Ok(mut f) = self.failure.lock() {
            f.get_or_insert(e);
        }
        self.stop.store(true, Ordering::Relaxed);
    }
    fn running(&self) -> bool {
        if self.stop.load(Ordering::Relaxed) {
            return false;
        }
        if let Err(e) = self.ctx.check() {
            self.fail(e);
            return false;
        }
        self.end.get().is_some_and(|end| Instant::now() < *end)
    }
}

/// The outcome of one transaction attempt.
enum Effect {
    Inserted(i64),
    /// Whether a row was there to delete / replace / read.
    Hit(bool),
    /// A read found an item whose body does not match its checksum.
    Corrupt(i64),
}

/// One transaction's random choices, drawn before any attempt so retries replay it exactly
/// and the stream of choices does not depend on timing.
struct Draw {
    op: Op,
    durable: bool,
    target: f64,
    folder: i64,
    sum: i64,
}

/// One worker thread: runs transactions until the end, a stop or a failure, and counts
/// what it did, including its syscall bytes.
fn worker(index: usize, conn: Connection, sh: &Shared) -> WorkerStats {
    let mut st = WorkerStats::default();
    let start_io = ThreadIo::now();
    let cpu0 = thread_cpu_ns();
    if let Err(e) = work(index, &conn, sh, &mut st) {
        sh.fail(e);
    }
    st.cpu_ns = cpu0.zip(thread_cpu_ns()).map(|(a, b)| b.saturating_sub(a));
    if let (Some(a), Some(b)) = (start_io, ThreadIo::now()) {
        (st.read_bytes, st.write_bytes) = a.since(b);
        st.io_counted = true;
    }
    st
}

/// The worker's loop: draw, queue (writers), attempt until not busy, record.
fn work(
    index: usize,
    conn: &Connection,
    sh: &Shared,
    st: &mut WorkerStats,
) -> Result<(), WorkloadError> {
    let mut rng = ChaCha8Rng::seed_from_u64(sh.seed);
    rng.set_stream(1 + index as u64);
    let mut body = Vec::with_capacity(BODY_MAX);
    let mut synchronous_full = false;
    while sh.running() {
        let op = pick(sh.cfg, &mut rng);
        let draw = Draw {
            op,
            durable: rng.gen_range(0..100) >= sh.cfg.lazy_commit_pct,
            target: rng.gen(),
            folder: rng.gen_range(0..sh.built.folders),
            sum: match op {
                Op::Insert | Op::Replace => fill_body(&mut rng, &mut body),
                _ => 0,
            },
        };
        let writes = op != Op::Read;
        if writes && draw.durable != synchronous_full {
            let mode = if draw.durable { "FULL" } else { "NORMAL" };
            conn.pragma_update(None, "synchronous", mode)
                .map_err(|e| sql_err("synchronous", e))?;
            synchronous_full = draw.durable;
        }
        // Latency includes the wait in the write queue: that is part of a commit's cost.
        let t0 = Instant::now();
        let queued = writes.then(|| sh.queue());
        let effect = loop {
            match transaction(conn, sh, &draw, &body) {
                Ok(effect) => break Some(effect),
                Err(e) if is_busy(&e) => {
                    if !conn.is_autocommit() {
                        let _ = conn.execute_batch("ROLLBACK");
                    }
                    st.busy_retries += 1;
                    if !sh.running() {
                        break None; // Abandoned at the end: neither counted nor committed.
                    }
                }
                Err(e) => {
                    if !conn.is_autocommit() {
                        let _ = conn.execute_batch("ROLLBACK");
                    }
                    return Err(sql_err(op.name(), e));
                }
            }
        };
        drop(queued);
        let Some(effect) = effect else { break };
        let ns = t0.elapsed().as_nanos() as u64;
        match effect {
            Effect::Inserted(id) => {
                st.inserted += 1;
                sh.max_id.fetch_max(id, Ordering::Relaxed);
            }
            Effect::Hit(true) if op == Op::Delete => st.deleted += 1,
            Effect::Hit(true) => {}
            Effect::Hit(false) => st.misses[op as usize] += 1,
            Effect::Corrupt(id) => {
                return Err(WorkloadError::Verify(format!(
                    "item {id} read back with a body that does not match its checksum"
                )))
            }
        }
        st.lat[op as usize].push(ns);
        if writes {
            if draw.durable {
                st.durable.push(ns);
            } else {
                st.lazy.push(ns);
            }
        }
    }
    Ok(())
}

/// One attempt at a transaction. Writers take the write lock up front (`BEGIN IMMEDIATE`), so
/// a busy database shows up at BEGIN, where the busy timeout waits for it, and never as a
/// failed upgrade halfway through.
fn transaction(conn: &Connection, sh: &Shared, d: &Draw, body: &[u8]) -> rusqlite::Result<Effect> {
    let max = sh.max_id.load(Ordering::Relaxed).max(1);
    let id = 1 + ((d.target * max as f64) as i64).min(max - 1);
    if d.op == Op::Read {
        conn.execute_batch("BEGIN")?;
        let item: Option<(i64, i64, Vec<u8>)> = conn
            .prepare_cached("SELECT folder, sum, body FROM items WHERE id = ?1")?
            .query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()?;
        let folder = item.as_ref().map_or(d.folder, |i| i.0);
        let mut list = conn.prepare_cached(
            "SELECT id, ts FROM items WHERE folder = ?1 ORDER BY ts DESC LIMIT 10",
        )?;
        let mut rows = list.query([folder])?;
        while rows.next()?.is_some() {}
        drop(rows);
        conn.execute_batch("COMMIT")?;
        return Ok(match item {
            Some((_, sum, b)) if xxh3_64(&b) as i64 != sum => Effect::Corrupt(id),
            found => Effect::Hit(found.is_some()),
        });
    }
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let effect = match d.op {
        Op::Insert => {
            let ts = sh.clock.fetch_add(1, Ordering::Relaxed);
            conn.prepare_cached(
                "INSERT INTO items(folder, ts, sum, body) VALUES (?1, ?2, ?3, ?4)",
            )?
            .execute(rusqlite::params![d.folder, ts, d.sum, body])?;
            Effect::Inserted(conn.last_insert_rowid())
        }
        Op::Delete => Effect::Hit(
            conn.prepare_cached("DELETE FROM items WHERE id = ?1")?
                .execute([id])?
                == 1,
        ),
        _ => {
            let ts = sh.clock.fetch_add(1, Ordering::Relaxed);
            let n = conn
                .prepare_cached("UPDATE items SET ts = ?1, sum = ?2, body = ?3 WHERE id = ?4")?
                .execute(rusqlite::params![ts, d.sum, body, id])?;
            Effect::Hit(n == 1)
        }
    };
    conn.execute_batch("COMMIT")?;
    Ok(effect)
}

/// Runs `wal_checkpoint(<mode>)` `interval` after the previous one ended, until the workers
/// stop: the engine's background maintenance. A checkpoint that reports busy (it could not
/// finish in the busy timeout) is counted apart.
fn checkpointer(
    conn: Connection,
    interval: Duration,
    sh: &Shared,
    done: &AtomicBool,
) -> CheckpointStats {
    let mut st = CheckpointStats::default();
    let start_io = ThreadIo::now();
    let cpu0 = thread_cpu_ns();
    let mut next = Instant::now() + interval;
    while !done.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now < next {
            thread::sleep((next - now).min(Duration::from_millis(20)));
            continue;
        }
        let sql = format!("PRAGMA wal_checkpoint({})", sh.cfg.checkpoint_mode);
        let t0 = Instant::now();
        // PASSIVE never takes the writer lock; the other modes queue like a writer.
        let queued = (sh.cfg.checkpoint_mode != "PASSIVE").then(|| sh.queue());
        let result = conn.query_row(&sql, [], |r| r.get::<_, i64>(0));
        drop(queued);
        let took = t0.elapsed();
        st.total += took;
        st.longest = st.longest.max(took);
        next = Instant::now() + interval;
        match result {
            Ok(0) => st.done += 1,
            Ok(_) => st.busy += 1,
            Err(e) if is_busy(&e) => st.busy += 1,
            Err(e) => {
                sh.fail(sql_err("checkpoint", e));
                break;
            }
        }
    }
    if let (Some(a), Some(b)) = (start_io, ThreadIo::now()) {
        (st.read_bytes, st.write_bytes) = a.since(b);
    }
    st.cpu_ns = cpu0.zip(thread_cpu_ns()).map(|(a, b)| b.saturating_sub(a));
    st
}

/// The `maintenance` variant's engine maintenance, every `interval` until the workers stop:
/// `wal_checkpoint(PASSIVE)` (never blocks writers) and, in the writers' queue,
/// `incremental_vacuum`, which returns the free list's pages to the file system (the
/// database is built with `auto_vacuum = INCREMENTAL` for it).
fn maintainer(
    conn: Connection,
    interval: Duration,
    sh: &Shared,
    done: &AtomicBool,
) -> MaintenanceStats {
    let mut st = MaintenanceStats::default();
    let mut next = Instant::now() + interval;
    while !done.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now < next {
            thread::sleep((next - now).min(Duration::from_millis(20)));
            continue;
        }
        next = Instant::now() + interval;
        match conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get::<_, i64>(0)) {
            Ok(0) => st.checkpoints += 1,
            Ok(_) => st.busy += 1,
            Err(e) if is_busy(&e) => st.busy += 1,
            Err(e) => {
                sh.fail(sql_err("maintenance checkpoint", e));
                break;
            }
        }
        let queued = sh.queue();
        let vacuum = conn
            .query_row("PRAGMA freelist_count", [], |r| r.get::<_, i64>(0))
            .and_then(|free| {
                conn.execute_batch("PRAGMA incremental_vacuum")
                    .map(|()| free)
            });
        drop(queued);
        match vacuum {
            Ok(free) => {
                st.vacuums += 1;
                st.freed_pages += free.max(0) as u64;
            }
            Err(e) if is_busy(&e) => st.busy += 1,
            Err(e) => {
                sh.fail(sql_err("incremental_vacuum", e));
                break;
            }
        }
    }
    st
}
