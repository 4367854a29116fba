//! One `pg` cell, phase by phase: the server started on the target (inside its memory
//! cgroup), the database loaded and dropped from the cache, the client count searched
//! (`threads = "auto"`), pgbench run measured, the server's counters read and the work
//! checked, the server stopped, and the record written. [`run_cell`] runs them in order.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::bench::{self, BenchRun};
use super::install::Install;
use super::maintenance;
use super::options::Config;
use super::server::{self, Server};
use super::stats;
use crate::fsops::latency::percentile;
use crate::plan::size::human_bytes;
use crate::provision::cgroup::{self, MemoryCgroup};
use crate::workload::ctx::Ctx;
use crate::workload::engine::auto::{self, Threads};
use crate::workload::engine::confined::{self, CgroupFigures};
use crate::workload::error::WorkloadError;
use crate::workload::harness::Harness;
use crate::workload::outcome::Outcome;

/// A limit far above any machine's memory: the cgroup exists but does not squeeze.
const NO_LIMIT: u64 = 1 << 50;

/// What a point asks of its cell, read from the options and the variant once.
pub(super) struct CellPlan<'a> {
    pub(super) cfg: &'a Config,
    pub(super) install: &'a Install,
    /// The maintenance point's interval between CHECKPOINTs (`None`: no maintenance).
    pub(super) every: Option<Duration>,
    /// pgbench's select-only mode (`-S`) rather than TPC-B.
    pub(super) select_only: bool,
}

/// The `threads = "auto"` search's result: the search, the chosen count, every trial.
type Searched = (auto::Search, usize, Vec<auto::Trial>);

/// Runs one cell of a point, phase by phase; the server is stopped and its cgroup removed
/// on every exit path (by [`Cell`]'s fields' drops where a phase fails).
pub(super) fn run_cell(
    ctx: &Ctx,
    harness: &mut dyn Harness,
    p: &CellPlan,
) -> Result<Outcome, WorkloadError> {
    let cfg = p.cfg;
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
    let mut cell = Cell::start(ctx, p, connections)?;
    let db_bytes = cell.load(harness)?;
    // Unmeasured pgbench trials of this point's mode, under the same cache limit, choose
    // the client count; their history rows are checked with the rest.
    let mut trial_transactions = 0;
    let searched = match search {
        None => None,
        Some(search) => {
            let (chosen, curve) = cell.search(&search, &mut trial_transactions)?;
            clients = chosen;
            Some((search, chosen, curve))
        }
    };
    let before = Counters::read(&cell.srv, p.every.is_some())?;
    let (mut outcome, r, checkpoints) = cell.measure(harness, clients)?;
    let after = cell.counters_after()?;
    let (srv, select_only) = (&cell.srv, p.select_only);
    let checked = stats::verify(
        srv,
        cfg,
        &r,
        select_only,
        trial_transactions,
        &before.stats,
        &after.stats,
    )?;
    let (block, shared_buffers) = (cell.block, cell.shared_buffers);
    let stopped = cell.stop()?;
    let record = Record {
        p,
        r: &r,
        clients,
        db_bytes,
        shared_buffers,
        accounts: checked.accounts,
        block,
        before: &before,
        after: &after,
        checkpoints,
    };
    record.write(&mut outcome, &stopped, searched.as_ref())?;
    outcome.notes.push(checked.note);
    if let Some(w) = &stopped.waldir {
        let segments = server::check_wal_placement(&stopped.data, w)?;
        outcome.notes.push(format!(
            "WAL on the log target ({}, {segments} segments); the data on this target",
            w.display()
        ));
    }
    Ok(outcome)
}

/// A cell's running server and what the phases share. The server is declared before its
/// cgroup so that, dropped on a failure, it stops before the cgroup is removed.
struct Cell<'a> {
    ctx: &'a Ctx<'a>,
    p: &'a CellPlan<'a>,
    srv: Server,
    cg: Option<MemoryCgroup>,
    data: PathBuf,
    /// The WAL's directory on the log target, if the plan has one.
    waldir: Option<PathBuf>,
    shared_buffers: u64,
    /// PostgreSQL's block size, for the per-file figures.
    block: f64,
    /// The cgroup's figures while a cache limit holds.
    fig: Option<CgroupFigures>,
}

