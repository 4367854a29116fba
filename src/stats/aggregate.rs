//! Groups measurements into cells (workload × variant × threads × target), summarises each
//! metric over the successful repetitions, compares it with the baseline target, and raises
//! the [`Warning`]s a reader should see before trusting a cell.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::significance::{compare, Comparison};
use super::summary::{summarize, Summary};
use super::warnings::{Warning, MIN_USEFUL_RUNS, REPLAY_TIME_GAP_PCT, WIDE_SPREAD_CV};
use crate::results::{Measurement, Status};

/// What identifies a group of repetitions.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct GroupKey {
    pub workload: String,
    /// The data set's profile, when the run had several.
    pub dataset: Option<String>,
    pub variant: String,
    pub threads: u32,
    pub target: String,
}

/// One metric of one group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricStats {
    pub summary: Summary,
    /// The finite values that entered `summary`, in repetition order.
    pub raw: Vec<f64>,
    /// The repetition number of each of `raw`: what pairs a candidate's run with the
    /// baseline's run of the same round ([`crate::stats::verdicts::looks`]).
    #[serde(skip)]
    pub reps: Vec<u32>,
    /// This metric against the same metric of the baseline target's group with the same
    /// workload, variant and threads. `None` for the baseline itself, when the baseline has
    /// no such group or metric, or when [`compare`] has no answer.
    pub vs_baseline: Option<Comparison>,
    /// The key metric's runs at no CPU steal, `exp(ln y − β̂ x)`, when its point's
    /// comparisons are adjusted for the stolen CPU time ([`crate::stats::steal`]): what the
    /// adjusted % is a ratio of, so the figure shown beside it is taken from these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_no_steal: Option<Vec<f64>>,
    /// The key metric's runs at the baseline's level, when its point's comparison with the
    /// baseline was measured in turn (`stats::verdicts::looks`): each run's ratio to the
    /// baseline measured beside it, times the baseline row's figure, so the figure shown
    /// is the one the paired % is a ratio of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_turn: Option<Vec<f64>>,
}

/// All repetitions of one workload point on one target.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Group {
    pub key: GroupKey,
    /// The file-system type of the first measurement seen for this group.
    pub fs: String,
    /// Repetitions with [`Status::Ok`]: the only ones in `metrics`.
    pub ok: usize,
    /// Repetitions that did not finish (any status but `Ok` and `Invalid`): repetition,
    /// status, error message.
    pub failed: Vec<(u32, Status, Option<String>)>,
    /// Repetitions that finished but whose file system failed its health check afterwards.
    pub invalid: usize,
    pub metrics: BTreeMap<String, MetricStats>,
    /// The baseline's figures measured in turn with this group's runs
    /// ([`Measurement::in_turn`]), per metric: the values and their runs' repetition
    /// numbers, in repetition order; only from runs whose other side was the baseline.
    #[serde(skip)]
    pub in_turn: BTreeMap<String, (Vec<f64>, Vec<u32>)>,
    /// Group-level warnings first (too few runs, failures, invalid runs, no baseline), then
    /// per-metric ones in metric order. Spread and outlier warnings are raised for every
    /// metric (`seconds` and `files_per_s` usually both trip); a report that shows only some
    /// metrics should show only their warnings.
    pub warnings: Vec<Warning>,
}

/// What is collected for a group before any statistics run.
struct Cell<'a> {
    key: GroupKey,
    fs: &'a str,
    ok: usize,
    failed: Vec<(u32, Status, Option<String>)>,
    invalid: usize,
    /// Each metric's finite values with their repetition numbers, ordered by repetition
    /// when the group is built (the sequential looks take the first n).
    raw: BTreeMap<String, Vec<f64>>,
    reps: BTreeMap<String, Vec<u32>>,
    non_finite: BTreeMap<String, usize>,
    /// The baseline's side of runs measured in turn with it: (repetition, value) per metric.
    in_turn: BTreeMap<String, Vec<(u32, f64)>>,
}

impl Cell<'_> {
    /// Puts every metric's values in repetition order (stable: records of one repetition
    /// keep their input order), so that "the first n runs" means the same in a report of
    /// the results file as it did during the run.
    fn by_repetition(&mut self) {
        for (name, values) in self.raw.iter_mut() {
            let Some(reps) = self.reps.get_mut(name) else {
                continue;
            };
            let mut paired: Vec<(u32, f64)> =
                reps.iter().copied().zip(values.iter().copied()).collect();
            paired.sort_by_key(|&(r, _)| r);
            (*reps, *values) = paired.into_iter().unzip();
        }
        for runs in self.in_turn.values_mut() {
            runs.sort_by_key(|&(r, _)| r);
        }
    }
}

