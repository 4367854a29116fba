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
        });
        match m.status {
            Status::Ok => {
                cell.ok += 1;
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
            },
        );
    }
    metrics
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(target: &str, workload: &str, variant: &str, threads: u32, rep: u32) -> Measurement {
        Measurement {
            target: target.to_string(),
            fs: format!("{target}-fs"),
            workload: workload.to_string(),
            variant: variant.to_string(),
            threads,
            repetition: rep,
            ..Default::default()
        }
    }

    fn with(mut meas: Measurement, metrics: &[(&str, f64)]) -> Measurement {
        meas.metrics = metrics.iter().map(|&(k, v)| (k.to_string(), v)).collect();
        meas
    }

    fn failed(mut meas: Measurement, status: Status, error: &str) -> Measurement {
        meas.status = status;
        meas.error = Some(error.to_string());
        meas
    }

    fn keys(groups: &[Group]) -> Vec<(String, String, u32, String)> {
        groups
            .iter()
            .map(|g| {
                let k = &g.key;
                (
                    k.workload.clone(),
                    k.variant.clone(),
                    k.threads,
                    k.target.clone(),
                )
            })
            .collect()
    }

    /// ext4 is the baseline with three clean runs; xfs has three clean runs, one ENOSPC and
    /// one run whose health check failed (with an absurd number that must not be averaged).
    fn two_targets() -> Vec<Measurement> {
        vec![
            with(
                m("ext4", "create", "", 1, 0),
                &[("files_per_s", 1000.0), ("seconds", 1.0)],
            ),
            with(
                m("xfs", "create", "", 1, 0),
                &[("files_per_s", 1200.0), ("seconds", 0.83)],
            ),
            with(
                m("ext4", "create", "", 1, 1),
                &[("files_per_s", 1010.0), ("seconds", 0.99)],
            ),
            failed(
                m("xfs", "create", "", 1, 1),
                Status::Enospc,
                "No space left on device",
            ),
            with(
                m("ext4", "create", "", 1, 2),
                &[("files_per_s", 990.0), ("seconds", 1.01)],
            ),
            failed(
                with(m("xfs", "create", "", 1, 2), &[("files_per_s", 99999.0)]),
                Status::Invalid,
                "xfs_repair -n found problems",
            ),
            with(
                m("xfs", "create", "", 1, 3),
                &[("files_per_s", 1210.0), ("seconds", 0.82)],
            ),
            with(
                m("xfs", "create", "", 1, 4),
                &[("files_per_s", 1190.0), ("seconds", 0.84)],
            ),
        ]
    }

    #[test]
    fn failed_and_invalid_runs_are_counted_not_averaged() {
        let groups = aggregate(&two_targets(), "ext4", 0.05);
        assert_eq!(keys(&groups).len(), 2);
        let xfs = &groups[1];
        assert_eq!(xfs.key.target, "xfs");
        assert_eq!(xfs.fs, "xfs-fs");
        assert_eq!(xfs.ok, 3);
        assert_eq!(
            xfs.failed,
            vec![(
                1,
                Status::Enospc,
                Some("No space left on device".to_string())
            )]
        );
        assert_eq!(xfs.invalid, 1);
        let fps = &xfs.metrics["files_per_s"];
        assert_eq!(fps.raw, vec![1200.0, 1210.0, 1190.0]);
        assert_eq!(fps.summary.n, 3);
        assert_eq!(fps.summary.mean, 1200.0);
        assert!(xfs.warnings.contains(&Warning::Failed { count: 1 }));
        assert!(xfs.warnings.contains(&Warning::Invalid { count: 1 }));
        assert!(!xfs
            .warnings
            .iter()
            .any(|w| matches!(w, Warning::TooFewRuns { .. })));
    }

    #[test]
    fn each_target_is_compared_with_the_baseline() {
        let groups = aggregate(&two_targets(), "ext4", 0.05);
        let (ext4, xfs) = (&groups[0], &groups[1]);
        assert_eq!(ext4.key.target, "ext4");
        assert!(ext4.metrics.values().all(|s| s.vs_baseline.is_none()));
        assert!(ext4.warnings.is_empty(), "{:?}", ext4.warnings);
        let c = xfs.metrics["files_per_s"].vs_baseline.as_ref().unwrap();
        // Same numbers through compare() directly: the wiring, not the maths, is under test.
        let direct = compare(&[1000.0, 1010.0, 990.0], &[1200.0, 1210.0, 1190.0], 0.05).unwrap();
        assert_eq!(c, &direct);
        // The ratio of geometric means: 20 % to within 0.01 % for spreads this small.
        assert!((c.pct_diff - 20.0).abs() < 0.01, "{}", c.pct_diff);
        assert!(c.significant);
        let s = xfs.metrics["seconds"].vs_baseline.as_ref().unwrap();
        assert!(s.pct_diff < -15.0 && s.significant);
    }

    #[test]
    fn order_follows_first_appearance() {
        let input = vec![
            with(m("t2", "b", "v2", 4, 0), &[("x", 1.0)]),
            with(m("t1", "a", "", 1, 0), &[("x", 1.0)]),
            with(m("t1", "b", "v1", 1, 0), &[("x", 1.0)]),
            with(m("t1", "b", "v2", 4, 0), &[("x", 1.0)]),
            with(m("t1", "b", "v2", 1, 0), &[("x", 1.0)]),
            with(m("t3", "a", "", 1, 0), &[("x", 1.0)]),
            with(m("t2", "a", "", 1, 0), &[("x", 1.0)]),
            with(m("t2", "b", "v2", 4, 1), &[("x", 1.0)]),
        ];
        let s = |x: &str| x.to_string();
        let want = vec![
            (s("b"), s("v2"), 4, s("t2")),
            (s("b"), s("v2"), 4, s("t1")),
            (s("b"), s("v2"), 1, s("t1")),
            (s("b"), s("v1"), 1, s("t1")),
            (s("a"), s(""), 1, s("t2")),
            (s("a"), s(""), 1, s("t1")),
            (s("a"), s(""), 1, s("t3")),
        ];
        let groups = aggregate(&input, "t1", 0.05);
        assert_eq!(keys(&groups), want);
        // Both repetitions of (b, v2, 4, t2) landed in one group.
        assert_eq!(groups[0].ok, 2);
    }

    #[test]
    fn threads_are_never_compared_across() {
        let input = vec![
            with(m("ext4", "scan", "", 1, 0), &[("s", 10.0)]),
            with(m("ext4", "scan", "", 1, 1), &[("s", 10.2)]),
            with(m("ext4", "scan", "", 8, 0), &[("s", 3.0)]),
            with(m("ext4", "scan", "", 8, 1), &[("s", 3.1)]),
            with(m("xfs", "scan", "", 8, 0), &[("s", 3.05)]),
            with(m("xfs", "scan", "", 8, 1), &[("s", 3.0)]),
        ];
        let groups = aggregate(&input, "ext4", 0.05);
        let xfs = groups.iter().find(|g| g.key.target == "xfs").unwrap();
        let c = xfs.metrics["s"].vs_baseline.as_ref().unwrap();
        // Against the 8-thread baseline (mean 3.05) the difference is ~ −0.8 %, not −70 %.
        assert!(c.pct_diff.abs() < 2.0, "{}", c.pct_diff);
    }

    #[test]
    fn missing_or_failed_baseline_is_said() {
        let groups = aggregate(&two_targets(), "btrfs", 0.05);
        for g in &groups {
            assert!(g.metrics.values().all(|s| s.vs_baseline.is_none()));
            assert!(g.warnings.contains(&Warning::NoBaseline {
                baseline: "btrfs".to_string()
            }));
        }

        let input = vec![
            failed(m("ext4", "copy", "", 1, 0), Status::Timeout, "timed out"),
            failed(m("ext4", "copy", "", 1, 1), Status::Eio, "I/O error"),
            with(m("xfs", "copy", "", 1, 0), &[("s", 1.0)]),
            with(m("xfs", "copy", "", 1, 1), &[("s", 1.1)]),
        ];
        let groups = aggregate(&input, "ext4", 0.05);
        let ext4 = &groups[0];
        assert_eq!(ext4.ok, 0);
        assert!(ext4.metrics.is_empty());
        assert_eq!(ext4.failed.len(), 2);
        assert_eq!(
            ext4.warnings,
            vec![Warning::TooFewRuns { n: 0 }, Warning::Failed { count: 2 }]
        );
        let xfs = &groups[1];
        assert!(xfs.metrics["s"].vs_baseline.is_none());
        assert_eq!(
            xfs.warnings,
            vec![
                Warning::TooFewRuns { n: 2 },
                Warning::NoBaseline {
                    baseline: "ext4".to_string()
                }
            ]
        );
    }

    #[test]
    fn non_finite_values_are_left_out_and_said() {
        let input = vec![
            with(m("ext4", "w", "", 1, 0), &[("rate", 5.0)]),
            with(m("ext4", "w", "", 1, 1), &[("rate", f64::INFINITY)]),
            with(m("ext4", "w", "", 1, 2), &[("rate", 5.1)]),
            with(
                m("ext4", "w", "", 1, 3),
                &[("rate", 5.05), ("only_nan", f64::NAN)],
            ),
        ];
        let g = &aggregate(&input, "ext4", 0.05)[0];
        assert_eq!(g.ok, 4);
        assert_eq!(g.metrics["rate"].raw, vec![5.0, 5.1, 5.05]);
        assert!(!g.metrics.contains_key("only_nan"));
        assert!(g.warnings.contains(&Warning::NonFinite {
            metric: "rate".to_string(),
            count: 1
        }));
        assert!(g.warnings.contains(&Warning::NonFinite {
            metric: "only_nan".to_string(),
            count: 1
        }));
    }

    #[test]
    fn spread_and_outliers_are_warned_about() {
        let rates = [100.0, 104.0, 96.0, 101.0, 99.0, 100.5, 100.2, 400.0];
        let input: Vec<_> = rates
            .iter()
            .enumerate()
            .map(|(i, &r)| with(m("ext4", "w", "", 1, i as u32), &[("files_per_s", r)]))
            .collect();
        let g = &aggregate(&input, "ext4", 0.05)[0];
        let cv = g.metrics["files_per_s"].summary.cv;
        assert!(g.warnings.contains(&Warning::WideSpread {
            metric: "files_per_s".to_string(),
            cv
        }));
        assert!(g.warnings.contains(&Warning::Outliers {
            metric: "files_per_s".to_string(),
            count: 1
        }));
    }

    #[test]
    fn empty_input_gives_no_groups() {
        assert!(aggregate(&[], "ext4", 0.05).is_empty());
    }
}