/// What is left once the server is stopped: where its files were, and the cgroup's
/// figures with its version's label where a cache limit held.
struct Stopped {
    data: PathBuf,
    waldir: Option<PathBuf>,
    confinement: Option<(CgroupFigures, &'static str)>,
}

impl<'a> Cell<'a> {
    /// `initdb` on the target (the WAL on the log target when there is one), the memory
    /// cgroup when the cache is limited, and the postmaster started inside it with the
    /// point's settings.
    fn start(
        ctx: &'a Ctx<'a>,
        p: &'a CellPlan<'a>,
        connections: usize,
    ) -> Result<Cell<'a>, WorkloadError> {
        let (cfg, install) = (p.cfg, p.install);
        let user = server::ensure_user()?;
        let data = ctx.root.join("pgdata");
        let waldir = ctx.log_root.map(|d| d.join("pg_wal"));
        server::initdb(ctx, install, &data, waldir.as_deref(), user)?;

        let cg = match cfg.cache {
            crate::workload::engine::cache::Cache::Off => None,
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
        if p.every.is_some() {
            settings.extend(
                maintenance::SETTINGS
                    .iter()
                    .map(|(k, v)| (*k, v.to_string())),
            );
        }
        let procs = cg.as_ref().map(|c| c.procs_file());
        let srv = server::Server::start(
            install,
            &data,
            &ctx.scratch.join("pg"),
            &settings,
            user,
            procs.as_deref(),
            cgroup::run_journal(ctx.scratch),
        )?
        .ready(ctx)?;
        Ok(Cell {
            ctx,
            p,
            srv,
            cg,
            data,
            waldir,
            shared_buffers,
            block: 0.0,
            fig: None,
        })
    }

    /// Loads the database (`pgbench -i`, unmeasured) and checkpoints it, then everything
    /// it cached leaves the cache and the cache limit, a share of its size, starts to
    /// hold. Returns the database's size.
    fn load(&mut self, harness: &mut dyn Harness) -> Result<u64, WorkloadError> {
        let (ctx, cfg, srv) = (self.ctx, self.p.cfg, &self.srv);
        let mut load = server::command(&self.p.install.program("pgbench"), None, None);
        load.arg("-h")
            .arg(&srv.socket_dir)
            .args(["-U", server::ROLE, "-i", "-q", "-s"])
            .arg(cfg.pgbench_scale.to_string())
            .arg("postgres")
            .current_dir(ctx.scratch);
        server::run_tool_stoppable(ctx, load, "pgbench -i")?;
        srv.sql_stoppable(ctx, "CHECKPOINT")?;
        let db_bytes = number(srv, "SELECT pg_database_size(current_database())")? as u64;
        self.block = number(srv, "SELECT current_setting('block_size')::int")?;
        ctx.check()?;
        harness
            .drop_caches()
            .map_err(|e| WorkloadError::io("dropping the loaded database from the cache", e))?;
        let budget = cfg.cache.bytes(db_bytes, self.block as u32);
        self.fig = match (&self.cg, budget) {
            (Some(cg), Some(b)) => Some(confined::start_figures(cg, b)?),
            _ => None,
        };
        Ok(db_bytes)
    }

