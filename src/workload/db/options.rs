//! `[workload.db]` options: parsed with serde (unknown keys refused) and every value checked
//! here, so the runner's `check_options` refuses a bad plan before anything is provisioned
//! and `run` reads the options through the very same path.

use std::fmt::Display;
use std::time::Duration;

use serde::Deserialize;

// fio's size syntax (`4k`, `1.5g`, no fractional bytes; [`SizeValue::whole_bytes`]) is
// what `db` has always accepted.
use crate::workload::ctx::Ctx;
use crate::workload::engine::auto::{self, Search, Threads};
use crate::workload::engine::cache::{cache_of, Cache};
use crate::workload::error::WorkloadError;
use crate::workload::options::{self, SizeValue};

pub(super) const MIB: u64 = 1 << 20;

/// Transaction type names, in the order of [`Op`] and of the `mix` weights.
pub(super) const OPS: [&str; 4] = ["insert", "delete", "replace", "read"];
const CHECKPOINT_MODES: [&str; 4] = ["passive", "full", "restart", "truncate"];

/// A transaction type. Declared beside the options because the `mix` weights are indexed
/// by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
    Insert = 0,
    Delete = 1,
    /// Rewrite an existing item's body and timestamp (Jetstress's "replace").
    Replace = 2,
    /// Read one item (checking its checksum) and list the newest items of its folder.
    Read = 3,
}

impl Op {
    pub(super) const ALL: [Op; 4] = [Op::Insert, Op::Delete, Op::Replace, Op::Read];
    pub(super) fn name(self) -> &'static str {
        OPS[self as usize]
    }
}

/// The `[workload.db]` table as written: each key's type is what the plan file may hold
/// (a size as a number or a string, `threads` a number or `"auto"`);
/// [`DbOptions::resolve`] checks the values and fills in the defaults.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct DbOptions {
    /// Database size to build: bytes or a size such as `"1g"`.
    size: Option<SizeValue>,
    page_size: Option<SizeValue>,
    /// A number of MiB or a size such as `"64m"`.
    cache_size: Option<SizeValue>,
    /// A number of worker threads, or `"auto"` (read by [`super::auto`]).
    threads: Option<toml::Value>,
    /// `threads = "auto"`: the p99 read latency limit, ms (read by [`super::auto`]).
    p99_limit_ms: Option<toml::Value>,
    /// `threads = "auto"`: the top of the range searched.
    auto_max_threads: Option<i64>,
    /// `threads = "auto"`: each trial's length, seconds.
    auto_trial_seconds: Option<f64>,
    /// Seconds.
    duration: Option<f64>,
    /// Weights by transaction type.
    mix: Option<MixWeights>,
    lazy_commit_pct: Option<i64>,
    checkpoint_interval_ms: Option<i64>,
    checkpoint_mode: Option<String>,
    busy_timeout_ms: Option<i64>,
    /// The page cache the engine may hold: `"25%"` of the database (the default), a size
    /// such as `"64m"`, or `"off"` (no memory cgroup).
    cache: Option<SizeValue>,
    /// Measure a `maintenance` variant beside the normal one.
    maintenance: Option<bool>,
    /// The maintenance variant's period, ms.
    maintenance_interval_ms: Option<i64>,
    /// Accepted, whatever it holds, only to be refused with its reason (see
    /// [`LOG_TARGET_REFUSED`]).
    log_target: Option<serde::de::IgnoredAny>,
}

/// `mix = { insert = 4, read = 6 }`: relative weights, in the order of [`OPS`].
#[derive(Debug, Default, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table of weights by transaction type: insert, delete, replace, read"
)]
struct MixWeights {
    insert: Option<i64>,
    delete: Option<i64>,
    replace: Option<i64>,
    read: Option<i64>,
}

/// Why `db` has no `log_target` (pg does).
pub const LOG_TARGET_REFUSED: &str = "[workload.db]: `log_target` is not offered for SQLite: \
     it keeps its WAL beside the database file (DB-wal, made again on every checkpoint and \
     close), so the log cannot live on another file system; the `pg` workload offers it";

