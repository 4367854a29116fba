//! The mix format: a workload described as weighted operations over a working set of files,
//! written by users as `[workload.mix.NAME]` tables and shipped as the personalities.
//!
//! ```toml
//! threads = 8               # optional: worker threads (else --threads)
//! files = 2000              # working-set slots, laid down unmeasured first
//! prefill = 0.8             # fraction of slots holding a file at the start (default 1)
//! dir_width = 20            # subdirectories per directory (default 20)
//! dir_depth = 2             # directory levels above the files (default 1; 0 = flat)
//! file_size = { dist = "gamma", mean = "16K", shape = 1.5 }   # or "16K", or uniform
//! append_size = "16K"       # size of one append (same forms as file_size)
//! io_size = "1M"            # chunk of whole-file reads and writes
//! fsync = "each-file"       # never / each-write / each-file / end
//! total_ops = 20000         # or duration = "5s"
//! scaled = false            # files and total_ops are --scale 1 figures, times --scale
//! ops = { create = 1, append = 1, read = 2, delete = 1, stat = 1 }   # weights
//! log = { appenders = 1, append_size = "16K", per_op = 0.1 }         # dedicated appenders
//! ```
//!
//! Checked strictly: every key and value, with one line naming the key, so a typo is bad
//! input (exit 2) before anything is provisioned, and `run` reads the very same result.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use super::dist::SizeDist;
use crate::plan::size::parse_size;
use crate::workload::options::{self, SizeValue};

/// The operations a mix may weigh, in the order results list them.
pub const OP_NAMES: [&str; 6] = ["create", "write", "append", "read", "stat", "delete"];

/// One operation on a file of the working set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// Create a new file of `file_size` bytes (open with O_EXCL, write it whole, close).
    Create,
    /// Rewrite an existing file whole with new content of a fresh `file_size`.
    Write,
    /// Append `append_size` bytes to an existing file.
    Append,
    /// Read an existing file whole and check its bytes against what was written.
    Read,
    /// `stat` an existing file and check its size.
    Stat,
    /// Unlink an existing file.
    Delete,
}

impl Op {
    pub const ALL: [Op; 6] = [
        Op::Create,
        Op::Write,
        Op::Append,
        Op::Read,
        Op::Stat,
        Op::Delete,
    ];
    pub fn name(self) -> &'static str {
        OP_NAMES[self as usize]
    }
}

/// When written data is forced to stable storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fsync {
    Never,
    /// `fsync` after every `write` call.
    EachWrite,
    /// `fsync` once per written file, before it is closed (a mail server's delivery).
    EachFile,
    /// `fsync` every file still holding unsynced writes when the thread ends.
    End,
}

/// When a worker stops.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stop {
    /// After this many operations, spread over the workers (a repeatable amount of work).
    Ops(u64),
    /// After this much wall time.
    Time(Duration),
}

/// Dedicated threads appending to a log file each (a web server's access log).
#[derive(Debug, Clone, PartialEq)]
pub struct LogSpec {
    pub appenders: usize,
    pub append_size: SizeDist,
    /// Appends (over all appenders) per operation of the workers, paced as they go.
    pub per_op: f64,
}

/// A checked mix.
#[derive(Debug, Clone, PartialEq)]
pub struct MixSpec {
    pub threads: Option<usize>,
    pub files: u64,
    pub prefill: f64,
    pub dir_width: u64,
    pub dir_depth: u32,
    pub file_size: SizeDist,
    pub append_size: SizeDist,
    pub io_size: usize,
    pub fsync: Fsync,
    pub stop: Stop,
    pub scaled: bool,
    /// Operations with their weights (each ≥ 1), in [`Op::ALL`] order.
    pub weights: Vec<(Op, u64)>,
    pub log: Option<LogSpec>,
}

/// The table as written. `file_size` and `append_size` stay raw TOML: a size or a
/// distribution table, which [`SizeDist::parse`] reads.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMix {
    threads: Option<i64>,
    files: Option<i64>,
    prefill: Option<f64>,
    dir_width: Option<i64>,
    dir_depth: Option<i64>,
    file_size: Option<toml::Value>,
    append_size: Option<toml::Value>,
    io_size: Option<SizeValue>,
    fsync: Option<String>,
    total_ops: Option<i64>,
    duration: Option<DurationValue>,
    scaled: Option<bool>,
    /// Weights by operation name (a name outside [`OP_NAMES`] is refused with them).
    ops: Option<BTreeMap<String, i64>>,
    log: Option<RawLog>,
}

