//! The overall ranking across workloads, as the Phoronix Test Suite gives it: per target, the
//! geometric mean of its key-metric ratios to the baseline over every section both measured,
//! each ratio oriented so that above 1 is better. The geometric mean is the one average of
//! ratios that does not depend on which target is the baseline.
//!
//! Each ratio is of the figures the tables print, the runs' geometric means
//! ([`super::shown`]). Its interval comes from the log scale: the log of a geometric mean is
//! the mean of the logs, whose variance is sd(log)² / n, a log ratio's is the sum of its two means', and the mean
//! of k log ratios has the sum of their variances over k². An approximate 95 % interval;
//! none when any ratio rests on a single run. Memory targets (tmpfs) are listed, never ranked.
//! A result whose target's or baseline's row read from memory where it asked for the device
//! (`Warning::ReadsFromMemory`: a FUSE daemon's cache), or whose direct writes a cache beneath
//! the file system absorbed (`Warning::WritesAbsorbed`), or whose fsyncs the device never
//! flushed (`Warning::FsyncsUnflushed`, counted with them), is left out and counted: its ratio
//! compares memory with a device, which would rank a FUSE file system on its cache.

use serde::Serialize;

use super::section::{Row, Section};
use crate::stats::Warning;

/// z of a two-sided 95 % normal interval.
const Z95: f64 = 1.959_963_985;

/// One target's place in the overall ranking.
#[derive(Debug, Clone, Serialize)]
pub struct Standing {
    pub target: String,
    /// 1 for the best disk target; `None` for a memory reference, which is never ranked.
    pub rank: Option<usize>,
    /// Geometric mean of the oriented ratios to the baseline (above 1: better).
    pub geomean: f64,
    /// Approximate 95 % interval of the geometric mean.
    pub ci95: Option<(f64, f64)>,
    /// How many sections (workload × variant × threads) the mean covers.
    pub sections: usize,
    /// Sections left out because its row or the baseline's read from memory.
    pub from_memory: usize,
    /// Sections left out because its row's or the baseline's direct writes were absorbed
    /// by a cache beneath the file system (and none of the two read from memory).
    pub writes_absorbed: usize,
    pub reference: bool,
}

/// log of the shown key figure (the geometric mean of the runs, [`super::shown`]: so the
/// ranking's ratios are the ratios of the figures the tables print) and its variance, or
/// `None` for a non-positive figure.
fn log_mean(row: &Row, key: &str) -> Option<(f64, Option<f64>)> {
    let m = row.metric(key)?;
    let mean = row.shown_value(key)?;
    if !(mean > 0.0 && mean.is_finite()) {
        return None;
    }
    let n = m.raw.len();
    let var = crate::stats::log_values(&m.raw)
        .filter(|_| n >= 2)
        .map(|l| {
            let ml = l.iter().sum::<f64>() / n as f64;
            l.iter().map(|x| (x - ml).powi(2)).sum::<f64>() / (n - 1) as f64 / n as f64
        })
        .or_else(|| (n >= 2).then(|| (m.summary.stddev / m.summary.mean).powi(2) / n as f64))
        .filter(|v| v.is_finite());
    Some((mean.ln(), var))
}

/// Why a section is left out of the ranking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LeftOut {
    /// Reads served from memory where the device was asked for.
    ReadFromMemory,
    /// Direct or synced writes a cache beneath the file system absorbed.
    WritesAbsorbed,
}

/// Why the rows `rows` (a target's and the baseline's) leave their section out of the
/// ranking, reads from memory first; `None` when their figures are the device's.
fn left_out(rows: [&Row; 2]) -> Option<LeftOut> {
    let has = |f: fn(&Warning) -> bool| rows.iter().any(|r| r.warnings.iter().any(f));
    if has(|w| matches!(w, Warning::ReadsFromMemory { .. })) {
        Some(LeftOut::ReadFromMemory)
    } else if has(|w| {
        matches!(
            w,
            Warning::WritesAbsorbed { .. } | Warning::FsyncsUnflushed { .. }
        )
    }) {
        Some(LeftOut::WritesAbsorbed)
    } else {
        None
    }
}

/// Ranks every target measured beside the baseline; best first, references last.
pub fn rank(sections: &[Section], baseline: &str) -> Vec<Standing> {
    let mut names: Vec<(String, bool)> = Vec::new();
    for s in sections {
        for r in &s.rows {
            if !names.iter().any(|(n, _)| *n == r.target) {
                names.push((r.target.clone(), r.reference));
            }
        }
    }
    let mut out: Vec<Standing> = Vec::new();
    for (name, reference) in names {
        let mut logs = Vec::new();
        let mut vars: Option<Vec<f64>> = Some(Vec::new());
        let (mut from_memory, mut writes_absorbed) = (0, 0);
        for s in sections {
            let key = &s.key_metric;
            let (Some(b), Some(t)) = (
                s.rows.iter().find(|r| r.target == baseline),
                s.rows.iter().find(|r| r.target == name),
            ) else {
                continue;
            };
            if let Some(why) = left_out([b, t]) {
                match why {
                    LeftOut::ReadFromMemory => from_memory += 1,
                    LeftOut::WritesAbsorbed => writes_absorbed += 1,
                }
                continue;
            }
            let (Some((lb, vb)), Some((lt, vt))) = (log_mean(b, key), log_mean(t, key)) else {
                continue;
            };
            logs.push(if s.higher_is_better { lt - lb } else { lb - lt });
            if name == baseline {
                continue;
            }
            match (vb, vt, vars.as_mut()) {
                (Some(vb), Some(vt), Some(v)) => v.push(vb + vt),
                _ => vars = None,
            }
        }
        if logs.is_empty() {
            continue;
        }
        let k = logs.len() as f64;
        let mean = logs.iter().sum::<f64>() / k;
        let ci95 = if name == baseline {
            None
        } else {
            vars.filter(|v| v.len() == logs.len()).map(|v| {
                let se = v.iter().sum::<f64>().sqrt() / k;
                ((mean - Z95 * se).exp(), (mean + Z95 * se).exp())
            })
        };
        out.push(Standing {
            target: name,
            rank: None,
            geomean: mean.exp(),
            ci95,
            sections: logs.len(),
            from_memory,
            writes_absorbed,
            reference,
        });
    }
    out.sort_by(|a, b| {
        a.reference.cmp(&b.reference).then(
            b.geomean
                .partial_cmp(&a.geomean)
                .unwrap_or(std::cmp::Ordering::Equal),
        )
    });
    let mut n = 0;
    for s in out.iter_mut().filter(|s| !s.reference) {
        n += 1;
        s.rank = Some(n);
    }
    out
}