/// Resolved options.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Config {
    /// Database size to build, bytes.
    pub(super) size: u64,
    pub(super) page_size: u32,
    /// SQLite page cache per connection (`PRAGMA cache_size`), bytes.
    pub(super) cache_bytes: u64,
    /// Worker threads; under `threads = "auto"` the default until the search sets it.
    pub(super) threads: usize,
    /// `threads = [16, 8, "auto"]`: one point per entry (empty for a single count).
    pub(super) choices: Vec<Threads>,
    /// `threads = "auto"`: search for the count before the measured phase.
    pub(super) auto: Option<Search>,
    pub(super) duration: Duration,
    /// Relative weights of insert, delete, replace, read.
    pub(super) mix: [u32; 4],
    /// Share of write transactions committed with `synchronous=NORMAL` (no WAL fsync).
    pub(super) lazy_commit_pct: u32,
    /// Background checkpoint period; `None` turns checkpoints off (the WAL only grows).
    pub(super) checkpoint_interval: Option<Duration>,
    /// `wal_checkpoint` mode, upper case. RESTART by default: PASSIVE alone never completes
    /// while readers keep arriving, so the WAL would grow without bound (SQLite's
    /// "checkpoint starvation"); RESTART briefly holds off writers and lets the next one
    /// start the WAL over, which keeps it bounded, as an engine's maintenance would.
    pub(super) checkpoint_mode: &'static str,
    pub(super) busy_timeout: Duration,
    pub(super) cache: Cache,
    /// `maintenance = true`: the database is built with `auto_vacuum = INCREMENTAL` (both
    /// variants, so the file format is the same) and a `maintenance` point is measured.
    pub(super) maintenance: bool,
    /// The maintenance thread's period; `Some` only in the `maintenance` variant's run.
    pub(super) maintain: Option<Duration>,
    pub(super) maintenance_interval: Duration,
}

impl Config {
    /// The run's options: the table checked by [`config`], defaults scaled by the data set.
    pub(super) fn from_ctx(ctx: &Ctx) -> Result<Config, WorkloadError> {
        config(ctx.options, ctx.dataset.scale).map_err(WorkloadError::Option)
    }
}

/// A thread choice's point name: `16 threads`, or `auto-tuned`.
pub(super) fn label(t: &Threads) -> String {
    match t {
        Threads::Fixed(n) => format!("{n} threads"),
        Threads::Auto(_) => "auto-tuned".into(),
    }
}

/// Parses and checks a `[workload.db]` table. `scale` (the data set's) only shapes the
/// defaults of `size` and `duration`, so whether a table is valid does not depend on it.
pub(super) fn config(table: &toml::Table, scale: f64) -> Result<Config, String> {
    options::parse::<DbOptions>("db", table)?.resolve(scale)
}

impl DbOptions {
    fn resolve(self, scale: f64) -> Result<Config, String> {
        if self.log_target.is_some() {
            return Err(LOG_TARGET_REFUSED.to_string());
        }
        let scale = match scale {
            s if s.is_finite() && s > 0.0 => s,
            _ => 1.0,
        };
        let (size, page_size, cache_bytes) = self.sizes(scale)?;
        let choices = self.thread_choices()?;
        let (threads, auto) = match choices.first() {
            None => (12, None),
            Some(Threads::Fixed(n)) => (*n, None),
            Some(Threads::Auto(s)) => (12, Some(*s)),
        };
        // Default 10 s, shortened at small scales (≈ 3 s at 0.01) so a quick plan stays quick.
        let duration = match self.duration {
            None => (10.0 * (10.0 * scale).sqrt()).clamp(2.0, 10.0),
            Some(s) if s.is_finite() && s > 0.0 && s <= 86_400.0 => s,
            Some(s) => return Err(bad("duration", s, "seconds > 0")),
        };
        let mix = mix(self.mix.as_ref())?;
        if auto.is_some() && mix[Op::Read as usize] == 0 {
            return Err(
                "[workload.db]: `threads = \"auto\"` searches by read latency, and `mix` has no reads"
                    .into(),
            );
        }
        let (maintenance, maintenance_interval) = self.maintenance(duration)?;
        let (lazy_commit_pct, checkpoint_interval, checkpoint_mode, busy_timeout) =
            self.commits()?;
        Ok(Config {
            maintenance,
            maintain: None,
            maintenance_interval,
            auto,
            cache: cache_of("db", self.cache.as_ref())?,
            size,
            page_size,
            cache_bytes,
            threads,
            choices: if matches!(self.threads, Some(toml::Value::Array(_))) {
                choices
            } else {
                Vec::new()
            },
            duration: Duration::from_secs_f64(duration),
            mix,
            lazy_commit_pct,
            checkpoint_interval,
            checkpoint_mode,
            busy_timeout,
        })
    }

