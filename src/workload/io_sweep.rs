//! `io-quick` and `io-sweep`: raw I/O on one file, measured by fio.
//!
//! Each point is one fio job (rw × block size × jobs × queue depth × file size × direct ×
//! engine). Per point: pick the engine (probed once per file system), lay the file out with
//! real writes (unmeasured; a file only read since its lay-out is reused), run the measured
//! fio job under the harness, and check fio's own accounting. The data file is written before
//! any read so that no read ever hits a hole or a preallocated extent, which file systems
//! answer with zeros without touching the device (fio #719).

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;

use super::fio::{self, FioJob, FioReport, IoEngine, Rw};
use super::{Chart, Ctx, Harness, IoContext, Outcome, Point, Workload, WorkloadError};

const MIB: u64 = 1 << 20;

/// Option keys both presets accept.
const KEYS: &[&str] = &[
    "rw",
    "bs",
    "numjobs",
    "iodepth",
    "size",
    "direct",
    "ioengine",
    "runtime",
    "ramp_time",
    "rwmixread",
    "small",
    "max_large",
];

/// Default `small` file at scale 1: small enough to sit in any cache.
const SMALL_DEFAULT: u64 = 64 * MIB;
/// Floor for the small file after scaling, so 1 MiB blocks and several jobs still make sense.
const SMALL_FLOOR: u64 = 16 * MIB;
/// Default cap on the `large` file.
const MAX_LARGE_DEFAULT: u64 = 64 << 30;
/// Blocks sampled to prove a laid-out file holds written data.
const LAYOUT_SAMPLES: u64 = 64;

/// Which default set of points a workload measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Preset {
    Quick,
    Sweep,
}

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

/// A file-size axis value: labels resolve against the target when points are made.
#[derive(Debug, Clone, PartialEq)]
enum SizeChoice {
    /// Fits any cache.
    Small,
    /// Sized from RAM and free space so that caches do not hold it (at scale 1).
    Large,
    /// An explicit size, taken literally.
    Bytes(u64),
}

/// The engine axis: `auto` probes io_uring → libaio → psync.
#[derive(Debug, Clone, Copy, PartialEq)]
enum EngineChoice {
    Auto,
    Fixed(IoEngine),
}

impl EngineChoice {
    fn as_str(self) -> &'static str {
        match self {
            EngineChoice::Auto => "auto",
            EngineChoice::Fixed(e) => e.as_str(),
        }
    }
    fn parse(s: &str) -> Option<EngineChoice> {
        match s {
            "auto" => Some(EngineChoice::Auto),
            _ => IoEngine::parse(s).map(EngineChoice::Fixed),
        }
    }
}

/// The resolved options of one run.
#[derive(Debug, Clone)]
struct Config {
    /// (rw, bs, iodepth) combinations: a fixed list for io-quick, else a product.
    shapes: Vec<(Rw, u64, u32)>,
    numjobs: Vec<u32>,
    size: Vec<SizeChoice>,
    direct: Vec<bool>,
    ioengine: Vec<EngineChoice>,
    rwmixread: u32,
    /// `None`: size-bounded jobs (`runtime = 0`).
    runtime: Option<Duration>,
    ramp_time: Duration,
    /// Small file at scale 1 and whether the user set it (user sizes are taken literally).
    small: (u64, bool),
    max_large: u64,
}

impl Config {
    fn from_options(
        preset: Preset,
        opts: &toml::Table,
        name: &str,
    ) -> Result<Config, WorkloadError> {
        if let Some(bad) = opts.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(WorkloadError::Option(format!(
                "{name}: unknown key `{bad}`; valid keys: {}",
                KEYS.join(", ")
            )));
        }
        let rw = list(
            opts,
            "rw",
            name,
            |v| v.as_str().and_then(Rw::parse),
            "read|randread|write|randwrite|randrw",
        )?;
        let bs = list(opts, "bs", name, size_value, "a size such as 4k or 1m")?;
        let iodepth = list(opts, "iodepth", name, |v| positive(v, 4096), "1..=4096")?;
        let numjobs = list(opts, "numjobs", name, |v| positive(v, 1024), "1..=1024")?;
        let size = list(
            opts,
            "size",
            name,
            size_choice,
            "small, large or a size such as 256m",
        )?;
        let direct = list(opts, "direct", name, |v| v.as_bool(), "true or false")?;
        let ioengine = list(
            opts,
            "ioengine",
            name,
            |v| v.as_str().and_then(EngineChoice::parse),
            "auto, io_uring, libaio or psync",
        )?;

