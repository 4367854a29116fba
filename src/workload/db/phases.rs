//! One `db` cell, phase by phase: the database built from the seed and its keeper
//! connection opened, the page cache made cold and (with a cache limit) a memory cgroup
//! made for the engine, the worker count searched (`threads = "auto"`), the engine run
//! measured, the database verified, and the record written. [`run_cell`] runs them in order.

use std::path::PathBuf;

use rusqlite::Connection;

use super::mix;
use super::options::Config;
use super::outcome::outcome_of;
use super::schema::{build, open, sql_err, Built, DB_FILE};
use crate::provision::cgroup::{self, MemoryCgroup};
use crate::workload::ctx::Ctx;
use crate::workload::engine::auto;
use crate::workload::engine::cache::Cache;
use crate::workload::engine::confined::{self, CgroupFigures};
use crate::workload::error::{IoContext, WorkloadError};
use crate::workload::harness::Harness;
use crate::workload::outcome::Outcome;

/// Totals of the measured phase, kept for verification after it.
#[derive(Debug, Default)]
struct Totals {
    inserted: u64,
    deleted: u64,
    /// Rows the unmeasured trials of `threads = "auto"` inserted and deleted.
    trial_inserted: u64,
    trial_deleted: u64,
}

/// Runs one cell with `cfg` (the point's variant already applied), phase by phase.
pub(super) fn run_cell(
    ctx: &Ctx,
    harness: &mut dyn Harness,
    cfg: Config,
) -> Result<Outcome, WorkloadError> {
    let mut cell = Cell::build(ctx, harness, cfg)?;
    ctx.check()?;
    let mut totals = Totals::default();
    let searched = match cell.cfg.auto {
        None => None,
        Some(search) => {
            let (chosen, curve) = cell.search(&search, &mut totals)?;
            cell.cfg.threads = chosen;
            // The measured phase starts as cold as without the search.
            if cell.cg.is_some() {
                harness
                    .drop_caches()
                    .ctx(|| "dropping the cache after the thread search".into())?;
            }
            Some((search, chosen, curve))
        }
    };
    ctx.check()?;

    let mut figures = None;
    let mut outcome = harness.measure(&mut || {
        let (m, fig) = cell.run_engine(&cell.cfg)?;
        figures = fig;
        totals.inserted = m.stats.iter().map(|s| s.inserted).sum();
        totals.deleted = m.stats.iter().map(|s| s.deleted).sum();
        phase_outcome(&cell.cfg, &cell.built, &m)
    })?;
    let confinement = match cell.cg.take() {
        Some((cg, _)) => {
            let label = cg.version.label();
            cg.remove()
                .map_err(|e| WorkloadError::Tool(e.to_string()))?;
            figures.map(|f| (f, label))
        }
        None => None,
    };

    // Verification: the rows the transactions say they left, and an intact database.
    ctx.check()?;
    let verified = cell.verify(&totals)?;
    cell.record(&mut outcome, confinement.as_ref(), &verified);
    if let Some((search, chosen, curve)) = &searched {
        let (m, notes) = (&mut outcome.metrics, &mut outcome.notes);
        auto::record(search, *chosen, curve, "read latency", m, notes);
    }
    outcome.notes.push(verified.note(cell.built.rows));
    Ok(outcome)
}

/// A cell's database and what its phases share.
struct Cell<'a> {
    ctx: &'a Ctx<'a>,
    cfg: Config,
    path: PathBuf,
    seed: u64,
    built: Built,
    /// A cache limit's cgroup and page-cache budget (declared before the keeper so that,
    /// dropped on a failure, the cgroup goes first, as it always has).
    cg: Option<(MemoryCgroup, u64)>,
    keeper: Keeper,
    /// The database lives on a memory file system: no limit can evict its pages.
    memory_fs: bool,
    /// The phase starts with the database in the page cache (no limit, and not root).
    started_warm: bool,
}

