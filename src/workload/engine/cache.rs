//! The `cache` option of the database workloads: how much page cache the engine's memory
//! cgroup allows it, parsed the same way for `db` and `pg`.

use std::fmt::Display;

use crate::provision::cgroup;
use crate::workload::options::SizeValue;

/// The page cache the engine's memory cgroup allows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cache {
    /// No cgroup: the engine may use all the memory the host has.
    Off,
    /// A fixed number of bytes.
    Bytes(u64),
    /// A fraction (0–1] of the database file's size as built.
    Fraction(f64),
}

impl Cache {
    /// The budget in bytes for a database of `db_bytes`, or `None` when off. At least one
    /// database page (`page`), so the engine can always make progress.
    pub fn bytes(self, db_bytes: u64, page: u32) -> Option<u64> {
        match self {
            Cache::Off => None,
            Cache::Bytes(b) => Some(b),
            Cache::Fraction(f) => Some((db_bytes as f64 * f) as u64),
        }
        .map(|b| b.max(u64::from(page)))
    }

    /// The limit as a report states it beside the database's size (`None` when off: then
    /// whether the database fits in RAM is what matters).
    pub fn said(self) -> Option<String> {
        match self {
            Cache::Off => None,
            Cache::Bytes(b) => Some(format!(
                "page cache held to {}",
                crate::plan::size::human_bytes(b)
            )),
            Cache::Fraction(f) => Some(format!("page cache held to {} % of it", f * 100.0)),
        }
    }

    /// Why this host cannot hold workload `workload`'s engine to the limit (it has no
    /// memory cgroup), in one line naming its table: checked with its options, before
    /// anything is provisioned.
    pub fn check_host(self, workload: &str) -> Result<(), String> {
        if self != Cache::Off {
            cgroup::parent().map_err(|e| {
                format!("[workload.{workload}]: {e}; set `cache = \"off\"` to run without a cache limit")
            })?;
        }
        Ok(())
    }
}

/// Parses a `cache` option value: absent means a quarter of the database. Errors name the
/// `[workload.NAME]` table.
pub fn cache_of(workload: &str, v: Option<&SizeValue>) -> Result<Cache, String> {
    let bad = |v: &dyn Display| {
        format!("[workload.{workload}]: `cache` = {v} is not valid; expected {CACHE_WANT}")
    };
    let Some(v) = v else {
        return Ok(Cache::Fraction(0.25));
    };
    match v.text() {
        Some(s) if s.eq_ignore_ascii_case("off") => Ok(Cache::Off),
        Some(s) if s.ends_with('%') => s[..s.len() - 1]
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|p| p.is_finite() && *p > 0.0 && *p <= 1000.0)
            .map(|p| Cache::Fraction(p / 100.0))
            .ok_or_else(|| bad(v)),
        _ => v.whole_bytes().map(Cache::Bytes).ok_or_else(|| bad(v)),
    }
}

const CACHE_WANT: &str =
    "a share of the database such as \"25%\", a size such as \"64m\", or \"off\"";
