//! `db`: a transactional workload on a real database engine (SQLite, WAL mode).
//!
//! It stands in for Exchange Jetstress and SQL Server tests: many threads run short
//! transactions (insert, delete, replace, read) against a database file, most commits lazy
//! (the WAL is not fsynced at commit) and the rest durable, while a background thread
//! checkpoints the WAL into the database like an engine's maintenance does. What it shows
//! about a file system: transactional throughput and latency under fsync and small random
//! writes. Device figures come from the runner's monitor; this reports what the engine did.
//!
//! Each repetition builds the database fresh from the seed (unmeasured), so every target
//! starts from the same bytes and every worker replays the same stream of random choices.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rusqlite::{Connection, ErrorCode, OptionalExtension};
use xxhash_rust::xxh3::xxh3_64;

use super::{fio, Ctx, Harness, IoContext, Outcome, Workload, WorkloadError};

const MIB: u64 = 1 << 20;
const DB_FILE: &str = "fsarena.db";

const KEYS: &[&str] = &[
    "size",
    "page_size",
    "cache_size",
    "threads",
    "duration",
    "mix",
    "lazy_commit_pct",
    "checkpoint_interval_ms",
    "checkpoint_mode",
    "busy_timeout_ms",
];
const CHECKPOINT_MODES: [&str; 4] = ["passive", "full", "restart", "truncate"];
const OPS: [&str; 4] = ["insert", "delete", "replace", "read"];

/// Item bodies are 512–3584 bytes (2 KiB on average), like small mail items or rows.
const BODY_MIN: usize = 512;
const BODY_MAX: usize = 3584;
/// Rows per transaction while building the database.
const BUILD_BATCH: u64 = 500;

/// The `db` workload.
pub struct Db;

/// A transaction type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Insert = 0,
    Delete = 1,
    /// Rewrite an existing item's body and timestamp (Jetstress's "replace").
    Replace = 2,
    /// Read one item (checking its checksum) and list the newest items of its folder.
    Read = 3,
}

impl Op {
    const ALL: [Op; 4] = [Op::Insert, Op::Delete, Op::Replace, Op::Read];
    fn name(self) -> &'static str {
        OPS[self as usize]
    }
}

/// Resolved options.
#[derive(Debug, Clone, PartialEq)]
struct Config {
    /// Database size to build, bytes.
    size: u64,
    page_size: u32,
    /// SQLite page cache per connection (`PRAGMA cache_size`), bytes.
    cache_bytes: u64,
    threads: usize,
    duration: Duration,
    /// Relative weights of insert, delete, replace, read.
    mix: [u32; 4],
    /// Share of write transactions committed with `synchronous=NORMAL` (no WAL fsync).
    lazy_commit_pct: u32,
    /// Background checkpoint period; `None` turns checkpoints off (the WAL only grows).
    checkpoint_interval: Option<Duration>,
    /// `wal_checkpoint` mode, upper case. RESTART by default: PASSIVE alone never completes
    /// while readers keep arriving, so the WAL would grow without bound (SQLite's
    /// "checkpoint starvation"); RESTART briefly holds off writers and lets the next one
    /// start the WAL over, which keeps it bounded, as an engine's maintenance would.
    checkpoint_mode: &'static str,
    busy_timeout: Duration,
}