/// `duration = "5s"` or a number of seconds.
#[derive(Debug, Deserialize)]
#[serde(
    untagged,
    expecting = "a duration such as \"5s\" or a number of seconds"
)]
enum DurationValue {
    Seconds(f64),
    Text(String),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLog {
    appenders: Option<i64>,
    append_size: Option<toml::Value>,
    per_op: Option<f64>,
}

/// The most threads (or appenders) a mix may ask for.
const MAX_THREADS: i64 = 1024;
/// The most working-set slots: a bookkeeping entry each, kept in memory.
const MAX_FILES: i64 = 100_000_000;
/// The largest chunk of one read or write call.
const MAX_IO: u64 = 64 << 20;
/// The largest working set a mix may describe (slots × mean file size).
const MAX_WORKING_SET: f64 = (1u64 << 40) as f64;

/// The one wording of a bad mix value: which table, which key, why.
fn bad(name: &str, key: &str, why: String) -> String {
    format!("[workload.{name}]: `{key}`: {why}")
}

/// A whole-number option within `lo..=hi`, `default` when absent.
fn int(
    name: &str,
    key: &str,
    v: Option<i64>,
    default: i64,
    lo: i64,
    hi: i64,
) -> Result<i64, String> {
    let v = v.unwrap_or(default);
    if v < lo || v > hi {
        return Err(bad(name, key, format!("{v} is out of range {lo}..={hi}")));
    }
    Ok(v)
}

/// A size or distribution option: 16 KiB when absent.
fn size(name: &str, key: &str, v: &Option<toml::Value>) -> Result<SizeDist, String> {
    match v {
        None => Ok(SizeDist::Fixed(16 << 10)),
        Some(v) => SizeDist::parse(v).map_err(|why| bad(name, key, why)),
    }
}

/// Parses and checks the mix `table`; `name` is its table's name for messages
/// (`mix.mymail`, `varmail`). Errors are one line naming the key.
pub fn parse(name: &str, table: &toml::Table) -> Result<MixSpec, String> {
    let raw: RawMix = options::parse(name, table)?;
    let threads = match raw.threads {
        None => None,
        Some(t) => Some(int(name, "threads", Some(t), 1, 1, MAX_THREADS)? as usize),
    };
    let files = raw.files.ok_or_else(|| {
        bad(
            name,
            "files",
            "give the working set's size, e.g. files = 1000".into(),
        )
    })?;
    let files = int(name, "files", Some(files), 1, 1, MAX_FILES)? as u64;
    let prefill = raw.prefill.unwrap_or(1.0);
    if !(0.0..=1.0).contains(&prefill) {
        return Err(bad(
            name,
            "prefill",
            format!("{prefill} is not a fraction in 0..=1"),
        ));
    }
    let (dir_width, dir_depth) = dirs(name, &raw)?;
    let file_size = size(name, "file_size", &raw.file_size)?;
    if files as f64 * file_size.mean() > MAX_WORKING_SET {
        return Err(bad(
            name,
            "file_size",
            format!("{files} files of this size exceed the 1 TiB a mix may lay down"),
        ));
    }
    Ok(MixSpec {
        threads,
        files,
        prefill,
        dir_width,
        dir_depth,
        file_size,
        append_size: size(name, "append_size", &raw.append_size)?,
        io_size: io_size(raw.io_size.as_ref()).map_err(|why| bad(name, "io_size", why))?,
        fsync: fsync(raw.fsync.as_deref()).map_err(|why| bad(name, "fsync", why))?,
        stop: stop(name, &raw)?,
        scaled: raw.scaled.unwrap_or(false),
        weights: weights(raw.ops.as_ref()).map_err(|why| bad(name, "ops", why))?,
        log: raw.log.map(|l| log(name, l)).transpose()?,
    })
}

/// The directory tree: `dir_width` subdirectories per level, `dir_depth` levels, at most
/// 2^32 leaves.
fn dirs(name: &str, raw: &RawMix) -> Result<(u64, u32), String> {
    let dir_width = int(name, "dir_width", raw.dir_width, 20, 1, 1_000_000)? as u64;
    let dir_depth = int(name, "dir_depth", raw.dir_depth, 1, 0, 8)? as u32;
    if dir_width
        .checked_pow(dir_depth)
        .map_or(true, |n| n > 1 << 32)
    {
        return Err(bad(
            name,
            "dir_depth",
            format!("{dir_width}^{dir_depth} leaf directories is too many"),
        ));
    }
    Ok((dir_width, dir_depth))
}

/// The chunk of whole-file reads and writes: 1 MiB when absent, at most 64 MiB.
fn io_size(v: Option<&SizeValue>) -> Result<usize, String> {
    let Some(v) = v else {
        return Ok(1 << 20);
    };
    let b = match v {
        SizeValue::Text(s) => parse_size(s)?,
        SizeValue::Bytes(n) if *n >= 1 => *n as u64,
        other => return Err(format!("`{other}` is not a size (examples: 4096, \"16K\")")),
    };
    if b > MAX_IO {
        return Err(format!("{b} bytes exceeds 64 MiB"));
    }
    Ok(b as usize)
}

/// `fsync = "never" | "each-write" | "each-file" | "end"`: never when absent.
fn fsync(v: Option<&str>) -> Result<Fsync, String> {
    match v {
        None | Some("never") => Ok(Fsync::Never),
        Some("each-write") => Ok(Fsync::EachWrite),
        Some("each-file") => Ok(Fsync::EachFile),
        Some("end") => Ok(Fsync::End),
        Some(other) => Err(format!(
            "`{other}`; valid: never, each-write, each-file, end"
        )),
    }
}

/// When the workers stop: after `total_ops` or after `duration`, exactly one given.
fn stop(name: &str, raw: &RawMix) -> Result<Stop, String> {
    match (raw.total_ops, &raw.duration) {
        (Some(_), Some(_)) => Err(bad(
            name,
            "duration",
            "give total_ops or duration, not both".into(),
        )),
        (None, None) => Err(bad(
            name,
            "total_ops",
            "say how long to run: total_ops = N or duration = \"5s\"".into(),
        )),
        (Some(n), None) => Ok(Stop::Ops(
            int(name, "total_ops", Some(n), 1, 1, i64::MAX)? as u64
        )),
        (None, Some(d)) => Ok(Stop::Time(
            duration(d).map_err(|why| bad(name, "duration", why))?,
        )),
    }
}

/// The `log` table: dedicated appenders, their append size, and appends per operation.
fn log(name: &str, l: RawLog) -> Result<LogSpec, String> {
    let appenders = int(name, "log.appenders", l.appenders, 1, 1, MAX_THREADS)? as usize;
    let append_size = size(name, "log.append_size", &l.append_size)?;
    let per_op = l.per_op.ok_or_else(|| {
        bad(
            name,
            "log.per_op",
            "give appends per worker operation, e.g. 0.1".into(),
        )
    })?;
    if !(per_op.is_finite() && per_op > 0.0 && per_op <= 1000.0) {
        return Err(bad(
            name,
            "log.per_op",
            format!("{per_op} is not in (0, 1000]"),
        ));
    }
    Ok(LogSpec {
        appenders,
        append_size,
        per_op,
    })
}

/// `"5s"`, `"1m 30s"` or a number of seconds.
fn duration(v: &DurationValue) -> Result<Duration, String> {
    let d = match v {
        DurationValue::Text(s) => humantime::parse_duration(s.trim())
            .map_err(|e| format!("`{s}` is not a duration ({e}); e.g. \"5s\""))?,
        DurationValue::Seconds(f) if f.is_finite() && *f > 0.0 && *f < 1e9 => {
            Duration::from_secs_f64(*f)
        }
        DurationValue::Seconds(f) => return Err(format!("`{f}` is not a duration; e.g. \"5s\"")),
    };
    if d.is_zero() || d > Duration::from_secs(7 * 24 * 3600) {
        return Err(format!("{d:?} is outside (0, 1 week]"));
    }
    Ok(d)
}

/// The `ops` table: known operation names with whole weights ≥ 1, at least one.
fn weights(ops: Option<&BTreeMap<String, i64>>) -> Result<Vec<(Op, u64)>, String> {
    let ops = ops.ok_or_else(|| {
        format!(
            "give the operations and their weights, e.g. {{ read = 2, create = 1 }}; operations: {}",
            OP_NAMES.join(", ")
        )
    })?;
    let mut out = Vec::new();
    for (k, &w) in ops {
        let op = Op::ALL
            .into_iter()
            .find(|o| o.name() == k)
            .ok_or_else(|| format!("unknown operation `{k}`; valid: {}", OP_NAMES.join(", ")))?;
        match w {
            1..=1_000_000 => out.push((op, w as u64)),
            0 => {
                return Err(format!(
                    "`{k}` has weight 0; leave an operation out instead"
                ))
            }
            _ => {
                return Err(format!(
                    "`{k}` = {w}: a weight is a whole number in 1..=1000000"
                ))
            }
        }
    }
    if out.is_empty() {
        return Err("name at least one operation".into());
    }
    out.sort_unstable();
    Ok(out)
}

impl MixSpec {
    /// The mix at the run's `--scale`: a `scaled` mix's file and operation counts are
    /// full-size figures multiplied by `scale`, never below 100 files and 1000 operations
    /// (or the figure itself, when smaller), as the data-set profiles keep a floor.
    pub fn at_scale(&self, scale: f64) -> MixSpec {
        let mut m = self.clone();
        if !(self.scaled && scale.is_finite() && scale > 0.0) {
            return m;
        }
        let shrink = |n: u64, floor: u64| ((n as f64 * scale).round() as u64).max(n.min(floor));
        m.files = shrink(self.files, 100);
        if let Stop::Ops(n) = self.stop {
            m.stop = Stop::Ops(shrink(n, 1000));
        }
        m
    }

