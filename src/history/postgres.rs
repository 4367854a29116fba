//! The history on a PostgreSQL server (`FSARENA_HISTORY=postgres://…` or `--history URL`),
//! so a team or a fleet of hosts writes to one place. Same tables and statements as the
//! SQLite file ([`super::schema`]); a migration holds a transaction-scoped advisory lock,
//! so hosts that start together do not both apply it.

use postgres::{Client, NoTls, Row};

use super::entry::{attach_labels, Captured, RunEntry, Value};
use super::error::HistoryError;
use super::schema::{self as sql, MIGRATIONS, VERSION_TABLE};
use super::store::{now, Store};

/// The advisory lock key a migration holds (any constant the server's other users do not
/// take; 59 is the issue that brought the history).
const MIGRATION_LOCK: i64 = 0x6673_6172_0059;

/// The history on the server at a URL.
pub struct PostgresStore {
    client: Client,
    /// The URL without its password, for messages.
    shown: String,
}

impl PostgresStore {
    /// Connects (no TLS: a history on another host is reached through the network the
    /// team already trusts, or a local socket) and migrates.
    pub fn open(url: &str) -> Result<PostgresStore, HistoryError> {
        let shown = without_password(url);
        let client = Client::connect(url, NoTls).map_err(|e| pg_error(&shown, e))?;
        let mut s = PostgresStore { client, shown };
        s.migrate()?;
        Ok(s)
    }

    fn err(&self, e: postgres::Error) -> HistoryError {
        pg_error(&self.shown, e)
    }

    fn migrate(&mut self) -> Result<(), HistoryError> {
        let found = self.found_version().map_err(|e| self.err(e))?;
        if found > sql::latest() {
            return Err(HistoryError::Newer {
                found,
                known: sql::latest(),
            });
        }
        self.apply_after(found).map_err(|e| self.err(e))
    }

    fn found_version(&mut self) -> Result<i64, postgres::Error> {
        let mut tx = self.client.transaction()?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
        tx.batch_execute(VERSION_TABLE)?;
        let found: i64 = tx.query_one(sql::SELECT_VERSION, &[])?.try_get(0)?;
        tx.commit()?;
        Ok(found)
    }

    fn apply_after(&mut self, found: i64) -> Result<(), postgres::Error> {
        for (version, text) in MIGRATIONS.iter().filter(|m| m.0 > found) {
            let mut tx = self.client.transaction()?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
            let done: i64 = tx.query_one(sql::VERSION_DONE, &[version])?.try_get(0)?;
            if done == 0 {
                tx.batch_execute(text)?;
                tx.execute(sql::INSERT_VERSION, &[version, &now()])?;
            }
            tx.commit()?;
        }
        Ok(())
    }

    fn try_add(&mut self, c: &Captured) -> Result<bool, postgres::Error> {
        let mut tx = self.client.transaction()?;
        let r = &c.run;
        let known: i64 = tx.query_one(sql::RUN_EXISTS, &[&r.id])?.try_get(0)?;
        let (bytes, measured, failed) =
            (r.dataset_bytes as i64, r.measured as i64, r.failed as i64);
        tx.execute(
            sql::UPSERT_RUN,
            &[
                &r.id,
                &r.started_unix,
                &r.host_key,
                &r.host,
                &r.kernel,
                &r.version,
                &r.commit,
                &r.plan_digest,
                &r.plan_name,
                &r.dataset,
                &bytes,
                &r.results_path,
                &measured,
                &failed,
            ],
        )?;
        for (k, v) in &r.labels {
            tx.execute(sql::UPSERT_LABEL, &[&r.id, k, v])?;
        }
        tx.execute(sql::CLEAR_VALUES, &[&r.id])?;
        let st = tx.prepare(sql::INSERT_VALUE)?;
        for v in &c.values {
            let (threads, rep, hib) = (
                i64::from(v.threads),
                i64::from(v.repetition),
                i64::from(v.higher_is_better),
            );
            tx.execute(
                &st,
                &[
                    &v.run_id,
                    &v.target,
                    &v.fs,
                    &v.workload,
                    &v.point,
                    &threads,
                    &rep,
                    &v.metric,
                    &hib,
                    &v.value,
                    &v.status,
                ],
            )?;
        }
        tx.commit()?;
        Ok(known == 0)
    }

