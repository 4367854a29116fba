//! The report model: built once from a results directory and the statistics, rendered by
//! every exporter. No exporter recomputes a statistic, so the terminal, the files and the
//! HTML page always agree. The verdicts come from [`crate::stats::verdicts`], the same
//! decisions the time budget spends its rounds on; this module lays them out as sections
//! ([`super::section`]) and adds what only a reader needs: headlines, explanations, the
//! ranking, the run's condition and steadiness.

use serde::Serialize;

use super::explain::explain_all;
use super::headline::headline;
use super::ranking::{rank, Standing};
use super::section::{Mark, Row, Section};
use crate::plan::Plan;
use crate::results::store::Loaded;
use crate::results::{HostFacts, Measurement, Status};
use crate::stats::verdicts::{self, KeyMetric, Point};
use crate::stats::{self, Warning};
use crate::workload;

/// The version of `summary.json`'s schema, which is this model's shape (docs/summary-schema.md).
/// Bump it on any change to the model that could break a reader: a field removed, renamed or
/// changed in meaning.
pub const SCHEMA_VERSION: u32 = 2;

/// Below this median share of stolen CPU time the report does not mention the hypervisor:
/// tick accounting rounds a short phase's few ticks, and bare metal reports none at all.
pub const STOLEN_NOTED_PCT: f64 = 1.0;

/// Everything a report shows.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub schema_version: u32,
    pub host: HostFacts,
    pub baseline: String,
    /// The equivalence margin the decisions used, in % of the baseline mean.
    pub margin_pct: f64,
    /// The procedure that adjusted the verdicts' p-values over the run, read from the
    /// verdicts themselves ([`adjustment`]): what the legend names.
    pub adjustment: crate::stats::Adjustment,
    /// Why the run is incomplete, when it is.
    pub incomplete: Option<String>,
    /// How the measured file systems started: "fresh", or "aged to N %" (`--age`).
    pub condition: String,
    /// What aging did to each aged image (`--age`): one per target and kind of image, from
    /// the records' provenance; empty for a fresh run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aging: Vec<AgedImage>,
    /// How large the measured file systems were ([`super::file_systems::describe`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_systems: Option<String>,
    /// Where the measured phases ran (`--cpus`, [`super::cpus::describe`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<String>,
    pub sections: Vec<Section>,
    /// results.jsonl lines that could not be read: (line number, reason).
    pub skipped_lines: Vec<(usize, String)>,
    /// The overall ranking across every section ([`super::ranking`]).
    pub ranking: Vec<Standing>,
    /// The size of each data set the run measured, and whether it fits in page cache.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sizes: Vec<super::scales::DataSetSize>,
    /// With two or more scales: whether each verdict holds across them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_check: Option<super::scales::ScaleCheckSummary>,
    /// How steady the host was over the run (`None` for results without probes).
    pub steadiness: Option<stats::steadiness::Steadiness>,
    /// The measurements set aside because the hypervisor disturbed them, and measured again
    /// (`None` when there were none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set_aside: Option<super::set_aside::SetAside>,
    #[serde(skip)]
    pub measurements: Vec<Measurement>,
}