        let quick = preset == Preset::Quick;
        let shapes = if quick && rw.is_none() && bs.is_none() && iodepth.is_none() {
            vec![
                (Rw::RandRead, 4096, 32),
                (Rw::RandWrite, 4096, 32),
                (Rw::Read, MIB, 8),
                (Rw::Write, MIB, 8),
            ]
        } else {
            let rw = rw.unwrap_or_else(|| {
                if quick {
                    vec![Rw::RandRead, Rw::RandWrite, Rw::Read, Rw::Write]
                } else {
                    vec![Rw::Read, Rw::RandRead, Rw::Write, Rw::RandWrite]
                }
            });
            let bs = bs.unwrap_or_else(|| {
                if quick {
                    vec![4096]
                } else {
                    vec![8 << 10, 64 << 10, 512 << 10]
                }
            });
            let iodepth = iodepth.unwrap_or_else(|| {
                if quick {
                    vec![32]
                } else {
                    (0..8).map(|i| 1 << i).collect()
                }
            });
            let mut shapes = Vec::new();
            for &r in &rw {
                for &b in &bs {
                    for &q in &iodepth {
                        shapes.push((r, b, q));
                    }
                }
            }
            shapes
        };
        let (runtime_default, sizes_default) = match preset {
            Preset::Quick => (3.0, vec![SizeChoice::Small]),
            Preset::Sweep => (5.0, vec![SizeChoice::Small, SizeChoice::Large]),
        };
        let runtime = seconds(opts, "runtime", name)?.unwrap_or(runtime_default);
        let ramp = seconds(opts, "ramp_time", name)?.unwrap_or(1.0);
        let rwmixread = match opts.get("rwmixread") {
            None => 50,
            Some(v) => positive(v, 100)
                .or(v.as_integer().filter(|&i| i == 0).map(|_| 0))
                .ok_or_else(|| bad_value(name, "rwmixread", v, "0..=100"))?,
        };
        let small = match opts.get("small") {
            None => (SMALL_DEFAULT, false),
            Some(v) => (
                size_value(v).ok_or_else(|| bad_value(name, "small", v, "a size such as 64m"))?,
                true,
            ),
        };
        let max_large = match opts.get("max_large") {
            None => MAX_LARGE_DEFAULT,
            Some(v) => size_value(v)
                .ok_or_else(|| bad_value(name, "max_large", v, "a size such as 100g"))?,
        };
        Ok(Config {
            shapes,
            numjobs: numjobs.unwrap_or_else(|| if quick { vec![1] } else { vec![1, 2, 3, 4] }),
            size: size.unwrap_or(sizes_default),
            direct: direct.unwrap_or_else(|| vec![true]),
            ioengine: ioengine.unwrap_or_else(|| vec![EngineChoice::Auto]),
            rwmixread,
            runtime: (runtime > 0.0).then(|| Duration::from_secs_f64(runtime)),
            ramp_time: Duration::from_secs_f64(ramp),
            small,
            max_large,
        })
    }

    /// The small file for this scale: defaults shrink with the data set's scale (floored at
    /// 16 MiB); a size the user gave is used as given. Whole MiB so every block size divides it.
    fn small_bytes(&self, scale: f64) -> u64 {
        match self.small {
            (bytes, true) => bytes,
            (bytes, false) => round_mib((bytes as f64 * scale) as u64).max(SMALL_FLOOR),
        }
    }

    /// The large file: twice RAM (so no cache holds it) times the scale, at most half the
    /// target's free space and at most `max_large`; never smaller than the small file.
    fn large_bytes(&self, scale: f64, root: &Path) -> Result<u64, WorkloadError> {
        let ram = mem_total_bytes()?;
        let vfs = rustix::fs::statvfs(root)
            .map_err(|e| WorkloadError::io(format!("statvfs {}", root.display()), e.into()))?;
        let free = vfs.f_bavail.saturating_mul(vfs.f_frsize);
        let want = ((2 * ram) as f64 * scale) as u64;
        let large = round_mib(want.min(free / 2).min(self.max_large));
        Ok(large.max(self.small_bytes(scale)))
    }
}

/// One point's parameters, as stored in [`Point::params`] and read back by `run`.
#[derive(Debug, Clone, PartialEq)]
struct PointSpec {
    rw: Rw,
    rwmixread: u32,
    bs: u64,
    numjobs: u32,
    iodepth: u32,
    size_bytes: u64,
    size_label: String,
    direct: bool,
    ioengine: EngineChoice,
}

impl PointSpec {
    fn variant(&self) -> String {
        let rw = match self.rw {
            Rw::RandRw => format!("randrw{}", self.rwmixread),
            r => r.as_str().to_string(),
        };
        let mut v = format!(
            "{rw}-bs{}-j{}-qd{}-{}-{}",
            fio::size_label(self.bs),
            self.numjobs,
            self.iodepth,
            self.size_label,
            if self.direct { "direct" } else { "buffered" }
        );
        if let EngineChoice::Fixed(e) = self.ioengine {
            v.push('-');
            v.push_str(e.as_str());
        }
        v
    }

    fn to_point(&self) -> Point {
        let mut p = BTreeMap::new();
        p.insert("rw".into(), Value::from(self.rw.as_str()));
        if self.rw == Rw::RandRw {
            p.insert("rwmixread".into(), Value::from(self.rwmixread));
        }
        p.insert("bs".into(), Value::from(self.bs));
        p.insert("numjobs".into(), Value::from(self.numjobs));
        p.insert("iodepth".into(), Value::from(self.iodepth));
        p.insert("size_bytes".into(), Value::from(self.size_bytes));
        p.insert("size_label".into(), Value::from(self.size_label.clone()));
        p.insert("direct".into(), Value::from(self.direct));
        p.insert("ioengine".into(), Value::from(self.ioengine.as_str()));
        Point {
            variant: self.variant(),
            params: p,
        }
    }

    fn from_point(point: &Point) -> Result<PointSpec, WorkloadError> {
        let get = |k: &str| {
            point.params.get(k).ok_or_else(|| {
                WorkloadError::Option(format!("io point `{}` lacks `{k}`", point.variant))
            })
        };
        let bad =
            |k: &str| WorkloadError::Option(format!("io point `{}`: bad `{k}`", point.variant));
        let num = |k: &str| get(k).and_then(|v| v.as_u64().ok_or_else(|| bad(k)));
        let small = |k: &str| num(k).and_then(|n| u32::try_from(n).map_err(|_| bad(k)));
        let rw = get("rw")?
            .as_str()
            .and_then(Rw::parse)
            .ok_or_else(|| bad("rw"))?;
        Ok(PointSpec {
            rw,
            rwmixread: if rw == Rw::RandRw {
                small("rwmixread")?
            } else {
                50
            },
            bs: num("bs")?,
            numjobs: small("numjobs")?,
            iodepth: small("iodepth")?,
            size_bytes: num("size_bytes")?,
            size_label: get("size_label")?
                .as_str()
                .ok_or_else(|| bad("size_label"))?
                .to_string(),
            direct: get("direct")?.as_bool().ok_or_else(|| bad("direct"))?,
            ioengine: get("ioengine")?
                .as_str()
                .and_then(EngineChoice::parse)
                .ok_or_else(|| bad("ioengine"))?,
        })
    }