    /// `threads = "auto"`: unmeasured pgbench trials of the point's mode choose the client
    /// count. A failed transaction fails the cell; the trials' transactions are added to
    /// `trial_transactions` for the check.
    fn search(
        &mut self,
        search: &auto::Search,
        trial_transactions: &mut u64,
    ) -> Result<(usize, Vec<auto::Trial>), WorkloadError> {
        let (ctx, p) = (self.ctx, self.p);
        let secs = search.trial.as_secs_f64().ceil().max(1.0);
        auto::search(search, &mut |n| {
            let mut tick = || keep_limit(&self.cg, &mut self.fig);
            let args = bench::args(n, secs, p.select_only);
            let r = bench::run(p.install, &self.srv, &args, ctx.scratch, ctx, &mut tick)?;
            if r.failed != 0 {
                return Err(WorkloadError::Verify(format!(
                    "{} pgbench transactions failed in the {n}-client trial",
                    r.failed
                )));
            }
            *trial_transactions += r.processed;
            Ok(auto::Trial {
                threads: n,
                p99_ms: (!r.latencies_us.is_empty())
                    .then(|| percentile(&r.latencies_us, 0.99) as f64 / 1000.0),
                tps: r.tps,
            })
        })
    }

    /// The measured phase: pgbench with `clients` clients for `seconds`, the cache limit
    /// kept beside it and, on a maintenance point, a thread issuing CHECKPOINTs. Returns
    /// the outcome, pgbench's report and the CHECKPOINTs issued.
    fn measure(
        &mut self,
        harness: &mut dyn Harness,
        clients: usize,
    ) -> Result<(Outcome, BenchRun, u64), WorkloadError> {
        let (ctx, p) = (self.ctx, self.p);
        let args = bench::args(clients, p.cfg.seconds.round().max(1.0), p.select_only);
        let mut result = None;
        let done = AtomicBool::new(false);
        let (cg, fig, srv) = (&self.cg, &mut self.fig, &self.srv);
        let (outcome, checkpoints) = std::thread::scope(|s| {
            let stop = &done;
            let bg = p
                .every
                .map(|every| s.spawn(move || maintenance::checkpointer(srv, every, stop)));
            let outcome = harness.measure(&mut || {
                let mut tick = || keep_limit(cg, fig);
                let r = bench::run(p.install, srv, &args, ctx.scratch, ctx, &mut tick)?;
                let mut o = Outcome {
                    seconds: r.seconds,
                    files: r.processed,
                    ..Default::default()
                };
                o.metrics.insert("transactions_per_s".into(), r.tps);
                result = Some(r);
                Ok(o)
            });
            done.store(true, Ordering::SeqCst);
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
        Ok((outcome, r, checkpoints))
    }

    /// The server's counters once the measurement is over: the limit is lifted first so
    /// the statistics queries' backends fit, and pgbench's backends have left.
    fn counters_after(&self) -> Result<Counters, WorkloadError> {
        if let Some(cg) = &self.cg {
            cg.set_limit(NO_LIMIT)
                .map_err(|e| WorkloadError::Tool(e.to_string()))?;
        }
        bench::wait_for_backends(&self.srv)?;
        Counters::read(&self.srv, self.p.every.is_some())
    }

    /// Takes the cgroup's last figures, stops the server and removes its cgroup.
    fn stop(self) -> Result<Stopped, WorkloadError> {
        let Cell {
            srv,
            cg,
            data,
            waldir,
            fig,
            ..
        } = self;
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
        Ok(Stopped {
            data,
            waldir,
            confinement: fig.zip(label),
        })
    }
}

/// The server's counters at one moment: its statistics views, the autovacuum runs (on a
/// maintenance point) and the postmaster's CPU time. Read before and after the measured
/// phase; the differences are the run's figures.
struct Counters {
    stats: BTreeMap<String, f64>,
    vacuums: f64,
    cpu: Option<f64>,
}

impl Counters {
    fn read(srv: &Server, maintained: bool) -> Result<Counters, WorkloadError> {
        let stats = bench::snapshot(srv)?;
        let vacuums = if maintained {
            number(srv, maintenance::AUTOVACUUMS)?
        } else {
            0.0
        };
        let cpu = server::server_cpu_seconds(srv.pid());
        Ok(Counters {
            stats,
            vacuums,
            cpu,
        })
    }
}

/// A one-number answer of the server to `sql`.
fn number(srv: &Server, sql: &str) -> Result<f64, WorkloadError> {
    let v = srv.sql(sql)?;
    v.trim()
        .parse()
        .map_err(|_| WorkloadError::Tool(format!("{sql}: unreadable answer {v:?}")))
}

/// Keeps the cache limit above the server's own memory while pgbench runs (the keeper's
/// tick): only where a cache limit holds.
fn keep_limit(cg: &Option<MemoryCgroup>, fig: &mut Option<CgroupFigures>) {
    if let (Some(cg), Some(f)) = (cg, fig.as_mut()) {
        confined::keep_limit(cg, f);
    }
}

/// What the record is made of, once the server is stopped.
struct Record<'a> {
    p: &'a CellPlan<'a>,
    r: &'a BenchRun,
    clients: usize,
    db_bytes: u64,
    shared_buffers: u64,
    /// The account rows the check counted.
    accounts: u64,
    block: f64,
    before: &'a Counters,
    after: &'a Counters,
    checkpoints: u64,
}

impl Record<'_> {
    /// Writes the cell's metrics and notes into `outcome`; a maintenance point whose
    /// maintenance never ran is an error, since it would have measured nothing.
    fn write(
        &self,
        outcome: &mut Outcome,
        stopped: &Stopped,
        searched: Option<&Searched>,
    ) -> Result<(), WorkloadError> {
        let (cfg, clients, db_bytes) = (self.p.cfg, self.clients, self.db_bytes);
        let shared_buffers = self.shared_buffers;
        self.bench_metrics(&mut outcome.metrics);
        let m = &mut outcome.metrics;
        let io = stats::per_file(&self.before.stats, &self.after.stats, self.block, m);
        outcome.logical_write_bytes = io.wal_bytes;
        outcome.logical_read_bytes = io.db_read_bytes;
        outcome.notes.push(format!(
            "PostgreSQL {} (pgbench {}{}, {clients} clients, {} s, scale {}, database {} after \
             load), shared_buffers {}",
            self.p.install.major,
            if self.p.select_only { "-S" } else { "TPC-B" },
            "",
            cfg.seconds.round(),
            cfg.pgbench_scale,
            human_bytes(db_bytes),
            human_bytes(shared_buffers)
        ));
        match &stopped.confinement {
            Some((f, label)) => {
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
            None => outcome.notes.push(
                "no cache limit (cache = \"off\"): the database may sit in the page cache".into(),
            ),
        }
        if let Some((search, chosen, curve)) = searched {
            let what = if self.p.select_only {
                "read (select-only transaction) latency"
            } else {
                "TPC-B transaction latency (each holds a read)"
            };
            auto::record(search, *chosen, curve, what, m, &mut outcome.notes);
        }
        match self.p.every {
            Some(every) => {
                let vacuums = self.after.vacuums - self.before.vacuums;
                maintenance::record(every, self.checkpoints, vacuums, m, &mut outcome.notes)
            }
            None => Ok(()),
        }
    }

    /// pgbench's figures: latency percentiles of every logged transaction, the counts, the
    /// database's shape, and CPU per transaction on the server's side and the client's.
    fn bench_metrics(&self, m: &mut BTreeMap<String, f64>) {
        let r = self.r;
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
        m.insert("clients".into(), self.clients as f64);
        m.insert("pgbench_scale".into(), f64::from(self.p.cfg.pgbench_scale));
        m.insert("db_initial_bytes".into(), self.db_bytes as f64);
        m.insert("shared_buffers_bytes".into(), self.shared_buffers as f64);
        m.insert("accounts_rows".into(), self.accounts as f64);
        let tx = r.processed.max(1) as f64;
        if let (Some(a), Some(b)) = (self.before.cpu, self.after.cpu) {
            m.insert("server_cpu_ms_per_tx".into(), (b - a) * 1000.0 / tx);
        }
        m.insert("client_cpu_ms_per_tx".into(), r.client_cpu * 1000.0 / tx);
    }
}
