//! The one figure a report shows for a metric of a row, and which statistic it is, so a value
//! and the % beside it never disagree (a table once printed an arithmetic mean of 179.7k
//! against the baseline's 178.4k beside "-21.9 %", a ratio of geometric means).
//!
//! The rule, the same in every output:
//! * the **key metric** (what the decision rests on) shows the centre its % is computed from:
//!   the geometric mean of the runs on the ratio scale (every run positive), with the 95 %
//!   interval of that geometric mean; the arithmetic mean and its t interval on the
//!   difference scale (a run at or below 0) — see [`crate::stats::Scale`];
//! * **every other column** (the monitor's cache, CPU, device figures) shows the **median**:
//!   one run that filled 1.9 GB of cache otherwise made the mean of three runs four times
//!   the typical one; its % against the baseline is the ratio of the medians.
//!
//! Where a rank test decides a key metric (5 runs or more per side with an outlier or a
//! skew, [`crate::stats::choose_test`]), the % is that test's Hodges–Lehmann estimate (the
//! median of every pairwise ratio), which README's "read the result" says.

use serde::Serialize;

use crate::stats::estimators::{mean, stddev, t_quantile_975};
use crate::stats::{MetricStats, Scale};

/// Which statistic a shown value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Statistic {
    GeometricMean,
    /// The geometric mean of the runs adjusted to no CPU steal: the figure a steal-adjusted
    /// % is the ratio of ([`crate::stats::steal`]).
    GeometricMeanAtNoSteal,
    /// The geometric mean of the runs at the baseline's level, for a row measured in turn
    /// with it: the figure its paired % is the ratio of ([`MetricStats::in_turn`]).
    GeometricMeanInTurn,
    Mean,
    Median,
}

impl Statistic {
    pub fn as_str(self) -> &'static str {
        match self {
            Statistic::GeometricMean => "geometric mean",
            Statistic::GeometricMeanAtNoSteal => "geometric mean at no CPU steal",
            Statistic::GeometricMeanInTurn => "geometric mean at the baseline's level, in turn",
            Statistic::Mean => "mean",
            Statistic::Median => "median",
        }
    }
}

/// The figure shown for one metric of one row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Shown {
    pub statistic: Statistic,
    pub value: f64,
    /// The 95 % interval of `value` (none for a median, or a single run).
    pub ci95: Option<(f64, f64)>,
    pub n: usize,
}

/// The key metric's centre: the geometric mean when every run is positive and the
/// comparison (if any) is on the ratio scale, else the arithmetic mean.
/// For a row measured in turn with the baseline, it is the geometric mean of its runs at
/// the baseline's level ([`MetricStats::in_turn`]), so its paired % is the ratio of the two
/// figures shown. When the point's comparisons were adjusted for CPU steal, it is the
/// geometric mean of the runs at no steal, so the adjusted % beside it is the ratio of the two figures shown
/// (a row once read 0.448 s against the baseline's 0.454 s beside "+11.3 %").
pub fn centre(m: &MetricStats) -> Shown {
    if let Some(s) = m.in_turn.as_deref().and_then(geometric) {
        return Shown {
            statistic: Statistic::GeometricMeanInTurn,
            n: m.summary.n,
            ..s
        };
    }
    if let Some(s) = m.at_no_steal.as_deref().and_then(geometric) {
        return Shown {
            statistic: Statistic::GeometricMeanAtNoSteal,
            n: m.summary.n,
            ..s
        };
    }
    let difference = m
        .vs_baseline
        .as_ref()
        .is_some_and(|c| c.scale == Scale::Difference);
    centre_on(m, difference)
}

/// The geometric mean of `raw` with the 95 % interval of its log mean; `None` unless every
/// run is positive.
fn geometric(raw: &[f64]) -> Option<Shown> {
    let l = crate::stats::log_values(raw).filter(|l| !l.is_empty())?;
    let ml = mean(&l);
    let ci95 = (l.len() >= 2)
        .then(|| t_quantile_975(l.len() as f64 - 1.0))
        .flatten()
        .map(|t| {
            let half = t * stddev(&l, ml) / (l.len() as f64).sqrt();
            ((ml - half).exp(), (ml + half).exp())
        });
    Some(Shown {
        statistic: Statistic::GeometricMean,
        value: ml.exp(),
        ci95,
        n: l.len(),
    })
}

