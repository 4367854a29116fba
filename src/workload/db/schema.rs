//! The database file: building it from the seed (unmeasured), opening the measured phase's
//! connections, the shape of its items, and SQLite errors in fsarena's terms.
//!
//! The build is deterministic so every target starts from the same bytes: the same seed,
//! size and page size give the same file.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rusqlite::{Connection, ErrorCode};
use xxhash_rust::xxh3::xxh3_64;

use super::options::Config;
use crate::workload::ctx::Ctx;
use crate::workload::error::{IoContext, WorkloadError};

/// The database file's name in the workload's directory (its WAL and index sit beside it).
pub(super) const DB_FILE: &str = "fsarena.db";

/// Item bodies are 512–3584 bytes (2 KiB on average), like small mail items or rows.
const BODY_MIN: usize = 512;
pub(super) const BODY_MAX: usize = 3584;
/// Rows per transaction while building the database.
const BUILD_BATCH: u64 = 500;

/// Maps SQLite errors to statuses users care about: a full disk and an I/O error keep their
/// meaning; anything else is an engine error.
pub(super) fn sql_err(what: &str, e: rusqlite::Error) -> WorkloadError {
    let errno = match e.sqlite_error_code() {
        Some(ErrorCode::DiskFull) => Some(rustix::io::Errno::NOSPC.raw_os_error()),
        Some(ErrorCode::SystemIoFailure) => Some(rustix::io::Errno::IO.raw_os_error()),
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

/// Whether SQLite gave up waiting for a lock: a transaction to retry, not a failure.
pub(super) fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// Fills `body` (length drawn from `rng`) with random bytes and returns its checksum.
pub(super) fn fill_body(rng: &mut ChaCha8Rng, body: &mut Vec<u8>) -> i64 {
    body.resize(rng.gen_range(BODY_MIN..=BODY_MAX), 0);
    rng.fill_bytes(body);
    xxh3_64(body) as i64
}

/// What the database looked like after the build.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Built {
    /// Rows inserted (ids 1..=rows).
    pub(super) rows: u64,
    /// Folders the items are spread over.
    pub(super) folders: i64,
    /// The database file's size.
    pub(super) bytes: u64,
}

/// Builds the database from `seed`: the same seed, size and page size give the same file.
///
/// Built without a journal and without fsync (it is rebuilt on any failure), then switched
/// to WAL mode, which is persistent in the file.
pub(super) fn build(
    path: &Path,
    cfg: &Config,
    seed: u64,
    ctx: &Ctx,
) -> Result<Built, WorkloadError> {
    remove_old(path)?;
    let e = |what: &'static str| move |err| sql_err(what, err);
    let conn = create_table(path, cfg)?;
    // About 2.3 KiB per row with overhead; ~64 items per folder.
    let folders = ((cfg.size / 2300) / 64).max(16) as i64;
    let rows = fill(&conn, cfg, seed, folders, ctx)?;
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

/// Removes a database left by an earlier repetition, with its WAL and index: the build
/// starts from nothing so every target gets the same bytes.
fn remove_old(path: &Path) -> Result<(), WorkloadError> {
    for suffix in ["", "-wal", "-shm"] {
        let p = PathBuf::from(format!("{}{suffix}", path.display()));
        match fs::remove_file(&p) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                return Err(WorkloadError::io(format!("removing {}", p.display()), e))
            }
            _ => {}
        }
    }
    Ok(())
}

/// Creates the database file with the run's page size, no journal and no fsync (it is
/// rebuilt on any failure), and its one table.
fn create_table(path: &Path, cfg: &Config) -> Result<Connection, WorkloadError> {
    let e = |what: &'static str| move |err| sql_err(what, err);
    let conn = Connection::open(path).map_err(e("create"))?;
    conn.pragma_update(None, "page_size", cfg.page_size)
        .map_err(e("page_size"))?;
    conn.pragma_update(None, "journal_mode", "OFF")
        .map_err(e("journal_mode"))?;
    conn.pragma_update(None, "synchronous", "OFF")
        .map_err(e("synchronous"))?;
    // Must precede the first table: it sets the file format (pointer-map pages).
    if cfg.maintenance {
        conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")
            .map_err(e("auto_vacuum"))?;
    }
    conn.execute_batch(
        "CREATE TABLE items(
             id INTEGER PRIMARY KEY,
             folder INTEGER NOT NULL,
             ts INTEGER NOT NULL,
             sum INTEGER NOT NULL,
             body BLOB NOT NULL)",
    )
    .map_err(e("create table"))?;
    Ok(conn)
}

/// Inserts seeded rows in batches of [`BUILD_BATCH`] until the file reaches `cfg.size`
/// (counted in pages, since rows vary in size); returns how many.
fn fill(
    conn: &Connection,
    cfg: &Config,
    seed: u64,
    folders: i64,
    ctx: &Ctx,
) -> Result<u64, WorkloadError> {
    let e = |what: &'static str| move |err| sql_err(what, err);
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
            return Ok(rows);
        }
    }
}

/// Opens a connection for the measured phase with this run's settings.
pub(super) fn open(path: &Path, cfg: &Config) -> Result<Connection, WorkloadError> {
    // Through the timing shim, so the engine's reads, writes and syncs are counted per file.
    super::timed::register().map_err(WorkloadError::Tool)?;
    let conn = Connection::open_with_flags_and_vfs(
        path,
        rusqlite::OpenFlags::default(),
        super::timed::VFS_NAME,
    )
    .map_err(|e| sql_err("open", e))?;
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

#[cfg(test)]
mod tests {
    use super::super::options::MIB;
    use super::*;
    use crate::workload::db::tests::Env;

    #[test]
    fn same_seed_builds_the_same_database() {
        let _alone = crate::workload::db::tests::sqlite_alone();
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
}
