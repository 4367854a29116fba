//! The `[workload.io-quick]` / `[workload.io-sweep]` options: parsed with serde (unknown keys
//! refused), every value checked, and resolved against the preset's defaults into a
//! [`Config`].
//!
//! One code path: the runner's `check_options` (before anything is provisioned) and `points`
//! / `run` all go through [`Config::from_options`], so an accepted table is a table `run`
//! accepts. Only what needs the mounted target stays for later: the `large` file's size
//! (RAM and free space) and the default `small` file's size (the data set's scale).

use std::fmt::Display;
use std::fs;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use crate::fio::{IoEngine, Rw, Server};
use crate::plan::size::short_label as size_label;
use crate::workload::error::{IoContext, WorkloadError};
use crate::workload::options::{self, OneOrMany, SizeValue, Word};

pub(super) const MIB: u64 = 1 << 20;

/// Which default set of points a workload measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Preset {
    Quick,
    Sweep,
}

/// Default `small` file at scale 1: small enough to sit in any cache.
const SMALL_DEFAULT: u64 = 64 * MIB;
/// Floor for the small file after scaling, so 1 MiB blocks and several jobs still make sense.
const SMALL_FLOOR: u64 = 16 * MIB;
/// Default cap on the `large` file.
const MAX_LARGE_DEFAULT: u64 = 64 << 30;
/// The longest `runtime` or `ramp_time` accepted: a day is surely a typo.
const MAX_SECONDS: f64 = 86_400.0;

/// The options table as written. Axis options take one value or a list; their values are
/// checked by [`Config::from_options`] so that every bad value gets the same one-line
/// wording (which key, what was given, what is valid). Field order is the order the
/// "valid:" list names them in.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct IoOptions {
    /// Access patterns: read, randread, write, randwrite, randrw.
    rw: Option<OneOrMany<Word>>,
    /// Block sizes: bytes or a size such as `4k`.
    bs: Option<OneOrMany<SizeValue>>,
    /// Jobs per point, 1..=1024.
    numjobs: Option<OneOrMany<i64>>,
    /// Queue depths, 1..=4096.
    iodepth: Option<OneOrMany<i64>>,
    /// File sizes: `small`, `large` or a size.
    size: Option<OneOrMany<SizeValue>>,
    /// O_DIRECT or buffered.
    direct: Option<OneOrMany<bool>>,
    /// Engines: auto, io_uring, libaio, psync.
    ioengine: Option<OneOrMany<Word>>,
    /// Seconds per point; 0 makes jobs size-bounded.
    runtime: Option<f64>,
    /// Seconds of warm-up excluded from fio's statistics.
    ramp_time: Option<f64>,
    /// Read percentage of `randrw`, 0..=100.
    rwmixread: Option<i64>,
    /// The small file, taken literally when given.
    small: Option<SizeValue>,
    /// Cap on the large file.
    max_large: Option<SizeValue>,
    /// `fio --server`s (`HOST[:PORT]`) that run every point at once through fio's client
    /// mode, in the same directory (a shared path); set by `--io-hosts` / `io_hosts`.
    hosts: Option<Vec<String>>,
}

/// A file-size axis value: labels resolve against the target when points are made.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum SizeChoice {
    /// Fits any cache.
    Small,
    /// Sized from RAM and free space so that caches do not hold it (at scale 1).
    Large,
    /// An explicit size, taken literally.
    Bytes(u64),
}

/// The engine axis: `auto` probes io_uring → libaio → psync.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum EngineChoice {
    Auto,
    Fixed(IoEngine),
}

impl EngineChoice {
    /// The name in options and point parameters.
    pub(super) fn as_str(self) -> &'static str {
        match self {
            EngineChoice::Auto => "auto",
            EngineChoice::Fixed(e) => e.as_str(),
        }
    }

    /// `auto` or a fio engine fsarena drives.
    pub(super) fn parse(s: &str) -> Option<EngineChoice> {
        match s {
            "auto" => Some(EngineChoice::Auto),
            _ => IoEngine::parse(s).map(EngineChoice::Fixed),
        }
    }
}

