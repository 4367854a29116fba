//! `pg`: PostgreSQL under pgbench, a real server engine on the target.
//!
//! Per cell: `initdb` with the data directory on the target, run as the unprivileged system
//! user [`server::USER`] that owns only that directory; the postmaster on a Unix socket in
//! the cell's scratch directory (`listen_addresses = ''`, no TCP port), inside a memory
//! cgroup whose page cache budget is a share of the database (`cache`, a quarter by
//! default) so reads reach the device; `pgbench -i` at a scale derived from `--scale`
//! (64 × scale, at least 1: ≈ 16 MiB per unit); then, measured, pgbench with `--threads`
//! clients for `seconds`, one point per mode (TPC-B-like and select-only). Afterwards the
//! workload checks its own work (no failed transaction, every account row present, and for
//! TPC-B the history rows and balances agree with the transactions pgbench reported), and
//! the server is stopped and its cgroup removed on every exit path; both are journaled, so
//! `fsarena cleanup` stops them after `kill -9` (and the postmaster has a parent-death
//! signal, SIGQUIT, so it shuts down with fsarena even before cleanup, removing its shared
//! memory as it goes).
//!
//! Per-file figures come from PostgreSQL's own statistics with `track_io_timing` and
//! `track_wal_io_timing` on (PostgreSQL 15: `pg_stat_database` for data-file reads,
//! `pg_stat_wal` for WAL writes and fsyncs; `pg_stat_io` exists only from 16); see
//! docs/databases.md.
//!
//! The parts, by job: [`options`] (the `[workload.pg]` table), [`install`] and [`server`]
//! (finding PostgreSQL, running the server), [`bench`] (pgbench and the statistics around
//! it), [`stats`] (the check and the per-file figures), [`maintenance`] (what the
//! `-maintenance` points add); [`phases`] runs one cell through them in order.

mod bench;
pub mod install;
mod maintenance;
mod options;
mod phases;
pub mod reach;
pub mod server;
mod stats;

use crate::workload::contract::Workload;
use crate::workload::ctx::Ctx;
use crate::workload::error::WorkloadError;
use crate::workload::harness::Harness;
use crate::workload::initial::{OwnState, Start};
use crate::workload::outcome::Outcome;
use crate::workload::point::Point;
use crate::workload::spec::WorkloadSpec;

/// The most PostgreSQL's WAL holds during a phase: `max_wal_size` (1 GB, left at its
/// default) is a soft limit a busy phase overshoots until the next checkpoint.
pub const WAL_PEAK_BYTES: u64 = 2 << 30;

/// The `pg` workload.
pub struct Pg;

/// What a point costs beyond its pgbench run and search: loading the pgbench database and
/// the checkpoint and cache drop before the run. The study:database run of 2026-11-27
/// (bench/results/findings-20261127/database, 72 pg points) spent 55.6 s a cell where the
/// runs and searches alone priced 45.3 s: 2.6 s a point.
const POINT_SETUP_S: f64 = 2.5;

