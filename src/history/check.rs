//! `fsarena history check`: is the newest run of each plan on each host worse than its
//! history? Two questions, each at half the error rate so that together they keep α:
//!
//! - **against a baseline**: the newest run's repetitions against the baseline runs'
//!   (the runs under `--against KEY=VALUE`, else the last N before it), by the test
//!   `fsarena compare` uses ([`crate::stats::compare`]: Welch on the ratio scale, or
//!   Mann–Whitney for a skewed sample), Benjamini–Hochberg over every series checked;
//! - **a change point**: the series' most likely level shift ([`super::changepoint`]),
//!   when the newest run lies after it; the run where it began is named. This finds a
//!   regression that has already entered the last N runs, which the first test, run
//!   against them, cannot.
//!
//! A series is a regression when either says "worse" by more than `--fail-if-worse` %.

use std::collections::BTreeMap;

use serde::Serialize;
use xxhash_rust::xxh3::xxh3_64;

use super::changepoint::{detect, Change};
use super::entry::{RunEntry, Value};
use super::series::{build, SeriesKey};
use crate::stats::{benjamini_hochberg, compare, ALPHA};

/// What the check compares with, and how large a loss counts.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// `--against KEY=VALUE`: the runs carrying this label are the baseline.
    pub against: Option<(String, String)>,
    /// The last N runs before the newest are the baseline (without `against`).
    pub last: usize,
    /// How many runs before the newest the change-point detector looks back over.
    pub window: usize,
    /// A loss must be larger than this many percent to count (0: any significant loss).
    pub fail_if_worse_pct: f64,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            against: None,
            last: 5,
            window: 30,
            fail_if_worse_pct: 0.0,
        }
    }
}

/// One plan on one host: its runs the check reads (oldest first, the newest last) and which
/// of them are the baseline.
#[derive(Debug, Clone)]
pub struct Group {
    pub runs: Vec<RunEntry>,
    pub baseline: Vec<usize>,
}

impl Group {
    pub fn newest(&self) -> &RunEntry {
        &self.runs[self.runs.len() - 1]
    }
}

/// A regression found.
#[derive(Debug, Clone, Serialize)]
pub struct Regression {
    pub key: SeriesKey,
    pub plan_name: String,
    pub host: String,
    /// The newest run's key metric against the level before, in percent.
    pub pct: f64,
    pub ci95: Option<(f64, f64)>,
    /// The run where the change began, and the newest run.
    pub began: RunEntry,
    pub newest_run: String,
    /// The adjusted p-value of the baseline test, when it called the loss.
    pub test_p: Option<f64>,
    /// The adjusted p-value of the change point, when it called the loss.
    pub change_p: Option<f64>,
}

/// The check's answer.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Outcome {
    pub regressions: Vec<Regression>,
    /// Plans × hosts whose newest run measured nothing (`git bisect` must skip it): the
    /// run's id and results path.
    pub unmeasured: Vec<(String, String)>,
    /// Plans × hosts with a single run: nothing to compare with yet.
    pub alone: Vec<String>,
    /// How many series were checked.
    pub series: usize,
}

/// The groups of `runs` (oldest first): one per plan and host, holding the newest run,
/// its baseline and the window before it.
pub fn groups(runs: &[RunEntry], o: &CheckOptions) -> Vec<Group> {
    let mut by: BTreeMap<(&str, &str), Vec<&RunEntry>> = BTreeMap::new();
    for r in runs {
        by.entry((&r.plan_digest, &r.host_key)).or_default().push(r);
    }
    by.into_values()
        .map(|rs| {
            let start = rs.len().saturating_sub(o.window + 1);
            let runs: Vec<RunEntry> = rs[start..].iter().map(|r| (*r).clone()).collect();
            let newest = runs.len() - 1;
            let baseline = match &o.against {
                Some((k, v)) => (0..newest)
                    .filter(|&i| runs[i].labels.get(k) == Some(v))
                    .collect(),
                None => (newest.saturating_sub(o.last)..newest).collect(),
            };
            Group { runs, baseline }
        })
        .collect()
}