    /// The worker counts asked for: none, one (`threads = 16` or `"auto"`), or each entry of a
    /// list (`threads = [16, 8, "auto"]`, Jetstress's manual and auto-tuned runs side by side,
    /// one point each). The search options belong to the list's `"auto"` entry.
    fn thread_choices(&self) -> Result<Vec<Threads>, String> {
        let one = |v: Option<&toml::Value>, search: bool| {
            let raw = auto::Raw {
                threads: v,
                p99_limit_ms: self.p99_limit_ms.as_ref().filter(|_| search),
                auto_max_threads: self.auto_max_threads.filter(|_| search),
                auto_trial_seconds: self.auto_trial_seconds.filter(|_| search),
            };
            auto::parse("db", &raw, 64)
        };
        let Some(toml::Value::Array(list)) = &self.threads else {
            return Ok(one(self.threads.as_ref(), true)?.into_iter().collect());
        };
        let is_auto = |v: &toml::Value| v.as_str() == Some("auto");
        if list.is_empty() || !list.iter().any(is_auto) {
            // Without an "auto" entry the search options are refused as for a single count.
            one(None, true)?;
        }
        let mut out = Vec::new();
        for v in list {
            let t = one(Some(v), is_auto(v))?.ok_or_else(|| bad("threads", "[]", "a count"))?;
            if out.iter().any(|o| label(o) == label(&t)) {
                return Err(bad("threads", v, "each count once"));
            }
            out.push(t);
        }
        if out.is_empty() {
            return Err(bad(
                "threads",
                "[]",
                "a list of counts or \"auto\", not empty",
            ));
        }
        Ok(out)
    }

    /// The database size (scaled default, at least 4 MiB), its page size, and SQLite's
    /// page cache per connection (32 to 256 MiB; a bare number is MiB), in bytes.
    fn sizes(&self, scale: f64) -> Result<(u64, u32, u64), String> {
        let size = match &self.size {
            None => ((1u64 << 30) as f64 * scale) as u64 / MIB * MIB,
            Some(v) => v
                .whole_bytes()
                .ok_or_else(|| bad("size", v, "a size such as 1g"))?,
        }
        .max(4 * MIB);
        let page_size = match &self.page_size {
            None => 32768,
            Some(v) => v
                .whole_bytes()
                .filter(|p| p.is_power_of_two() && (512..=65536).contains(p))
                .ok_or_else(|| bad("page_size", v, "a power of two from 512 to 65536"))?
                as u32,
        };
        let cache_bytes = match &self.cache_size {
            None => 64 * MIB,
            // A bare number is MiB; a string is a size.
            Some(SizeValue::Bytes(i)) => u64::try_from(*i).unwrap_or(0).saturating_mul(MIB),
            Some(v) => v.whole_bytes().unwrap_or(0),
        };
        if !(32 * MIB..=256 * MIB).contains(&cache_bytes) {
            return Err(format!(
                "[workload.db]: `cache_size` must be 32 to 256 MiB (a number of MiB or a size \
                 such as \"64m\"), got {}",
                self.cache_size
                    .as_ref()
                    .map(|v| v.to_string())
                    .unwrap_or_default()
            ));
        }
        Ok((size, page_size, cache_bytes))
    }