impl Workload for Pg {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            key_metric: ("transactions_per_s", true),
            columns: &[
                "latency_p99_ms",
                "device_read_iops",
                "device_read_latency_ms",
                "db_read_latency_ms",
                "wal_sync_latency_ms",
                "wal_bytes",
                "log_device_write_latency_ms",
            ],
            metric_headers: &[
                ("transactions_per_s", "tps"),
                ("latency_p99_ms", "p99 ms"),
                ("db_read_latency_ms", "db read ms"),
                ("wal_sync_latency_ms", "WAL fsync ms"),
                ("wal_bytes", "WAL bytes"),
                ("log_device_write_latency_ms", "log dev write ms"),
                ("log_device_write_bytes", "log dev written"),
            ],
            ..WorkloadSpec::new("pg", "PostgreSQL + pgbench (TPC-B-like and select-only), server confined to a memory cgroup")
        }
    }
    /// Every option is parsed as `run` will; a cache limit needs a memory cgroup here.
    /// A missing PostgreSQL is not bad input: [`Workload::unavailable`] skips the cells.
    fn check_options(&self, table: &toml::Table) -> Result<(), String> {
        options::config(table, 1.0)?.cache.check_host("pg")
    }
    /// No PostgreSQL here: its cells are skipped with the reason (`doctor` says it too).
    fn unavailable(&self) -> Option<String> {
        install::locate().err()
    }
    /// The server runs as its own user, which must reach the run's directories.
    fn check_work_dir(&self, work_root: &std::path::Path) -> Result<(), String> {
        reach::blocked(work_root).map_or(Ok(()), Err)
    }
    fn drops_caches(&self, _options: &toml::Table) -> Option<&'static str> {
        Some("the loaded database leaves the cache before every measurement")
    }

    /// The pgbench database it loads for every repetition (the data set is never read):
    /// its bytes from the pgbench scale; its files are the cluster `initdb` makes, told
    /// only by running it. The WAL may grow by [`WAL_PEAK_BYTES`] on top.
    fn initial_state(&self, options: &toml::Table, scale: f64) -> Start {
        match options::config(options, scale) {
            Ok(cfg) => {
                let bytes = u64::from(cfg.pgbench_scale) * options::BYTES_PER_SCALE;
                Start::Own(OwnState {
                    files: None,
                    bytes,
                    peak_bytes: bytes + WAL_PEAK_BYTES,
                    what: format!(
                        "a pgbench database at scale {}, loaded for each repetition",
                        cfg.pgbench_scale
                    ),
                    cache: cfg.cache.said(),
                })
            }
            Err(why) => Start::Unknown(why),
        }
    }

    /// Each point's pgbench `seconds`, after its search where the clients are auto-tuned,
    /// plus what a point costs around its phase ([`POINT_SETUP_S`]).
    fn fixed_seconds(&self, options: &toml::Table, scale: f64) -> f64 {
        let Ok(cfg) = options::config(options, scale) else {
            return 0.0;
        };
        let search = cfg.threads.map_or(0.0, |t| t.search_seconds());
        let variants = if cfg.maintenance.is_some() { 2.0 } else { 1.0 };
        cfg.modes.len() as f64 * variants * (cfg.seconds + search + POINT_SETUP_S)
    }

    /// One point per pgbench mode.
    fn points(&self, ctx: &Ctx) -> Result<Vec<Point>, WorkloadError> {
        let cfg = options::config(ctx.options, ctx.dataset.scale).map_err(WorkloadError::Option)?;
        let maintained: &[bool] = if cfg.maintenance.is_some() {
            &[false, true]
        } else {
            &[false]
        };
        Ok(cfg
            .modes
            .iter()
            .flat_map(|m| {
                maintained.iter().map(move |&on| Point {
                    variant: if on {
                        format!("{m}{MAINTENANCE}")
                    } else {
                        (*m).to_string()
                    },
                    params: [
                        ("mode".to_string(), serde_json::json!(m)),
                        ("maintenance".to_string(), serde_json::json!(on)),
                    ]
                    .into(),
                })
            })
            .collect())
    }

    fn run(
        &self,
        ctx: &Ctx,
        point: &Point,
        harness: &mut dyn Harness,
    ) -> Result<Outcome, WorkloadError> {
        let cfg = options::config(ctx.options, ctx.dataset.scale).map_err(WorkloadError::Option)?;
        let install = install::locate().map_err(WorkloadError::Unsupported)?;
        let (mode, maintained) = match point.variant.strip_suffix(MAINTENANCE) {
            Some(mode) => (mode, true),
            None => (point.variant.as_str(), false),
        };
        let every = cfg.maintenance.filter(|_| maintained);
        let select_only = match mode {
            "tpcb" | "" => false,
            "select-only" => true,
            v => return Err(WorkloadError::Option(format!("unknown pg mode {v}"))),
        };
        let plan = phases::CellPlan {
            cfg: &cfg,
            install: &install,
            every,
            select_only,
        };
        phases::run_cell(ctx, harness, &plan)
    }
}

/// The suffix of a point measured with the engine's maintenance running.
pub const MAINTENANCE: &str = "-maintenance";
