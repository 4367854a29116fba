//! The report model: built once from a results directory and the statistics, rendered by
//! every exporter. No exporter recomputes a statistic, so the terminal, the files and the
//! HTML page always agree.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::plan::{FsKind, Plan};
use crate::results::store::Loaded;
use crate::results::{HostFacts, Measurement, Status};
use crate::stats::{self, Group, MetricStats, Warning};
use crate::workload;

/// The version of `summary.json`'s schema, which is this model's shape (docs/summary-schema.md).
/// Bump it on any change to the model that could break a reader: a field removed, renamed or
/// changed in meaning.
pub const SCHEMA_VERSION: u32 = 1;

/// The metric a workload that runs its own worker threads records their count in.
pub const WORKER_THREADS: &str = "worker_threads";

/// Significance level for every "is it real" decision in a report.
pub const ALPHA: f64 = 0.05;

/// Best (✓) or worst (✗) among the disk targets, only when the gap to the neighbour is
/// significant after Benjamini–Hochberg control (see [`super::verdicts`]).
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
    /// A memory file system (tmpfs): shown for reference, never ranked or marked.
    pub reference: bool,
    pub metrics: BTreeMap<String, MetricStats>,
    pub warnings: Vec<Warning>,
    /// Why this row differs significantly from the baseline, from the monitor's figures in
    /// the same cells ([`super::explain`]); absent when nothing measured explains it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
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
    /// The data set's profile, when the run had several (each is its own section).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dataset: Option<String>,
    pub variant: String,
    pub threads: u32,
    pub key_metric: String,
    pub higher_is_better: bool,
    /// Extra metrics worth a column for this workload.
    pub columns: Vec<String>,
    pub rows: Vec<Row>,
    /// One sentence about the disk targets: who wins (better, after Benjamini–Hochberg), that the two
    /// leaders are equivalent, or that it is undecided and how many runs would decide it.
    pub decision: String,
}

impl Section {
    /// The worker threads the measurement ran: the workload's own count when it ignores
    /// `--threads` and records how many it ran ([`WORKER_THREADS`]; `db` runs 12 by
    /// default), else the `--threads` value it ran with.
    pub fn worker_threads(&self) -> u32 {
        self.rows
            .iter()
            .filter_map(|r| r.metric(WORKER_THREADS))
            .map(|m| m.summary.max.round() as u32)
            .max()
            .unwrap_or(self.threads)
    }

    /// What tells this point from the workload's others: the data set (when the run had
    /// several) and the variant, e.g. `medium · cold`; empty for a single-point workload.
    pub fn point_label(&self) -> String {
        point_label(self.dataset.as_deref(), &self.variant)
    }

    pub fn title(&self) -> String {
        let mut t = self.workload.clone();
        let point = self.point_label();
        if !point.is_empty() {
            t.push_str(&format!(" [{point}]"));
        }
        let threads = self.worker_threads();
        t.push_str(&format!(
            ", {} thread{}",
            threads,
            if threads == 1 { "" } else { "s" }
        ));
        t
    }
}

/// A point's label from its data set (when a run had several) and its variant.
pub fn point_label(dataset: Option<&str>, variant: &str) -> String {
    match (dataset, variant.is_empty()) {
        (Some(d), true) => d.to_string(),
        (Some(d), false) => format!("{d} · {variant}"),
        (None, _) => variant.to_string(),
    }
}

