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
mod tests {
    use std::path::Path;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::thread;
    use std::time::{Duration, Instant};

    use super::options::OPS;
    use super::*;
    use crate::dataset::DatasetSpec;
    use crate::workload::PlainHarness;

    /// Holds every other SQLite test of this process off while one runs. The engine runs
    /// in a forked child (`confined`): a fork while another test's thread holds one of
    /// SQLite's global mutexes (the unix VFS mutex, taken by every open) leaves the child
    /// waiting on that mutex for ever. CI's lib run hung there with two db tests at once. A
    /// run never forks beside another SQLite user: cells run one at a time.
    pub(crate) fn sqlite_alone() -> std::sync::MutexGuard<'static, ()> {
        static ALONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
        ALONE.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A workload context over a temporary directory, shared by the db module's tests.
    pub(super) struct Env {
        pub(super) dataset: DatasetSpec,
        options: toml::Table,
        cancel: AtomicBool,
        deadline: Option<Instant>,
    }

    impl Env {
        pub(super) fn new(options: &str) -> Env {
            Env {
                dataset: DatasetSpec::default(),
                options: options.parse().unwrap(),
                cancel: AtomicBool::new(false),
                deadline: None,
            }
        }
        pub(super) fn ctx<'a>(&'a self, root: &'a Path) -> Ctx<'a> {
            Ctx {
                root,
                scratch: root,
                sources: None,
                threads: 1,
                dataset: &self.dataset,
                options: &self.options,
                cancel: &self.cancel,
                deadline: self.deadline,
                populated: false,
                log_root: None,
            }
        }
    }

    fn run(env: &Env, root: &Path) -> Result<Outcome, WorkloadError> {
        let mut h = PlainHarness::default();
        let out = Db.run(&env.ctx(root), &Point::default(), &mut h);
        assert_eq!(h.measured, 1);
        out
    }

    /// A real run: counts add up, the database holds what they say, the PRAGMAs took.
    #[test]
    fn real_run_counts_add_up() {
        let _alone = sqlite_alone();
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let env = Env::new(
            "size = \"4m\"\npage_size = 8192\ncache_size = 32\nthreads = 4\nduration = 1\n\
             checkpoint_interval_ms = 200",
        );
        let out = run(&env, dir.path()).unwrap();
        let m = &out.metrics;
        let count = |op: &str| m[&format!("{op}_count")];
        let total = count("insert") + count("delete") + count("replace") + count("read");
        assert!(total > 50.0, "{m:?}");
        assert_eq!(m["transactions"], total);
        assert_eq!(out.files as f64, total);
        assert!((m["transactions_per_s"] - total / out.seconds).abs() < 1e-6);
        assert!(out.seconds >= 1.0 && out.seconds < 5.0, "{}", out.seconds);
        let writes = count("insert") + count("delete") + count("replace");
        assert_eq!(m["lazy_commits"] + m["durable_commits"], writes);
        assert!(m["durable_commits"] > 0.0 && m["lazy_commits"] > m["durable_commits"]);
        let deleted = count("delete") - m["delete_misses"];
        assert_eq!(
            m["final_rows"],
            m["initial_rows"] + count("insert") - deleted
        );
        for op in OPS {
            assert!(m[&format!("{op}_p50_ms")] <= m[&format!("{op}_p99_ms")]);
        }
        assert!(m["checkpoints"] >= 1.0, "{m:?}");
        assert!(
            m["wal_bytes_written"] >= writes * 8192.0,
            "every commit writes at least a page"
        );
        assert!(m["checkpoint_bytes_written"] > 0.0);
        assert_eq!(
            out.logical_write_bytes as f64,
            m["wal_bytes_written"] + m["checkpoint_bytes_written"]
        );
        assert_eq!(m["page_size_bytes"], 8192.0);
        assert_eq!(m["cache_size_kib"], 32.0 * 1024.0);
        // What is in the file on disk, asked of SQLite independently.
        let conn = Connection::open(dir.path().join(DB_FILE)).unwrap();
        let page: u32 = conn
            .pragma_query_value(None, "page_size", |r| r.get(0))
            .unwrap();
        let mode: String = conn
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .unwrap();
        let rows: f64 = conn
            .query_row("SELECT count(*) FROM items", [], |r| r.get(0))
            .unwrap();
        assert_eq!((page, mode.as_str(), rows), (8192, "wal", m["final_rows"]));
    }