impl Config {
    fn from_ctx(ctx: &Ctx) -> Result<Config, WorkloadError> {
        let opts = ctx.options;
        if let Some(bad) = opts.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(WorkloadError::Option(format!(
                "db: unknown key `{bad}`; valid keys: {}",
                KEYS.join(", ")
            )));
        }
        let scale = match ctx.dataset.scale {
            s if s.is_finite() && s > 0.0 => s,
            _ => 1.0,
        };
        let size = match opts.get("size") {
            None => ((1u64 << 30) as f64 * scale) as u64 / MIB * MIB,
            Some(v) => size_of(v).ok_or_else(|| bad("size", v, "a size such as 1g"))?,
        }
        .max(4 * MIB);
        let page_size = match opts.get("page_size") {
            None => 32768,
            Some(v) => size_of(v)
                .filter(|p| p.is_power_of_two() && (512..=65536).contains(p))
                .ok_or_else(|| bad("page_size", v, "a power of two from 512 to 65536"))?
                as u32,
        };
        let cache_bytes = match opts.get("cache_size") {
            None => 64 * MIB,
            // A bare number is MiB; a string is a size.
            Some(toml::Value::Integer(i)) => u64::try_from(*i).unwrap_or(0).saturating_mul(MIB),
            Some(v) => size_of(v).unwrap_or(0),
        };
        if !(32 * MIB..=256 * MIB).contains(&cache_bytes) {
            return Err(WorkloadError::Option(format!(
                "db: `cache_size` must be 32 to 256 MiB (a number of MiB or a size such as \
                 \"64m\"), got {}",
                opts.get("cache_size")
                    .map(|v| v.to_string())
                    .unwrap_or_default()
            )));
        }
        let threads = int(opts, "threads", 1, 1024)?.unwrap_or(12) as usize;
        // Default 10 s, shortened at small scales (≈ 3 s at 0.01) so a quick plan stays quick.
        let duration = match opts.get("duration") {
            None => (10.0 * (10.0 * scale).sqrt()).clamp(2.0, 10.0),
            Some(v) => v
                .as_float()
                .or_else(|| v.as_integer().map(|i| i as f64))
                .filter(|s| s.is_finite() && *s > 0.0 && *s <= 86_400.0)
                .ok_or_else(|| bad("duration", v, "seconds > 0"))?,
        };
        let mix = match opts.get("mix") {
            None => [40, 20, 5, 35],
            Some(toml::Value::Table(t)) => {
                if let Some(k) = t.keys().find(|k| !OPS.contains(&k.as_str())) {
                    return Err(WorkloadError::Option(format!(
                        "db: unknown transaction type `{k}` in `mix`; valid: {}",
                        OPS.join(", ")
                    )));
                }
                let mut mix = [0u32; 4];
                for (i, name) in OPS.iter().enumerate() {
                    mix[i] = int(t, name, 0, 1_000_000)?.unwrap_or(0);
                }
                if mix.iter().all(|&w| w == 0) {
                    return Err(WorkloadError::Option(
                        "db: `mix` weights are all zero".into(),
                    ));
                }
                mix
            }
            Some(v) => {
                return Err(bad(
                    "mix",
                    v,
                    "a table such as { insert = 40, delete = 20, replace = 5, read = 35 }",
                ))
            }
        };
        let lazy_commit_pct = int(opts, "lazy_commit_pct", 0, 100)?.unwrap_or(70);
        // Every 250 ms: at a few hundred MB/s of WAL (32 KiB pages) that keeps the WAL near
        // 100 MB, in the range of SQLite's own 1000-page auto-checkpoint.
        let checkpoint_ms = int(opts, "checkpoint_interval_ms", 0, 3_600_000)?.unwrap_or(250);
        let busy_ms = int(opts, "busy_timeout_ms", 1, 600_000)?.unwrap_or(2000);
        let checkpoint_mode = match opts.get("checkpoint_mode") {
            None => "RESTART",
            Some(v) => match v.as_str().map(str::to_ascii_lowercase).as_deref() {
                Some("passive") => "PASSIVE",
                Some("full") => "FULL",
                Some("restart") => "RESTART",
                Some("truncate") => "TRUNCATE",
                _ => return Err(bad("checkpoint_mode", v, &CHECKPOINT_MODES.join(", "))),
            },
        };
        Ok(Config {
            size,
            page_size,
            cache_bytes,
            threads,
            duration: Duration::from_secs_f64(duration),
            mix,
            lazy_commit_pct,
            checkpoint_interval: (checkpoint_ms > 0)
                .then(|| Duration::from_millis(u64::from(checkpoint_ms))),
            checkpoint_mode,
            busy_timeout: Duration::from_millis(u64::from(busy_ms)),
        })
    }

    /// Draws a transaction type by weight.
    fn pick(&self, rng: &mut ChaCha8Rng) -> Op {
        let total: u32 = self.mix.iter().sum();
        let mut x = rng.gen_range(0..total);
        for op in Op::ALL {
            let w = self.mix[op as usize];
            if x < w {
                return op;
            }
            x -= w;
        }
        Op::Read
    }
}

fn bad(key: &str, v: &toml::Value, want: &str) -> WorkloadError {
    WorkloadError::Option(format!("db: `{key}` = {v} is not valid; expected {want}"))
}

fn int(t: &toml::Table, key: &str, min: u32, max: u32) -> Result<Option<u32>, WorkloadError> {
    match t.get(key) {
        None => Ok(None),
        Some(v) => v
            .as_integer()
            .and_then(|i| u32::try_from(i).ok())
            .filter(|i| (min..=max).contains(i))
            .map(Some)
            .ok_or_else(|| bad(key, v, &format!("an integer from {min} to {max}"))),
    }
}

fn size_of(v: &toml::Value) -> Option<u64> {
    match v {
        toml::Value::Integer(i) => u64::try_from(*i).ok(),
        toml::Value::String(s) => fio::parse_size(s),
        _ => None,
    }
    .filter(|&b| b > 0)
}