/// The key metric's centre for a comparison on the `difference` scale (the arithmetic mean)
/// or the ratio scale (the geometric mean, when every run is positive): `fsarena compare`
/// asks with its own B-against-A comparison's scale, not the run's against its baseline.
pub fn centre_on(m: &MetricStats, difference: bool) -> Shown {
    let geo = (!difference).then(|| geometric(&m.raw)).flatten();
    match geo {
        Some(s) => Shown {
            n: m.summary.n,
            ..s
        },
        None => Shown {
            statistic: Statistic::Mean,
            value: m.summary.mean,
            ci95: m.summary.ci95,
            n: m.summary.n,
        },
    }
}

/// A side column's figure: the median of the runs.
pub fn median(m: &MetricStats) -> Shown {
    Shown {
        statistic: Statistic::Median,
        value: m.summary.median,
        ci95: None,
        n: m.summary.n,
    }
}

/// The figure of `metric` in a section whose key metric is `key`.
pub fn of(key: &str, metric: &str, m: &MetricStats) -> Shown {
    if metric == key {
        centre(m)
    } else {
        median(m)
    }
}

/// The figure of a metric from its runs alone, outside a table (the curves of
/// [`crate::report::export::html::curves`]), by the tables' rule: the centre for the point's `key` metric (no
/// comparison, so the geometric mean when every run is positive), else the median. `None`
/// without a finite run.
pub fn of_runs(key: bool, raw: &[f64]) -> Option<Shown> {
    let m = MetricStats {
        summary: crate::stats::summarize(raw)?,
        raw: raw.to_vec(),
        reps: Vec::new(),
        vs_baseline: None,
        at_no_steal: None,
        in_turn: None,
    };
    Some(if key { centre(&m) } else { median(&m) })
}

/// The median of `raw`, the statistic every figure but the key metric shows (the tables'
/// side columns, the "why" lines of [`super::explain`]); `None` without a finite run.
pub fn median_of(raw: &[f64]) -> Option<f64> {
    of_runs(false, raw).map(|s| s.value)
}

/// The % a side column's figure differs from the baseline's: the ratio of the medians − 1.
/// `None` when the baseline's median is 0 or either is missing.
pub fn side_pct(candidate: Option<&Shown>, baseline: Option<&Shown>) -> Option<f64> {
    let (c, b) = (candidate?.value, baseline?.value);
    (b != 0.0 && b.is_finite() && c.is_finite()).then(|| (c / b - 1.0) * 100.0)
}

/// What the tables' figures are, said once beside the legend.
pub const RULE: &str = "key metric: geometric mean of the runs (its % against the baseline is \
     the ratio of geometric means), ± its 95 % interval; other columns and the why lines: \
     medians";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::summarize;

    fn stats(raw: &[f64]) -> MetricStats {
        MetricStats {
            summary: summarize(raw).unwrap(),
            raw: raw.to_vec(),
            reps: (0..raw.len() as u32).collect(),
            vs_baseline: None,
            at_no_steal: None,
            in_turn: None,
        }
    }

    #[test]
    fn the_key_metric_shows_the_geometric_mean_and_its_interval() {
        let s = centre(&stats(&[100.0, 400.0]));
        assert_eq!(s.statistic, Statistic::GeometricMean);
        assert!((s.value - 200.0).abs() < 1e-9);
        let (lo, hi) = s.ci95.unwrap();
        // Symmetric on the log scale: lo · hi = value².
        assert!((lo * hi / 40_000.0 - 1.0).abs() < 1e-9);
    }

    #[test]
    fn a_run_at_zero_falls_back_to_the_arithmetic_mean() {
        let s = centre(&stats(&[0.0, 4.0]));
        assert_eq!(s.statistic, Statistic::Mean);
        assert_eq!(s.value, 2.0);
    }

    #[test]
    fn a_side_column_shows_the_median_that_one_large_run_cannot_move() {
        let s = of(
            "files_per_s",
            "peak_cached_bytes",
            &stats(&[75.8, 1900.0, 116.0]),
        );
        assert_eq!((s.statistic, s.value), (Statistic::Median, 116.0));
    }
}
