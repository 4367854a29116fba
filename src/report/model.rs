//! The report model: built once from a results directory and the statistics, rendered by
//! every exporter. No exporter recomputes a statistic, so the terminal, the files and the
//! HTML page always agree.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::plan::Plan;
use crate::results::store::Loaded;
use crate::results::{HostFacts, Measurement, Status};
use crate::stats::{self, Group, MetricStats, Warning};
use crate::workload;

/// The version of `summary.json`'s schema, which is this model's shape (docs/summary-schema.md).
/// Bump it on any change to the model that could break a reader: a field removed, renamed or
/// changed in meaning.
pub const SCHEMA_VERSION: u32 = 1;

/// Significance level for every "is it real" decision in a report.
pub const ALPHA: f64 = 0.05;

/// Best (✓) or worst (✗), only when the difference to the next one is significant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mark {
    Best,
    Worst,
}

/// One target's row in a section.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub target: String,
    pub fs: String,
    pub ok: usize,
    pub failed: Vec<(u32, Status, Option<String>)>,
    pub invalid: usize,
    pub mark: Option<Mark>,
    pub metrics: BTreeMap<String, MetricStats>,
    pub warnings: Vec<Warning>,
}

impl Row {
    pub fn metric(&self, name: &str) -> Option<&MetricStats> {
        self.metrics.get(name)
    }
    pub fn mean(&self, name: &str) -> Option<f64> {
        self.metrics.get(name).map(|m| m.summary.mean)
    }
}

/// One workload point at one thread count: the unit users compare.
#[derive(Debug, Clone, Serialize)]
pub struct Section {
    pub workload: String,
    pub variant: String,
    pub threads: u32,
    pub key_metric: String,
    pub higher_is_better: bool,
    /// Extra metrics worth a column for this workload.
    pub columns: Vec<String>,
    pub rows: Vec<Row>,
    /// One sentence: who won and by how much, or that there is no real difference.
    pub decision: String,
}

impl Section {
    pub fn title(&self) -> String {
        let mut t = self.workload.clone();
        if !self.variant.is_empty() {
            t.push_str(&format!(" [{}]", self.variant));
        }
        t.push_str(&format!(
            ", {} thread{}",
            self.threads,
            if self.threads == 1 { "" } else { "s" }
        ));
        t
    }
}

/// Everything a report shows.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub schema_version: u32,
    pub host: HostFacts,
    pub baseline: String,
    /// Why the run is incomplete, when it is.
    pub incomplete: Option<String>,
    pub sections: Vec<Section>,
    /// results.jsonl lines that could not be read: (line number, reason).
    pub skipped_lines: Vec<(usize, String)>,
    #[serde(skip)]
    pub measurements: Vec<Measurement>,
}

/// Columns shown beside the key metric: what the workload declares.
fn columns_for(workload: &str) -> Vec<String> {
    workload::by_name(workload)
        .map_or(workload::FILE_COLUMNS, |w| w.columns())
        .iter()
        .map(|s| s.to_string())
        .collect()
}

fn key_of(workload: &str) -> (String, bool) {
    workload::by_name(workload)
        .map(|w| {
            let (k, h) = w.key_metric();
            (k.to_string(), h)
        })
        .unwrap_or_else(|| ("seconds".to_string(), false))
}

/// Marks the best and worst rows when each differs significantly from its neighbour.
fn mark(rows: &mut [Row], key: &str, higher: bool) {
    let mut order: Vec<usize> = (0..rows.len())
        .filter(|&i| rows[i].mean(key).is_some())
        .collect();
    if order.len() < 2 {
        return;
    }
    order.sort_by(|&a, &b| {
        let (x, y) = (
            rows[a].mean(key).unwrap_or(0.0),
            rows[b].mean(key).unwrap_or(0.0),
        );
        let o = x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal);
        if higher {
            o.reverse()
        } else {
            o
        }
    });
    let raw: Vec<Vec<f64>> = rows
        .iter()
        .map(|r| r.metric(key).map(|m| m.raw.clone()).unwrap_or_default())
        .collect();
    let differs =
        |a: usize, b: usize| stats::compare(&raw[a], &raw[b], ALPHA).is_some_and(|c| c.significant);
    let (best, second) = (order[0], order[1]);
    let (worst, second_worst) = (order[order.len() - 1], order[order.len() - 2]);
    let (mark_best, mark_worst) = (differs(second, best), differs(second_worst, worst));
    if mark_best {
        rows[best].mark = Some(Mark::Best);
    }
    if mark_worst {
        rows[worst].mark = Some(Mark::Worst);
    }
}

