//! `io-quick` and `io-sweep`: raw I/O on one file, measured by fio.
//!
//! Each point is one fio job (rw × block size × jobs × queue depth × file size × direct ×
//! engine). Per point: pick the engine (probed once per file system), lay the file out with
//! real writes (unmeasured; a file only read since its lay-out is reused), run the measured
//! fio job under the harness, and check fio's own accounting. The fio driver itself is
//! [`crate::fio`]; this module turns its errors into [`WorkloadError`]s (see the `From`
//! impl) so each keeps its status.
//!
//! Rooms: `options` (the `[workload.NAME]` table, checked before provisioning), `points`
//! (a point's parameters and its fio job), `datafile` (lay-out, pristine markers,
//! removal), `metrics` (a report's numbers).

use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::sync::Mutex;
use std::time::Duration;

use crate::fio::{self, FioJob, IoEngine, Rw, Server};
use crate::workload::contract::Workload;
use crate::workload::ctx::Ctx;
use crate::workload::error::{IoContext, WorkloadError};
use crate::workload::harness::Harness;
use crate::workload::initial::{OwnState, Start};
use crate::workload::outcome::Outcome;
use crate::workload::point::Point;
use crate::workload::spec::{Chart, WorkloadSpec};

mod datafile;
mod job;
mod metrics;
mod options;
mod points;
#[cfg(test)]
mod tests;

use crate::plan::size::short_label as size_label;
use datafile::{prepare_file, pristine_marker, remove_if_present};
use job::run_job;
use options::{Config, EngineChoice, Preset, SizeChoice, MIB};
use points::PointSpec;

/// The `io-quick` and `io-sweep` workloads (same machinery, different default axes).
pub struct IoWorkload {
    preset: Preset,
    /// Engine that worked, per file system (st_dev of the work directory): probed once.
    probed: Mutex<HashMap<u64, IoEngine>>,
}

impl IoWorkload {
    /// A few points: 4k random read and write at queue depth 32, 1m sequential read and write,
    /// on the small file, O_DIRECT, 3 s each.
    pub fn quick() -> IoWorkload {
        IoWorkload {
            preset: Preset::Quick,
            probed: Mutex::new(HashMap::new()),
        }
    }

    /// The full sweep: read, randread, write, randwrite × 8k, 64k, 512k × 1–4 jobs × queue
    /// depth 1–128 (powers of two) × small and large file.
    pub fn sweep() -> IoWorkload {
        IoWorkload {
            preset: Preset::Sweep,
            probed: Mutex::new(HashMap::new()),
        }
    }
}

/// What a point costs beyond fio's ramp and runtime: starting fio, and for a write point a
/// fresh file system and the file laid out again. The fio-sweep study's runs (576 points on
/// ext4 and xfs, 2,303 s, bench/results/findings-20261127; 1,440 points on five file systems,
/// 5,840 s, bench/results/findings-20261128-fio5) spent 1.5 s a point beyond it.
const POINT_SETUP_S: f64 = 1.5;

impl Workload for IoWorkload {
    fn spec(&self) -> WorkloadSpec {
        let (name, description) = match self.preset {
            Preset::Quick => ("io-quick", "fio: 4k random read/write at QD32 and 1m sequential read/write on a small file"),
            Preset::Sweep => ("io-sweep", "fio sweep: read/randread/write/randwrite × 8k/64k/512k × 1–4 jobs × QD 1–128 × small/large file"),
        };
        WorkloadSpec {
            key_metric: ("iops", true),
            columns: &[
                "mb_per_s",
                "lat_p50_us",
                "lat_p99_us",
                "lat_p99_9_us",
                "device_read_latency_ms",
                "device_write_latency_ms",
                "write_amplification",
                "fio_cpu_sys_pct",
            ],
            metric_headers: &[
                ("iops", "IOPS"),
                ("lat_p50_us", "p50 lat"),
                ("lat_p99_us", "p99 lat"),
                ("lat_p99_9_us", "p99.9 lat"),
                ("fio_cpu_sys_pct", "fio sys CPU"),
            ],
            // The fio study's main figures: IOPS, MB/s and p99 latency against pending I/Os.
            charts: &[
                Chart::Curve {
                    x: "iodepth",
                    x_label: "queue depth (pending I/Os)",
                    metric: "iops",
                    y_label: "IOPS",
                    log_x: true,
                },
                // Seed 002 charted throughput as well as IOPS against pending I/O.
                Chart::Curve {
                    x: "iodepth",
                    x_label: "queue depth (pending I/Os)",
                    metric: "mb_per_s",
                    y_label: "MB/s",
                    log_x: true,
                },
                Chart::Curve {
                    x: "iodepth",
                    x_label: "queue depth (pending I/Os)",
                    metric: "lat_p99_us",
                    y_label: "p99 completion latency (µs)",
                    log_x: true,
                },
            ],
            study_group: block_size_group,
            // `numjobs` is a sweep axis; `--threads` does not apply.
            uses_threads: false,
            ..WorkloadSpec::new(name, description)
        }
    }
    /// Parses and checks every value before anything is provisioned (see `options`); with
    /// `hosts`, also that every fio server answers with this host's fio version, so a dead
    /// or mismatched server is one line and exit 2, not a failed measurement later.
    fn check_options(&self, table: &toml::Table) -> Result<(), String> {
        let cfg = Config::from_options(self.preset, table, self.spec().name)?;
        if !cfg.hosts.is_empty() {
            fio::client::check_servers(&cfg.hosts, fio::client::PROBE_TIMEOUT)
                .map_err(|e| format!("{}: io hosts: {e}", self.spec().name))?;
        }
        Ok(())
    }