    /// How writes commit: the share committed lazily, the checkpoint period (`None`:
    /// off) and mode, and how long a transaction waits for a lock.
    fn commits(&self) -> Result<(u32, Option<Duration>, &'static str, Duration), String> {
        let lazy_commit_pct = int("lazy_commit_pct", self.lazy_commit_pct, 0, 100)?.unwrap_or(70);
        // Every 250 ms: at a few hundred MB/s of WAL (32 KiB pages) that keeps the WAL near
        // 100 MB, in the range of SQLite's own 1000-page auto-checkpoint.
        let checkpoint_ms = int(
            "checkpoint_interval_ms",
            self.checkpoint_interval_ms,
            0,
            3_600_000,
        )?
        .unwrap_or(250);
        let busy_ms = int("busy_timeout_ms", self.busy_timeout_ms, 1, 600_000)?.unwrap_or(2000);
        let checkpoint_mode = match self.checkpoint_mode.as_deref() {
            None => "RESTART",
            Some(v) => match v.to_ascii_lowercase().as_str() {
                "passive" => "PASSIVE",
                "full" => "FULL",
                "restart" => "RESTART",
                "truncate" => "TRUNCATE",
                _ => {
                    return Err(bad(
                        "checkpoint_mode",
                        format!("{v:?}"),
                        &CHECKPOINT_MODES.join(", "),
                    ))
                }
            },
        };
        Ok((
            lazy_commit_pct,
            (checkpoint_ms > 0).then(|| Duration::from_millis(u64::from(checkpoint_ms))),
            checkpoint_mode,
            Duration::from_millis(u64::from(busy_ms)),
        ))
    }

    /// Whether the `maintenance` variant is measured, and its period: given only with
    /// `maintenance = true`, shorter than the phase (by default four passes in it, so the
    /// variant always maintains).
    fn maintenance(&self, duration: f64) -> Result<(bool, Duration), String> {
        let maintenance = self.maintenance.unwrap_or(false);
        let maint_ms = int(
            "maintenance_interval_ms",
            self.maintenance_interval_ms,
            1,
            3_600_000,
        )?;
        if maint_ms.is_some() && !maintenance {
            return Err(
                "[workload.db]: `maintenance_interval_ms` applies only with `maintenance = true`"
                    .into(),
            );
        }
        let interval = maint_ms.map_or(
            Duration::from_secs_f64(duration / 4.0).min(Duration::from_millis(500)),
            |ms| Duration::from_millis(u64::from(ms)),
        );
        if interval.as_secs_f64() >= duration {
            return Err(format!(
                "[workload.db]: `maintenance_interval_ms` = {} is not shorter than the {duration} s phase",
                interval.as_millis()
            ));
        }
        Ok((maintenance, interval))
    }
}

/// The `mix` weights in [`OPS`] order (absent: 40/20/5/35); not all zero.
fn mix(weights: Option<&MixWeights>) -> Result<[u32; 4], String> {
    let Some(w) = weights else {
        return Ok([40, 20, 5, 35]);
    };
    let mut mix = [0u32; 4];
    for (i, (name, v)) in OPS
        .iter()
        .zip([w.insert, w.delete, w.replace, w.read])
        .enumerate()
    {
        mix[i] = int(name, v, 0, 1_000_000)?.unwrap_or(0);
    }
    if mix.iter().all(|&w| w == 0) {
        return Err("[workload.db]: `mix` weights are all zero".into());
    }
    Ok(mix)
}

fn bad(key: &str, v: impl Display, want: &str) -> String {
    format!("[workload.db]: `{key}` = {v} is not valid; expected {want}")
}