/// Maps SQLite errors to statuses users care about: a full disk and an I/O error keep their
/// meaning; anything else is an engine error.
fn sql_err(what: &str, e: rusqlite::Error) -> WorkloadError {
    let errno = match e.sqlite_error_code() {
        Some(ErrorCode::DiskFull) => Some(libc::ENOSPC),
        Some(ErrorCode::SystemIoFailure) => Some(libc::EIO),
        _ => None,
    };
    match errno {
        Some(n) => WorkloadError::io(
            format!("sqlite {what}: {e}"),
            io::Error::from_raw_os_error(n),
        ),
        None => WorkloadError::Tool(format!("sqlite {what}: {e}")),
    }
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// Fills `body` (length drawn from `rng`) with random bytes and returns its checksum.
fn fill_body(rng: &mut ChaCha8Rng, body: &mut Vec<u8>) -> i64 {
    body.resize(rng.gen_range(BODY_MIN..=BODY_MAX), 0);
    rng.fill_bytes(body);
    xxh3_64(body) as i64
}

/// What the database looked like after the build.
#[derive(Debug, Clone, PartialEq)]
struct Built {
    rows: u64,
    folders: i64,
    bytes: u64,
}

/// Builds the database from `seed`: the same seed, size and page size give the same file.
///
/// Built without a journal and without fsync (it is rebuilt on any failure), then switched
/// to WAL mode, which is persistent in the file.
fn build(path: &Path, cfg: &Config, seed: u64, ctx: &Ctx) -> Result<Built, WorkloadError> {
    for suffix in ["", "-wal", "-shm"] {
        let p = PathBuf::from(format!("{}{suffix}", path.display()));
        match fs::remove_file(&p) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                return Err(WorkloadError::io(format!("removing {}", p.display()), e))
            }
            _ => {}
        }
    }
    let e = |what: &'static str| move |err| sql_err(what, err);
    let conn = Connection::open(path).map_err(e("create"))?;
    conn.pragma_update(None, "page_size", cfg.page_size)
        .map_err(e("page_size"))?;
    conn.pragma_update(None, "journal_mode", "OFF")
        .map_err(e("journal_mode"))?;
    conn.pragma_update(None, "synchronous", "OFF")
        .map_err(e("synchronous"))?;
    conn.execute_batch(
        "CREATE TABLE items(
             id INTEGER PRIMARY KEY,
             folder INTEGER NOT NULL,
             ts INTEGER NOT NULL,
             sum INTEGER NOT NULL,
             body BLOB NOT NULL)",
    )
    .map_err(e("create table"))?;
    // About 2.3 KiB per row with overhead; ~64 items per folder.
    let folders = ((cfg.size / 2300) / 64).max(16) as i64;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut body = Vec::with_capacity(BODY_MAX);
    let target_pages = cfg.size / u64::from(cfg.page_size);
    let mut rows = 0u64;
    loop {
        ctx.check()?;
        conn.execute_batch("BEGIN").map_err(e("build"))?;
        {
            let mut ins = conn
                .prepare_cached(
                    "INSERT INTO items(id, folder, ts, sum, body) VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(e("build"))?;
            for _ in 0..BUILD_BATCH {
                rows += 1;
                let folder = rng.gen_range(0..folders);
                let sum = fill_body(&mut rng, &mut body);
                ins.execute(rusqlite::params![
                    rows as i64,
                    folder,
                    rows as i64,
                    sum,
                    &body
                ])
                .map_err(e("build"))?;
            }
        }
        conn.execute_batch("COMMIT").map_err(e("build"))?;
        let pages: u64 = conn
            .pragma_query_value(None, "page_count", |r| r.get(0))
            .map_err(e("page_count"))?;
        if pages >= target_pages {
            break;
        }
    }
    conn.execute_batch("CREATE INDEX items_folder_ts ON items(folder, ts)")
        .map_err(e("create index"))?;
    let mode: String = conn
        .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
        .map_err(e("journal_mode"))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(WorkloadError::Unsupported(format!(
            "SQLite refused WAL mode here (journal_mode is {mode})"
        )));
    }
    drop(conn);
    let bytes = fs::metadata(path)
        .ctx(|| format!("stat {}", path.display()))?
        .len();
    Ok(Built {
        rows,
        folders,
        bytes,
    })
}

/// Opens a connection for the measured phase with this run's settings.
fn open(path: &Path, cfg: &Config) -> Result<Connection, WorkloadError> {
    let conn = Connection::open(path).map_err(|e| sql_err("open", e))?;
    conn.busy_timeout(cfg.busy_timeout)
        .map_err(|e| sql_err("busy_timeout", e))?;
    let kib = (cfg.cache_bytes / 1024) as i64;
    conn.pragma_update(None, "cache_size", -kib)
        .map_err(|e| sql_err("cache_size", e))?;
    // Checkpoints happen only in the background thread (or not at all), so commits never
    // stall on one and every byte a worker writes is WAL.
    conn.pragma_update(None, "wal_autocheckpoint", 0)
        .map_err(|e| sql_err("wal_autocheckpoint", e))?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(|e| sql_err("synchronous", e))?;
    Ok(conn)
}