    /// `threads = "auto"`: unmeasured trials, then one measured phase at the chosen count;
    /// a limit no read can meet settles on 1, one every read meets reaches the top of the
    /// range, and the rows the trials changed are part of the verified count.
    #[test]
    fn auto_threads_search_settles_on_the_limit() {
        let _alone = sqlite_alone();
        for (limit, max, want) in [("0.000001", 3, 1.0), ("1000000", 3, 3.0)] {
            let dir = tempfile::tempdir_in("/var/tmp").unwrap();
            let env = Env::new(&format!(
                "size = \"4m\"\ncache_size = 32\ncache = \"off\"\nduration = 0.5\n\
                 threads = \"auto\"\np99_limit_ms = {limit}\nauto_max_threads = {max}\n\
                 auto_trial_seconds = 0.2"
            ));
            let out = run(&env, dir.path()).unwrap();
            let m = &out.metrics;
            assert_eq!(m["auto_threads"], want, "{m:?}");
            assert_eq!(m["worker_threads"], want);
            assert_eq!(m["threads"], want);
            assert!(m["auto_curve_1_p99_ms"] > 0.0 && m["auto_curve_1_tps"] > 0.0);
            if want > 1.0 {
                assert!(m.contains_key("auto_curve_2_tps") && m.contains_key("auto_curve_3_tps"));
                assert_eq!(m["auto_trials"], 3.0);
            } else {
                assert_eq!(m["auto_trials"], 1.0);
            }
            assert!(out.notes.iter().any(|n| n.contains("threads = \"auto\"")));
            assert!(out
                .notes
                .iter()
                .any(|n| n.contains("thread search's trials")));
        }
    }

    /// `maintenance = true`: two points, the normal one and `maintenance`, on the same
    /// INCREMENTAL-vacuum file format; the variant's thread checkpoints and vacuums (with
    /// 4 KiB pages a ≈ 2.3 KiB item has a page to itself, so its delete frees a page: once
    /// 32 KiB pages under a loaded machine made too few deletes to empty one), and the
    /// database still verifies.
    #[test]
    fn maintenance_variant_maintains_and_verifies() {
        let _alone = sqlite_alone();
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let env = Env::new(
            "size = \"4m\"\npage_size = 4096\ncache_size = 32\ncache = \"off\"\nduration = 1\n\
             threads = 3\nmaintenance = true\nmaintenance_interval_ms = 100\nmix = { delete = 3, read = 1 }",
        );
        let points = Db.points(&env.ctx(dir.path())).unwrap();
        let variants: Vec<&str> = points.iter().map(|p| p.variant.as_str()).collect();
        assert_eq!(variants, ["", "maintenance"]);
        let mut h = PlainHarness::default();
        let plain = Db.run(&env.ctx(dir.path()), &points[0], &mut h).unwrap();
        assert!(!plain.metrics.contains_key("maintenance_actions"));
        let out = Db.run(&env.ctx(dir.path()), &points[1], &mut h).unwrap();
        assert_eq!(h.measured, 2);
        let m = &out.metrics;
        assert!(m["maintenance_vacuums"] >= 1.0, "{m:?}");
        assert_eq!(
            m["maintenance_actions"],
            m["maintenance_checkpoints"] + m["maintenance_vacuums"]
        );
        assert!(m["maintenance_freed_pages"] > 0.0, "{m:?}");
        let conn = Connection::open(dir.path().join(DB_FILE)).unwrap();
        let av: i64 = conn
            .pragma_query_value(None, "auto_vacuum", |r| r.get(0))
            .unwrap();
        assert_eq!(av, 2, "INCREMENTAL");
        let bad = Env::new("maintenance_interval_ms = 100");
        assert!(Db.points(&bad.ctx(dir.path())).is_err());
    }

