//! The history's tables, one SQL text both stores run (SQLite and PostgreSQL read the same
//! types: `TEXT`, `BIGINT`, `DOUBLE PRECISION`), and the migrations that reach them.
//! `schema_version` holds one row per migration applied; a store applies the missing
//! ones in order, each in its own transaction, and refuses a database newer than it.

/// Each migration, by the version it brings the database to. Append, never edit: a
/// database in the field was made by the texts as they were.
pub const MIGRATIONS: &[(i64, &str)] = &[(
    1,
    "CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        started_unix DOUBLE PRECISION NOT NULL,
        host_key TEXT NOT NULL,
        host TEXT NOT NULL,
        kernel TEXT NOT NULL,
        version TEXT NOT NULL,
        commit_id TEXT NOT NULL,
        plan_digest TEXT NOT NULL,
        plan_name TEXT NOT NULL,
        dataset TEXT NOT NULL,
        dataset_bytes BIGINT NOT NULL,
        results_path TEXT NOT NULL,
        measured BIGINT NOT NULL,
        failed BIGINT NOT NULL
    );
    CREATE INDEX runs_series ON runs (plan_digest, host_key, started_unix);
    CREATE TABLE labels (
        run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (run_id, key)
    );
    CREATE TABLE measurements (
        run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        target TEXT NOT NULL,
        fs TEXT NOT NULL,
        workload TEXT NOT NULL,
        point TEXT NOT NULL,
        threads BIGINT NOT NULL,
        repetition BIGINT NOT NULL,
        metric TEXT NOT NULL,
        higher_is_better BIGINT NOT NULL,
        value DOUBLE PRECISION,
        status TEXT NOT NULL
    );
    CREATE INDEX measurements_run ON measurements (run_id);",
)];

/// The table that says which migrations a database has.
pub const VERSION_TABLE: &str =
    "CREATE TABLE IF NOT EXISTS schema_version (version BIGINT PRIMARY KEY, applied_unix DOUBLE PRECISION NOT NULL)";

/// The newest version this build knows.
pub fn latest() -> i64 {
    MIGRATIONS.last().map_or(0, |m| m.0)
}

/// Whether a run is kept already.
pub const RUN_EXISTS: &str = "SELECT COUNT(*) FROM runs WHERE id = $1";

/// A run's row, added or brought up to date (a resumed run registers again with more
/// measurements). Both stores read `$N` parameters (SQLite takes them as named ones, bound
/// in order) and `ON CONFLICT … DO UPDATE`.
pub const UPSERT_RUN: &str = "INSERT INTO runs (id, started_unix, host_key, host, kernel, version, commit_id, plan_digest, plan_name, dataset, dataset_bytes, results_path, measured, failed) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) ON CONFLICT (id) DO UPDATE SET results_path = excluded.results_path, measured = excluded.measured, failed = excluded.failed, dataset = excluded.dataset, dataset_bytes = excluded.dataset_bytes";

/// A label, added or given its new value; labels given before and not again stay.
pub const UPSERT_LABEL: &str = "INSERT INTO labels (run_id, key, value) VALUES ($1, $2, $3) ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value";

/// A run's measurements are replaced whole when it registers again.
pub const CLEAR_VALUES: &str = "DELETE FROM measurements WHERE run_id = $1";

pub const INSERT_VALUE: &str = "INSERT INTO measurements (run_id, target, fs, workload, point, threads, repetition, metric, higher_is_better, value, status) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)";

pub const SELECT_RUNS: &str = "SELECT id, started_unix, host_key, host, kernel, version, commit_id, plan_digest, plan_name, dataset, dataset_bytes, results_path, measured, failed FROM runs ORDER BY started_unix, id";

pub const SELECT_LABELS: &str = "SELECT run_id, key, value FROM labels";

pub const SELECT_VALUES: &str = "SELECT run_id, target, fs, workload, point, threads, repetition, metric, higher_is_better, value, status FROM measurements WHERE run_id = $1 ORDER BY target, workload, point, threads, repetition";

/// Removing a run: its measurements and labels first.
pub const REMOVE_RUN: [&str; 3] = [
    "DELETE FROM measurements WHERE run_id = $1",
    "DELETE FROM labels WHERE run_id = $1",
    "DELETE FROM runs WHERE id = $1",
];

pub const SELECT_VERSION: &str = "SELECT COALESCE(MAX(version), 0) FROM schema_version";
pub const VERSION_DONE: &str = "SELECT COUNT(*) FROM schema_version WHERE version = $1";
pub const INSERT_VERSION: &str =
    "INSERT INTO schema_version (version, applied_unix) VALUES ($1, $2)";