/// An integer option within `min..=max`, or `None` when absent.
fn int(key: &str, v: Option<i64>, min: u32, max: u32) -> Result<Option<u32>, String> {
    match v {
        None => Ok(None),
        Some(i) => u32::try_from(i)
            .ok()
            .filter(|i| (min..=max).contains(i))
            .map(Some)
            .ok_or_else(|| bad(key, i, &format!("an integer from {min} to {max}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::db::tests::Env;

    #[test]
    fn defaults_and_option_errors() {
        let dir = tempfile::tempdir().unwrap();
        let env = Env::new("");
        let cfg = Config::from_ctx(&env.ctx(dir.path())).unwrap();
        assert_eq!(cfg.size, 10 * MIB, "1 GiB × scale 0.01");
        assert_eq!(cfg.page_size, 32768);
        assert_eq!(cfg.cache_bytes, 64 * MIB);
        assert_eq!(cfg.threads, 12);
        assert!(cfg.duration > Duration::from_secs(2) && cfg.duration <= Duration::from_secs(10));
        assert_eq!(cfg.mix, [40, 20, 5, 35]);
        assert_eq!(cfg.lazy_commit_pct, 70);
        assert_eq!(cfg.checkpoint_interval, Some(Duration::from_millis(250)));
        assert_eq!(cfg.checkpoint_mode, "RESTART");
        assert_eq!(cfg.cache, Cache::Fraction(0.25));
        assert_eq!(cfg.cache.bytes(10 * MIB, 32768), Some(10 * MIB / 4));
        assert_eq!(Cache::Bytes(1).bytes(10 * MIB, 32768), Some(32768));
        assert_eq!(Cache::Off.bytes(10 * MIB, 32768), None);
        let mut env1 = Env::new("");
        env1.dataset.scale = 1.0;
        let cfg1 = Config::from_ctx(&env1.ctx(dir.path())).unwrap();
        assert_eq!(
            (cfg1.size, cfg1.duration),
            (1 << 30, Duration::from_secs(10))
        );

        let err = |opts: &str| Config::from_ctx(&Env::new(opts).ctx(dir.path())).unwrap_err();
        let msg = err("thread = 4").to_string();
        assert!(
            msg.contains("`thread`")
                && msg.contains("threads")
                && msg.contains("checkpoint_interval_ms")
        );
        for bad in [
            "cache_size = 16",
            "cache_size = \"1g\"",
            "page_size = 1000",
            "threads = 0",
            "duration = 0",
            "lazy_commit_pct = 101",
            "mix = { update = 5 }",
            "mix = { read = 0 }",
            "mix = 5",
            "size = \"big\"",
            "checkpoint_mode = \"lazy\"",
            "cache = \"0%\"",
            "cache = \"abc%\"",
            "cache = \"lots\"",
            "cache = 0",
            "cache = true",
        ] {
            assert!(
                matches!(
                    Config::from_ctx(&Env::new(bad).ctx(dir.path())),
                    Err(WorkloadError::Option(_))
                ),
                "{bad} accepted"
            );
        }
        let ok = Config::from_ctx(
            &Env::new("cache_size = \"128m\"\nmix = { read = 1 }").ctx(dir.path()),
        )
        .unwrap();
        assert_eq!((ok.cache_bytes, ok.mix), (128 * MIB, [0, 0, 0, 1]));
        for (src, want) in [
            ("cache = \"off\"", Cache::Off),
            ("cache = \"50%\"", Cache::Fraction(0.5)),
            ("cache = \"3m\"", Cache::Bytes(3 * MIB)),
            ("cache = 4096", Cache::Bytes(4096)),
        ] {
            let c = Config::from_ctx(&Env::new(src).ctx(dir.path())).unwrap();
            assert_eq!(c.cache, want, "{src}");
        }
    }

    /// The runner's check before provisioning goes through the same parse as `run`.
    #[test]
    fn check_options_refuses_bad_values_up_front() {
        use crate::workload::contract::Workload;
        let check = |src: &str| super::super::Db.check_options(&src.parse().unwrap());
        assert!(check("").is_ok());
        assert!(check("size = \"64m\"\nmix = { read = 3, insert = 1 }").is_ok());
        let e = check("thread = 4").unwrap_err();
        assert!(
            e.contains("`thread`") && e.contains("busy_timeout_ms"),
            "{e}"
        );
        for bad in [
            "threads = 0",
            "page_size = \"1.5k\"",
            "mix = { update = 1 }",
        ] {
            let e = check(bad).unwrap_err();
            assert!(
                e.starts_with("[workload.db]: ") && !e.contains('\n'),
                "{bad}: {e}"
            );
        }
    }
}