/// Read and write syscall bytes of the calling thread (`/proc/thread-self/io`): what SQLite
/// asked of the file system, whether or not the page cache absorbed it.
#[derive(Debug, Clone, Copy, Default)]
struct ThreadIo {
    rchar: u64,
    wchar: u64,
    /// Bytes this read of the io file itself added to `rchar`.
    own_read: u64,
}

impl ThreadIo {
    fn now() -> Option<ThreadIo> {
        let text = fs::read_to_string("/proc/thread-self/io").ok()?;
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().parse::<u64>().ok())
        };
        Some(ThreadIo {
            rchar: field("rchar:")?,
            wchar: field("wchar:")?,
            own_read: text.len() as u64,
        })
    }

    /// Bytes read and written since `self` (the first read of the io file is excluded).
    fn since(self, later: ThreadIo) -> (u64, u64) {
        (
            later
                .rchar
                .saturating_sub(self.rchar)
                .saturating_sub(self.own_read),
            later.wchar.saturating_sub(self.wchar),
        )
    }
}

/// What one worker thread did.
#[derive(Debug, Default)]
struct WorkerStats {
    /// Latencies in nanoseconds per transaction type (committed transactions only).
    lat: [Vec<u64>; 4],
    /// Deletes, replaces and reads that found no row.
    misses: [u64; 4],
    inserted: u64,
    deleted: u64,
    lazy: Vec<u64>,
    durable: Vec<u64>,
    busy_retries: u64,
    read_bytes: u64,
    write_bytes: u64,
    io_counted: bool,
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
    end: Instant,
    failure: Mutex<Option<WorkloadError>>,
    /// The queue writers (and blocking checkpoints) wait in before `BEGIN IMMEDIATE`, like an
    /// engine's log writer queue. Without it, SQLite's busy handler polls with 1–100 ms
    /// sleeps, so write latency would mostly show that sleep schedule rather than the file
    /// system, and a RESTART checkpoint could starve for seconds behind a stream of writers.
    write_queue: Mutex<()>,
}

impl Shared<'_> {
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
        Instant::now() < self.end
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

fn worker(index: usize, conn: Connection, sh: &Shared) -> WorkerStats {
    let mut st = WorkerStats::default();
    let start_io = ThreadIo::now();
    if let Err(e) = work(index, &conn, sh, &mut st) {
        sh.fail(e);
    }
    if let (Some(a), Some(b)) = (start_io, ThreadIo::now()) {
        (st.read_bytes, st.write_bytes) = a.since(b);
        st.io_counted = true;
    }
    st
}

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
        let op = sh.cfg.pick(&mut rng);
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

/// What the checkpoint thread did.
#[derive(Debug, Default)]
struct CheckpointStats {
    done: u64,
    busy: u64,
    /// Time spent inside checkpoints, and the longest one (writers wait on RESTART/FULL).
    total: Duration,
    longest: Duration,
    read_bytes: u64,
    write_bytes: u64,
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
    st
}

/// Nearest-rank percentile of nanosecond samples, in milliseconds.
fn percentile_ms(sorted: &[u64], pct: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((pct / 100.0 * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1] as f64 / 1e6)
}

/// Totals of the measured phase, kept for verification after it.
#[derive(Debug, Default)]
struct Totals {
    inserted: u64,
    deleted: u64,
}

