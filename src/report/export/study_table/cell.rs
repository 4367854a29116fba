//! One cell of a study table: a configuration's figure for one metric, with its mark and its
//! difference against the baseline. The table and its groups both write cells, so the cell
//! sits below them.

use std::fmt::Write;

use crate::report::model::format::{mean_ci, pct_text, value};
use crate::report::model::section::{Mark, Section};
use crate::report::model::shown::side_pct;

/// The cell of target `ti` for `metric`: the key metric with its interval and mark, a side
/// column's median, and the % difference against `baseline` beside either ("≈" where it is
/// not a decided difference).
pub fn cell(s: &Section, metric: &str, ti: usize, baseline: &str) -> String {
    let row = &s.rows[ti];
    let (Some(m), Some(shown)) = (row.metric(metric), row.shown.get(metric)) else {
        return "—".into();
    };
    let key = metric == s.key_metric;
    // The key metric with its interval, as every table prints it; a side column's median.
    let mut c = if key {
        mean_ci(metric, shown)
    } else {
        value(metric, shown.value)
    };
    if key {
        match row.mark {
            Some(Mark::Best) => c.push_str(" ✓"),
            Some(Mark::Worst) => c.push_str(" ✗"),
            None => {}
        }
    }
    if row.target != baseline {
        if let Some(v) = &m.vs_baseline {
            // The key metric's word is the run's adjusted verdict; a side metric's is its
            // own test (unadjusted), marked so a reader does not mistake noise for a result.
            let real = match &v.verdict {
                Some(verdict) => matches!(
                    verdict.decision,
                    crate::stats::Decision::Better | crate::stats::Decision::Worse
                ),
                None => v.significant,
            };
            // The key metric's difference as the tables write it (interval and ±? alike); a
            // side column's, the ratio of the medians shown.
            let pct = if key {
                Some(pct_text(v, m.summary.n))
            } else {
                let base = s.rows.iter().find(|r| r.target == baseline);
                side_pct(Some(shown), base.and_then(|b| b.shown.get(metric)))
                    .map(|p| format!("{p:+.1} %"))
            };
            if let Some(pct) = pct {
                let _ = write!(c, " ({pct}{})", if real { "" } else { ", ≈" });
            }
        }
    }
    c
}
