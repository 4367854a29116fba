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
//!
//! The parts, by job: [`options`] (the `[workload.db]` table, checked before provisioning),
//! [`schema`] (building and opening the database), [`mix`] (the worker threads, their
//! transactions and the checkpointer) and [`outcome`] (turning what they counted into
//! metrics); [`phases`] runs them in order for one cell and verifies the database
//! afterwards.

mod mix;
mod options;
mod outcome;
mod phases;
mod schema;
mod timed;

use self::options::Config;
use super::contract::Workload;
use super::ctx::Ctx;
use super::engine::auto;
use super::engine::cache::Cache;
use super::error::WorkloadError;
use super::harness::Harness;
use super::initial::{OwnState, Start};
use super::outcome::Outcome;
use super::point::Point;
use super::spec::WorkloadSpec;

/// The `db` workload.
pub struct Db;

/// The variant that runs the engine's own maintenance during the measured phase.
const MAINTENANCE: &str = "maintenance";
/// The suffix of a thread count's maintenance variant (`16 threads + maintenance`).
const MAINTAINED: &str = " + maintenance";
/// Room for the WAL beyond a database's own size: a small database's WAL between two
/// checkpoints can outgrow it.
const WAL_SLACK: u64 = 256 << 20;

/// What a point costs beyond its measured phase and search: building its SQLite database
/// (64 MiB by default) and checking the engine's work. The study:database run of 2026-11-27
/// (bench/results/findings-20261127/database, 6 targets, 108 db points) spent 93.8 s a cell
/// where the phases and searches alone priced 74.8 s: 3.2 s a point. Without it the dry run
/// said 36 min for a study that took 45.
const POINT_SETUP_S: f64 = 3.0;

impl Workload for Db {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            key_metric: ("transactions_per_s", true),
            columns: &[
                "device_read_iops",
                "device_write_iops",
                "device_read_latency_ms",
                "device_write_latency_ms",
                // The engine's own database and log latencies: seed 003's table is made of them.
                "db_read_latency_ms",
                "db_write_latency_ms",
                "wal_write_latency_ms",
                "wal_sync_latency_ms",
                "wal_bytes_written",
                "cpu_system_pct",
            ],
            metric_headers: &[
                ("transactions_per_s", "tx/s"),
                ("wal_bytes_written", "WAL written"),
                ("db_read_latency_ms", "db read ms"),
                ("db_write_latency_ms", "db write ms"),
                ("wal_write_latency_ms", "log write ms"),
                ("wal_sync_latency_ms", "log fsync ms"),
            ],
            // The `threads` option rules: the engine's worker count is part of the workload.
            uses_threads: false,
            ..WorkloadSpec::new("db", "SQLite (WAL) transactions: insert/delete/replace/read from many threads, lazy and durable commits")
        }
    }
    /// Parses and checks every option (keys and values) the way `run` will.
    /// A cache limit also needs a memory cgroup on this host: refused here, in one line,
    /// where there is none.
    fn check_options(&self, table: &toml::Table) -> Result<(), String> {
        options::config(table, 1.0)?.cache.check_host("db")
    }
    fn drops_caches(&self, options: &toml::Table) -> Option<&'static str> {
        options::config(options, 1.0)
            .is_ok_and(|c| c.cache != Cache::Off)
            .then_some("its cache limit (`cache = \"off\"` avoids it)")
    }

    /// The database it builds for every repetition (the data set is never read). The WAL
    /// beside it is checkpointed back as the phase runs but keeps its size; it and the
    /// rows the phase inserts are counted as one more database at most.
    fn initial_state(&self, options: &toml::Table, scale: f64) -> Start {
        match options::config(options, scale) {
            Ok(cfg) => Start::Own(OwnState {
                files: Some(1),
                bytes: cfg.size,
                peak_bytes: 2 * cfg.size + WAL_SLACK,
                what: "a SQLite database, built for each repetition".into(),
                cache: cfg.cache.said(),
            }),
            Err(why) => Start::Unknown(why),
        }
    }

    /// Each point's `duration`, after its search where the thread count is auto-tuned, plus
    /// what a point costs around its phase ([`POINT_SETUP_S`]).
    fn fixed_seconds(&self, options: &toml::Table, scale: f64) -> f64 {
        let Ok(cfg) = options::config(options, scale) else {
            return 0.0;
        };
        let searches: Vec<f64> = match cfg.choices.as_slice() {
            [] => vec![cfg
                .auto
                .map_or(0.0, |s| auto::Threads::Auto(s).search_seconds())],
            choices => choices.iter().map(auto::Threads::search_seconds).collect(),
        };
        let variants = if cfg.maintenance { 2.0 } else { 1.0 };
        let each = cfg.duration.as_secs_f64();
        searches
            .iter()
            .map(|search| variants * (each + search + POINT_SETUP_S))
            .sum()
    }

    /// One point, or with `maintenance = true` the normal one and the `maintenance` variant;
    /// with a list of thread counts, those for each count (`16 threads`,
    /// `16 threads + maintenance`, `auto-tuned`, …).
    fn points(&self, ctx: &Ctx) -> Result<Vec<Point>, WorkloadError> {
        let cfg = Config::from_ctx(ctx)?;
        let mut bases: Vec<String> = cfg.choices.iter().map(options::label).collect();
        if bases.is_empty() {
            bases.push(String::new());
        }
        let mut points = Vec::new();
        for base in bases {
            let mut variants = vec![base.clone()];
            if cfg.maintenance {
                variants.push(match base.as_str() {
                    "" => MAINTENANCE.to_string(),
                    b => format!("{b}{MAINTAINED}"),
                });
            }
            points.extend(variants.into_iter().map(|variant| Point {
                variant,
                ..Default::default()
            }));
        }
        Ok(points)
    }

    fn run(
        &self,
        ctx: &Ctx,
        point: &Point,
        harness: &mut dyn Harness,
    ) -> Result<Outcome, WorkloadError> {
        let mut cfg = Config::from_ctx(ctx)?;
        let unknown = || WorkloadError::Option(format!("unknown db variant {}", point.variant));
        let base = match point.variant.as_str() {
            MAINTENANCE => "",
            v => v.strip_suffix(MAINTAINED).unwrap_or(v),
        };
        if base.len() != point.variant.len() {
            if !cfg.maintenance {
                return Err(unknown());
            }
            cfg.maintain = Some(cfg.maintenance_interval);
        }
        if !base.is_empty() {
            let t = cfg.choices.iter().find(|t| options::label(t) == base);
            match t.ok_or_else(unknown)? {
                auto::Threads::Fixed(n) => (cfg.threads, cfg.auto) = (*n, None),
                auto::Threads::Auto(s) => cfg.auto = Some(*s),
            }
        } else if !cfg.choices.is_empty() {
            return Err(unknown());
        }
        phases::run_cell(ctx, harness, cfg)
    }
}

#[cfg(test)]
mod tests;