    /// The data file its points read and write, one at a time (the data set is never
    /// read): the largest size known before the target exists; a `large` file is sized on
    /// the target from its RAM and free space, so it is named, not counted.
    fn initial_state(&self, options: &toml::Table, scale: f64) -> Start {
        let cfg = match Config::from_options(self.preset, options, self.spec().name) {
            Ok(cfg) => cfg,
            Err(why) => return Start::Unknown(why),
        };
        let known = cfg.size.iter().filter_map(|s| match s {
            SizeChoice::Small => Some(cfg.small_bytes(scale)),
            SizeChoice::Bytes(b) => Some(*b),
            SizeChoice::Large => None,
        });
        let bytes = known.max();
        const LARGE: &str = "of up to 2 × RAM × scale, sized on the target";
        let what = match (bytes, cfg.size.contains(&SizeChoice::Large)) {
            (Some(_), true) => format!("a fio data file, then a large one {LARGE}"),
            (Some(_), false) => "a fio data file".into(),
            (None, _) => format!("a fio data file {LARGE}"),
        };
        Start::Own(OwnState {
            files: bytes.map(|_| 1),
            bytes: bytes.unwrap_or(0),
            peak_bytes: bytes.unwrap_or(0),
            what,
            cache: None,
        })
    }

    /// Every point's `ramp_time` and `runtime` (none without a runtime: size-based jobs), plus
    /// what a point costs around fio's run ([`POINT_SETUP_S`]).
    fn fixed_seconds(&self, options: &toml::Table, _scale: f64) -> f64 {
        let Ok(cfg) = Config::from_options(self.preset, options, self.spec().name) else {
            return 0.0;
        };
        let Some(runtime) = cfg.runtime else {
            return 0.0;
        };
        let points = cfg.size.len()
            * cfg.shapes.len()
            * cfg.numjobs.len()
            * cfg.direct.len()
            * cfg.ioengine.len();
        points as f64 * ((runtime + cfg.ramp_time).as_secs_f64() + POINT_SETUP_S)
    }

    /// A direct-I/O read point on the file system of the direct-I/O read point before it,
    /// when both read the same file: a read changes nothing the next one could see (the
    /// file stays pristine, and `prepare_file` checks it again), and O_DIRECT reads pass the
    /// target's page cache by, so the cache the first one left does not serve the next. A
    /// sweep's 36 read points per file then lay the file out once, not 36 times (ntfs-3g
    /// writes a 500 MB file in ~14 s: most of such a point's wall time). Not across hosts:
    /// their files are the servers'.
    fn follows_on_same_fs(&self, done: &Point, next: &Point) -> bool {
        let local = |p: &Point| !p.params.contains_key("io_hosts");
        match (PointSpec::from_point(done), PointSpec::from_point(next)) {
            (Ok(a), Ok(b)) => {
                let direct_read = |s: &PointSpec| s.direct && !s.rw.writes();
                direct_read(&a)
                    && direct_read(&b)
                    && a.size_bytes == b.size_bytes
                    && local(done)
                    && local(next)
            }
            _ => false,
        }
    }