/// Everything a report shows.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub schema_version: u32,
    pub host: HostFacts,
    pub baseline: String,
    /// The equivalence margin the decisions used, in % of the baseline mean.
    pub margin_pct: f64,
    /// Why the run is incomplete, when it is.
    pub incomplete: Option<String>,
    /// How the measured file systems started: "fresh", or "aged to N %" (`--age`).
    pub condition: String,
    pub sections: Vec<Section>,
    /// results.jsonl lines that could not be read: (line number, reason).
    pub skipped_lines: Vec<(usize, String)>,
    /// The overall ranking across every section ([`super::ranking`]).
    pub ranking: Vec<super::ranking::Standing>,
    /// How steady the host was over the run (`None` for results without probes).
    pub steadiness: Option<stats::steadiness::Steadiness>,
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
            for w in plan
                .workloads
                .iter()
                .filter(|w| !loaded.host.skipped_workloads.iter().any(|(n, _)| n == *w))
            {
                let threads = match workload::by_name(w) {
                    Some(wl) if !wl.uses_threads() => vec![1],
                    _ => plan.threads.clone(),
                };
                for th in threads {
                    for d in 0..=plan.extra_profiles.len() {
                        let label = plan.dataset_label(d);
                        for rep in 0..plan.runs.min() {
                            let there = loaded.measurements.iter().any(|m| {
                                m.target == t.name
                                    && &m.workload == w
                                    && m.dataset == label
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
    }
    match (missing, interrupted) {
        (0, 0) => None,
        (m, i) => Some(format!(
            "incomplete run: {m} planned measurement cell(s) missing{}; finish it with `fsarena run --resume DIR`",
            if i > 0 { format!(", {i} interrupted") } else { String::new() }
        )),
    }
}

/// Builds the report of a loaded results file. `margin_pct` overrides the run's margin (the
/// plan's, else [`crate::plan::DEFAULT_MARGIN_PCT`]).
pub fn build(loaded: &Loaded, margin_pct: Option<f64>) -> Report {
    let plan: Option<Plan> = serde_json::from_value(loaded.host.plan.clone()).ok();
    let margin_pct = margin_pct
        .or(plan.as_ref().map(|p| p.margin_pct))
        .unwrap_or(crate::plan::DEFAULT_MARGIN_PCT);
    let baseline = plan
        .as_ref()
        .map(|p| p.baseline.clone())
        .or_else(|| loaded.measurements.first().map(|m| m.target.clone()))
        .unwrap_or_default();
    let groups: Vec<Group> = stats::aggregate(&loaded.measurements, &baseline, ALPHA);
    let mut sections: Vec<Section> = Vec::new();
    for g in groups {
        let pos = sections.iter().position(|s| {
            s.workload == g.key.workload
                && s.dataset == g.key.dataset
                && s.variant == g.key.variant
                && s.threads == g.key.threads
        });
        let i = match pos {
            Some(i) => i,
            None => {
                let (key_metric, higher_is_better) = key_of(&g.key.workload);
                sections.push(Section {
                    workload: g.key.workload.clone(),
                    dataset: g.key.dataset.clone(),
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
        let reference = FsKind::parse(&g.fs).is_some_and(FsKind::is_memory);
        sections[i].rows.push(Row {
            target: g.key.target,
            fs: g.fs,
            ok: g.ok,
            failed: g.failed,
            invalid: g.invalid,
            mark: None,
            reference,
            metrics: g.metrics,
            warnings,
            why: None,
        });
    }
    super::verdicts::decide_all(&mut sections, &baseline, margin_pct);
    super::explain::explain_all(&mut sections, &baseline);
    let ranking = super::ranking::rank(&sections, &baseline);
    Report {
        schema_version: SCHEMA_VERSION,
        host: loaded.host.clone(),
        baseline,
        margin_pct,
        incomplete: incompleteness(loaded),
        condition: crate::results::condition(
            loaded
                .measurements
                .iter()
                .find_map(|m| m.aged_pct)
                .or(plan.as_ref().and_then(|p| p.age_pct)),
        ),
        sections,
        skipped_lines: loaded.skipped.clone(),
        ranking,
        steadiness: stats::steadiness::steadiness(
            &loaded
                .measurements
                .iter()
                .filter_map(|m| m.host_probe_ms)
                .collect::<Vec<_>>(),
            &loaded
                .measurements
                .iter()
                .filter_map(|m| {
                    let pct = |k: &str| m.metrics.get(k).copied();
                    stats::steadiness::stolen_pct(
                        pct("cpu_user_pct")?,
                        pct("cpu_system_pct")?,
                        pct("cpu_steal_pct")?,
                    )
                })
                .collect::<Vec<_>>(),
        ),
        measurements: loaded.measurements.clone(),
    }
}