/// The resolved options of one run.
#[derive(Debug, Clone)]
pub(super) struct Config {
    /// (rw, bs, iodepth) combinations: a fixed list for io-quick, else a product.
    pub(super) shapes: Vec<(Rw, u64, u32)>,
    pub(super) numjobs: Vec<u32>,
    pub(super) size: Vec<SizeChoice>,
    pub(super) direct: Vec<bool>,
    pub(super) ioengine: Vec<EngineChoice>,
    pub(super) rwmixread: u32,
    /// `None`: size-bounded jobs (`runtime = 0`).
    pub(super) runtime: Option<Duration>,
    pub(super) ramp_time: Duration,
    /// Small file at scale 1 and whether the user set it (user sizes are taken literally).
    small: (u64, bool),
    max_large: u64,
    /// The servers the points run on; empty: fio runs here, as one local process.
    pub(super) hosts: Vec<Server>,
}

/// The axes as given (`None`: the preset's default), each value checked.
struct Axes {
    rw: Option<Vec<Rw>>,
    bs: Option<Vec<u64>>,
    iodepth: Option<Vec<u32>>,
    numjobs: Option<Vec<u32>>,
    size: Option<Vec<SizeChoice>>,
    direct: Option<Vec<bool>>,
    ioengine: Option<Vec<EngineChoice>>,
}

impl Axes {
    /// Checks every value of every axis the table gives.
    fn of(name: &str, opts: &IoOptions) -> Result<Axes, String> {
        Ok(Axes {
            rw: axis(name, "rw", &opts.rw, |v| Rw::parse(&v.0), RW_WANT)?,
            bs: axis(
                name,
                "bs",
                &opts.bs,
                SizeValue::whole_bytes,
                "a size such as 4k or 1m",
            )?,
            iodepth: axis(
                name,
                "iodepth",
                &opts.iodepth,
                |v| positive(*v, 4096),
                "1..=4096",
            )?,
            numjobs: axis(
                name,
                "numjobs",
                &opts.numjobs,
                |v| positive(*v, 1024),
                "1..=1024",
            )?,
            size: axis(name, "size", &opts.size, size_choice, SIZE_WANT)?,
            direct: axis(name, "direct", &opts.direct, |v| Some(*v), "true or false")?,
            ioengine: axis(
                name,
                "ioengine",
                &opts.ioengine,
                |v| EngineChoice::parse(&v.0),
                "auto, io_uring, libaio or psync",
            )?,
        })
    }

