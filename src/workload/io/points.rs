//! One point of an io workload: its parameters as the runner stores them ([`Point::params`]),
//! its variant name, and the fio job it becomes.
//!
//! A point must survive a trip through the results file and back (`to_point` /
//! `from_point`), so `run` measures exactly what `points` listed.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use super::options::{Config, EngineChoice};
use crate::fio::{FioJob, IoEngine, Rw};
use crate::plan::size::short_label as size_label;
use crate::workload::error::WorkloadError;
use crate::workload::point::Point;

/// One point's parameters, as stored in [`Point::params`] and read back by `run`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct PointSpec {
    pub(super) rw: Rw,
    pub(super) rwmixread: u32,
    pub(super) bs: u64,
    pub(super) numjobs: u32,
    pub(super) iodepth: u32,
    pub(super) size_bytes: u64,
    pub(super) size_label: String,
    pub(super) direct: bool,
    pub(super) ioengine: EngineChoice,
}

impl PointSpec {
    /// The point's name in results: every parameter that varies, e.g.
    /// `randread-bs4k-j1-qd32-small-direct`.
    pub(super) fn variant(&self) -> String {
        let rw = match self.rw {
            Rw::RandRw => format!("randrw{}", self.rwmixread),
            r => r.as_str().to_string(),
        };
        let mut v = format!(
            "{rw}-bs{}-j{}-qd{}-{}-{}",
            size_label(self.bs),
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

    /// The point as the runner stores it.
    pub(super) fn to_point(&self) -> Point {
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

    /// Reads a stored point back; a missing or mistyped parameter is an option error.
    pub(super) fn from_point(point: &Point) -> Result<PointSpec, WorkloadError> {
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
    pub(super) fn filename(&self) -> String {
        format!("fsarena-io-{}.dat", self.size_bytes)
    }

    /// The measured fio job of this point with `engine` (resolved from `auto` by then).
    pub(super) fn job(&self, cfg: &Config, engine: IoEngine) -> FioJob {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_label() {
        assert_eq!(size_label(4096), "4k");
        assert_eq!(size_label(1 << 20), "1m");
        assert_eq!(size_label(512 << 10), "512k");
        assert_eq!(size_label(3 << 29), "1536m");
        assert_eq!(size_label(1000), "1000");
    }
}