    fn points(&self, ctx: &Ctx) -> Result<Vec<Point>, WorkloadError> {
        let cfg = self.config(ctx)?;
        let scale = scale_of(ctx);
        let mut points = Vec::new();
        for size in &cfg.size {
            let (size_bytes, size_label) = match size {
                SizeChoice::Small => (cfg.small_bytes(scale), "small".to_string()),
                SizeChoice::Large => (cfg.large_bytes(scale, ctx.root)?, "large".to_string()),
                SizeChoice::Bytes(b) => (*b, size_label(*b)),
            };
            for &(rw, bs, iodepth) in &cfg.shapes {
                if bs > size_bytes {
                    return Err(WorkloadError::Option(options::too_big(
                        self.spec().name,
                        bs,
                        &size_label,
                        size_bytes,
                    )));
                }
                for &numjobs in &cfg.numjobs {
                    for &direct in &cfg.direct {
                        for &ioengine in &cfg.ioengine {
                            let spec = PointSpec {
                                rw,
                                rwmixread: cfg.rwmixread,
                                bs,
                                numjobs,
                                iodepth,
                                size_bytes,
                                size_label: size_label.clone(),
                                direct,
                                ioengine,
                            };
                            let mut point = spec.to_point();
                            if !cfg.hosts.is_empty() {
                                // The record names the hosts the point ran on.
                                let hosts = cfg.hosts.iter().map(|h| h.to_string());
                                point.params.insert(
                                    "io_hosts".into(),
                                    serde_json::Value::from(hosts.collect::<Vec<_>>()),
                                );
                            }
                            points.push(point);
                        }
                    }
                }
            }
        }
        Ok(points)
    }

    fn run(
        &self,
        ctx: &Ctx,
        point: &Point,
        harness: &mut dyn Harness,
    ) -> Result<Outcome, WorkloadError> {
        let cfg = self.config(ctx)?;
        let spec = PointSpec::from_point(point)?;
        let mut notes = Vec::new();

        let engine = match spec.ioengine {
            EngineChoice::Fixed(e) => e,
            EngineChoice::Auto => {
                let (e, fresh) = self.engine_for(ctx, &cfg.hosts)?;
                notes.push(format!(
                    "ioengine auto → {}{}",
                    e.as_str(),
                    if fresh {
                        " (probed here)"
                    } else {
                        " (probed earlier on this file system)"
                    }
                ));
                e
            }
        };
        if engine.is_sync() && spec.iodepth > 1 {
            notes.push(format!(
                "{} is synchronous: iodepth {} ran as 1",
                engine.as_str(),
                spec.iodepth
            ));
        }
        ctx.check()?;
        let file = spec.filename();
        notes.push(prepare_file(ctx, &file, spec.size_bytes)?);
        if spec.rw.writes() {
            // This job ages the file: no later point may take it for a fresh lay-out.
            remove_if_present(&ctx.root.join(pristine_marker(&file)))?;
        }
        ctx.check()?;

        let job = spec.job(&cfg, engine);
        let mut finished = None;
        let outcome = harness.measure(&mut || {
            let ran = run_job(ctx, &cfg.hosts, &job)?;
            let outcome = ran.outcome(&cfg.hosts);
            finished = Some(ran);
            Ok(outcome)
        })?;
        let ran = finished.ok_or_else(|| {
            WorkloadError::Tool("the harness did not run the measured fio job".into())
        })?;
        notes.push(ran.verify(&job)?);
        if spec.rw.writes() {
            // Aged and no longer reusable: free the space rather than leave it on the target.
            remove_if_present(&ctx.root.join(&file))?;
        }
        notes.push(format!("{}; {}", ran.version(), job.args().join(" ")));
        if !cfg.hosts.is_empty() {
            notes.push(ran.hosts_note(&cfg.hosts));
        }
        let mut outcome = outcome;
        outcome.notes.extend(notes);
        // Only this host's device is watched: a client run's reads are the servers'.
        outcome.direct_reads = spec.direct && cfg.hosts.is_empty();
        outcome.synced_writes = spec.direct && spec.rw.writes() && cfg.hosts.is_empty();
        Ok(outcome)
    }
}

impl IoWorkload {
    /// The run's options, through the same parse as `check_options`.
    fn config(&self, ctx: &Ctx) -> Result<Config, WorkloadError> {
        Config::from_options(self.preset, ctx.options, self.spec().name)
            .map_err(WorkloadError::Option)
    }