    /// The (rw, bs, iodepth) combinations: io-quick's fixed four when none of the three is
    /// given, else the product, each missing axis at the preset's default.
    fn shapes(&self, quick: bool) -> Vec<(Rw, u64, u32)> {
        if quick && self.rw.is_none() && self.bs.is_none() && self.iodepth.is_none() {
            return vec![
                (Rw::RandRead, 4096, 32),
                (Rw::RandWrite, 4096, 32),
                (Rw::Read, MIB, 8),
                (Rw::Write, MIB, 8),
            ];
        }
        let rw = self.rw.clone().unwrap_or_else(|| {
            if quick {
                vec![Rw::RandRead, Rw::RandWrite, Rw::Read, Rw::Write]
            } else {
                vec![Rw::Read, Rw::RandRead, Rw::Write, Rw::RandWrite]
            }
        });
        let bs = self.bs.clone().unwrap_or_else(|| {
            if quick {
                vec![4096]
            } else {
                vec![8 << 10, 64 << 10, 512 << 10]
            }
        });
        let iodepth = self.iodepth.clone().unwrap_or_else(|| {
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
    }
}

impl Config {
    /// Parses and checks the `[workload.NAME]` table and fills in the preset's defaults.
    /// Errors are one line naming the table and the bad key.
    pub(super) fn from_options(
        preset: Preset,
        table: &toml::Table,
        name: &str,
    ) -> Result<Config, String> {
        let opts: IoOptions = options::parse(name, table)?;
        let axes = Axes::of(name, &opts)?;
        let quick = preset == Preset::Quick;
        let (runtime_default, sizes_default) = match preset {
            Preset::Quick => (3.0, vec![SizeChoice::Small]),
            Preset::Sweep => (5.0, vec![SizeChoice::Small, SizeChoice::Large]),
        };
        let runtime = seconds(name, "runtime", opts.runtime, runtime_default)?;
        let ramp = seconds(name, "ramp_time", opts.ramp_time, 1.0)?;
        let rwmixread = match opts.rwmixread {
            None => 50,
            Some(i) => u32::try_from(i)
                .ok()
                .filter(|&p| p <= 100)
                .ok_or_else(|| bad_value(name, "rwmixread", &i, "0..=100"))?,
        };
        let small = match &opts.small {
            None => (SMALL_DEFAULT, false),
            Some(v) => (
                v.whole_bytes()
                    .ok_or_else(|| bad_value(name, "small", v, "a size such as 64m"))?,
                true,
            ),
        };
        let max_large = match &opts.max_large {
            None => MAX_LARGE_DEFAULT,
            Some(v) => v
                .whole_bytes()
                .ok_or_else(|| bad_value(name, "max_large", v, "a size such as 100g"))?,
        };
        let cfg = Config {
            shapes: axes.shapes(quick),
            numjobs: axes
                .numjobs
                .unwrap_or_else(|| if quick { vec![1] } else { vec![1, 2, 3, 4] }),
            size: axes.size.unwrap_or(sizes_default),
            direct: axes.direct.unwrap_or_else(|| vec![true]),
            ioengine: axes.ioengine.unwrap_or_else(|| vec![EngineChoice::Auto]),
            rwmixread,
            runtime: (runtime > 0.0).then(|| Duration::from_secs_f64(runtime)),
            ramp_time: Duration::from_secs_f64(ramp),
            small,
            max_large,
            hosts: servers(name, opts.hosts.as_deref())?,
        };
        cfg.check_block_sizes(name)?;
        Ok(cfg)
    }

    /// Refuses a block size larger than a file size already known without the target: an
    /// explicit size, or a `small` file the user set. (The default small file depends on
    /// the data set's scale and the large one on the target; `points` checks those.)
    fn check_block_sizes(&self, name: &str) -> Result<(), String> {
        for size in &self.size {
            let (bytes, label) = match size {
                SizeChoice::Bytes(b) => (*b, size_label(*b)),
                SizeChoice::Small if self.small.1 => (self.small.0, "small".to_string()),
                _ => continue,
            };
            if let Some(&(_, bs, _)) = self.shapes.iter().find(|s| s.1 > bytes) {
                return Err(too_big(name, bs, &label, bytes));
            }
        }
        Ok(())
    }

    /// The small file for this scale: defaults shrink with the data set's scale (floored at
    /// 16 MiB); a size the user gave is used as given. Whole MiB so every block size divides it.
    pub(super) fn small_bytes(&self, scale: f64) -> u64 {
        match self.small {
            (bytes, true) => bytes,
            (bytes, false) => round_mib((bytes as f64 * scale) as u64).max(SMALL_FLOOR),
        }
    }

    /// The large file: twice RAM (so no cache holds it) times the scale, at most half the
    /// target's free space and at most `max_large`; never smaller than the small file.
    pub(super) fn large_bytes(&self, scale: f64, root: &Path) -> Result<u64, WorkloadError> {
        let ram = mem_total_bytes()?;
        let vfs = rustix::fs::statvfs(root)
            .map_err(|e| WorkloadError::io(format!("statvfs {}", root.display()), e.into()))?;
        let free = vfs.f_bavail.saturating_mul(vfs.f_frsize);
        let want = ((2 * ram) as f64 * scale) as u64;
        let large = round_mib(want.min(free / 2).min(self.max_large));
        Ok(large.max(self.small_bytes(scale)))
    }
}

/// The one wording of "this block size does not fit that file", before and after the
/// target is known.
pub(super) fn too_big(name: &str, bs: u64, label: &str, bytes: u64) -> String {
    format!(
        "{name}: block size {} is larger than the {label} file ({bytes} bytes)",
        size_label(bs)
    )
}

const RW_WANT: &str = "read|randread|write|randwrite|randrw";
const SIZE_WANT: &str = "small, large or a size such as 256m";

/// The one wording of a bad value: which table, which key, what was given, what is valid.
fn bad_value(name: &str, key: &str, v: &dyn Display, want: &str) -> String {
    format!("[workload.{name}]: `{key}` = {v} is not valid; expected {want}")
}

/// `runtime` / `ramp_time`: seconds, 0 or more and under a day.
fn seconds(name: &str, key: &str, v: Option<f64>, default: f64) -> Result<f64, String> {
    match v {
        None => Ok(default),
        Some(s) if s.is_finite() && (0.0..MAX_SECONDS).contains(&s) => Ok(s),
        Some(s) => Err(bad_value(name, key, &s, "seconds (a number ≥ 0)")),
    }
}

/// An axis option: a list (or a single value standing for a list of one) of items each
/// accepted by `parse`. An empty list is refused: it would silently measure nothing.
fn axis<V: Display, T>(
    name: &str,
    key: &str,
    v: &Option<OneOrMany<V>>,
    parse: impl Fn(&V) -> Option<T>,
    want: &str,
) -> Result<Option<Vec<T>>, String> {
    let Some(v) = v else {
        return Ok(None);
    };
    let items = v.items();
    if items.is_empty() {
        return Err(bad_value(
            name,
            key,
            &"[]",
            &format!("a non-empty list of {want}"),
        ));
    }
    items
        .iter()
        .map(|i| parse(i).ok_or_else(|| bad_value(name, key, i, want)))
        .collect::<Result<Vec<T>, _>>()
        .map(Some)
}

/// The `hosts` list: each `HOST[:PORT]`, none twice (fio would run the job twice there and
/// the sum would count it twice), not empty (that would silently mean "here").
fn servers(name: &str, hosts: Option<&[String]>) -> Result<Vec<Server>, String> {
    let Some(hosts) = hosts else {
        return Ok(Vec::new());
    };
    if hosts.is_empty() {
        return Err(format!(
            "[workload.{name}]: `hosts` is empty; name at least one HOST[:PORT] or leave it out"
        ));
    }
    let mut out: Vec<Server> = Vec::new();
    for h in hosts {
        let s = Server::parse(h).map_err(|e| format!("[workload.{name}]: `hosts`: {e}"))?;
        if out.contains(&s) {
            return Err(format!(
                "[workload.{name}]: `hosts` names fio server {s} twice"
            ));
        }
        out.push(s);
    }
    Ok(out)
}

fn positive(v: i64, max: u32) -> Option<u32> {
    u32::try_from(v).ok().filter(|&i| (1..=max).contains(&i))
}

fn size_choice(v: &SizeValue) -> Option<SizeChoice> {
    match v.text() {
        Some("small") => Some(SizeChoice::Small),
        Some("large") => Some(SizeChoice::Large),
        _ => v.whole_bytes().map(SizeChoice::Bytes),
    }
}

fn round_mib(b: u64) -> u64 {
    b / MIB * MIB
}

/// Total RAM, from `/proc/meminfo`: the large file must be bigger than any cache.
pub(super) fn mem_total_bytes() -> Result<u64, WorkloadError> {
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
