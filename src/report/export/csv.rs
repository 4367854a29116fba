//! `summary.csv`: one row per target × workload × variant × threads × metric, for
//! spreadsheets and scripts. `decision` (better / worse / equivalent / undecided), `p_adjusted` (the run's two-stage step-up, as the legend names it),
//! the 90 % interval and `margin_pct` are filled for the key metric of each section, which is
//! what the adjusted family covers; side metrics leave them empty. `shown` is the figure the
//! tables print and `shown_statistic` which one it is (`report::shown`: the key metric's
//! geometric mean, at no CPU steal where the point was adjusted for it, the other columns'
//! medians). `pct_ci95_low`/`high` hold the interval at `ci_level` (0.95 unless the run
//! called the difference: then its false-coverage-adjusted level); `test` is the test that
//! decided and `df` its degrees of freedom; `steal_adjusted` whether the % is at equal steal.

use super::exporter::{Destination, ExportError, Exporter};
use crate::report::model::compare::Comparison;
use crate::report::model::report::Report;

pub const HEADER: [&str; 36] = [
    "workload",
    "variant",
    "threads",
    "target",
    "fs",
    "metric",
    "n",
    "mean",
    "median",
    "stddev",
    "cv",
    "min",
    "max",
    "ci95_low",
    "ci95_high",
    "pct_vs_baseline",
    "pct_ci95_low",
    "pct_ci95_high",
    "p_value",
    "test",
    "significant",
    "outliers",
    "reference",
    "decision",
    "p_adjusted",
    "pct_ci90_low",
    "pct_ci90_high",
    "margin_pct",
    "runs_to_decide",
    "dataset",
    "shown",
    "shown_statistic",
    "ci_level",
    "df",
    "steal_adjusted",
    "budget_stop",
];

pub fn render(r: &Report) -> Result<String, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(HEADER)?;
    let num = |v: Option<f64>| v.map(|x| format!("{x}")).unwrap_or_default();
    for s in &r.sections {
        for row in &s.rows {
            for (metric, m) in &row.metrics {
                let sm = &m.summary;
                let c = m.vs_baseline.as_ref();
                let v = c.and_then(|c| c.verdict.as_ref());
                w.write_record([
                    s.workload.clone(),
                    s.variant.clone(),
                    s.threads.to_string(),
                    row.target.clone(),
                    row.fs.clone(),
                    metric.clone(),
                    sm.n.to_string(),
                    num(Some(sm.mean)),
                    num(Some(sm.median)),
                    num(Some(sm.stddev)),
                    num(Some(sm.cv)),
                    num(Some(sm.min)),
                    num(Some(sm.max)),
                    num(sm.ci95.map(|c| c.0)),
                    num(sm.ci95.map(|c| c.1)),
                    num(c.map(|c| c.pct_diff)),
                    num(c.and_then(|c| c.pct_ci95).map(|x| x.0)),
                    num(c.and_then(|c| c.pct_ci95).map(|x| x.1)),
                    num(c.map(|c| c.p_value)),
                    c.map(|c| c.test.as_str().to_string()).unwrap_or_default(),
                    c.map(|c| c.significant.to_string()).unwrap_or_default(),
                    sm.outliers.len().to_string(),
                    row.reference.to_string(),
                    v.map(|v| v.decision.as_str().to_string())
                        .unwrap_or_default(),
                    num(v.map(|v| v.p_adjusted)),
                    num(v.and(c.and_then(|c| c.pct_ci90)).map(|x| x.0)),
                    num(v.and(c.and_then(|c| c.pct_ci90)).map(|x| x.1)),
                    num(v.map(|v| v.margin_pct)),
                    v.and_then(|v| v.runs_to_decide)
                        .filter(|&n| n > 0)
                        .map(|n| n.to_string())
                        .unwrap_or_default(),
                    s.dataset.clone().unwrap_or_default(),
                    num(row.shown.get(metric).map(|x| x.value)),
                    row.shown
                        .get(metric)
                        .map(|x| x.statistic.as_str().to_string())
                        .unwrap_or_default(),
                    num(v.and_then(|v| v.ci_level)),
                    num(c.and_then(|c| c.df)),
                    v.map(|v| v.steal.is_some().to_string()).unwrap_or_default(),
                    (row.budget_stop.as_ref())
                        .filter(|_| *metric == s.key_metric)
                        .map_or_else(String::new, |stop| stop.words.clone()),
                ])?;
            }
        }
    }
    let bytes = w.into_inner().map_err(|e| e.into_error())?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The comparison as CSV, one line per matched key metric.
pub fn render_comparison(c: &Comparison) -> Result<String, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "workload",
        "variant",
        "threads",
        "target",
        "metric",
        "value_a",
        "value_b",
        "statistic",
        "pct_diff",
        "decision",
        "p_adjusted",
        "runs_to_decide",
        "pct_ci_low",
        "pct_ci_high",
        "ci_level",
    ])?;
    let num = |v: Option<f64>| v.map(|x| format!("{x}")).unwrap_or_default();
    for r in &c.rows {
        w.write_record([
            r.workload.clone(),
            r.variant.clone(),
            r.threads.to_string(),
            r.target.clone(),
            r.metric.clone(),
            num(Some(r.value_a)),
            num(Some(r.value_b)),
            r.statistic.as_str().to_string(),
            num(r.pct_diff),
            r.decision
                .map(|d| d.as_str().to_string())
                .unwrap_or_default(),
            num(r.p_adjusted),
            r.runs_to_decide.map(|n| n.to_string()).unwrap_or_default(),
            num(r.pct_ci.map(|x| x.0)),
            num(r.pct_ci.map(|x| x.1)),
            num(r.ci_level),
        ])?;
    }
    let bytes = w.into_inner().map_err(|e| e.into_error())?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// `summary.csv`, and `--format csv`: the same text in both places.
pub struct Csv;

impl Exporter for Csv {
    fn name(&self) -> &'static str {
        "csv"
    }

    fn help(&self) -> Option<&'static str> {
        Some("One row per target × workload point × metric, as summary.csv holds it")
    }

    fn file(&self) -> Option<&'static str> {
        Some("summary.csv")
    }

    fn serialize(&self, r: &Report, _to: Destination) -> Result<String, ExportError> {
        Ok(render(r)?)
    }

    fn serialize_comparison(
        &self,
        c: &Comparison,
        _color: bool,
    ) -> Option<Result<String, ExportError>> {
        Some(render_comparison(c).map_err(Into::into))
    }
}