    /// Leaf directories the files spread over (`dir_width ^ dir_depth`).
    pub fn leaves(&self) -> u64 {
        self.dir_width.pow(self.dir_depth)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(src: &str) -> Result<MixSpec, String> {
        parse("mix.t", &src.parse::<toml::Table>().expect("toml"))
    }

    const OK: &str = "files = 10\ntotal_ops = 100\nops = { read = 2, create = 1 }\n";

    #[test]
    fn a_minimal_mix_parses_with_defaults() {
        let m = p(OK).unwrap();
        assert_eq!(m.files, 10);
        assert_eq!(m.stop, Stop::Ops(100));
        assert_eq!(m.weights, vec![(Op::Create, 1), (Op::Read, 2)]);
        assert_eq!(m.fsync, Fsync::Never);
        assert_eq!(m.io_size, 1 << 20);
        assert_eq!(m.leaves(), 20);
    }

    #[test]
    fn bad_keys_and_values_name_the_key_on_one_line() {
        for (src, key) in [
            ("fils = 3", "`fils`"),
            ("ops = { read = 0 }", "`ops`"),
            ("ops = { raed = 1 }", "raed"),
            ("fsync = \"sometimes\"", "`fsync`"),
            ("file_size = \"0\"", "`file_size`"),
            (
                "file_size = { dist = \"uniform\", min = \"8K\", max = \"4K\" }",
                "`file_size`",
            ),
            (
                "file_size = { dist = \"gamma\", mean = \"16K\" }",
                "`file_size`",
            ),
            (
                "file_size = { dist = \"gamma\", mean = \"1T\", shape = 1.0 }",
                "`file_size`",
            ),
            ("io_size = \"1G\"", "`io_size`"),
            ("prefill = 1.5", "`prefill`"),
            ("duration = \"5s\"", "`duration`"),
            ("threads = 0", "`threads`"),
            ("log = { appenders = 1 }", "`log.per_op`"),
        ] {
            let mut t: toml::Table = OK.parse().expect("toml");
            t.extend(src.parse::<toml::Table>().expect("toml"));
            let e = parse("mix.t", &t).unwrap_err();
            assert!(e.contains(key), "{src}: {e}");
            assert!(e.starts_with("[workload.mix.t]"), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
        assert!(p("files = 10\nops = { read = 1 }")
            .unwrap_err()
            .contains("total_ops"));
    }

    #[test]
    fn scaled_mixes_shrink_with_a_floor() {
        let m = p(&format!("{OK}scaled = true\n")).unwrap();
        let mut big = m.clone();
        big.files = 10_000;
        big.stop = Stop::Ops(500_000);
        let s = big.at_scale(0.01);
        assert_eq!((s.files, s.stop), (100, Stop::Ops(5000)));
        let s = big.at_scale(0.0001);
        assert_eq!((s.files, s.stop), (100, Stop::Ops(1000)));
        assert_eq!(m.at_scale(0.01).files, 10, "a figure below the floor stays");
        let unscaled = p(OK).unwrap();
        assert_eq!(unscaled.at_scale(0.01), unscaled);
    }
}