    fn try_runs(&mut self) -> Result<Vec<RunEntry>, postgres::Error> {
        let mut runs = self
            .client
            .query(sql::SELECT_RUNS, &[])?
            .iter()
            .map(run_of)
            .collect::<Result<Vec<_>, _>>()?;
        let labels = self
            .client
            .query(sql::SELECT_LABELS, &[])?
            .iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?)))
            .collect::<Result<Vec<_>, postgres::Error>>()?;
        attach_labels(&mut runs, labels);
        Ok(runs)
    }

    fn try_values(&mut self, run_ids: &[String]) -> Result<Vec<Value>, postgres::Error> {
        let st = self.client.prepare(sql::SELECT_VALUES)?;
        let mut out = Vec::new();
        for id in run_ids {
            for row in self.client.query(&st, &[id])? {
                out.push(value_of(&row)?);
            }
        }
        Ok(out)
    }

    fn try_remove(&mut self, run_ids: &[String]) -> Result<usize, postgres::Error> {
        let mut tx = self.client.transaction()?;
        let mut n = 0;
        for id in run_ids {
            for (i, text) in sql::REMOVE_RUN.iter().enumerate() {
                let gone = tx.execute(*text, &[id])?;
                if i == sql::REMOVE_RUN.len() - 1 {
                    n += gone as usize;
                }
            }
        }
        tx.commit()?;
        Ok(n)
    }
}

/// A run's row, in [`sql::SELECT_RUNS`]'s order.
fn run_of(r: &Row) -> Result<RunEntry, postgres::Error> {
    Ok(RunEntry {
        id: r.try_get(0)?,
        started_unix: r.try_get(1)?,
        host_key: r.try_get(2)?,
        host: r.try_get(3)?,
        kernel: r.try_get(4)?,
        version: r.try_get(5)?,
        commit: r.try_get(6)?,
        plan_digest: r.try_get(7)?,
        plan_name: r.try_get(8)?,
        dataset: r.try_get(9)?,
        dataset_bytes: r.try_get::<_, i64>(10)?.max(0) as u64,
        results_path: r.try_get(11)?,
        measured: r.try_get::<_, i64>(12)?.max(0) as u64,
        failed: r.try_get::<_, i64>(13)?.max(0) as u64,
        labels: Default::default(),
    })
}

/// A measurement's row, in [`sql::SELECT_VALUES`]'s order.
fn value_of(r: &Row) -> Result<Value, postgres::Error> {
    Ok(Value {
        run_id: r.try_get(0)?,
        target: r.try_get(1)?,
        fs: r.try_get(2)?,
        workload: r.try_get(3)?,
        point: r.try_get(4)?,
        threads: r.try_get::<_, i64>(5)?.clamp(0, i64::from(u32::MAX)) as u32,
        repetition: r.try_get::<_, i64>(6)?.clamp(0, i64::from(u32::MAX)) as u32,
        metric: r.try_get(7)?,
        higher_is_better: r.try_get::<_, i64>(8)? != 0,
        value: r.try_get(9)?,
        status: r.try_get(10)?,
    })
}

/// `postgres://user:secret@host/db` → `postgres://user:…@host/db`.
fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    match rest.split_once('@') {
        Some((user, host)) if user.contains(':') => {
            let name = user.split(':').next().unwrap_or("");
            format!("{scheme}://{name}:…@{host}")
        }
        _ => url.to_string(),
    }
}

fn pg_error(shown: &str, source: postgres::Error) -> HistoryError {
    HistoryError::Postgres {
        url: shown.to_string(),
        source,
    }
}

impl Store for PostgresStore {
    fn add(&mut self, c: &Captured) -> Result<bool, HistoryError> {
        self.try_add(c).map_err(|e| self.err(e))
    }

    fn runs(&mut self) -> Result<Vec<RunEntry>, HistoryError> {
        self.try_runs().map_err(|e| self.err(e))
    }

    fn values(&mut self, run_ids: &[String]) -> Result<Vec<Value>, HistoryError> {
        self.try_values(run_ids).map_err(|e| self.err(e))
    }

    fn remove(&mut self, run_ids: &[String]) -> Result<usize, HistoryError> {
        self.try_remove(run_ids).map_err(|e| self.err(e))
    }

    fn location(&self) -> String {
        self.shown.clone()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_password_is_never_shown() {
        assert_eq!(
            super::without_password("postgres://me:s3cret@db.example/h"),
            "postgres://me:…@db.example/h"
        );
        assert_eq!(
            super::without_password("postgresql:///h?host=/tmp"),
            "postgresql:///h?host=/tmp"
        );
    }
}