    /// The engine to use in `ctx.root`: io_uring, else libaio, else psync, whichever first
    /// completes a small real write job there. Cached per file system; returns whether it
    /// was probed by this call.
    fn engine_for(&self, ctx: &Ctx, hosts: &[Server]) -> Result<(IoEngine, bool), WorkloadError> {
        let dev = fs::metadata(ctx.root)
            .ctx(|| format!("stat {}", ctx.root.display()))?
            .dev();
        if let Some(&e) = self.probed.lock().map_err(|_| poisoned())?.get(&dev) {
            return Ok((e, false));
        }
        let e = probe_engine(ctx, hosts)?;
        self.probed.lock().map_err(|_| poisoned())?.insert(dev, e);
        Ok((e, true))
    }
}

/// One study.md table per block size (the `bsN` part of [`PointSpec::variant`]), as seed
/// 002 drew one chart per block size.
fn block_size_group(variant: &str) -> Option<String> {
    let bs = variant.split('-').find_map(|t| t.strip_prefix("bs"))?;
    Some(format!("block size {bs}"))
}

/// The engine cache is only a cache, but a poisoned lock means a probe panicked.
fn poisoned() -> WorkloadError {
    WorkloadError::Tool("engine cache lock poisoned".into())
}

/// Tries each engine with a 1 MiB buffered write in `ctx.root` (on every host, with
/// `hosts`: the servers' kernels decide); the first that completes with no error wins. A missing fio is reported at once rather than masked by fallbacks.
fn probe_engine(ctx: &Ctx, hosts: &[Server]) -> Result<IoEngine, WorkloadError> {
    const PROBE: &str = ".fsarena-fio-probe";
    let mut failures = Vec::new();
    for engine in IoEngine::FALLBACK {
        let job = FioJob {
            name: "probe".into(),
            filename: PROBE.into(),
            rw: Rw::Write,
            rwmixread: 50,
            bs: 4096,
            size: MIB,
            numjobs: 1,
            iodepth: 4,
            direct: false,
            ioengine: engine,
            runtime: None,
            ramp_time: Duration::ZERO,
            end_fsync: false,
        };
        let result = run_job(ctx, hosts, &job).and_then(|ran| ran.verify(&job));
        let _ = fs::remove_file(ctx.root.join(PROBE));
        match result {
            Ok(_) => return Ok(engine),
            Err(
                e @ (WorkloadError::Unsupported(_)
                | WorkloadError::Interrupted
                | WorkloadError::Timeout),
            ) => return Err(e),
            Err(e) => failures.push(format!("{}: {e}", engine.as_str())),
        }
    }
    Err(WorkloadError::Unsupported(format!(
        "no fio engine works in {}: {}",
        ctx.root.display(),
        failures.join("; ")
    )))
}

/// The data set's scale, which sizes the small and large files; 1 when unusable.
fn scale_of(ctx: &Ctx) -> f64 {
    let s = ctx.dataset.scale;
    if s.is_finite() && s > 0.0 {
        s
    } else {
        1.0
    }
}

/// Which points follow on the file system of the point before them.
#[cfg(test)]
mod follows {
    use super::*;

    fn point(rw: Rw, size_bytes: u64, direct: bool) -> Point {
        let spec = PointSpec {
            rw,
            rwmixread: 50,
            bs: 64 << 10,
            numjobs: 1,
            iodepth: 1,
            size_bytes,
            size_label: size_label(size_bytes),
            direct,
            ioengine: EngineChoice::Auto,
        };
        spec.to_point()
    }

    /// Direct read points share a file system while they read the same file; a write, a
    /// buffered read, another file or a remote host's file gets a fresh one.
    #[test]
    fn direct_reads_of_one_file_follow_on_the_same_file_system() {
        let w = IoWorkload::sweep();
        let read = point(Rw::Read, 16 * MIB, true);
        assert!(w.follows_on_same_fs(&read, &point(Rw::RandRead, 16 * MIB, true)));
        assert!(!w.follows_on_same_fs(&read, &point(Rw::Write, 16 * MIB, true)));
        assert!(!w.follows_on_same_fs(&point(Rw::Write, 16 * MIB, true), &read));
        assert!(!w.follows_on_same_fs(&read, &point(Rw::Read, 32 * MIB, true)));
        let buffered = point(Rw::Read, 16 * MIB, false);
        assert!(!w.follows_on_same_fs(&buffered, &point(Rw::RandRead, 16 * MIB, false)));
        let mut remote = point(Rw::RandRead, 16 * MIB, true);
        remote
            .params
            .insert("io_hosts".into(), serde_json::json!(["h:8765"]));
        assert!(!w.follows_on_same_fs(&read, &remote));
    }
}