/// Position of a group in the output: first-seen index of its workload, of its (data set,
/// variant) within the workload, of its thread count within the variant, and of its target.
type Order = (usize, usize, usize, usize);

/// First-seen positions of each component, so output order follows the input.
#[derive(Default)]
struct FirstSeen<'a> {
    workload: HashMap<&'a str, usize>,
    variant: HashMap<(&'a str, Option<&'a str>, &'a str), usize>,
    threads: HashMap<(&'a str, Option<&'a str>, &'a str, u32), usize>,
    target: HashMap<&'a str, usize>,
}

impl<'a> FirstSeen<'a> {
    fn order(&mut self, m: &'a Measurement) -> Order {
        fn index<K: std::hash::Hash + Eq>(map: &mut HashMap<K, usize>, k: K) -> usize {
            let next = map.len();
            *map.entry(k).or_insert(next)
        }
        (
            index(&mut self.workload, m.workload.as_str()),
            index(
                &mut self.variant,
                (
                    m.workload.as_str(),
                    m.dataset.as_deref(),
                    m.variant.as_str(),
                ),
            ),
            index(
                &mut self.threads,
                (
                    m.workload.as_str(),
                    m.dataset.as_deref(),
                    m.variant.as_str(),
                    m.threads,
                ),
            ),
            index(&mut self.target, m.target.as_str()),
        )
    }
}

/// Groups `Status::Ok` measurements by (workload, variant, threads, target); other statuses
/// are counted, never averaged (`Invalid` = failed health check: excluded and counted
/// separately). Compares each metric against the same (workload, variant, threads) group of
/// the `baseline` target with [`compare`] at `alpha`. Deterministic order: workload, variant,
/// threads in first-seen order of the input (each within its parent); targets in first-seen
/// order of the whole input.
///
/// A group whose repetitions all failed is still returned (with empty `metrics`), so that a
/// report shows the failure instead of silently dropping the target.
pub fn aggregate(measurements: &[Measurement], baseline: &str, alpha: f64) -> Vec<Group> {
    let mut seen = FirstSeen::default();
    let mut cells: BTreeMap<Order, Cell> = BTreeMap::new();
    for m in measurements {
        let cell = cells.entry(seen.order(m)).or_insert_with(|| Cell {
            key: GroupKey {
                workload: m.workload.clone(),
                dataset: m.dataset.clone(),
                variant: m.variant.clone(),
                threads: m.threads,
                target: m.target.clone(),
            },
            fs: &m.fs,
            ok: 0,
            failed: Vec::new(),
            invalid: 0,
            raw: BTreeMap::new(),
            reps: BTreeMap::new(),
            non_finite: BTreeMap::new(),
            in_turn: BTreeMap::new(),
        });
        match m.status {
            Status::Ok => {
                cell.ok += 1;
                let beside = m.in_turn.as_ref().filter(|t| t.target == baseline);
                for (name, &value) in beside.iter().flat_map(|t| &t.metrics) {
                    if value.is_finite() {
                        let runs = cell.in_turn.entry(name.clone()).or_default();
                        runs.push((m.repetition, value));
                    }
                }
                for (name, &value) in &m.metrics {
                    if value.is_finite() {
                        cell.raw.entry(name.clone()).or_default().push(value);
                        cell.reps
                            .entry(name.clone())
                            .or_default()
                            .push(m.repetition);
                    } else {
                        *cell.non_finite.entry(name.clone()).or_default() += 1;
                    }
                }
            }
            Status::Invalid => cell.invalid += 1,
            status => cell.failed.push((m.repetition, status, m.error.clone())),
        }
    }

    for cell in cells.values_mut() {
        cell.by_repetition();
    }
    let baseline_index = seen.target.get(baseline).copied();
    cells
        .iter()
        .map(|(&(w, v, t, target), cell)| {
            let base = baseline_index
                .filter(|&b| b != target)
                .and_then(|b| cells.get(&(w, v, t, b)));
            let no_baseline =
                baseline_index != Some(target) && !matches!(base, Some(b) if b.ok > 0);
            build_group(cell, base, baseline, no_baseline, alpha)
        })
        .collect()
}

/// The group of one cell: its warnings, and every metric summarised and compared with the
/// baseline's cell `base`.
fn build_group(
    cell: &Cell,
    base: Option<&Cell>,
    baseline: &str,
    no_baseline: bool,
    alpha: f64,
) -> Group {
    let mut warnings = cell_warnings(cell, baseline, no_baseline);
    let metrics = metric_stats(cell, base, alpha, &mut warnings);
    Group {
        key: cell.key.clone(),
        fs: cell.fs.to_string(),
        ok: cell.ok,
        failed: cell.failed.clone(),
        invalid: cell.invalid,
        metrics,
        in_turn: (cell.in_turn.iter())
            .map(|(name, runs)| (name.clone(), runs.iter().map(|&(r, v)| (v, r)).unzip()))
            .collect(),
        warnings,
    }
}

/// What a reader must know about a cell before any of its metrics: too few runs, failed,
/// interrupted or invalid repetitions, no baseline to compare with, phases shorter than
/// their floor, values that are not numbers.
fn cell_warnings(cell: &Cell, baseline: &str, no_baseline: bool) -> Vec<Warning> {
    let mut warnings = Vec::new();
    if cell.ok < MIN_USEFUL_RUNS {
        warnings.push(Warning::TooFewRuns { n: cell.ok });
    }
    // A run the user interrupted is left out like a failed one, but said apart: "failed"
    // would blame the file system for a Ctrl-C.
    let interrupted = cell
        .failed
        .iter()
        .filter(|f| f.1 == Status::Interrupted)
        .count();
    if cell.failed.len() > interrupted {
        warnings.push(Warning::Failed {
            count: cell.failed.len() - interrupted,
        });
    }
    if interrupted > 0 {
        warnings.push(Warning::Interrupted { count: interrupted });
    }
    if cell.invalid > 0 {
        warnings.push(Warning::Invalid {
            count: cell.invalid,
        });
    }
    if no_baseline {
        warnings.push(Warning::NoBaseline {
            baseline: baseline.to_string(),
        });
    }
    if let Some(short) = cell.raw.get("below_floor").filter(|v| !v.is_empty()) {
        warnings.push(Warning::ShortPhase {
            count: short.len(),
            seconds: cell
                .raw
                .get("seconds")
                .and_then(|s| summarize(s))
                .map_or(0.0, |s| s.median),
        });
    }
    if let Some(cached) = cell.raw.get("reads_from_memory").filter(|v| !v.is_empty()) {
        warnings.push(Warning::ReadsFromMemory {
            count: cached.len(),
        });
    }
    if let Some(absorbed) = cell.raw.get("writes_absorbed").filter(|v| !v.is_empty()) {
        warnings.push(Warning::WritesAbsorbed {
            count: absorbed.len(),
        });
    }
    if let Some(unflushed) = cell.raw.get("fsyncs_unflushed").filter(|v| !v.is_empty()) {
        warnings.push(Warning::FsyncsUnflushed {
            count: unflushed.len(),
        });
    }
    if let Some(gaps) = cell.raw.get("replay_time_gap_pct") {
        let beyond = gaps
            .iter()
            .filter(|g| g.abs() > REPLAY_TIME_GAP_PCT)
            .count();
        if beyond > 0 {
            warnings.push(Warning::ReplayTimeGap {
                count: beyond,
                pct: summarize(gaps).map_or(0.0, |s| s.median),
            });
        }
    }
    for (metric, &count) in &cell.non_finite {
        warnings.push(Warning::NonFinite {
            metric: metric.clone(),
            count,
        });
    }
    warnings
}

/// Every metric of a cell summarised and compared with the same metric of `base` at
/// `alpha`; a wide spread or an outlier is added to `warnings`, metric by metric.
fn metric_stats(
    cell: &Cell,
    base: Option<&Cell>,
    alpha: f64,
    warnings: &mut Vec<Warning>,
) -> BTreeMap<String, MetricStats> {
    let mut metrics = BTreeMap::new();
    for (metric, raw) in &cell.raw {
        // Only finite values were collected, so this is `None` only for an empty list.
        let Some(summary) = summarize(raw) else {
            continue;
        };
        if summary.cv > WIDE_SPREAD_CV {
            warnings.push(Warning::WideSpread {
                metric: metric.clone(),
                cv: summary.cv,
            });
        }
        if !summary.outliers.is_empty() {
            warnings.push(Warning::Outliers {
                metric: metric.clone(),
                count: summary.outliers.len(),
            });
        }
        let vs_baseline = base
            .and_then(|b| b.raw.get(metric))
            .and_then(|b| compare(b, raw, alpha));
        metrics.insert(
            metric.clone(),
            MetricStats {
                summary,
                raw: raw.clone(),
                reps: cell.reps.get(metric).cloned().unwrap_or_default(),
                vs_baseline,
                at_no_steal: None,
                in_turn: None,
            },
        );
    }
    metrics
}

#[cfg(test)]
mod tests;
