//! The history as series: for one plan on one host, one target's key metric at one
//! workload point, run after run. The trend report draws them and the check tests them.

use std::collections::BTreeMap;

use serde::Serialize;

use super::entry::{RunEntry, Value};
use crate::stats::{log_values, summarize};

/// What a series is of.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct SeriesKey {
    pub plan_digest: String,
    pub host_key: String,
    pub workload: String,
    pub point: String,
    pub threads: u32,
    pub target: String,
    pub metric: String,
}

impl SeriesKey {
    /// "create · 4 threads": the workload point in words.
    pub fn point_words(&self) -> String {
        let mut s = self.workload.clone();
        if !self.point.is_empty() {
            s.push_str(&format!(" [{}]", self.point));
        }
        if self.threads > 1 {
            s.push_str(&format!(" · {} threads", self.threads));
        }
        s
    }
}

/// One run of a series: its repetitions' values (`ok` ones only) and how many did not end
/// `ok`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunPoint {
    pub run_id: String,
    pub started_unix: f64,
    pub values: Vec<f64>,
    pub failed: usize,
    /// The geometric mean of `values` (the key metric's figure in every output) and its
    /// 95 % interval, on the ratio scale; the arithmetic ones where a value is ≤ 0.
    pub center: Option<f64>,
    pub ci95: Option<(f64, f64)>,
}

/// A key metric over the runs of one plan on one host, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Series {
    pub key: SeriesKey,
    pub higher_is_better: bool,
    pub runs: Vec<RunPoint>,
}

/// A series' repetitions by run index: (repetition, value) of the `ok` ones, and how many
/// did not end `ok`.
type PerRun = BTreeMap<usize, (Vec<(u32, f64)>, usize)>;

/// The series `values` make, their runs ordered as `runs` are (oldest first). Values of a
/// run not in `runs` are left out.
pub fn build(runs: &[RunEntry], values: &[Value]) -> Vec<Series> {
    let order: BTreeMap<&str, (usize, &RunEntry)> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| (r.id.as_str(), (i, r)))
        .collect();
    let mut by: BTreeMap<SeriesKey, (bool, PerRun)> = BTreeMap::new();
    for v in values {
        let Some(&(i, run)) = order.get(v.run_id.as_str()) else {
            continue;
        };
        let key = SeriesKey {
            plan_digest: run.plan_digest.clone(),
            host_key: run.host_key.clone(),
            workload: v.workload.clone(),
            point: v.point.clone(),
            threads: v.threads,
            target: v.target.clone(),
            metric: v.metric.clone(),
        };
        let (_, per_run) = by
            .entry(key)
            .or_insert((v.higher_is_better, BTreeMap::new()));
        let slot = per_run.entry(i).or_default();
        match v.value {
            Some(x) => slot.0.push((v.repetition, x)),
            None => slot.1 += 1,
        }
    }
    by.into_iter()
        .map(|(key, (higher_is_better, per_run))| Series {
            key,
            higher_is_better,
            runs: per_run
                .into_iter()
                .map(|(i, (mut reps, failed))| {
                    reps.sort_by_key(|r| r.0);
                    let values: Vec<f64> = reps.into_iter().map(|r| r.1).collect();
                    let (center, ci95) = center(&values);
                    RunPoint {
                        run_id: runs[i].id.clone(),
                        started_unix: runs[i].started_unix,
                        values,
                        failed,
                        center,
                        ci95,
                    }
                })
                .collect(),
        })
        .collect()
}

/// The geometric mean and its 95 % interval (a t interval on the logarithms, taken back),
/// as the run report shows a key metric; the arithmetic mean and its interval when a value
/// is not positive.
pub fn center(values: &[f64]) -> (Option<f64>, Option<(f64, f64)>) {
    if let Some(logs) = log_values(values) {
        if let Some(s) = summarize(&logs) {
            return (Some(s.mean.exp()), s.ci95.map(|(l, h)| (l.exp(), h.exp())));
        }
    }
    match summarize(values) {
        Some(s) => (Some(s.mean), s.ci95),
        None => (None, None),
    }
}
