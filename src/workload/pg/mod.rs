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

mod bench;
pub mod install;
mod options;
pub mod server;
mod stats;

use crate::fsops::latency::percentile;
use crate::plan::size::human_bytes;
use crate::provision::cgroup::{self, MemoryCgroup};
use crate::workload::db::auto::{self, Threads};
use crate::workload::db::confined;
use crate::workload::{Ctx, Harness, Outcome, Point, Workload, WorkloadError};

/// The `pg` workload.
pub struct Pg;

/// A limit far above any machine's memory: the cgroup exists but does not squeeze.
const NO_LIMIT: u64 = 1 << 50;

impl Workload for Pg {
    fn name(&self) -> &'static str {
        "pg"
    }

    fn describe(&self) -> &'static str {
        "PostgreSQL + pgbench (TPC-B-like and select-only), server confined to a memory cgroup"
    }

    /// Every option is parsed as `run` will; a cache limit needs a memory cgroup here.
    /// A missing PostgreSQL is not bad input: [`Workload::unavailable`] skips the cells.
    fn check_options(&self, table: &toml::Table) -> Result<(), String> {
        let cfg = options::config(table, 1.0)?;
        if cfg.cache != crate::workload::db::options::Cache::Off {
            cgroup::parent().map_err(|e| {
                format!("[workload.pg]: {e}; set `cache = \"off\"` to run without a cache limit")
            })?;
        }
        Ok(())
    }
    /// No PostgreSQL here: its cells are skipped with the reason (`doctor` says it too).
    fn unavailable(&self) -> Option<String> {
        install::locate().err()
    }
    fn drops_caches(&self, _options: &toml::Table) -> Option<&'static str> {
        Some("the loaded database leaves the cache before every measurement")
    }

    fn key_metric(&self) -> (&'static str, bool) {
        ("transactions_per_s", true)
    }

    fn metric_headers(&self) -> &'static [(&'static str, &'static str)] {
        &[
            ("transactions_per_s", "tps"),
            ("latency_p99_ms", "p99 ms"),
            ("db_read_latency_ms", "db read ms"),
            ("wal_sync_latency_ms", "WAL fsync ms"),
            ("wal_bytes", "WAL bytes"),
            ("log_device_write_latency_ms", "log dev write ms"),
            ("log_device_write_bytes", "log dev written"),
        ]
    }

    fn columns(&self) -> &'static [&'static str] {
        &[
            "latency_p99_ms",
            "device_read_iops",
            "device_read_latency_ms",
            "db_read_latency_ms",
            "wal_sync_latency_ms",
            "wal_bytes",
            "log_device_write_latency_ms",
        ]
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
        let mut clients = match cfg.threads {
            Some(Threads::Fixed(n)) => n,
            _ => ctx.threads.max(1),
        };
        let search = match cfg.threads {
            Some(Threads::Auto(s)) => Some(s),
            _ => None,
        };
        // Room for every count the search may try, plus psql and autovacuum.
        let connections = search.map_or(clients, |s| s.max.max(clients)) + 10;
        let user = server::ensure_user()?;
        let data = ctx.root.join("pgdata");
        let waldir = ctx.log_root.map(|d| d.join("pg_wal"));
        server::initdb(&install, &data, waldir.as_deref(), user)?;

        // Declared before the server so it is dropped (removed) after the server stops.
        let cg = match cfg.cache {
            crate::workload::db::options::Cache::Off => None,
            _ => {
                let parent =
                    cgroup::parent().map_err(|e| WorkloadError::Unsupported(e.to_string()))?;
                Some(
                    MemoryCgroup::create(&parent, "pg", NO_LIMIT, cgroup::run_journal(ctx.scratch))
                        .map_err(|e| WorkloadError::Tool(e.to_string()))?,
                )
            }
        };
        let shared_buffers = cfg.shared_buffers_bytes();
        let mut settings = vec![
            ("shared_buffers", format!("{}kB", shared_buffers >> 10)),
            ("max_connections", connections.to_string()),
            ("max_wal_senders", "0".to_string()),
            ("track_io_timing", "on".to_string()),
            ("track_wal_io_timing", "on".to_string()),
        ];
        if every.is_some() {
            settings.extend(
                MAINTENANCE_SETTINGS
                    .iter()
                    .map(|(k, v)| (*k, v.to_string())),
            );
        }
        let procs = cg.as_ref().map(|c| c.procs_file());
        let srv = server::Server::start(
            &install,
            &data,
            &ctx.scratch.join("pg"),
            &settings,
            user,
            procs.as_deref(),
            cgroup::run_journal(ctx.scratch),
        )?;

        // Load (unmeasured), then everything it cached leaves the cache.
        let mut load = server::command(&install.program("pgbench"), None, None);
        load.arg("-h")
            .arg(&srv.socket_dir)
            .args(["-U", server::ROLE, "-i", "-q", "-s"])
            .arg(cfg.pgbench_scale.to_string())
            .arg("postgres")
            .current_dir(ctx.scratch);
        server::run_tool(load, "pgbench -i")?;
        srv.sql("CHECKPOINT")?;
        let num = |sql: &str| -> Result<f64, WorkloadError> {
            let v = srv.sql(sql)?;
            v.trim()
                .parse()
                .map_err(|_| WorkloadError::Tool(format!("{sql}: unreadable answer {v:?}")))
        };
        let db_bytes = num("SELECT pg_database_size(current_database())")? as u64;
        let block = num("SELECT current_setting('block_size')::int")?;
        ctx.check()?;
        harness
            .drop_caches()
            .map_err(|e| WorkloadError::io("dropping the loaded database from the cache", e))?;
        let budget = cfg.cache.bytes(db_bytes, block as u32);
        let mut fig = match (&cg, budget) {
            (Some(cg), Some(b)) => Some(confined::start_figures(cg, b)?),
            _ => None,
        };
        // threads = "auto": unmeasured pgbench trials of this point's mode, under the same
        // cache limit, choose the client count; their history rows are checked with the rest.
        let mut trial_transactions = 0;
        let searched = match search {
            None => None,
            Some(search) => {
                let secs = search.trial.as_secs_f64().ceil().max(1.0);
                let (chosen, curve) = auto::search(&search, &mut |n| {
                    let mut tick = || {
                        if let (Some(cg), Some(f)) = (&cg, fig.as_mut()) {
                            confined::keep_limit(cg, f);
                        }
                    };
                    let args = bench_args(n, secs, select_only);
                    let r = bench::run(&install, &srv, &args, ctx.scratch, ctx, &mut tick)?;
                    if r.failed != 0 {
                        return Err(WorkloadError::Verify(format!(
                            "{} pgbench transactions failed in the {n}-client trial",
                            r.failed
                        )));
                    }
                    trial_transactions += r.processed;
                    Ok(auto::Trial {
                        threads: n,
                        p99_ms: (!r.latencies_us.is_empty())
                            .then(|| percentile(&r.latencies_us, 0.99) as f64 / 1000.0),
                        tps: r.tps,
                    })
                })?;
                clients = chosen;
                Some((search, chosen, curve))
            }
        };
        let before = bench::snapshot(&srv)?;
        let vacuums0 = if every.is_some() {
            num(AUTOVACUUMS)?
        } else {
            0.0
        };
        let cpu0 = server::server_cpu_seconds(srv.pid());

        let args = bench_args(clients, cfg.seconds.round().max(1.0), select_only);
        let mut result = None;
        let done = std::sync::atomic::AtomicBool::new(false);
        let (outcome, checkpoints) = std::thread::scope(|s| {
            let (server, stop) = (&srv, &done);
            let bg = every.map(|every| s.spawn(move || checkpointer(server, every, stop)));
            let outcome = harness.measure(&mut || {
                let mut tick = || {
                    if let (Some(cg), Some(f)) = (&cg, fig.as_mut()) {
                        confined::keep_limit(cg, f);
                    }
                };
                let r = bench::run(&install, &srv, &args, ctx.scratch, ctx, &mut tick)?;
                let mut o = Outcome {
                    seconds: r.seconds,
                    files: r.processed,
                    ..Default::default()
                };
                o.metrics.insert("transactions_per_s".into(), r.tps);
                result = Some(r);
                Ok(o)
            });
            done.store(true, std::sync::atomic::Ordering::SeqCst);
            let checkpoints = match bg.map(|h| h.join()) {
                None => Ok(0),
                Some(Ok(n)) => n,
                Some(Err(_)) => Err(WorkloadError::Tool("the CHECKPOINT thread panicked".into())),
            };
            (outcome, checkpoints)
        });
        let outcome = outcome?;
        let checkpoints = checkpoints?;
        let r = result.ok_or_else(|| WorkloadError::Tool("pgbench did not run".into()))?;
        // Measurement over: lift the limit so the statistics queries' backends fit.
        if let Some(cg) = &cg {
            cg.set_limit(NO_LIMIT)
                .map_err(|e| WorkloadError::Tool(e.to_string()))?;
        }
        bench::wait_for_backends(&srv)?;
        let after = bench::snapshot(&srv)?;
        let vacuums = if every.is_some() {
            num(AUTOVACUUMS)? - vacuums0
        } else {
            0.0
        };
        let cpu1 = server::server_cpu_seconds(srv.pid());
        let checked = stats::verify(
            &srv,
            &cfg,
            &r,
            select_only,
            trial_transactions,
            &before,
            &after,
        )?;

        let fig = fig.map(|mut f| {
            if let Some(cg) = &cg {
                f.peak = cg.peak();
                f.limit_hits = cg.limit_hits();
            }
            f
        });
        let label = cg.as_ref().map(|c| c.version.label());
        srv.stop()?;
        if let Some(cg) = cg {
            cg.remove()
                .map_err(|e| WorkloadError::Tool(e.to_string()))?;
        }

        let mut outcome = outcome;
        let m = &mut outcome.metrics;
        let ms = |us: u64| us as f64 / 1000.0;
        let lat = &r.latencies_us;
        if !lat.is_empty() {
            m.insert(
                "latency_avg_ms".into(),
                lat.iter().sum::<u64>() as f64 / lat.len() as f64 / 1000.0,
            );
            for (name, q) in [("p50", 0.50), ("p95", 0.95), ("p99", 0.99)] {
                m.insert(format!("latency_{name}_ms"), ms(percentile(lat, q)));
            }
            m.insert("latency_max_ms".into(), ms(*lat.last().unwrap_or(&0)));
        }
        m.insert("transactions".into(), r.processed as f64);
        m.insert("failed_transactions".into(), r.failed as f64);
        m.insert("clients".into(), clients as f64);
        m.insert("pgbench_scale".into(), f64::from(cfg.pgbench_scale));
        m.insert("db_initial_bytes".into(), db_bytes as f64);
        m.insert("shared_buffers_bytes".into(), shared_buffers as f64);
        m.insert("accounts_rows".into(), checked.accounts as f64);
        let tx = r.processed.max(1) as f64;
        if let (Some(a), Some(b)) = (cpu0, cpu1) {
            m.insert("server_cpu_ms_per_tx".into(), (b - a) * 1000.0 / tx);
        }
        m.insert("client_cpu_ms_per_tx".into(), r.client_cpu * 1000.0 / tx);
        let io = stats::per_file(&before, &after, block, m);
        outcome.logical_write_bytes = io.wal_bytes;
        outcome.logical_read_bytes = io.db_read_bytes;
        outcome.notes.push(format!(
            "PostgreSQL {} (pgbench {}{}, {clients} clients, {} s, scale {}, database {} after \
             load), shared_buffers {}",
            install.major,
            if select_only { "-S" } else { "TPC-B" },
            "",
            cfg.seconds.round(),
            cfg.pgbench_scale,
            human_bytes(db_bytes),
            human_bytes(shared_buffers)
        ));
        match (fig, label) {
            (Some(f), Some(label)) => {
                f.add_metrics(m);
                outcome.notes.push(format!(
                    "server confined to a memory cgroup ({label}): page cache budget {} of a {} \
                     database (highest limit {}, peak page cache seen {})",
                    human_bytes(f.cache_budget),
                    human_bytes(db_bytes),
                    human_bytes(f.limit_max),
                    human_bytes(f.page_cache_peak)
                ));
            }
            _ => outcome.notes.push(
                "no cache limit (cache = \"off\"): the database may sit in the page cache".into(),
            ),
        }
        if let Some((search, chosen, curve)) = &searched {
            let what = if select_only {
                "read (select-only transaction) latency"
            } else {
                "TPC-B transaction latency (each holds a read)"
            };
            auto::record(search, *chosen, curve, what, m, &mut outcome.notes);
        }
        if let Some(every) = every {
            let actions = checkpoints as f64 + vacuums;
            // The variant's own check: maintenance that never ran would measure nothing.
            if actions <= 0.0 {
                return Err(WorkloadError::Verify(
                    "the maintenance point ran no CHECKPOINT and no autovacuum".into(),
                ));
            }
            m.insert("maintenance_checkpoints".into(), checkpoints as f64);
            m.insert("maintenance_autovacuum_runs".into(), vacuums);
            m.insert("maintenance_actions".into(), actions);
            outcome.notes.push(format!(
                "maintenance: aggressive autovacuum ({} runs) and a CHECKPOINT every {} ms \
                 ({checkpoints} issued) during the measured phase",
                vacuums,
                every.as_millis()
            ));
        }
        outcome.notes.push(checked.note);
        if let Some(w) = &waldir {
            let segments = server::check_wal_placement(&data, w)?;
            outcome.notes.push(format!(
                "WAL on the log target ({}, {segments} segments); the data on this target",
                w.display()
            ));
        }
        Ok(outcome)
    }
}

