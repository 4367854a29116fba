//! The per-workload bar charts (absolute, and in % of the baseline behind a toggle) and the
//! thread-scaling lines.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::charts::{self, Bar, BarOpts, Line, XAxis};
use super::escape::esc;
use crate::report::model::format::header;
use crate::report::model::report::Report;
use crate::report::model::section::{Row, Section};

fn direction(s: &Section) -> &'static str {
    if s.higher_is_better {
        "higher is better"
    } else {
        "lower is better"
    }
}

/// The key metric of every row as it was measured.
fn absolute(s: &Section, colors: &BTreeMap<String, usize>) -> Vec<Bar> {
    s.rows
        .iter()
        .filter_map(|row| {
            let m = row.metric(&s.key_metric)?;
            let shown = row.shown.get(&s.key_metric)?;
            Some(Bar {
                label: row.target.clone(),
                value: shown.value,
                ci: shown.ci95,
                reps: m.raw.clone(),
                color: colors.get(&row.target).copied().unwrap_or(0),
            })
        })
        .collect()
}

/// The key metric of every row in % of the baseline's shown figure (its geometric mean): the
/// comparison's difference and its 95 % interval (what the tables print), the repetitions
/// scaled by that figure. The baseline's own bar is 100 % with its interval relative to it; a
/// row with no comparison (too few runs) shows the ratio of the geometric means without an
/// interval. `None` when the baseline has no such figure.
fn relative(s: &Section, baseline: &str, colors: &BTreeMap<String, usize>) -> Option<Vec<Bar>> {
    let base = s.rows.iter().find(|r| r.target == baseline)?;
    let bm = base.shown_value(&s.key_metric)?;
    if !(bm.is_finite() && bm != 0.0) {
        return None;
    }
    let pct = |v: f64| v / bm * 100.0;
    let bar = |row: &Row| -> Option<Bar> {
        let m = row.metric(&s.key_metric)?;
        let shown = row.shown.get(&s.key_metric)?;
        let (value, ci) = if row.target == baseline {
            (100.0, shown.ci95.map(|(lo, hi)| (pct(lo), pct(hi))))
        } else {
            match m.vs_baseline.as_ref() {
                Some(c) => (
                    100.0 + c.pct_diff,
                    c.pct_ci95.map(|(lo, hi)| (100.0 + lo, 100.0 + hi)),
                ),
                // No comparison (too few runs): the ratio of the geometric means, no interval.
                None => (pct(shown.value), None),
            }
        };
        Some(Bar {
            label: row.target.clone(),
            value,
            ci,
            reps: m.raw.iter().map(|&v| pct(v)).collect(),
            color: colors.get(&row.target).copied().unwrap_or(0),
        })
    };
    let bars: Vec<Bar> = s.rows.iter().filter_map(bar).collect();
    (bars.len() > 1).then_some(bars)
}

/// One chart per section; with a baseline, a second in % of it, shown by the toggle.
pub(super) fn bar_charts(h: &mut String, r: &Report, colors: &BTreeMap<String, usize>) {
    let _ = write!(
        h,
        "<section id=\"bars\"><h2>Per workload</h2><p>Bars: geometric mean of the repetitions (its value \
         above, the figure the tables print and their % compares); dots: each repetition; error bars: the whole 95&nbsp;% confidence interval of that geometric mean.</p>\
         <input type=\"checkbox\" id=\"relative\" class=\"toggle\"><label for=\"relative\">\
         show in % of the baseline ({})</label><div class=\"charts\">",
        esc(&r.baseline)
    );
    for s in &r.sections {
        let bars = absolute(s, colors);
        if bars.is_empty() {
            continue;
        }
        let unit = format!("{} ({})", header(&s.key_metric), direction(s));
        let _ = write!(
            h,
            "<div class=\"abs\">{}</div>",
            charts::bars(&s.title(), &unit, bars, &BarOpts::default())
        );
        if let Some(bars) = relative(s, &r.baseline, colors) {
            let opts = BarOpts {
                suffix: " %",
                reference: Some(100.0),
                legend: Vec::new(),
            };
            let unit = format!("% of {} ({})", r.baseline, direction(s));
            let _ = write!(
                h,
                "<div class=\"rel\">{}</div>",
                charts::bars(&s.title(), &unit, bars, &opts)
            );
        }
    }
    h.push_str("</div></section>");
}

/// Key metric against the thread count, for every workload point run at several counts.
pub(super) fn scaling(h: &mut String, r: &Report, colors: &BTreeMap<String, usize>) {
    let mut by: BTreeMap<(String, String), Vec<&Section>> = BTreeMap::new();
    for s in &r.sections {
        by.entry((s.workload.clone(), s.point_label()))
            .or_default()
            .push(s);
    }
    let multi: Vec<_> = by.into_iter().filter(|(_, v)| v.len() > 1).collect();
    if multi.is_empty() {
        return;
    }
    h.push_str("<section id=\"scaling\"><h2>Thread scaling</h2><div class=\"charts\">");
    for ((w, v), secs) in multi {
        let key = secs[0].key_metric.clone();
        let mut lines: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        for s in &secs {
            for row in &s.rows {
                if let Some(m) = row.shown_value(&key) {
                    lines
                        .entry(row.target.clone())
                        .or_default()
                        .push((s.threads as f64, m));
                }
            }
        }
        let data = target_lines(lines, colors);
        let title = if v.is_empty() {
            w
        } else {
            format!("{w} [{v}]")
        };
        let _ = write!(
            h,
            "<div>{}</div>",
            charts::lines(&title, "threads", &header(&key), XAxis::Log2, &data)
        );
    }
    h.push_str("</div></section>");
}

/// One line per target, in its colour, its points in x order.
pub(super) fn target_lines(
    lines: BTreeMap<String, Vec<(f64, f64)>>,
    colors: &BTreeMap<String, usize>,
) -> Vec<Line> {
    lines
        .into_iter()
        .map(|(t, mut p)| {
            p.sort_by(|a, b| a.0.total_cmp(&b.0));
            Line {
                color: colors.get(&t).copied().unwrap_or(0),
                name: t,
                points: p,
            }
        })
        .collect()
}
