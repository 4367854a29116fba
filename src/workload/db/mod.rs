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
//! metrics). This file runs them in order and verifies the database afterwards.

pub(crate) mod auto;
pub(crate) mod confined;
mod mix;
pub(crate) mod options;
mod outcome;
mod schema;
mod timed;

use rusqlite::Connection;

use self::confined::CgroupFigures;
use self::options::{Cache, Config};
use self::outcome::outcome_of;
use self::schema::{build, open, sql_err, DB_FILE};
use super::{Ctx, Harness, IoContext, Outcome, Point, Workload, WorkloadError};
use crate::provision::cgroup::{self, MemoryCgroup};

/// The `db` workload.
pub struct Db;

/// The variant that runs the engine's own maintenance during the measured phase.
const MAINTENANCE: &str = "maintenance";

/// Totals of the measured phase, kept for verification after it.
#[derive(Debug, Default)]
struct Totals {
    inserted: u64,
    deleted: u64,
    /// Rows the unmeasured trials of `threads = "auto"` inserted and deleted.
    trial_inserted: u64,
    trial_deleted: u64,
}

impl Workload for Db {
    fn name(&self) -> &'static str {
        "db"
    }

    fn describe(&self) -> &'static str {
        "SQLite (WAL) transactions: insert/delete/replace/read from many threads, lazy and durable commits"
    }

    /// Parses and checks every option (keys and values) the way `run` will.
    /// A cache limit also needs a memory cgroup on this host: refused here, in one line,
    /// where there is none.
    fn check_options(&self, table: &toml::Table) -> Result<(), String> {
        let cfg = options::config(table, 1.0)?;
        if cfg.cache != Cache::Off {
            cgroup::parent().map_err(|e| {
                format!("[workload.db]: {e}; set `cache = \"off\"` to run without a cache limit")
            })?;
        }
        Ok(())
    }
    fn drops_caches(&self, options: &toml::Table) -> Option<&'static str> {
        options::config(options, 1.0)
            .is_ok_and(|c| c.cache != Cache::Off)
            .then_some("its cache limit (`cache = \"off\"` avoids it)")
    }

    fn key_metric(&self) -> (&'static str, bool) {
        ("transactions_per_s", true)
    }

    fn metric_headers(&self) -> &'static [(&'static str, &'static str)] {
        &[
            ("transactions_per_s", "tx/s"),
            ("wal_bytes_written", "WAL written"),
        ]
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

    /// One point, or with `maintenance = true` the normal one and the `maintenance` variant.
    fn points(&self, ctx: &Ctx) -> Result<Vec<Point>, WorkloadError> {
        let mut points = vec![Point::default()];
        if Config::from_ctx(ctx)?.maintenance {
            points.push(Point {
                variant: MAINTENANCE.into(),
                ..Default::default()
            });
        }
        Ok(points)
    }

    /// The `threads` option rules: the engine's worker count is part of the workload.
    fn uses_threads(&self) -> bool {
        false
    }

    fn run(
        &self,
        ctx: &Ctx,
        point: &Point,
        harness: &mut dyn Harness,
    ) -> Result<Outcome, WorkloadError> {
        let mut cfg = Config::from_ctx(ctx)?;
        match point.variant.as_str() {
            "" => {}
            MAINTENANCE if cfg.maintenance => cfg.maintain = Some(cfg.maintenance_interval),
            v => return Err(WorkloadError::Option(format!("unknown db variant {v}"))),
        }
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
        // The engine: connections opened where it runs, so a confined engine's are its own;
        // `ready` is called once it has allocated everything it can up front (connections,
        // PRAGMAs, parked threads), before the clock starts.
        let engine = |cfg: &Config,
                      ready: &mut dyn FnMut() -> Result<(), WorkloadError>|
         -> Result<mix::Measured, WorkloadError> {
            let conns: Vec<Connection> = (0..cfg.threads)
                .map(|_| open(&path, cfg))
                .collect::<Result<_, _>>()?;
            let checkpoint_conn = match cfg.checkpoint_interval {
                Some(_) => Some(open(&path, cfg)?),
                None => None,
            };
            let maint_conn = match cfg.maintain {
                Some(_) => Some(open(&path, cfg)?),
                None => None,
            };
            let background = mix::Background {
                checkpoint: checkpoint_conn,
                maintenance: maint_conn,
            };
            mix::run(cfg, ctx, &built, seed, conns, background, ready)
        };
        // A cache limit: the built database's pages leave the cache (they were charged to
        // this process, and a page cached already is a hit the engine is never charged
        // for), then the engine runs in a child inside the cgroup.
        // On a memory file system the database's pages are its storage: a limit could only
        // fail the engine's writes (ENOMEM), never send a read to a device.
        let memory_fs = crate::sys::on_memory_fs(ctx.root);
        let budget = cfg
            .cache
            .bytes(built.bytes, page_size)
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
            Some(b) => {
                harness
                    .drop_caches()
                    .ctx(|| "dropping the built database from the cache".into())?;
                let parent =
                    cgroup::parent().map_err(|e| WorkloadError::Unsupported(e.to_string()))?;
                let cg = MemoryCgroup::create(
                    &parent,
                    "db",
                    confined::NO_LIMIT,
                    cgroup::run_journal(ctx.scratch),
                )
                .map_err(|e| WorkloadError::Tool(e.to_string()))?;
                Some((cg, b))
            }
        };
        ctx.check()?;

        // The engine at `cfg`'s thread count, confined when there is a cache limit.
        let run_engine =
            |cfg: &Config| -> Result<(mix::Measured, Option<CgroupFigures>), WorkloadError> {
                match &cg {
                    None => Ok((engine(cfg, &mut || Ok(()))?, None)),
                    Some((cg, budget)) => {
                        let (m, fig) = confined::run(ctx, cg, *budget, |ready| engine(cfg, ready))?;
                        Ok((m, Some(fig)))
                    }
                }
            };
        let mut totals = Totals::default();
        let searched = match cfg.auto {
            None => None,
            Some(search) => {
                let (chosen, curve) = auto::search(&search, &mut |n| {
                    let trial = Config {
                        threads: n,
                        duration: search.trial,
                        ..cfg.clone()
                    };
                    let (m, _) = run_engine(&trial)?;
                    totals.trial_inserted += m.stats.iter().map(|s| s.inserted).sum::<u64>();
                    totals.trial_deleted += m.stats.iter().map(|s| s.deleted).sum::<u64>();
                    let o = outcome_of(&trial, &built, &m.stats, &m.ckpt, m.seconds, 0);
                    Ok(auto::Trial {
                        threads: n,
                        p99_ms: o.metrics.get("read_p99_ms").copied(),
                        tps: o.metrics["transactions_per_s"],
                    })
                })?;
                cfg.threads = chosen;
                // The measured phase starts as cold as without the search.
                if cg.is_some() {
                    harness
                        .drop_caches()
                        .ctx(|| "dropping the cache after the thread search".into())?;
                }
                Some((search, chosen, curve))
            }
        };
        ctx.check()?;

        let mut figures = None;
        let outcome = harness.measure(&mut || {
            let (m, fig) = run_engine(&cfg)?;
            figures = fig;
            totals.inserted = m.stats.iter().map(|s| s.inserted).sum();
            totals.deleted = m.stats.iter().map(|s| s.deleted).sum();
            let mut o = outcome_of(&cfg, &built, &m.stats, &m.ckpt, m.seconds, m.wal_file_bytes);
            m.files.add_metrics(&mut o.metrics);
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
        })?;
        let confinement = match cg {
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
        let mut outcome = outcome;
        outcome.metrics.insert("final_rows".into(), rows as f64);
        // The report's heading names the engine's worker count, not --threads (ignored here).
        outcome
            .metrics
            .insert("worker_threads".into(), cfg.threads as f64);
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
        match &confinement {
            Some((f, label)) => {
                let m = &mut outcome.metrics;
                f.add_metrics(m);
                outcome.notes.push(f.note(label, built.bytes));
            }
            None if memory_fs && cfg.cache != Cache::Off => outcome.notes.push(
                "no cache limit on a memory file system: its pages are the database itself, which no limit can evict".into(),
            ),
            None if started_warm => outcome.notes.push(
                "no cache limit (cache = \"off\"), and the built database could not be dropped from the page cache (not root): the phase started warm".into(),
            ),
            None => outcome.notes.push(
                "no cache limit (cache = \"off\"): the phase started cold, then the database may sit in the page cache".into(),
            ),
        }
        if let Some((search, chosen, curve)) = &searched {
            let (m, notes) = (&mut outcome.metrics, &mut outcome.notes);
            auto::record(search, *chosen, curve, "read latency", m, notes);
        }
        outcome.notes.push(format!(
            "verified: {rows} rows = {} built + {inserted} inserted − {deleted} deleted{trials}; \
             quick_check ok",
            built.rows
        ));
        Ok(outcome)
    }
}

#[cfg(test)]
mod tests;
