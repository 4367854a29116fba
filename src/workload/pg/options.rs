//! `[workload.pg]` options, parsed with serde (unknown keys refused) and checked here, so
//! the runner's `check_options` and `run` read them through the same path.

use serde::Deserialize;

use crate::workload::engine::auto::{self, Threads};
use crate::workload::engine::cache::{cache_of, Cache};
use crate::workload::options::{self, SizeValue};

/// The two pgbench scripts measured, as points.
pub const MODES: [&str; 2] = ["tpcb", "select-only"];

/// pgbench scale units per fsarena `--scale` unit: one pgbench scale unit is 100 000
/// accounts, about 16 MiB on disk, so `--scale 1` gives a ≈ 1 GiB database like `db`'s
/// default, and the default `--scale 0.01` gives pgbench scale 1 (≈ 16 MiB).
pub const SCALE_PER_UNIT: f64 = 64.0;
/// On-disk bytes of one pgbench scale unit (tables and indexes after `pgbench -i`), for
/// sizing `shared_buffers` before the database exists; the cache budget uses the real size.
pub const BYTES_PER_SCALE: u64 = 16 << 20;

/// The top of the `threads = "auto"` range unless `auto_max_threads` says otherwise.
pub const AUTO_MAX: usize = 32;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PgOptions {
    /// Seconds each pgbench run lasts.
    seconds: Option<f64>,
    /// pgbench scale factor (overrides the one derived from `--scale`).
    pgbench_scale: Option<i64>,
    /// Page cache the server may hold: `"25%"` of the database, a size, or `"off"`.
    cache: Option<SizeValue>,
    /// PostgreSQL's own buffer pool, a size.
    shared_buffers: Option<SizeValue>,
    /// Which of [`MODES`] to measure.
    modes: Option<Vec<String>>,
    /// pgbench clients: a number, or `"auto"` (read by [`crate::workload::engine::auto`]);
    /// absent, the cell's `--threads`.
    threads: Option<toml::Value>,
    /// `threads = "auto"`: the p99 transaction latency limit, ms (read by
    /// [`crate::workload::engine::auto`]).
    p99_limit_ms: Option<toml::Value>,
    /// `threads = "auto"`: the top of the range searched.
    auto_max_threads: Option<i64>,
    /// `threads = "auto"`: each trial's length, seconds (whole seconds for pgbench's `-T`).
    auto_trial_seconds: Option<f64>,
    /// Also measure every mode with the engine's own maintenance running (a `MODE-maintenance`
    /// point): aggressive autovacuum, and a CHECKPOINT every `maintenance_interval_ms`.
    maintenance: Option<bool>,
    /// `maintenance = true`: ms between the CHECKPOINTs issued during the measured phase.
    maintenance_interval_ms: Option<f64>,
    /// Another target of the plan for the WAL (`initdb --waldir`); the runner checks the
    /// name and hands the workload a directory on a fresh file system of it.
    #[allow(dead_code)]
    log_target: Option<String>,
}

/// Resolved options.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub seconds: f64,
    pub pgbench_scale: u32,
    pub cache: Cache,
    /// `None`: derived from the cache budget (see [`Config::shared_buffers_bytes`]).
    pub shared_buffers: Option<u64>,
    pub modes: Vec<&'static str>,
    /// Clients: `None` is the cell's `--threads`.
    pub threads: Option<Threads>,
    /// `maintenance = true`: the interval between CHECKPOINTs of the `-maintenance` points.
    pub maintenance: Option<std::time::Duration>,
}

impl Config {
    /// `shared_buffers`: as given, else an eighth of the page cache budget the database
    /// size implies (1 MiB to 128 MiB), so PostgreSQL's own pool cannot hold the database
    /// either; PostgreSQL's default (128 MiB) without a cache limit.
    pub fn shared_buffers_bytes(&self) -> u64 {
        if let Some(b) = self.shared_buffers {
            return b;
        }
        let est = u64::from(self.pgbench_scale) * BYTES_PER_SCALE;
        match self.cache.bytes(est, 8192) {
            None => 128 << 20,
            Some(b) => (b / 8).clamp(1 << 20, 128 << 20),
        }
    }
}

/// The one wording of a bad `[workload.pg]` value: which key, what was given, what is valid.
fn bad(k: &str, v: &dyn std::fmt::Display, want: &str) -> String {
    format!("[workload.pg]: `{k}` = {v} is not valid; expected {want}")
}