    /// The data file for this point: one per size, so small and large points do not clash.
    fn filename(&self) -> String {
        format!("fsarena-io-{}.dat", self.size_bytes)
    }

    fn job(&self, cfg: &Config, engine: IoEngine) -> FioJob {
        FioJob {
            name: "fsarena".into(),
            filename: self.filename(),
            rw: self.rw,
            rwmixread: self.rwmixread,
            bs: self.bs,
            size: self.size_bytes,
            numjobs: self.numjobs,
            iodepth: self.iodepth,
            direct: self.direct,
            ioengine: engine,
            runtime: cfg.runtime,
            ramp_time: if cfg.runtime.is_some() {
                cfg.ramp_time
            } else {
                Duration::ZERO
            },
            end_fsync: false,
        }
    }
}

impl Workload for IoWorkload {
    fn name(&self) -> &'static str {
        match self.preset {
            Preset::Quick => "io-quick",
            Preset::Sweep => "io-sweep",
        }
    }

    fn describe(&self) -> &'static str {
        match self.preset {
            Preset::Quick => "fio: 4k random read/write at QD32 and 1m sequential read/write on a small file",
            Preset::Sweep => "fio sweep: read/randread/write/randwrite × 8k/64k/512k × 1–4 jobs × QD 1–128 × small/large file",
        }
    }

    fn option_keys(&self) -> &'static [&'static str] {
        KEYS
    }
    fn key_metric(&self) -> (&'static str, bool) {
        ("iops", true)
    }

    fn columns(&self) -> &'static [&'static str] {
        &[
            "mb_per_s",
            "lat_p99_us",
            "device_read_latency_ms",
            "device_write_latency_ms",
            "write_amplification",
            "fio_cpu_sys_pct",
        ]
    }

    /// The fio study's main figure: IOPS and p99 latency against pending I/Os.
    fn charts(&self) -> &'static [Chart] {
        &[
            Chart::Curve {
                x: "iodepth",
                x_label: "queue depth (pending I/Os)",
                metric: "iops",
                y_label: "IOPS",
                log_x: true,
            },
            Chart::Curve {
                x: "iodepth",
                x_label: "queue depth (pending I/Os)",
                metric: "lat_p99_us",
                y_label: "p99 completion latency (µs)",
                log_x: true,
            },
        ]
    }

    /// `numjobs` is a sweep axis; `--threads` does not apply.
    fn uses_threads(&self) -> bool {
        false
    }

    fn points(&self, ctx: &Ctx) -> Result<Vec<Point>, WorkloadError> {
        let cfg = Config::from_options(self.preset, ctx.options, self.name())?;
        let scale = scale_of(ctx);
        let mut points = Vec::new();
        for size in &cfg.size {
            let (size_bytes, size_label) = match size {
                SizeChoice::Small => (cfg.small_bytes(scale), "small".to_string()),
                SizeChoice::Large => (cfg.large_bytes(scale, ctx.root)?, "large".to_string()),
                SizeChoice::Bytes(b) => (*b, fio::size_label(*b)),
            };
            for &(rw, bs, iodepth) in &cfg.shapes {
                if bs > size_bytes {
                    return Err(WorkloadError::Option(format!(
                        "{}: block size {} is larger than the {size_label} file ({size_bytes} bytes)",
                        self.name(),
                        fio::size_label(bs)
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
                            points.push(spec.to_point());
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
        let cfg = Config::from_options(self.preset, ctx.options, self.name())?;
        let spec = PointSpec::from_point(point)?;
        let mut notes = Vec::new();

        let engine = match spec.ioengine {
            EngineChoice::Fixed(e) => e,
            EngineChoice::Auto => {
                let (e, fresh) = self.engine_for(ctx)?;
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
            let run = fio::run(ctx.root, &job, &|| ctx.check())?;
            let outcome = outcome_of(&run.report);
            finished = Some(run);
            Ok(outcome)
        })?;
        let run = finished.ok_or_else(|| {
            WorkloadError::Tool("the harness did not run the measured fio job".into())
        })?;
        notes.push(fio::verify(&job, &run)?);
        if spec.rw.writes() {
            // Aged and no longer reusable: free the space rather than leave it on the target.
            remove_if_present(&ctx.root.join(&file))?;
        }
        notes.push(format!(
            "{}; {}",
            run.report.fio_version,
            job.args().join(" ")
        ));
        let mut outcome = outcome;
        outcome.notes.extend(notes);
        Ok(outcome)
    }
}

impl IoWorkload {
    /// The engine to use in `ctx.root`: io_uring, else libaio, else psync, whichever first
    /// completes a small real write job there. Cached per file system; returns whether it
    /// was probed by this call.
    fn engine_for(&self, ctx: &Ctx) -> Result<(IoEngine, bool), WorkloadError> {
        let dev = fs::metadata(ctx.root)
            .ctx(|| format!("stat {}", ctx.root.display()))?
            .dev();
        if let Some(&e) = self.probed.lock().map_err(|_| poisoned())?.get(&dev) {
            return Ok((e, false));
        }
        let e = probe_engine(ctx)?;
        self.probed.lock().map_err(|_| poisoned())?.insert(dev, e);
        Ok((e, true))
    }
}

fn poisoned() -> WorkloadError {
    WorkloadError::Tool("engine cache lock poisoned".into())
}

/// Tries each engine with a 1 MiB buffered write in `ctx.root`; the first that completes
/// with no error wins. A missing fio is reported at once rather than masked by fallbacks.
fn probe_engine(ctx: &Ctx) -> Result<IoEngine, WorkloadError> {
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
        let result =
            fio::run(ctx.root, &job, &|| ctx.check()).and_then(|run| fio::verify(&job, &run));
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

/// The marker that says a data file is exactly as laid out: no point has written to it.
fn pristine_marker(name: &str) -> String {
    format!("{name}.pristine")
}

/// Gives the point a data file as freshly laid out: every point sees the same file, never
/// one aged by an earlier random-write point (fragmented on copy-on-write file systems),
/// so results do not depend on point order. A file only read since its lay-out (marked
/// pristine) is reused after re-checking it; otherwise it is laid out again.
fn prepare_file(ctx: &Ctx, name: &str, size: u64) -> Result<String, WorkloadError> {
    let marker = ctx.root.join(pristine_marker(name));
    if marker.exists() {
        if let Ok(sampled) = verify_written(&ctx.root.join(name), size) {
            return Ok(format!(
                "reused the data file laid out for an earlier point (only read since);                  no holes, {sampled} sampled blocks hold non-zero data"
            ));
        }
    }
    let note = lay_out(ctx, name, size)?;
    fs::write(&marker, size.to_string()).ctx(|| format!("writing {}", marker.display()))?;
    Ok(note)
}

fn remove_if_present(path: &Path) -> Result<(), WorkloadError> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(WorkloadError::io(format!("removing {}", path.display()), e))
        }
        _ => Ok(()),
    }
}

/// Writes `size` bytes of fio's (non-zero, pseudo-random) buffer data into `name` with plain
/// buffered writes and an fsync, then proves the file holds written data. Any other data
/// file in the directory is removed first so at most one occupies the target.
fn lay_out(ctx: &Ctx, name: &str, size: u64) -> Result<String, WorkloadError> {
    remove_data_files(ctx.root)?;
    let bs = [MIB, 64 << 10, 4096, 512]
        .into_iter()
        .find(|b| size % b == 0)
        .unwrap_or(1);
    let job = FioJob {
        name: "layout".into(),
        filename: name.into(),
        rw: Rw::Write,
        rwmixread: 50,
        bs,
        size,
        numjobs: 1,
        iodepth: 1,
        direct: false,
        ioengine: IoEngine::Psync,
        runtime: None,
        ramp_time: Duration::ZERO,
        end_fsync: true,
    };
    let run = fio::run(ctx.root, &job, &|| ctx.check())?;
    fio::verify(&job, &run)?;
    let sampled = verify_written(&ctx.root.join(name), size)?;
    Ok(format!(
        "laid out {size} bytes with real writes (fio, fallocate=none, fsync); no holes, \
         {sampled} sampled blocks hold non-zero data"
    ))
}

fn remove_data_files(root: &Path) -> Result<(), WorkloadError> {
    let entries = fs::read_dir(root).ctx(|| format!("reading {}", root.display()))?;
    for entry in entries {
        let entry = entry.ctx(|| format!("reading {}", root.display()))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("fsarena-io-")
            && (name.ends_with(".dat") || name.ends_with(".dat.pristine"))
        {
            fs::remove_file(entry.path()).ctx(|| format!("removing {}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// Proves a laid-out file holds written data: its length is `size`, `SEEK_HOLE` finds no hole
/// before the end (where the file system supports it), and evenly spaced 4 KiB blocks are not
/// all zeros — holes and unwritten extents read as zeros, fio's write buffers do not.
/// Returns how many blocks were sampled.
pub(crate) fn verify_written(path: &Path, size: u64) -> Result<u64, WorkloadError> {
    let file = fs::File::open(path).ctx(|| format!("opening {}", path.display()))?;
    let len = file
        .metadata()
        .ctx(|| format!("stat {}", path.display()))?
        .len();
    if len != size {
        return Err(WorkloadError::Verify(format!(
            "{} is {len} bytes after lay-out, expected {size}",
            path.display()
        )));
    }
    match rustix::fs::seek(&file, rustix::fs::SeekFrom::Hole(0)) {
        Ok(hole) if hole < size => {
            return Err(WorkloadError::Verify(format!(
                "{} has a hole at byte {hole}: reads there would not touch written data",
                path.display()
            )))
        }
        _ => {} // No hole, or SEEK_HOLE unsupported (then the samples below still check).
    }
    let mut buf = vec![0u8; 4096];
    let step = (size / LAYOUT_SAMPLES).max(4096) / 4096 * 4096;
    let mut sampled = 0;
    let mut off = 0;
    while off < size {
        let n = (size - off).min(buf.len() as u64) as usize;
        file.read_exact_at(&mut buf[..n], off)
            .ctx(|| format!("reading {} at {off}", path.display()))?;
        if buf[..n].iter().all(|&b| b == 0) {
            return Err(WorkloadError::Verify(format!(
                "{} reads zeros at byte {off}: not written data",
                path.display()
            )));
        }
        sampled += 1;
        off += step;
    }
    Ok(sampled)
}

/// The metrics of one measured fio job. Latencies are completion latencies (`clat`) over
/// both directions; `files` counts I/Os; MB are 10^6 bytes.
fn outcome_of(r: &FioReport) -> Outcome {
    let mut m = BTreeMap::new();
    m.insert("iops".to_string(), r.iops());
    m.insert("mb_per_s".to_string(), r.bw_bytes() as f64 / 1e6);
    m.insert("read_iops".to_string(), r.read.iops);
    m.insert("write_iops".to_string(), r.write.iops);
    m.insert("read_mb_per_s".to_string(), r.read.bw_bytes as f64 / 1e6);
    m.insert("write_mb_per_s".to_string(), r.write.bw_bytes as f64 / 1e6);
    if let Some(mean) = r.clat_mean_ns() {
        m.insert("lat_mean_us".to_string(), mean / 1e3);
    }
    for (name, pct) in [
        ("lat_p50_us", 50.0),
        ("lat_p90_us", 90.0),
        ("lat_p99_us", 99.0),
        ("lat_p99_9_us", 99.9),
        ("lat_p99_99_us", 99.99),
    ] {
        if let Some(ns) = r.clat_percentile_ns(pct) {
            m.insert(name.to_string(), ns as f64 / 1e3);
        }
    }
    // A mixed job also gets each direction's own latency, which the merged figures hide.
    if r.read.clat.samples > 0 && r.write.clat.samples > 0 {
        for (dir, d) in [("read", &r.read), ("write", &r.write)] {
            m.insert(format!("{dir}_lat_mean_us"), d.clat.mean_ns / 1e3);
            if let Some(ns) = fio::percentile_from_bins(&d.clat.bins, 99.0) {
                m.insert(format!("{dir}_lat_p99_us"), ns as f64 / 1e3);
            }
        }
    }
    m.insert("fio_cpu_usr_pct".to_string(), r.usr_cpu_pct);
    m.insert("fio_cpu_sys_pct".to_string(), r.sys_cpu_pct);
    m.insert("total_ios".to_string(), r.total_ios() as f64);
    Outcome {
        seconds: r.runtime_s(),
        files: r.total_ios(),
        logical_read_bytes: r.read.io_bytes,
        logical_write_bytes: r.write.io_bytes,
        metrics: m,
        notes: Vec::new(),
    }
}

fn scale_of(ctx: &Ctx) -> f64 {
    let s = ctx.dataset.scale;
    if s.is_finite() && s > 0.0 {
        s
    } else {
        1.0
    }
}

fn round_mib(b: u64) -> u64 {
    b / MIB * MIB
}

fn mem_total_bytes() -> Result<u64, WorkloadError> {
    let text = fs::read_to_string("/proc/meminfo").ctx(|| "reading /proc/meminfo".into())?;
    text.lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .map(|kib| kib * 1024)
        .ok_or_else(|| WorkloadError::Tool("no MemTotal in /proc/meminfo".into()))
}

fn bad_value(name: &str, key: &str, v: &toml::Value, want: &str) -> WorkloadError {
    WorkloadError::Option(format!(
        "{name}: `{key}` = {v} is not valid; expected {want}"
    ))
}

/// An axis option: a list (or a single value) of items each accepted by `parse`.
fn list<T>(
    opts: &toml::Table,
    key: &str,
    name: &str,
    parse: impl Fn(&toml::Value) -> Option<T>,
    want: &str,
) -> Result<Option<Vec<T>>, WorkloadError> {
    let Some(v) = opts.get(key) else {
        return Ok(None);
    };
    let items: Vec<&toml::Value> = match v {
        toml::Value::Array(a) => a.iter().collect(),
        other => vec![other],
    };
    if items.is_empty() {
        return Err(bad_value(
            name,
            key,
            v,
            &format!("a non-empty list of {want}"),
        ));
    }
    items
        .into_iter()
        .map(|i| parse(i).ok_or_else(|| bad_value(name, key, i, want)))
        .collect::<Result<Vec<T>, _>>()
        .map(Some)
}

fn positive(v: &toml::Value, max: u32) -> Option<u32> {
    v.as_integer()
        .and_then(|i| u32::try_from(i).ok())
        .filter(|&i| (1..=max).contains(&i))
}

/// A size: an integer of bytes or a string such as `4k`.
fn size_value(v: &toml::Value) -> Option<u64> {
    match v {
        toml::Value::Integer(i) => u64::try_from(*i).ok(),
        toml::Value::String(s) => fio::parse_size(s),
        _ => None,
    }
    .filter(|&b| b > 0)
}

fn size_choice(v: &toml::Value) -> Option<SizeChoice> {
    match v.as_str() {
        Some("small") => Some(SizeChoice::Small),
        Some("large") => Some(SizeChoice::Large),
        _ => size_value(v).map(SizeChoice::Bytes),
    }
}

/// Seconds as an integer or float, ≥ 0.
fn seconds(opts: &toml::Table, key: &str, name: &str) -> Result<Option<f64>, WorkloadError> {
    match opts.get(key) {
        None => Ok(None),
        Some(v) => v
            .as_float()
            .or_else(|| v.as_integer().map(|i| i as f64))
            .filter(|s| s.is_finite() && *s >= 0.0 && *s < 86_400.0)
            .map(Some)
            .ok_or_else(|| bad_value(name, key, v, "seconds (a number ≥ 0)")),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::process::Command;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Instant;

    use super::*;
    use crate::dataset::DatasetSpec;
    use crate::results::Status;
    use crate::workload::PlainHarness;

    /// A tmpfs mounted for one test and unmounted on drop, even when the test fails.
    struct Tmpfs {
        dir: tempfile::TempDir,
    }

    impl Tmpfs {
        fn mount(size: &str) -> Tmpfs {
            let dir = tempfile::tempdir_in("/tmp").unwrap();
            rustix::mount::mount(
                "fsarena-test",
                dir.path(),
                "tmpfs",
                rustix::mount::MountFlags::empty(),
                std::ffi::CString::new(format!("size={size}"))
                    .unwrap()
                    .as_c_str(),
            )
            .unwrap();
            Tmpfs { dir }
        }
        fn path(&self) -> &Path {
            self.dir.path()
        }
    }

    impl Drop for Tmpfs {
        fn drop(&mut self) {
            use rustix::mount::{unmount, UnmountFlags};
            // io_uring tears its rings down asynchronously after fio exits, so the mount can
            // stay busy for a moment: retry briefly, then detach it lazily.
            for _ in 0..40 {
                match unmount(self.dir.path(), UnmountFlags::empty()) {
                    Err(rustix::io::Errno::BUSY) => std::thread::sleep(Duration::from_millis(50)),
                    _ => return,
                }
            }
            let _ = unmount(self.dir.path(), UnmountFlags::DETACH);
        }
    }

    /// Tests that run fio take turns: on a 2-core machine, concurrent fio runs would make
    /// each other's IOPS meaningless to compare.
    static FIO_TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn fio_turn() -> std::sync::MutexGuard<'static, ()> {
        FIO_TURN.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn table(src: &str) -> toml::Table {
        src.parse().unwrap()
    }

    struct Env {
        dataset: DatasetSpec,
        options: toml::Table,
        cancel: AtomicBool,
        scratch: PathBuf,
    }

    impl Env {
        fn new(options: &str) -> Env {
            Env {
                dataset: DatasetSpec::default(),
                options: table(options),
                cancel: AtomicBool::new(false),
                scratch: std::env::temp_dir(),
            }
        }
        fn ctx<'a>(&'a self, root: &'a Path) -> Ctx<'a> {
            Ctx {
                root,
                scratch: &self.scratch,
                threads: 1,
                dataset: &self.dataset,
                options: &self.options,
                cancel: &self.cancel,
                deadline: None,
            }
        }
    }

    fn variants(points: &[Point]) -> Vec<&str> {
        points.iter().map(|p| p.variant.as_str()).collect()
    }

    #[test]
    fn quick_preset_points() {
        let env = Env::new("");
        let dir = tempfile::tempdir().unwrap();
        let w = IoWorkload::quick();
        let points = w.points(&env.ctx(dir.path())).unwrap();
        assert_eq!(
            variants(&points),
            [
                "randread-bs4k-j1-qd32-small-direct",
                "randwrite-bs4k-j1-qd32-small-direct",
                "read-bs1m-j1-qd8-small-direct",
                "write-bs1m-j1-qd8-small-direct",
            ]
        );
        let p = &points[0].params;
        assert_eq!(p["rw"], "randread");
        assert_eq!(p["bs"], 4096);
        assert_eq!(p["numjobs"], 1);
        assert_eq!(p["iodepth"], 32);
        // 64 MiB × scale 0.01 is below the 16 MiB floor.
        assert_eq!(p["size_bytes"], 16 * MIB);
        assert_eq!(p["size_label"], "small");
        assert_eq!(p["direct"], true);
        assert_eq!(p["ioengine"], "auto");
        for point in &points {
            assert_eq!(PointSpec::from_point(point).unwrap().to_point(), *point);
        }
        assert_eq!((w.key_metric(), w.uses_threads()), (("iops", true), false));
    }

    #[test]
    fn sweep_preset_points() {
        let mut env = Env::new("");
        env.dataset.scale = 1.0;
        let dir = tempfile::tempdir().unwrap();
        let points = IoWorkload::sweep().points(&env.ctx(dir.path())).unwrap();
        assert_eq!(points.len(), 4 * 3 * 4 * 8 * 2);
        let mut seen: Vec<&str> = variants(&points);
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), points.len(), "variants are unique");
        assert!(seen.contains(&"randwrite-bs512k-j4-qd128-large-direct"));
        assert!(seen.contains(&"read-bs8k-j1-qd1-small-direct"));
        let large = points
            .iter()
            .find(|p| p.params["size_label"] == "large")
            .unwrap();
        let small = points
            .iter()
            .find(|p| p.params["size_label"] == "small")
            .unwrap();
        let (l, s) = (
            large.params["size_bytes"].as_u64().unwrap(),
            small.params["size_bytes"].as_u64().unwrap(),
        );
        assert_eq!(s, 64 * MIB);
        let free = {
            let v = rustix::fs::statvfs(dir.path()).unwrap();
            v.f_bavail * v.f_frsize
        };
        // Free space moves while others write; allow 1 GiB of drift.
        assert!(l >= s && l <= free / 2 + (1 << 30), "{l} vs free {free}");
        assert!(l <= 2 * mem_total_bytes().unwrap() && l % MIB == 0);
        // max_large caps it; scale shrinks it.
        let mut env = Env::new("max_large = \"100m\"");
        env.dataset.scale = 1.0;
        let points = IoWorkload::sweep().points(&env.ctx(dir.path())).unwrap();
        assert!(points
            .iter()
            .filter(|p| p.params["size_label"] == "large")
            .all(|p| p.params["size_bytes"] == 100 * MIB));
    }

    #[test]
    fn options_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let points = |opts: &str| {
            let env = Env::new(opts);
            IoWorkload::quick().points(&env.ctx(dir.path()))
        };
        let err = points("blocksize = 4096").unwrap_err().to_string();
        assert!(
            err.contains("`blocksize`") && err.contains("rw, bs, numjobs"),
            "{err}"
        );
        for bad in [
            "rw = [\"readwrite\"]",
            "bs = [\"4q\"]",
            "iodepth = [0]",
            "numjobs = []",
            "direct = [1]",
            "ioengine = [\"windowsaio\"]",
            "runtime = -1",
            "rwmixread = 101",
            "size = [\"huge\"]",
            "bs = [\"32m\"]",
        ] {
            assert!(
                matches!(points(bad), Err(WorkloadError::Option(_))),
                "{bad} accepted"
            );
        }
        let p = points(
            "rw = \"randrw\"\nrwmixread = 70\nbs = [\"8k\", 65536]\nsize = [\"32m\"]\n\
             direct = [false]\nioengine = [\"psync\"]\nnumjobs = [2]",
        )
        .unwrap();
        assert_eq!(
            variants(&p),
            [
                "randrw70-bs8k-j2-qd32-32m-buffered-psync",
                "randrw70-bs64k-j2-qd32-32m-buffered-psync"
            ]
        );
        assert_eq!(p[0].params["rwmixread"], 70);
    }

    /// The same job by hand, outside fsarena: the IOPS fio reports for it.
    fn fio_by_hand(dir: &Path, job: &FioJob) -> f64 {
        let out = Command::new("fio")
            .args(job.args())
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        fio::parse_output(&out.stdout).unwrap().iops()
    }

    /// Every 4 KiB block of the data file holds non-zero bytes and the file has no hole.
    fn assert_all_written(path: &Path, size: u64) {
        let f = fs::File::open(path).unwrap();
        assert_eq!(f.metadata().unwrap().len(), size);
        let hole = rustix::fs::seek(&f, rustix::fs::SeekFrom::Hole(0)).unwrap();
        assert_eq!(hole, size, "hole in the data file");
        let mut buf = vec![0u8; 4096];
        for off in (0..size).step_by(4096) {
            f.read_exact_at(&mut buf, off).unwrap();
            assert!(buf.iter().any(|&b| b != 0), "zero block at {off}");
        }
    }

    fn median(v: &[f64]) -> f64 {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }

    /// Runs one randread point through the workload and the same job by hand, alternately;
    /// the median IOPS must agree within ±30 %. Up to three pairs, since other processes
    /// share this 2-core machine and a CPU-bound tmpfs run swings with them.
    fn read_point_matches_fio_by_hand(root: &Path, direct: bool) {
        let opts = format!(
            "rw = [\"randread\"]\nbs = [\"4k\"]\niodepth = [8]\nruntime = 1\nramp_time = 0.2\n\
             direct = [{direct}]"
        );
        let env = Env::new(&opts);
        let ctx = env.ctx(root);
        let w = IoWorkload::quick();
        let points = w.points(&ctx).unwrap();
        assert_eq!(points.len(), 1);
        let spec = PointSpec::from_point(&points[0]).unwrap();
        let cfg = Config::from_options(Preset::Quick, &env.options, "io-quick").unwrap();
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        for _ in 0..3 {
            let mut h = PlainHarness::default();
            let out = w.run(&ctx, &points[0], &mut h).unwrap();
            assert_eq!(h.measured, 1);
            let m = &out.metrics;
            assert!(m["iops"] > 0.0 && m["read_iops"] == m["iops"] && m["write_iops"] == 0.0);
            assert!(m["lat_p50_us"] <= m["lat_p99_us"] && m["lat_p99_us"] <= m["lat_p99_99_us"]);
            assert!(out.seconds > 0.9 && out.seconds < 2.0, "{}", out.seconds);
            assert!(out.logical_read_bytes > 0 && out.logical_write_bytes == 0);
            assert!(
                out.notes.iter().any(|n| n.contains("laid out")),
                "{:?}",
                out.notes
            );
            assert!(
                out.notes.iter().any(|n| n.contains("time-based")),
                "{:?}",
                out.notes
            );
            // The read point read written data: the file it read has no hole and no zero block.
            assert_all_written(&root.join(spec.filename()), spec.size_bytes);
            ours.push(m["iops"]);
            let engine = w.engine_for(&ctx).unwrap().0;
            theirs.push(fio_by_hand(root, &spec.job(&cfg, engine)));
            if (0.7..=1.3).contains(&(median(&ours) / median(&theirs))) {
                return;
            }
        }
        panic!("fsarena and fio by hand disagree on IOPS: {ours:?} vs {theirs:?}");
    }

    #[test]
    fn real_run_on_disk_matches_fio_by_hand() {
        let _turn = fio_turn();
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        read_point_matches_fio_by_hand(dir.path(), true);
    }

    #[test]
    fn real_run_on_loop_mounted_ext4_matches_fio_by_hand() {
        use crate::provision::{Instance, InstanceSpec, WorkDir};
        let _turn = fio_turn();
        let root = tempfile::tempdir_in("/var/tmp").unwrap();
        let work = WorkDir::create(root.path()).unwrap();
        let target = crate::plan::catalogue::get("ext4").unwrap();
        let spec = InstanceSpec {
            target: &target,
            seq: 1,
            size: 1 << 30,
            allow_device: false,
            wipe: false,
        };
        // Dropped on a panic too: unmounted and detached either way.
        let inst = Instance::provision(&spec, &work).unwrap();
        read_point_matches_fio_by_hand(&inst.root, true);
        let (_, res) = inst.teardown(false);
        res.unwrap();
    }

    #[test]
    fn real_run_on_tmpfs_matches_fio_by_hand() {
        let _turn = fio_turn();
        let t = Tmpfs::mount("64m");
        read_point_matches_fio_by_hand(t.path(), false);
    }

    #[test]
    fn quick_preset_runs_every_point_on_tmpfs() {
        let _turn = fio_turn();
        let t = Tmpfs::mount("64m");
        let env = Env::new("runtime = 0.5\nramp_time = 0");
        let ctx = env.ctx(t.path());
        let w = IoWorkload::quick();
        let mut layouts = Vec::new();
        for point in w.points(&ctx).unwrap() {
            let mut h = PlainHarness::default();
            let out = w.run(&ctx, &point, &mut h).unwrap();
            layouts.push(out.notes.iter().any(|n| n.starts_with("laid out")));
            let writes = point.params["rw"].as_str().unwrap().contains("write");
            assert_eq!(out.logical_write_bytes > 0, writes, "{}", point.variant);
            assert_eq!(out.logical_read_bytes > 0, !writes, "{}", point.variant);
            for key in [
                "iops",
                "mb_per_s",
                "read_iops",
                "write_iops",
                "lat_mean_us",
                "lat_p50_us",
                "lat_p90_us",
                "lat_p99_us",
                "lat_p99_9_us",
                "lat_p99_99_us",
                "fio_cpu_usr_pct",
                "fio_cpu_sys_pct",
            ] {
                assert!(
                    out.metrics.contains_key(key),
                    "{key} missing in {}",
                    point.variant
                );
            }
            let bs = point.params["bs"].as_f64().unwrap();
            let mbps = out.metrics["iops"] * bs / 1e6;
            assert!((mbps / out.metrics["mb_per_s"] - 1.0).abs() < 0.01);
            assert!(out.notes.iter().any(|n| n.starts_with("ioengine auto → ")));
        }
        // randread lays out; randwrite reuses that pristine file and ages it; read must lay
        // out again; write reuses read's file.
        assert_eq!(layouts, [true, false, true, false]);
        // The last point wrote, so its aged data file was removed: nothing is left behind.
        let files: Vec<_> = fs::read_dir(t.path()).unwrap().collect();
        assert!(files.is_empty(), "{files:?}");
    }

    #[test]
    fn a_damaged_pristine_file_is_laid_out_again() {
        let _turn = fio_turn();
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let env = Env::new("");
        let ctx = env.ctx(dir.path());
        let name = "fsarena-io-1048576.dat";
        // A marker next to a sparse file of the right size: reading it would read a hole.
        fs::File::create(dir.path().join(name))
            .unwrap()
            .set_len(MIB)
            .unwrap();
        fs::write(dir.path().join(pristine_marker(name)), "1048576").unwrap();
        assert!(matches!(
            verify_written(&dir.path().join(name), MIB),
            Err(WorkloadError::Verify(_))
        ));
        let note = prepare_file(&ctx, name, MIB).unwrap();
        assert!(note.starts_with("laid out"), "{note}");
        assert_all_written(&dir.path().join(name), MIB);
        let again = prepare_file(&ctx, name, MIB).unwrap();
        assert!(again.starts_with("reused"), "{again}");
    }

    #[test]
    fn size_bounded_mixed_job_moves_exactly_its_size() {
        let _turn = fio_turn();
        let t = Tmpfs::mount("64m");
        let env = Env::new(
            "rw = [\"randrw\"]\nrwmixread = 70\nbs = [\"4k\"]\niodepth = [4]\nnumjobs = [2]\n\
             runtime = 0\ndirect = [false]\nsize = [\"8m\"]",
        );
        let ctx = env.ctx(t.path());
        let w = IoWorkload::quick();
        let point = &w.points(&ctx).unwrap()[0];
        let out = w.run(&ctx, point, &mut PlainHarness::default()).unwrap();
        assert_eq!(
            out.logical_read_bytes + out.logical_write_bytes,
            2 * 8 * MIB
        );
        assert!(out.logical_read_bytes > out.logical_write_bytes);
        assert!(out.metrics.contains_key("read_lat_p99_us"));
        assert!(out.metrics.contains_key("write_lat_p99_us"));
        assert!(
            out.notes.iter().any(|n| n.contains("size-bounded")),
            "{:?}",
            out.notes
        );
    }

    #[test]
    fn full_target_fails_the_point_with_enospc() {
        let _turn = fio_turn();
        let t = Tmpfs::mount("4m");
        let env = Env::new("size = [\"16m\"]\nrw = [\"read\"]\nbs = [\"1m\"]");
        let ctx = env.ctx(t.path());
        let w = IoWorkload::quick();
        let point = &w.points(&ctx).unwrap()[0];
        let mut h = PlainHarness::default();
        let err = w.run(&ctx, point, &mut h).unwrap_err();
        assert_eq!(err.status(), Status::Enospc, "{err}");
        assert_eq!(h.measured, 0, "nothing is measured when the lay-out fails");
    }

    #[test]
    fn cancel_mid_run_interrupts_and_stops_fio() {
        let _turn = fio_turn();
        let t = Tmpfs::mount("64m");
        let env = Env::new("rw = [\"randread\"]\nruntime = 30\ndirect = [false]");
        let ctx = env.ctx(t.path());
        let w = IoWorkload::quick();
        let point = &w.points(&ctx).unwrap()[0];
        let started = Instant::now();
        let err = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(1500));
                env.cancel.store(true, Ordering::Relaxed);
            });
            w.run(&ctx, point, &mut PlainHarness::default())
                .unwrap_err()
        });
        assert!(matches!(err, WorkloadError::Interrupted), "{err:?}");
        assert!(started.elapsed() < Duration::from_secs(10));
        // fio was killed and reaped: no process is left working in the directory.
        let stale: Vec<_> = fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| fs::read_link(e.ok()?.path().join("cwd")).ok())
            .filter(|cwd| cwd.starts_with(t.path()))
            .collect();
        assert!(
            stale.is_empty(),
            "processes still in {}",
            t.path().display()
        );
    }
}
