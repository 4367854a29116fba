//! The history in an embedded SQLite file: the default, kept under the user's data
//! directory with no flag ([`super::location`]). Several fsarena processes may register at
//! once (a test suite, MPI jobs on one host): writes wait for each other (`busy_timeout`)
//! rather than fail.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{params, Connection, Row};

use super::entry::{attach_labels, Captured, RunEntry, Value};
use super::error::HistoryError;
use super::schema::{self as sql, MIGRATIONS, VERSION_TABLE};
use super::store::{now, Store};

/// The history in the SQLite file at `path`.
pub struct SqliteStore {
    conn: Connection,
    path: PathBuf,
}

impl SqliteStore {
    /// Opens (creating it and its directory when missing) and migrates the database.
    pub fn open(path: &Path) -> Result<SqliteStore, HistoryError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| HistoryError::Dir {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let conn = Connection::open(path).map_err(|e| sqlite_error(path, e))?;
        let mut s = SqliteStore {
            conn,
            path: path.to_path_buf(),
        };
        s.migrate()?;
        Ok(s)
    }

    /// Applies the migrations the file lacks, each with its version row in one
    /// transaction, so a crash leaves a database at one version or the next.
    fn migrate(&mut self) -> Result<(), HistoryError> {
        let found = self
            .found_version()
            .map_err(|e| sqlite_error(&self.path, e))?;
        if found > sql::latest() {
            return Err(HistoryError::Newer {
                found,
                known: sql::latest(),
            });
        }
        self.apply_after(found)
            .map_err(|e| sqlite_error(&self.path, e))
    }

    fn found_version(&mut self) -> Result<i64, rusqlite::Error> {
        self.conn.busy_timeout(Duration::from_secs(20))?;
        self.conn.execute_batch(VERSION_TABLE)?;
        self.conn.query_row(sql::SELECT_VERSION, [], |r| r.get(0))
    }

    fn apply_after(&mut self, found: i64) -> Result<(), rusqlite::Error> {
        for (version, text) in MIGRATIONS.iter().filter(|m| m.0 > found) {
            // IMMEDIATE: the write lock before the check, so two processes opening a new
            // file at once do not both migrate it.
            let tx = self
                .conn
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let done: i64 = tx.query_row(sql::VERSION_DONE, [version], |r| r.get(0))?;
            if done == 0 {
                tx.execute_batch(text)?;
                tx.execute(sql::INSERT_VERSION, params![version, now()])?;
            }
            tx.commit()?;
        }
        Ok(())
    }

    fn try_add(&mut self, c: &Captured) -> Result<bool, rusqlite::Error> {
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let r = &c.run;
        let known: i64 = tx.query_row(sql::RUN_EXISTS, [&r.id], |row| row.get(0))?;
        tx.execute(
            sql::UPSERT_RUN,
            params![
                r.id,
                r.started_unix,
                r.host_key,
                r.host,
                r.kernel,
                r.version,
                r.commit,
                r.plan_digest,
                r.plan_name,
                r.dataset,
                r.dataset_bytes as i64,
                r.results_path,
                r.measured as i64,
                r.failed as i64
            ],
        )?;
        for (k, v) in &r.labels {
            tx.execute(sql::UPSERT_LABEL, params![r.id, k, v])?;
        }
        tx.execute(sql::CLEAR_VALUES, [&r.id])?;
        {
            let mut st = tx.prepare(sql::INSERT_VALUE)?;
            for v in &c.values {
                st.execute(params![
                    v.run_id,
                    v.target,
                    v.fs,
                    v.workload,
                    v.point,
                    v.threads,
                    v.repetition,
                    v.metric,
                    i64::from(v.higher_is_better),
                    v.value,
                    v.status
                ])?;
            }
        }
        tx.commit()?;
        Ok(known == 0)
    }

    fn try_runs(&mut self) -> Result<Vec<RunEntry>, rusqlite::Error> {
        let mut st = self.conn.prepare(sql::SELECT_RUNS)?;
        let mut runs = st.query_map([], run_of)?.collect::<Result<Vec<_>, _>>()?;
        let mut st = self.conn.prepare(sql::SELECT_LABELS)?;
        let labels = st
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<Result<Vec<_>, _>>()?;
        attach_labels(&mut runs, labels);
        Ok(runs)
    }

    fn try_values(&mut self, run_ids: &[String]) -> Result<Vec<Value>, rusqlite::Error> {
        let mut st = self.conn.prepare(sql::SELECT_VALUES)?;
        let mut out = Vec::new();
        for id in run_ids {
            for v in st.query_map([id], value_of)? {
                out.push(v?);
            }
        }
        Ok(out)
    }

    fn try_remove(&mut self, run_ids: &[String]) -> Result<usize, rusqlite::Error> {
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let mut n = 0;
        for id in run_ids {
            for (i, text) in sql::REMOVE_RUN.iter().enumerate() {
                let gone = tx.execute(text, [id])?;
                if i == sql::REMOVE_RUN.len() - 1 {
                    n += gone;
                }
            }
        }
        tx.commit()?;
        Ok(n)
    }
}

/// A run's row, in [`sql::SELECT_RUNS`]'s order.
fn run_of(r: &Row) -> Result<RunEntry, rusqlite::Error> {
    Ok(RunEntry {
        id: r.get(0)?,
        started_unix: r.get(1)?,
        host_key: r.get(2)?,
        host: r.get(3)?,
        kernel: r.get(4)?,
        version: r.get(5)?,
        commit: r.get(6)?,
        plan_digest: r.get(7)?,
        plan_name: r.get(8)?,
        dataset: r.get(9)?,
        dataset_bytes: r.get::<_, i64>(10)?.max(0) as u64,
        results_path: r.get(11)?,
        measured: r.get::<_, i64>(12)?.max(0) as u64,
        failed: r.get::<_, i64>(13)?.max(0) as u64,
        labels: Default::default(),
    })
}

/// A measurement's row, in [`sql::SELECT_VALUES`]'s order.
fn value_of(r: &Row) -> Result<Value, rusqlite::Error> {
    Ok(Value {
        run_id: r.get(0)?,
        target: r.get(1)?,
        fs: r.get(2)?,
        workload: r.get(3)?,
        point: r.get(4)?,
        threads: r.get(5)?,
        repetition: r.get(6)?,
        metric: r.get(7)?,
        higher_is_better: r.get::<_, i64>(8)? != 0,
        value: r.get(9)?,
        status: r.get(10)?,
    })
}

fn sqlite_error(path: &Path, source: rusqlite::Error) -> HistoryError {
    HistoryError::Sqlite {
        path: path.to_path_buf(),
        source,
    }
}

impl Store for SqliteStore {
    fn add(&mut self, c: &Captured) -> Result<bool, HistoryError> {
        self.try_add(c).map_err(|e| sqlite_error(&self.path, e))
    }

    fn runs(&mut self) -> Result<Vec<RunEntry>, HistoryError> {
        self.try_runs().map_err(|e| sqlite_error(&self.path, e))
    }

    fn values(&mut self, run_ids: &[String]) -> Result<Vec<Value>, HistoryError> {
        self.try_values(run_ids)
            .map_err(|e| sqlite_error(&self.path, e))
    }

    fn remove(&mut self, run_ids: &[String]) -> Result<usize, HistoryError> {
        self.try_remove(run_ids)
            .map_err(|e| sqlite_error(&self.path, e))
    }

    fn location(&self) -> String {
        self.path.display().to_string()
    }
}