/// Parses and checks a `[workload.pg]` table; `scale` (the data set's) only shapes the
/// default pgbench scale.
pub fn config(table: &toml::Table, scale: f64) -> Result<Config, String> {
    let o = options::parse::<PgOptions>("pg", table)?;
    let seconds = match o.seconds {
        None => 5.0,
        Some(s) if s.is_finite() && (1.0..=86_400.0).contains(&s) => s,
        Some(s) => return Err(bad("seconds", &s, "seconds from 1 to 86400")),
    };
    let pgbench_scale = match o.pgbench_scale {
        None => {
            let s = if scale.is_finite() && scale > 0.0 {
                scale
            } else {
                0.01
            };
            (s * SCALE_PER_UNIT).round().clamp(1.0, 100_000.0) as u32
        }
        Some(n) => u32::try_from(n)
            .ok()
            .filter(|n| (1..=100_000).contains(n))
            .ok_or_else(|| bad("pgbench_scale", &n, "an integer from 1 to 100000"))?,
    };
    let shared_buffers = match &o.shared_buffers {
        None => None,
        Some(v) => Some(
            v.whole_bytes()
                .filter(|b| (128 << 10..=1 << 40).contains(b))
                .ok_or_else(|| bad("shared_buffers", v, "a size from 128k, such as \"16m\""))?,
        ),
    };
    let raw = auto::Raw {
        threads: o.threads.as_ref(),
        p99_limit_ms: o.p99_limit_ms.as_ref(),
        auto_max_threads: o.auto_max_threads,
        auto_trial_seconds: o.auto_trial_seconds,
    };
    Ok(Config {
        maintenance: maintenance(o.maintenance, o.maintenance_interval_ms, seconds)?,
        threads: auto::parse("pg", &raw, AUTO_MAX)?,
        seconds,
        pgbench_scale,
        cache: cache_of("pg", o.cache.as_ref())?,
        shared_buffers,
        modes: modes(o.modes.as_deref())?,
    })
}

/// The modes measured (all of [`MODES`] when absent), each once, at least one.
fn modes(list: Option<&[String]>) -> Result<Vec<&'static str>, String> {
    let Some(list) = list else {
        return Ok(MODES.to_vec());
    };
    let mut out = Vec::new();
    for m in list {
        let Some(known) = MODES.iter().find(|k| *k == m) else {
            return Err(bad("modes", &format!("{list:?}"), &MODES.join(", ")));
        };
        if !out.contains(known) {
            out.push(*known);
        }
    }
    if out.is_empty() {
        return Err(bad("modes", &"[]", "at least one mode"));
    }
    Ok(out)
}

/// The CHECKPOINT interval of the `-maintenance` points: only with `maintenance = true`,
/// from 10 ms to the run's length (by default a quarter of it, at most a second).
fn maintenance(
    on: Option<bool>,
    interval_ms: Option<f64>,
    seconds: f64,
) -> Result<Option<std::time::Duration>, String> {
    match (on, interval_ms) {
        (Some(true), None) => Ok(Some(std::time::Duration::from_secs_f64(
            (seconds / 4.0).min(1.0),
        ))),
        (Some(true), Some(ms)) if ms.is_finite() && ms >= 10.0 && ms <= seconds * 1000.0 => {
            Ok(Some(std::time::Duration::from_secs_f64(ms / 1000.0)))
        }
        (Some(true), Some(ms)) => Err(bad(
            "maintenance_interval_ms",
            &ms,
            "ms from 10 to the run's length",
        )),
        (_, Some(_)) => {
            Err("[workload.pg]: `maintenance_interval_ms` needs `maintenance = true`".into())
        }
        (_, None) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(src: &str, scale: f64) -> Result<Config, String> {
        config(&src.parse().unwrap(), scale)
    }

    #[test]
    fn defaults_follow_the_scale() {
        let c = cfg("", 0.01).unwrap();
        assert_eq!(c.pgbench_scale, 1);
        assert_eq!(c.seconds, 5.0);
        assert_eq!(c.cache, Cache::Fraction(0.25));
        assert_eq!(c.modes, MODES.to_vec());
        // 16 MiB database, 4 MiB budget, an eighth of it clamped up to 1 MiB.
        assert_eq!(c.shared_buffers_bytes(), 1 << 20);
        assert_eq!(cfg("", 1.0).unwrap().pgbench_scale, 64);
        assert_eq!(cfg("", 1.0).unwrap().shared_buffers_bytes(), 32 << 20);
        assert_eq!(
            cfg("cache = \"off\"", 1.0).unwrap().shared_buffers_bytes(),
            128 << 20
        );
        let c = cfg(
            "modes = [\"select-only\"]\npgbench_scale = 3\nshared_buffers = \"2m\"",
            0.01,
        )
        .unwrap();
        assert_eq!(
            (c.modes.clone(), c.pgbench_scale, c.shared_buffers_bytes()),
            (vec!["select-only"], 3, 2 << 20)
        );
    }

    #[test]
    fn bad_values_are_one_line_errors() {
        for bad in [
            "seconds = 0",
            "seconds = \"5\"",
            "pgbench_scale = 0",
            "cache = \"lots\"",
            "shared_buffers = \"1k\"",
            "modes = [\"tpcc\"]",
            "modes = []",
            "clients = 4",
            "threads = \"fast\"",
            "threads = \"auto\"\np99_limit_ms = -1",
            "p99_limit_ms = 5",
            "maintenance = \"yes\"",
            "maintenance_interval_ms = 100",
            "maintenance = true\nmaintenance_interval_ms = 0",
        ] {
            let e = cfg(bad, 0.01).unwrap_err();
            assert!(
                e.starts_with("[workload.pg]: ") && !e.contains('\n'),
                "{bad}: {e}"
            );
        }
    }
}