/// The suffix of a point measured with the engine's maintenance running.
pub const MAINTENANCE: &str = "-maintenance";

/// Server settings of a maintenance point: autovacuum wakes every second and takes any
/// table with a few dozen changed rows, without cost-based pauses.
const MAINTENANCE_SETTINGS: [(&str, &str); 7] = [
    ("autovacuum", "on"),
    ("autovacuum_naptime", "1"),
    ("autovacuum_vacuum_threshold", "50"),
    ("autovacuum_vacuum_scale_factor", "0.01"),
    ("autovacuum_analyze_threshold", "50"),
    ("autovacuum_analyze_scale_factor", "0.01"),
    ("autovacuum_vacuum_cost_delay", "0"),
];

/// Autovacuum and autoanalyze runs so far over the user tables.
const AUTOVACUUMS: &str =
    "SELECT coalesce(sum(autovacuum_count + autoanalyze_count), 0) FROM pg_stat_user_tables";

/// Issues a CHECKPOINT every `every` until `done`; returns how many completed.
fn checkpointer(
    srv: &server::Server,
    every: std::time::Duration,
    done: &std::sync::atomic::AtomicBool,
) -> Result<u64, WorkloadError> {
    let mut n = 0;
    let mut next = std::time::Instant::now() + every;
    while !done.load(std::sync::atomic::Ordering::SeqCst) {
        if std::time::Instant::now() >= next {
            srv.sql("CHECKPOINT")?;
            n += 1;
            next += every;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    Ok(n)
}

/// pgbench's arguments for `clients` clients for `seconds` (whole), select-only or TPC-B.
fn bench_args(clients: usize, seconds: f64, select_only: bool) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "-n".into(),
        "-c".into(),
        clients.to_string(),
        "-j".into(),
        clients.min(num_cpus()).to_string(),
        "-T".into(),
        format!("{}", seconds as u64),
    ];
    if select_only {
        args.push("-S".into());
    }
    args
}

/// CPUs this process may run on, for pgbench's `-j`.
fn num_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