impl Workload for Db {
    fn name(&self) -> &'static str {
        "db"
    }

    fn describe(&self) -> &'static str {
        "SQLite (WAL) transactions: insert/delete/replace/read from many threads, lazy and durable commits"
    }

    fn option_keys(&self) -> &'static [&'static str] {
        KEYS
    }
    fn key_metric(&self) -> (&'static str, bool) {
        ("transactions_per_s", true)
    }

    fn columns(&self) -> &'static [&'static str] {
        &[
            "device_read_iops",
            "device_write_iops",
            "device_read_latency_ms",
            "device_write_latency_ms",
            "wal_bytes_written",
            "cpu_system_pct",
        ]
    }

    /// The `threads` option rules: the engine's worker count is part of the workload.
    fn uses_threads(&self) -> bool {
        false
    }

    fn run(
        &self,
        ctx: &Ctx,
        _point: &super::Point,
        harness: &mut dyn Harness,
    ) -> Result<Outcome, WorkloadError> {
        let cfg = Config::from_ctx(ctx)?;
        let path = ctx.root.join(DB_FILE);
        let seed = ctx.dataset.seed;
        let built = build(&path, &cfg, seed, ctx)?;
        crate::sys::syncfs(ctx.root).ctx(|| format!("syncfs {}", ctx.root.display()))?;

        // The keeper connection stays open through the measured phase so that no worker's
        // close is the last one (which would checkpoint and delete the WAL mid-measurement).
        let keeper = open(&path, &cfg)?;
        let e = |what: &'static str| move |err| sql_err(what, err);
        let page_size: u32 = keeper
            .pragma_query_value(None, "page_size", |r| r.get(0))
            .map_err(e("page_size"))?;
        let journal: String = keeper
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .map_err(e("journal_mode"))?;
        let cache_kib: i64 = keeper
            .pragma_query_value(None, "cache_size", |r| r.get(0))
            .map_err(e("cache_size"))?;
        if page_size != cfg.page_size || !journal.eq_ignore_ascii_case("wal") {
            return Err(WorkloadError::Verify(format!(
                "asked for page_size {} in WAL mode, SQLite has page_size {page_size}, journal_mode {journal}",
                cfg.page_size
            )));
        }
        let workers: Vec<Connection> = (0..cfg.threads)
            .map(|_| open(&path, &cfg))
            .collect::<Result<_, _>>()?;
        let checkpoint_conn = match cfg.checkpoint_interval {
            Some(_) => Some(open(&path, &cfg)?),
            None => None,
        };
        ctx.check()?;

        let wal_path = PathBuf::from(format!("{}-wal", path.display()));
        let mut workers = Some(workers);
        let mut checkpoint_conn = checkpoint_conn;
        let mut totals = Totals::default();
        let outcome = harness.measure(&mut || {
            let conns = workers
                .take()
                .ok_or_else(|| WorkloadError::Tool("db measured twice".into()))?;
            let start = Instant::now();
            let sh = Shared {
                cfg: &cfg,
                ctx,
                built: &built,
                seed,
                max_id: AtomicI64::new(built.rows as i64),
                clock: AtomicI64::new(built.rows as i64 + 1),
                stop: AtomicBool::new(false),
                end: start + cfg.duration,
                failure: Mutex::new(None),
                write_queue: Mutex::new(()),
            };
            let workers_done = AtomicBool::new(false);
            let (stats, ckpt) = thread::scope(|s| {
                let ckpt = checkpoint_conn
                    .take()
                    .zip(cfg.checkpoint_interval)
                    .map(|(c, every)| {
                        let (sh, done) = (&sh, &workers_done);
                        s.spawn(move || checkpointer(c, every, sh, done))
                    });
                let handles: Vec<_> = conns
                    .into_iter()
                    .enumerate()
                    .map(|(i, c)| {
                        let sh = &sh;
                        s.spawn(move || worker(i, c, sh))
                    })
                    .collect();
                let stats: Vec<WorkerStats> =
                    handles.into_iter().filter_map(|h| h.join().ok()).collect();
                workers_done.store(true, Ordering::Relaxed);
                let ckpt = ckpt.and_then(|h| h.join().ok()).unwrap_or_default();
                (stats, ckpt)
            });
            let seconds = start.elapsed().as_secs_f64();
            if let Some(err) = sh.failure.lock().ok().and_then(|mut f| f.take()) {
                return Err(err);
            }
            if stats.len() != cfg.threads {
                return Err(WorkloadError::Tool("a db worker thread panicked".into()));
            }
            let wal_file_bytes = fs::metadata(&wal_path).map(|m| m.len()).unwrap_or(0);
            totals.inserted = stats.iter().map(|s| s.inserted).sum();
            totals.deleted = stats.iter().map(|s| s.deleted).sum();
            Ok(outcome_of(
                &cfg,
                &built,
                &stats,
                &ckpt,
                seconds,
                wal_file_bytes,
            ))
        })?;

        // Verification: the rows the transactions say they left, and an intact database.
        ctx.check()?;
        let rows: i64 = keeper
            .query_row("SELECT count(*) FROM items", [], |r| r.get(0))
            .map_err(e("count"))?;
        let expected = built.rows as i64 + totals.inserted as i64 - totals.deleted as i64;
        if rows != expected {
            return Err(WorkloadError::Verify(format!(
                "{rows} rows in the database, expected {expected} = {} built + {} inserted − {} deleted",
                built.rows, totals.inserted, totals.deleted
            )));
        }
        let check: Vec<String> = keeper
            .prepare("PRAGMA quick_check")
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            .map_err(e("quick_check"))?;
        if check != ["ok"] {
            return Err(WorkloadError::Verify(format!(
                "PRAGMA quick_check: {}",
                check.join("; ")
            )));
        }
        let mut outcome = outcome;
        outcome.metrics.insert("final_rows".into(), rows as f64);
        outcome
            .metrics
            .insert("page_size_bytes".into(), f64::from(page_size));
        outcome
            .metrics
            .insert("cache_size_kib".into(), (-cache_kib) as f64);
        outcome.notes.push(format!(
            "SQLite {} in effect: journal_mode={journal}, page_size={page_size}, cache_size={} KiB per connection",
            rusqlite::version(),
            -cache_kib
        ));
        outcome.notes.push(format!(
            "verified: {rows} rows = {} built + {} inserted − {} deleted; quick_check ok",
            built.rows, totals.inserted, totals.deleted
        ));
        Ok(outcome)
    }
}