/// Columns shown beside the key metric: what the workload declares.
fn columns_for(workload: &str) -> Vec<String> {
    workload::by_name(workload)
        .map_or(workload::FILE_COLUMNS, |w| w.spec().columns)
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// The metric a workload's points are decided on, as the workload declares it; `None` for a
/// workload this build does not know (the statistics then decide on its wall time).
pub fn key_metric(workload: &str) -> Option<KeyMetric> {
    workload::by_name(workload).map(|w| w.spec().key_metric.into())
}

/// What the plan asked for that the results do not hold.
fn incompleteness(loaded: &Loaded) -> Option<String> {
    let interrupted = loaded
        .measurements
        .iter()
        .filter(|m| matches!(m.status, Status::Interrupted | Status::Disturbed))
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
                    Some(wl) if !wl.spec().uses_threads => vec![1],
                    _ => plan.threads.clone(),
                };
                for th in threads {
                    for d in 0..plan.dataset_count() {
                        let label = plan.dataset_label(d);
                        for rep in 0..plan.runs.min() {
                            let there = loaded.measurements.iter().any(|m| {
                                m.target == t.name
                                    && &m.workload == w
                                    && m.dataset == label
                                    && m.threads == th as u32
                                    && m.repetition == rep
                                    && !matches!(m.status, Status::Interrupted | Status::Disturbed)
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
    let baseline = verdicts::baseline(loaded);
    let points = verdicts::decide(
        &loaded.measurements,
        &baseline,
        margin_pct,
        &verdicts::planned_looks(loaded),
        &key_metric,
    );
    let scale_check = plan
        .as_ref()
        .and_then(|p| super::scales::check(&points, &baseline, p));
    let sizes = plan.as_ref().map_or_else(Vec::new, |p| {
        super::scales::sizes(p, loaded.host.mem_total_bytes)
    });
    let mut sections: Vec<Section> = points.into_iter().map(section).collect();
    explain_all(&mut sections, &baseline);
    attach_stops(&mut sections, &loaded.budget_stops);
    let ranking = rank(&sections, &baseline);
    Report {
        adjustment: adjustment(&sections),
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
        aging: aged_images(&loaded.measurements),
        file_systems: super::file_systems::describe(&loaded.measurements),
        cpus: super::cpus::describe(&loaded.measurements, plan.as_ref().map(|p| p.cpus)),
        sections,
        skipped_lines: loaded.skipped.clone(),
        ranking,
        sizes,
        scale_check,
        steadiness: steadiness(&loaded.measurements),
        set_aside: super::set_aside::of(loaded),
        measurements: loaded.measurements.clone(),
    }
}

/// Puts each budget stop on the row of the comparison it stopped, when that comparison is
/// still undecided (a stopped comparison is priced again each round and may have been
/// decided since); the last record of a comparison wins.
fn attach_stops(sections: &mut [Section], stops: &[crate::results::BudgetStop]) {
    for stop in stops {
        let Some(s) = sections.iter_mut().find(|s| {
            s.workload == stop.workload
                && s.dataset == stop.dataset
                && s.variant == stop.variant
                && s.threads == stop.threads
        }) else {
            continue;
        };
        let key = s.key_metric.clone();
        let Some(row) = s.rows.iter_mut().find(|r| r.target == stop.target) else {
            continue;
        };
        let undecided = row
            .metric(&key)
            .and_then(|m| m.vs_baseline.as_ref()?.verdict.as_ref())
            .is_some_and(|v| v.decision == crate::stats::Decision::Undecided);
        if undecided {
            row.budget_stop = Some(super::section::StopShown::new(stop.why));
        }
    }
}

/// The procedure that adjusted the verdicts of `sections` (one family, so one procedure);
/// the one [`verdicts::decide`] uses when nothing was decided.
pub fn adjustment(sections: &[Section]) -> crate::stats::Adjustment {
    sections
        .iter()
        .flat_map(|s| s.rows.iter().filter_map(|r| r.metric(&s.key_metric)))
        .find_map(|m| m.vs_baseline.as_ref()?.verdict.as_ref())
        .map_or(verdicts::ADJUSTMENT, |v| v.adjustment)
}

/// One aged image of the run: its target and what aging did (level, cost, the layout
/// before and after: free-space extents, a probe file's extent, the data set's extents
/// per file).
#[derive(Debug, Clone, Serialize)]
pub struct AgedImage {
    pub target: String,
    #[serde(flatten)]
    pub aging: crate::results::Aging,
}

/// Each distinct aged image the records were cloned from, in record order.
fn aged_images(measurements: &[Measurement]) -> Vec<AgedImage> {
    let mut out: Vec<AgedImage> = Vec::new();
    for m in measurements {
        if let Some(a) = &m.provenance.aging {
            if !out.iter().any(|o| o.target == m.target && &o.aging == a) {
                out.push(AgedImage {
                    target: m.target.clone(),
                    aging: a.clone(),
                });
            }
        }
    }
    out
}

/// A decided point as the report shows it: a row per target with its ✓ / ✗, and the
/// headline.
fn section(point: Point) -> Section {
    let (best, worst) = (point.best(), point.worst());
    let reference: Vec<bool> = (0..point.groups.len())
        .map(|i| point.reference(i))
        .collect();
    let key = point.key.name.clone();
    let mut s = Section {
        workload: point.workload.clone(),
        dataset: point.dataset.clone(),
        variant: point.variant.clone(),
        threads: point.threads,
        columns: columns_for(&point.workload),
        key_metric: key.clone(),
        higher_is_better: point.key.higher_is_better,
        rows: Vec::new(),
        decision: String::new(),
    };
    let leaders = point.leaders().cloned();
    for (i, g) in point.groups.into_iter().enumerate() {
        let shown = g
            .metrics
            .iter()
            .map(|(name, m)| (name.clone(), super::shown::of(&key, name, m)))
            .collect();
        s.rows.push(Row {
            target: g.key.target,
            fs: g.fs,
            ok: g.ok,
            failed: g.failed,
            invalid: g.invalid,
            mark: None,
            reference: reference[i],
            metrics: g.metrics,
            shown,
            warnings: key_warnings(g.warnings, &key),
            why: None,
            budget_stop: None,
        });
    }
    if let Some(b) = best {
        s.rows[b].mark = Some(Mark::Best);
    }
    if let Some(w) = worst {
        s.rows[w].mark = Some(Mark::Worst);
    }
    s.decision = headline(&s, leaders.as_ref());
    s
}

/// Spread and outlier warnings only for the metric the decision rests on; the side columns
/// (CPU, cache) always scatter and would bury what matters.
fn key_warnings(warnings: Vec<Warning>, key: &str) -> Vec<Warning> {
    warnings
        .into_iter()
        .filter(|w| match w {
            Warning::WideSpread { metric, .. }
            | Warning::Outliers { metric, .. }
            | Warning::NonFinite { metric, .. } => metric == key,
            _ => true,
        })
        .collect()
}

/// How steady the host was over the run: the probe timed before each phase, and the CPU
/// time the hypervisor kept.
fn steadiness(measurements: &[Measurement]) -> Option<stats::steadiness::Steadiness> {
    stats::steadiness::steadiness(
        &measurements
            .iter()
            .filter_map(|m| m.host_probe_ms)
            .collect::<Vec<_>>(),
        &measurements
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
    )
}