/// The keeper connection, open through the measured phase so that no worker's close is
/// the last one (which would checkpoint and delete the WAL mid-measurement), and the
/// settings SQLite reports in effect on it.
struct Keeper {
    conn: Connection,
    page_size: u32,
    journal: String,
    cache_kib: i64,
}

impl Keeper {
    /// Opens the keeper and checks that SQLite took the page size and WAL mode asked for.
    fn open(path: &std::path::Path, cfg: &Config) -> Result<Keeper, WorkloadError> {
        let keeper = open(path, cfg)?;
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
        Ok(Keeper {
            conn: keeper,
            page_size,
            journal,
            cache_kib,
        })
    }
}

/// What the verification counted, for the record.
struct Verified {
    rows: i64,
    inserted: u64,
    deleted: u64,
    /// The thread search's share of the changes, as a clause of the notes (or empty).
    trials: String,
}

impl Verified {
    /// The note that says what was verified.
    fn note(&self, built_rows: u64) -> String {
        let (rows, inserted, deleted, trials) =
            (self.rows, self.inserted, self.deleted, &self.trials);
        format!(
            "verified: {rows} rows = {built_rows} built + {inserted} inserted − {deleted} deleted{trials}; \
             quick_check ok"
        )
    }
}

impl<'a> Cell<'a> {
    /// Builds the database fresh from the seed (unmeasured, so every target starts from the
    /// same bytes), puts it on the device, opens the keeper, and readies the cache: cold
    /// where it can be, and confined to a cgroup where the options limit it.
    fn build(
        ctx: &'a Ctx<'a>,
        harness: &mut dyn Harness,
        cfg: Config,
    ) -> Result<Cell<'a>, WorkloadError> {
        let path = ctx.root.join(DB_FILE);
        let seed = ctx.dataset.seed;
        let built = build(&path, &cfg, seed, ctx)?;
        crate::sys::syncfs(ctx.root).ctx(|| format!("syncfs {}", ctx.root.display()))?;
        let keeper = Keeper::open(&path, &cfg)?;
        // On a memory file system the database's pages are its storage: a limit could only
        // fail the engine's writes (ENOMEM), never send a read to a device.
        let memory_fs = crate::sys::on_memory_fs(ctx.root);
        let budget = cfg
            .cache
            .bytes(built.bytes, keeper.page_size)
            .filter(|_| !memory_fs);
        // Without a limit the phase starts as cold as with one where it can (root), so
        // `cache = "off"` against a limit far above the database measures the cgroup
        // itself, not a warm start against a cold one.
        let started_warm = match budget.is_none() && !memory_fs {
            true if crate::sys::can_drop_caches().is_ok() => {
                harness
                    .drop_caches()
                    .ctx(|| "dropping the built database from the cache".into())?;
                false
            }
            unlimited => unlimited,
        };
        let cg = match budget {
            None => None,
            Some(b) => Some((confine(ctx, harness)?, b)),
        };
        Ok(Cell {
            ctx,
            cfg,
            path,
            seed,
            built,
            cg,
            keeper,
            memory_fs,
            started_warm,
        })
    }

    /// The engine: connections opened where it runs, so a confined engine's are its own;
    /// `ready` is called once it has allocated everything it can up front (connections,
    /// PRAGMAs, parked threads), before the clock starts.
    fn engine(
        &self,
        cfg: &Config,
        ready: &mut dyn FnMut() -> Result<(), WorkloadError>,
    ) -> Result<mix::Measured, WorkloadError> {
        let path = &self.path;
        let conns: Vec<Connection> = (0..cfg.threads)
            .map(|_| open(path, cfg))
            .collect::<Result<_, _>>()?;
        let checkpoint_conn = match cfg.checkpoint_interval {
            Some(_) => Some(open(path, cfg)?),
            None => None,
        };
        let maint_conn = match cfg.maintain {
            Some(_) => Some(open(path, cfg)?),
            None => None,
        };
        let background = mix::Background {
            checkpoint: checkpoint_conn,
            maintenance: maint_conn,
        };
        mix::run(
            cfg,
            self.ctx,
            &self.built,
            self.seed,
            conns,
            background,
            ready,
        )
    }

    /// The engine at `cfg`'s thread count, confined when there is a cache limit.
    fn run_engine(
        &self,
        cfg: &Config,
    ) -> Result<(mix::Measured, Option<CgroupFigures>), WorkloadError> {
        match &self.cg {
            None => Ok((self.engine(cfg, &mut || Ok(()))?, None)),
            Some((cg, budget)) => {
                let (m, fig) =
                    confined::run(self.ctx, cg, *budget, |ready| self.engine(cfg, ready))?;
                Ok((m, Some(fig)))
            }
        }
    }

    /// `threads = "auto"`: unmeasured trials of the engine, under the same cache limit,
    /// choose the worker count; the rows they insert and delete go into `totals` for the
    /// verification.
    fn search(
        &self,
        search: &auto::Search,
        totals: &mut Totals,
    ) -> Result<(usize, Vec<auto::Trial>), WorkloadError> {
        auto::search(search, &mut |n| {
            let trial = Config {
                threads: n,
                duration: search.trial,
                ..self.cfg.clone()
            };
            let (m, _) = self.run_engine(&trial)?;
            totals.trial_inserted += m.stats.iter().map(|s| s.inserted).sum::<u64>();
            totals.trial_deleted += m.stats.iter().map(|s| s.deleted).sum::<u64>();
            let o = outcome_of(&trial, &self.built, &m.stats, &m.ckpt, m.seconds, 0);
            Ok(auto::Trial {
                threads: n,
                p99_ms: o.metrics.get("read_p99_ms").copied(),
                tps: o.metrics["transactions_per_s"],
            })
        })
    }

    /// The database holds exactly the rows the build and the transactions (the trials'
    /// included) say it should, and SQLite's `quick_check` finds it intact.
    fn verify(&self, totals: &Totals) -> Result<Verified, WorkloadError> {
        let (keeper, built) = (&self.keeper.conn, &self.built);
        let e = |what: &'static str| move |err| sql_err(what, err);
        let rows: i64 = keeper
            .query_row("SELECT count(*) FROM items", [], |r| r.get(0))
            .map_err(e("count"))?;
        let trials = match totals.trial_inserted + totals.trial_deleted {
            0 => String::new(),
            _ => format!(
                " (of which the thread search's trials: {} inserted, {} deleted)",
                totals.trial_inserted, totals.trial_deleted
            ),
        };
        let inserted = totals.inserted + totals.trial_inserted;
        let deleted = totals.deleted + totals.trial_deleted;
        let expected = built.rows as i64 + inserted as i64 - deleted as i64;
        if rows != expected {
            return Err(WorkloadError::Verify(format!(
                "{rows} rows in the database, expected {expected} = {} built + {inserted} \
                 inserted − {deleted} deleted{trials}",
                built.rows
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
        Ok(Verified {
            rows,
            inserted,
            deleted,
            trials,
        })
    }

    /// The cell's own figures: the rows left, the engine's settings in effect, and how
    /// the page cache stood (the cgroup's figures, or why there was no limit).
    fn record(
        &self,
        outcome: &mut Outcome,
        confinement: Option<&(CgroupFigures, &'static str)>,
        verified: &Verified,
    ) {
        let (cfg, k) = (&self.cfg, &self.keeper);
        let (page_size, cache_kib, journal) = (k.page_size, k.cache_kib, &k.journal);
        let m = &mut outcome.metrics;
        m.insert("final_rows".into(), verified.rows as f64);
        // The report's heading names the engine's worker count, not --threads (ignored here).
        m.insert("worker_threads".into(), cfg.threads as f64);
        m.insert("page_size_bytes".into(), f64::from(page_size));
        m.insert("cache_size_kib".into(), (-cache_kib) as f64);
        outcome.notes.push(format!(
            "SQLite {} in effect: journal_mode={journal}, page_size={page_size}, cache_size={} KiB per connection",
            rusqlite::version(),
            -cache_kib
        ));
        match confinement {
            Some((f, label)) => {
                f.add_metrics(m);
                outcome.notes.push(f.note(label, self.built.bytes));
            }
            None if self.memory_fs && cfg.cache != Cache::Off => outcome.notes.push(
                "no cache limit on a memory file system: its pages are the database itself, which no limit can evict".into(),
            ),
            None if self.started_warm => outcome.notes.push(
                "no cache limit (cache = \"off\"), and the built database could not be dropped from the page cache (not root): the phase started warm".into(),
            ),
            None => outcome.notes.push(
                "no cache limit (cache = \"off\"): the phase started cold, then the database may sit in the page cache".into(),
            ),
        }
    }
}

/// A cache limit: the built database's pages leave the cache (they were charged to this
/// process, and a page cached already is a hit the engine is never charged for), and the
/// cgroup the engine will run in is made.
fn confine(ctx: &Ctx, harness: &mut dyn Harness) -> Result<MemoryCgroup, WorkloadError> {
    harness
        .drop_caches()
        .ctx(|| "dropping the built database from the cache".into())?;
    let parent = cgroup::parent().map_err(|e| WorkloadError::Unsupported(e.to_string()))?;
    MemoryCgroup::create(
        &parent,
        "db",
        confined::NO_LIMIT,
        cgroup::run_journal(ctx.scratch),
    )
    .map_err(|e| WorkloadError::Tool(e.to_string()))
}

/// The measured phase's outcome from what the engine counted: the transactions' figures,
/// the engine's per-file calls, the maintenance variant's own figures and check, and CPU
/// per transaction.
fn phase_outcome(cfg: &Config, built: &Built, m: &mix::Measured) -> Result<Outcome, WorkloadError> {
    let mut o = outcome_of(cfg, built, &m.stats, &m.ckpt, m.seconds, m.wal_file_bytes);
    m.files.add_metrics(&mut o.metrics);
    o.fsyncs = m.files.syncs();
    if cfg.maintain.is_some() {
        let x = &m.maint;
        let actions = x.checkpoints + x.vacuums;
        for (k, v) in [
            ("maintenance_actions", actions),
            ("maintenance_checkpoints", x.checkpoints),
            ("maintenance_vacuums", x.vacuums),
            ("maintenance_freed_pages", x.freed_pages),
            ("maintenance_busy", x.busy),
        ] {
            o.metrics.insert(k.into(), v as f64);
        }
        if actions == 0 {
            return Err(WorkloadError::Verify(
                "the maintenance variant did no maintenance".into(),
            ));
        }
        o.notes.push(format!(
            "maintenance every {} ms: {} wal_checkpoint(PASSIVE), {} incremental_vacuum \
             ({} free pages returned), {} busy",
            cfg.maintenance_interval.as_millis(),
            x.checkpoints,
            x.vacuums,
            x.freed_pages,
            x.busy
        ));
    }
    // Without a checkpoint thread its figure is absent, not unknown.
    let cpu: Option<u64> = m
        .stats
        .iter()
        .map(|s| s.cpu_ns)
        .sum::<Option<u64>>()
        .map(|w| w + m.ckpt.cpu_ns.unwrap_or(0));
    if let (Some(ns), true) = (cpu, o.files > 0) {
        o.metrics.insert(
            "engine_cpu_ms_per_tx".into(),
            ns as f64 / 1e6 / o.files as f64,
        );
    }
    o.notes.push(
        "per-file figures (db_*, wal_* reads, writes, syncs): the engine's own calls \
         timed by fsarena's SQLite VFS shim around each pread, pwrite and fsync; \
         engine_cpu_ms_per_tx: CPU time of the worker and checkpoint threads"
            .into(),
    );
    Ok(o)
}