fn outcome_of(
    cfg: &Config,
    built: &Built,
    stats: &[WorkerStats],
    ckpt: &CheckpointStats,
    seconds: f64,
    wal_file_bytes: u64,
) -> Outcome {
    let mut m = BTreeMap::new();
    let mut put = |k: &str, v: f64| {
        m.insert(k.to_string(), v);
    };
    let mut total = 0u64;
    for op in Op::ALL {
        let mut lat: Vec<u64> = stats
            .iter()
            .flat_map(|s| s.lat[op as usize].iter().copied())
            .collect();
        lat.sort_unstable();
        total += lat.len() as u64;
        let name = op.name();
        put(&format!("{name}_count"), lat.len() as f64);
        if let Some(p) = percentile_ms(&lat, 50.0) {
            put(&format!("{name}_p50_ms"), p);
        }
        if let Some(p) = percentile_ms(&lat, 99.0) {
            put(&format!("{name}_p99_ms"), p);
        }
        if op != Op::Insert {
            put(
                &format!("{name}_misses"),
                stats.iter().map(|s| s.misses[op as usize]).sum::<u64>() as f64,
            );
        }
    }
    for (name, pick) in [("lazy", 0), ("durable", 1)] {
        let mut lat: Vec<u64> = stats
            .iter()
            .flat_map(|s| if pick == 0 { &s.lazy } else { &s.durable }.iter().copied())
            .collect();
        lat.sort_unstable();
        put(&format!("{name}_commits"), lat.len() as f64);
        if let Some(p) = percentile_ms(&lat, 99.0) {
            put(&format!("{name}_commit_p99_ms"), p);
        }
    }
    put("transactions", total as f64);
    put("transactions_per_s", total as f64 / seconds.max(1e-9));
    put(
        "busy_retries",
        stats.iter().map(|s| s.busy_retries).sum::<u64>() as f64,
    );
    let io_counted = stats.iter().all(|s| s.io_counted);
    let wal_bytes: u64 = stats.iter().map(|s| s.write_bytes).sum();
    if io_counted {
        put("wal_bytes_written", wal_bytes as f64);
        put("checkpoint_bytes_written", ckpt.write_bytes as f64);
    }
    put("wal_file_bytes", wal_file_bytes as f64);
    put("checkpoints", ckpt.done as f64);
    put("checkpoints_busy", ckpt.busy as f64);
    put("checkpoint_seconds", ckpt.total.as_secs_f64());
    put("checkpoint_max_ms", ckpt.longest.as_secs_f64() * 1e3);
    put("initial_rows", built.rows as f64);
    put("db_initial_bytes", built.bytes as f64);
    put("threads", cfg.threads as f64);
    let read_bytes: u64 = stats.iter().map(|s| s.read_bytes).sum::<u64>() + ckpt.read_bytes;
    let mut notes = vec![format!(
        "{} threads for {:.1} s, mix insert/delete/replace/read = {:?}, {}% lazy commits, checkpoint {}",
        cfg.threads,
        cfg.duration.as_secs_f64(),
        cfg.mix,
        cfg.lazy_commit_pct,
        cfg.checkpoint_interval
            .map_or("off".to_string(), |d| format!(
                "{} every {} ms",
                cfg.checkpoint_mode,
                d.as_millis()
            ))
    )];
    notes.push(if io_counted {
        "wal_bytes_written: write() bytes of the worker threads (/proc/thread-self/io); \
         auto-checkpoint is off, so workers write only the WAL (the -shm index is mmapped; \
         SQLite writes 1 byte per new 4 KiB page of it as it grows); \
         checkpoint_bytes_written: the checkpoint thread's writes into the database file"
            .to_string()
    } else {
        "/proc/thread-self/io unavailable: WAL and logical byte counts not measured".to_string()
    });
    Outcome {
        seconds,
        files: total,
        logical_read_bytes: if io_counted { read_bytes } else { 0 },
        logical_write_bytes: if io_counted {
            wal_bytes + ckpt.write_bytes
        } else {
            0
        },
        metrics: m,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use super::*;
    use crate::dataset::DatasetSpec;
    use crate::workload::{PlainHarness, Point};

    struct Env {
        dataset: DatasetSpec,
        options: toml::Table,
        cancel: AtomicBool,
        deadline: Option<Instant>,
    }

    impl Env {
        fn new(options: &str) -> Env {
            Env {
                dataset: DatasetSpec::default(),
                options: options.parse().unwrap(),
                cancel: AtomicBool::new(false),
                deadline: None,
            }
        }
        fn ctx<'a>(&'a self, root: &'a Path) -> Ctx<'a> {
            Ctx {
                root,
                scratch: root,
                threads: 1,
                dataset: &self.dataset,
                options: &self.options,
                cancel: &self.cancel,
                deadline: self.deadline,
            }
        }
    }

    fn run(env: &Env, root: &Path) -> Result<Outcome, WorkloadError> {
        let mut h = PlainHarness::default();
        let out = Db.run(&env.ctx(root), &Point::default(), &mut h);
        assert_eq!(h.measured, 1);
        out
    }

    #[test]
    fn defaults_and_option_errors() {
        let dir = tempfile::tempdir().unwrap();
        let env = Env::new("");
        let cfg = Config::from_ctx(&env.ctx(dir.path())).unwrap();
        assert_eq!(cfg.size, 10 * MIB, "1 GiB × scale 0.01");
        assert_eq!(cfg.page_size, 32768);
        assert_eq!(cfg.cache_bytes, 64 * MIB);
        assert_eq!(cfg.threads, 12);
        assert!(cfg.duration > Duration::from_secs(2) && cfg.duration <= Duration::from_secs(10));
        assert_eq!(cfg.mix, [40, 20, 5, 35]);
        assert_eq!(cfg.lazy_commit_pct, 70);
        assert_eq!(cfg.checkpoint_interval, Some(Duration::from_millis(250)));
        assert_eq!(cfg.checkpoint_mode, "RESTART");
        let mut env1 = Env::new("");
        env1.dataset.scale = 1.0;
        let cfg1 = Config::from_ctx(&env1.ctx(dir.path())).unwrap();
        assert_eq!(
            (cfg1.size, cfg1.duration),
            (1 << 30, Duration::from_secs(10))
        );

        let err = |opts: &str| Config::from_ctx(&Env::new(opts).ctx(dir.path())).unwrap_err();
        let msg = err("thread = 4").to_string();
        assert!(
            msg.contains("`thread`")
                && msg.contains("threads")
                && msg.contains("checkpoint_interval_ms")
        );
        for bad in [
            "cache_size = 16",
            "cache_size = \"1g\"",
            "page_size = 1000",
            "threads = 0",
            "duration = 0",
            "lazy_commit_pct = 101",
            "mix = { update = 5 }",
            "mix = { read = 0 }",
            "mix = 5",
            "size = \"big\"",
            "checkpoint_mode = \"lazy\"",
        ] {
            assert!(
                matches!(
                    Config::from_ctx(&Env::new(bad).ctx(dir.path())),
                    Err(WorkloadError::Option(_))
                ),
                "{bad} accepted"
            );
        }
        let ok = Config::from_ctx(
            &Env::new("cache_size = \"128m\"\nmix = { read = 1 }").ctx(dir.path()),
        )
        .unwrap();
        assert_eq!((ok.cache_bytes, ok.mix), (128 * MIB, [0, 0, 0, 1]));
    }

    #[test]
    fn same_seed_builds_the_same_database() {
        let env = Env::new("size = \"4m\"\npage_size = 8192");
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let cfg = Config::from_ctx(&env.ctx(a.path())).unwrap();
        let hash = |dir: &Path, seed: u64| {
            let built = build(&dir.join(DB_FILE), &cfg, seed, &env.ctx(dir)).unwrap();
            (built, xxh3_64(&fs::read(dir.join(DB_FILE)).unwrap()))
        };
        let (built_a, ha) = hash(a.path(), 7);
        let (built_b, hb) = hash(b.path(), 7);
        assert_eq!((&built_a, ha), (&built_b, hb));
        assert!(built_a.bytes >= 4 * MIB && built_a.rows > 1000);
        let (_, hc) = hash(b.path(), 8);
        assert_ne!(ha, hc);
    }

    /// A real run: counts add up, the database holds what they say, the PRAGMAs took.
    #[test]
    fn real_run_counts_add_up() {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let env = Env::new(
            "size = \"4m\"\npage_size = 8192\ncache_size = 32\nthreads = 4\nduration = 1\n\
             checkpoint_interval_ms = 200",
        );
        let out = run(&env, dir.path()).unwrap();
        let m = &out.metrics;
        let count = |op: &str| m[&format!("{op}_count")];
        let total = count("insert") + count("delete") + count("replace") + count("read");
        assert!(total > 50.0, "{m:?}");
        assert_eq!(m["transactions"], total);
        assert_eq!(out.files as f64, total);
        assert!((m["transactions_per_s"] - total / out.seconds).abs() < 1e-6);
        assert!(out.seconds >= 1.0 && out.seconds < 5.0, "{}", out.seconds);
        let writes = count("insert") + count("delete") + count("replace");
        assert_eq!(m["lazy_commits"] + m["durable_commits"], writes);
        assert!(m["durable_commits"] > 0.0 && m["lazy_commits"] > m["durable_commits"]);
        let deleted = count("delete") - m["delete_misses"];
        assert_eq!(
            m["final_rows"],
            m["initial_rows"] + count("insert") - deleted
        );
        for op in OPS {
            assert!(m[&format!("{op}_p50_ms")] <= m[&format!("{op}_p99_ms")]);
        }
        assert!(m["checkpoints"] >= 1.0, "{m:?}");
        assert!(
            m["wal_bytes_written"] >= writes * 8192.0,
            "every commit writes at least a page"
        );
        assert!(m["checkpoint_bytes_written"] > 0.0);
        assert_eq!(
            out.logical_write_bytes as f64,
            m["wal_bytes_written"] + m["checkpoint_bytes_written"]
        );
        assert_eq!(m["page_size_bytes"], 8192.0);
        assert_eq!(m["cache_size_kib"], 32.0 * 1024.0);
        // What is in the file on disk, asked of SQLite independently.
        let conn = Connection::open(dir.path().join(DB_FILE)).unwrap();
        let page: u32 = conn
            .pragma_query_value(None, "page_size", |r| r.get(0))
            .unwrap();
        let mode: String = conn
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .unwrap();
        let rows: f64 = conn
            .query_row("SELECT count(*) FROM items", [], |r| r.get(0))
            .unwrap();
        assert_eq!((page, mode.as_str(), rows), (8192, "wal", m["final_rows"]));
    }

    /// With checkpoints off the WAL only grows, so the bytes the workers wrote must be the
    /// WAL file (header plus frames) — plus the one byte SQLite writes into each new 4 KiB
    /// page of the -shm index as it grows (8 per 32 KiB region, one region per ~4096 frames).
    #[test]
    fn wal_bytes_match_the_wal_file_without_checkpoints() {
        let dir = tempfile::tempdir().unwrap();
        let env = Env::new(
            "size = \"4m\"\npage_size = 4096\ncache_size = 32\nthreads = 3\nduration = 0.7\n\
             checkpoint_interval_ms = 0\nlazy_commit_pct = 100",
        );
        let out = run(&env, dir.path()).unwrap();
        let m = &out.metrics;
        assert_eq!(m["checkpoints"], 0.0);
        assert_eq!(m["checkpoint_bytes_written"], 0.0);
        assert_eq!(m["durable_commits"], 0.0);
        let file = m["wal_file_bytes"];
        assert!(
            file > 32.0 && (file - 32.0) % (4096.0 + 24.0) == 0.0,
            "{file}"
        );
        let frames = (file - 32.0) / (4096.0 + 24.0);
        let extra = m["wal_bytes_written"] - file;
        assert!(extra >= 0.0 && extra % 8.0 == 0.0, "{m:?}");
        assert!(
            extra <= 8.0 * (frames / 4062.0).ceil(),
            "{extra} extra bytes: {m:?}"
        );
    }

    #[test]
    fn cancel_mid_run_is_interrupted() {
        let dir = tempfile::tempdir().unwrap();
        let env = Env::new("size = \"4m\"\nthreads = 4\nduration = 30\ncache_size = 32");
        let started = Instant::now();
        let err = thread::scope(|s| {
            s.spawn(|| {
                thread::sleep(Duration::from_millis(700));
                env.cancel.store(true, Ordering::Relaxed);
            });
            run(&env, dir.path()).unwrap_err()
        });
        assert!(matches!(err, WorkloadError::Interrupted), "{err:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn deadline_mid_run_is_a_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let mut env = Env::new("size = \"4m\"\nthreads = 2\nduration = 30\ncache_size = 32");
        env.deadline = Some(Instant::now() + Duration::from_millis(1500));
        let err = run(&env, dir.path()).unwrap_err();
        assert!(matches!(err, WorkloadError::Timeout), "{err:?}");
        assert_eq!(err.status(), crate::results::Status::Timeout);
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<u64> = (1..=100).map(|i| i * 1_000_000).collect();
        assert_eq!(percentile_ms(&v, 50.0), Some(50.0));
        assert_eq!(percentile_ms(&v, 99.0), Some(99.0));
        assert_eq!(percentile_ms(&v[..1], 99.0), Some(1.0));
        assert_eq!(percentile_ms(&[], 50.0), None);
    }
}