    /// With checkpoints off the WAL only grows, so the bytes the workers wrote must be the
    /// WAL file (header plus frames) — plus the one byte SQLite writes into each new 4 KiB
    /// page of the -shm index as it grows (8 per 32 KiB region, one region per ~4096 frames).
    #[test]
    fn wal_bytes_match_the_wal_file_without_checkpoints() {
        let _alone = sqlite_alone();
        let dir = tempfile::tempdir().unwrap();
        let env = Env::new(
            "size = \"4m\"\npage_size = 4096\ncache_size = 32\nthreads = 3\nduration = 0.7\n\
             checkpoint_interval_ms = 0\nlazy_commit_pct = 100",
        );
        let out = run(&env, dir.path()).unwrap();
        let m = &out.metrics;
        assert_eq!(m["checkpoints"], 0.0);
        assert_eq!(m["checkpoint_bytes_written"], 0.0);
        assert_eq!(m["durable_commits"], 0.0);
        let file = m["wal_file_bytes"];
        assert!(
            file > 32.0 && (file - 32.0) % (4096.0 + 24.0) == 0.0,
            "{file}"
        );
        let frames = (file - 32.0) / (4096.0 + 24.0);
        let extra = m["wal_bytes_written"] - file;
        assert!(extra >= 0.0 && extra % 8.0 == 0.0, "{m:?}");
        assert!(
            extra <= 8.0 * (frames / 4062.0).ceil(),
            "{extra} extra bytes: {m:?}"
        );
    }

    /// A harness that says when the measured phase has begun, so a test can cancel *during*
    /// it however long the unmeasured build took on a loaded machine.
    struct Signalling<'a> {
        measuring: &'a AtomicBool,
        inner: PlainHarness,
    }

    impl Harness for Signalling<'_> {
        fn drop_caches(&mut self) -> std::io::Result<()> {
            self.inner.drop_caches()
        }
        fn measure(
            &mut self,
            work: &mut dyn FnMut() -> Result<Outcome, WorkloadError>,
        ) -> Result<Outcome, WorkloadError> {
            self.measuring.store(true, Ordering::SeqCst);
            self.inner.measure(work)
        }
    }

    #[test]
    fn cancel_mid_run_is_interrupted() {
        let _alone = sqlite_alone();
        let dir = tempfile::tempdir().unwrap();
        // Cancellation, not confinement, is under test here, so no memory cgroup: in one CI
        // run a tight cgroup made the engine's first read fail ("sqlite cache_size: disk I/O
        // error"), which is a confinement question (kept open in the session note).
        let env =
            Env::new("size = \"4m\"\nthreads = 4\nduration = 30\ncache_size = 32\ncache = \"off\"");
        let measuring = AtomicBool::new(false);
        let mut h = Signalling {
            measuring: &measuring,
            inner: PlainHarness::default(),
        };
        let (err, cancelled_at) = thread::scope(|s| {
            let canceller = s.spawn(|| {
                // Bounded, so a run that fails before measuring ends the test instead of
                // hanging it (the assertion on `measured` then says why).
                let waiting = Instant::now();
                while !measuring.load(Ordering::SeqCst)
                    && waiting.elapsed() < Duration::from_secs(60)
                {
                    thread::sleep(Duration::from_millis(10));
                }
                thread::sleep(Duration::from_millis(700));
                env.cancel.store(true, Ordering::Relaxed);
                Instant::now()
            });
            let err = Db
                .run(&env.ctx(dir.path()), &Point::default(), &mut h)
                .unwrap_err();
            (err, canceller.join().unwrap())
        });
        assert_eq!(h.inner.measured, 1);
        assert!(matches!(err, WorkloadError::Interrupted), "{err:?}");
        assert!(cancelled_at.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn deadline_mid_run_is_a_timeout() {
        let _alone = sqlite_alone();
        let dir = tempfile::tempdir().unwrap();
        let mut env = Env::new("size = \"4m\"\nthreads = 2\nduration = 30\ncache_size = 32");
        // Long enough for the unmeasured build on a loaded machine, far shorter than the
        // 30 s measured phase.
        env.deadline = Some(Instant::now() + Duration::from_millis(3000));
        let err = run(&env, dir.path()).unwrap_err();
        assert!(matches!(err, WorkloadError::Timeout), "{err:?}");
        assert_eq!(err.status(), crate::results::Status::Timeout);
    }
}