fn decision(rows: &[Row], key: &str, higher: bool) -> String {
    let mut ranked: Vec<&Row> = rows.iter().filter(|r| r.mean(key).is_some()).collect();
    if ranked.is_empty() {
        return "no successful measurement".into();
    }
    if ranked.len() == 1 {
        return format!("only {} was measured", ranked[0].target);
    }
    ranked.sort_by(|a, b| {
        let o = a
            .mean(key)
            .partial_cmp(&b.mean(key))
            .unwrap_or(std::cmp::Ordering::Equal);
        if higher {
            o.reverse()
        } else {
            o
        }
    });
    let (win, next) = (ranked[0], ranked[1]);
    let raw = |r: &Row| r.metric(key).map(|m| m.raw.clone()).unwrap_or_default();
    match stats::compare(&raw(next), &raw(win), ALPHA) {
        Some(c) if c.significant => {
            let by = c.pct_diff.abs();
            let ci = c
                .pct_ci95
                .map(|(lo, hi)| format!(" (95 % CI {:+.0} % to {:+.0} %)", lo, hi))
                .unwrap_or_default();
            format!(
                "{} wins: {key} {by:.0} % {} than {}{ci}",
                win.target,
                if c.pct_diff > 0.0 { "higher" } else { "lower" },
                next.target
            )
        }
        Some(_) => format!(
            "no real difference between {} and {} (≈, p ≥ {ALPHA})",
            win.target, next.target
        ),
        None => format!(
            "{} leads {}, but there are too few runs to tell",
            win.target, next.target
        ),
    }
}

/// What the plan asked for that the results do not hold.
fn incompleteness(loaded: &Loaded) -> Option<String> {
    let interrupted = loaded
        .measurements
        .iter()
        .filter(|m| m.status == Status::Interrupted)
        .count();
    let plan: Option<Plan> = serde_json::from_value(loaded.host.plan.clone()).ok();
    let mut missing = 0usize;
    if let Some(plan) = &plan {
        let skipped: Vec<&str> = loaded
            .host
            .skipped_targets
            .iter()
            .map(|(n, _)| n.as_str())
            .collect();
        for t in plan
            .targets
            .iter()
            .filter(|t| !skipped.contains(&t.name.as_str()))
        {
            for w in &plan.workloads {
                let threads = match workload::by_name(w) {
                    Some(wl) if !wl.uses_threads() => vec![1],
                    _ => plan.threads.clone(),
                };
                for th in threads {
                    for rep in 0..plan.runs.min() {
                        let there = loaded.measurements.iter().any(|m| {
                            m.target == t.name
                                && &m.workload == w
                                && m.threads == th as u32
                                && m.repetition == rep
                                && m.status != Status::Interrupted
                        });
                        if !there {
                            missing += 1;
                        }
                    }
                }
            }
        }
    }
    match (missing, interrupted) {
        (0, 0) => None,
        (m, i) => Some(format!(
            "incomplete run: {m} planned measurement cell(s) missing{}; finish it with `fsarena run --resume DIR`",
            if i > 0 { format!(", {i} interrupted") } else { String::new() }
        )),
    }
}

/// Builds the report of a loaded results file.
pub fn build(loaded: &Loaded) -> Report {
    let plan: Option<Plan> = serde_json::from_value(loaded.host.plan.clone()).ok();
    let baseline = plan
        .as_ref()
        .map(|p| p.baseline.clone())
        .or_else(|| loaded.measurements.first().map(|m| m.target.clone()))
        .unwrap_or_default();
    let groups: Vec<Group> = stats::aggregate(&loaded.measurements, &baseline, ALPHA);
    let mut sections: Vec<Section> = Vec::new();
    for g in groups {
        let pos = sections.iter().position(|s| {
            s.workload == g.key.workload && s.variant == g.key.variant && s.threads == g.key.threads
        });
        let i = match pos {
            Some(i) => i,
            None => {
                let (key_metric, higher_is_better) = key_of(&g.key.workload);
                sections.push(Section {
                    workload: g.key.workload.clone(),
                    variant: g.key.variant.clone(),
                    threads: g.key.threads,
                    columns: columns_for(&g.key.workload),
                    key_metric,
                    higher_is_better,
                    rows: Vec::new(),
                    decision: String::new(),
                });
                sections.len() - 1
            }
        };
        // Spread and outlier warnings only for the metric the decision rests on; the side
        // columns (CPU, cache) always scatter and would bury what matters.
        let key = sections[i].key_metric.clone();
        let warnings = g
            .warnings
            .into_iter()
            .filter(|w| match w {
                Warning::WideSpread { metric, .. }
                | Warning::Outliers { metric, .. }
                | Warning::NonFinite { metric, .. } => *metric == key,
                _ => true,
            })
            .collect();
        sections[i].rows.push(Row {
            target: g.key.target,
            fs: g.fs,
            ok: g.ok,
            failed: g.failed,
            invalid: g.invalid,
            mark: None,
            metrics: g.metrics,
            warnings,
        });
    }
    for s in &mut sections {
        mark(&mut s.rows, &s.key_metric, s.higher_is_better);
        s.decision = decision(&s.rows, &s.key_metric, s.higher_is_better);
    }
    Report {
        schema_version: SCHEMA_VERSION,
        host: loaded.host.clone(),
        baseline,
        incomplete: incompleteness(loaded),
        sections,
        skipped_lines: loaded.skipped.clone(),
        measurements: loaded.measurements.clone(),
    }
}