/// One series' two answers before the family is adjusted.
struct Judged {
    key: SeriesKey,
    group: usize,
    higher_is_better: bool,
    test: Option<crate::stats::Comparison>,
    change: Option<(Change, usize)>,
}

/// Checks every group with the values of its runs.
pub fn check(groups: &[Group], values: &[Value], o: &CheckOptions) -> Outcome {
    let mut out = Outcome::default();
    let mut judged = Vec::new();
    for (gi, g) in groups.iter().enumerate() {
        let newest = g.newest();
        if g.runs.len() < 2 {
            out.alone
                .push(format!("{} on {}", newest.plan_name, newest.host));
            continue;
        }
        let series = build(&g.runs, values);
        let measured = series.iter().any(|s| {
            s.runs
                .iter()
                .any(|p| p.run_id == newest.id && !p.values.is_empty())
        });
        if !measured {
            out.unmeasured
                .push((newest.id.clone(), newest.results_path.clone()));
            continue;
        }
        for s in series {
            let blocks: Vec<Vec<f64>> = g
                .runs
                .iter()
                .map(|r| {
                    s.runs
                        .iter()
                        .find(|p| p.run_id == r.id)
                        .map(|p| p.values.clone())
                        .unwrap_or_default()
                })
                .collect();
            let new = &blocks[blocks.len() - 1];
            if new.is_empty() {
                continue;
            }
            let base: Vec<f64> = g.baseline.iter().flat_map(|&i| blocks[i].clone()).collect();
            let seed = xxh3_64(format!("{:?}", s.key).as_bytes());
            out.series += 1;
            judged.push(Judged {
                group: gi,
                higher_is_better: s.higher_is_better,
                test: compare(&base, new, ALPHA),
                change: detect(&blocks, seed).map(|c| (c.clone(), c.at_run)),
                key: s.key,
            });
        }
    }
    out.regressions = decide(groups, judged, o);
    out
}

/// The family adjusted (Benjamini–Hochberg, each test at α/2) and the losses larger than
/// the gate kept.
fn decide(groups: &[Group], judged: Vec<Judged>, o: &CheckOptions) -> Vec<Regression> {
    let half = ALPHA / 2.0;
    let test_p = benjamini_hochberg(
        &judged
            .iter()
            .map(|j| j.test.as_ref().map_or(1.0, |c| c.p_value))
            .collect::<Vec<_>>(),
    );
    let change_p = benjamini_hochberg(
        &judged
            .iter()
            .map(|j| j.change.as_ref().map_or(1.0, |c| c.0.p))
            .collect::<Vec<_>>(),
    );
    let mut out = Vec::new();
    for (i, j) in judged.into_iter().enumerate() {
        let worse = |pct: f64| {
            let loss = if j.higher_is_better { -pct } else { pct };
            loss > o.fail_if_worse_pct
        };
        let by_test = j
            .test
            .as_ref()
            .filter(|c| test_p[i] < half && worse(c.pct_diff));
        let by_change = j
            .change
            .as_ref()
            .filter(|c| change_p[i] < half && worse(c.0.pct));
        if by_test.is_none() && by_change.is_none() {
            continue;
        }
        let g = &groups[j.group];
        let newest = g.newest();
        let began = by_change.map_or(newest, |c| &g.runs[c.1]);
        out.push(Regression {
            plan_name: newest.plan_name.clone(),
            host: newest.host.clone(),
            pct: by_test.map_or_else(|| by_change.map_or(0.0, |c| c.0.pct), |c| c.pct_diff),
            ci95: by_test.and_then(|c| c.pct_ci95),
            began: began.clone(),
            newest_run: newest.id.clone(),
            test_p: by_test.map(|_| test_p[i]),
            change_p: by_change.map(|_| change_p[i]),
            key: j.key,
        });
    }
    out
}

#[cfg(test)]
mod tests;
