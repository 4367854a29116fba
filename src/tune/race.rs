//! The race: after the minimum runs, and again after every round, the candidate with the
//! best key metric (the geometric mean over the workload points) leads — or, among it and
//! the candidates not separated from it, the one the main-effects model ([`super::model`])
//! scores best, since the best mean of a few runs is often just the luckiest — and every
//! other candidate is compared with it by the run's own decisions ([`verdicts::decide`]: one
//! family over all of them under the two-stage step-up, the sequential looks of `--runs auto`).
//! A candidate decided worse than the leader (at some point, and better at none) is dropped
//! and gets no more runs; one decided equivalent at every point is a runner-up the race
//! cannot separate; the others stay open and get the runner's rounds ([`Questions`]), so
//! the budget goes where the answer is open. The race ends when no comparison with the
//! leader is open, or the budget is spent. Everything is recomputed from the records, so a
//! resumed race is the same race.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::setup::Candidate;
use crate::plan::Plan;
use crate::report::key_metric;
use crate::results::store::Loaded;
use crate::results::Measurement;
use crate::runner::budget::{open_in, Asked, BudgetError, Open, Questions};
use crate::stats::sequential::Looks;
use crate::stats::verdicts::{self, Point};
use crate::stats::Decision;

/// Where a candidate stands against the leader.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fate {
    /// The best key metric so far.
    Leader,
    /// Decided worse than the leader (at some point, and better at none).
    Dropped,
    /// Decided equivalent to the leader at every point: not separated.
    Equivalent,
    /// Better than the leader at some point and worse at another: a trade-off.
    #[serde(rename = "trade-off")]
    Traded,
    /// Some comparison with the leader still undecided.
    #[serde(rename = "undecided")]
    Open,
    /// No ok measurement at some point (its file system could not be made, or it failed).
    Failed,
    /// Fewer than its minimum runs, none of them failed: the budget ran out before them.
    #[serde(rename = "not raced")]
    NotRaced,
}

impl Fate {
    pub fn as_str(self) -> &'static str {
        match self {
            Fate::Leader => "leader",
            Fate::Dropped => "dropped",
            Fate::Equivalent => "equivalent",
            Fate::Traded => "trade-off",
            Fate::Open => "undecided",
            Fate::Failed => "failed",
            Fate::NotRaced => "not raced",
        }
    }
}

/// The race as the records leave it.
#[derive(Debug, Clone)]
pub struct Standing {
    pub leader: Option<String>,
    /// Every candidate's fate, by name.
    pub fates: BTreeMap<String, Fate>,
    /// The comparisons with the leader still open, for the next round.
    pub open: Vec<Open>,
    /// The workload points, decided against the leader.
    pub points: Vec<Point>,
    /// Whether the leader is the model's pick among those not separated from the best
    /// mean, rather than the best mean itself.
    pub pooled: bool,
}

/// Each candidate's score: its judged difference from `against` (the points' baseline) on
/// the key metric's logarithm, oriented so that higher is better, averaged over the points;
/// 0 for `against` itself; `None` for one without a mean at every point. The difference is
/// the verdict's own (`pct_diff`): at equal CPU steal where the comparison was adjusted for
/// it, so the race ranks and reports the candidates on the figure its decisions rest on.
/// (Ranked on raw means, a candidate whose runs lost more CPU to the hypervisor led a race
/// that judged it 3 % slower than the defaults at equal steal: issue 38's measurement.)
pub fn scores(points: &[Point], names: &[String], against: &str) -> BTreeMap<String, Option<f64>> {
    names
        .iter()
        .map(|n| {
            let mut sum = 0.0;
            for p in points {
                let Some(i) = p
                    .groups
                    .iter()
                    .position(|g| &g.key.target == n)
                    .filter(|&i| p.mean(i).is_some_and(|m| m > 0.0))
                else {
                    return (n.clone(), None);
                };
                if n == against {
                    continue;
                }
                let Some(ratio) = p
                    .vs_baseline(i)
                    .map(|c| 1.0 + c.pct_diff / 100.0)
                    .filter(|r| r.is_finite() && *r > 0.0)
                else {
                    return (n.clone(), None);
                };
                let sign = if p.key.higher_is_better { 1.0 } else { -1.0 };
                sum += sign * ratio.ln();
            }
            (
                n.clone(),
                (!points.is_empty()).then(|| sum / points.len() as f64),
            )
        })
        .collect()
}

/// The candidate with the best score (the first of equals), if any has one.
pub fn best(scores: &BTreeMap<String, Option<f64>>, names: &[String]) -> Option<String> {
    let mut best: Option<(&String, f64)> = None;
    for n in names {
        if let Some(Some(s)) = scores.get(n) {
            if best.map_or(true, |(_, b)| *s > b) {
                best = Some((n, *s));
            }
        }
    }
    best.map(|(n, _)| n.clone())
}

/// The standing of the race over `candidates` in `measurements`, decided within
/// ±`margin_pct` at `looks`. The leader is the best mean, unless the main-effects model
/// ([`super::model`]) scores another candidate the tests could not separate from it higher
/// and no candidate is decided better than that one: then it leads, and the others are
/// decided against it.
pub fn standing(
    measurements: &[Measurement],
    candidates: &[Candidate],
    margin_pct: f64,
    looks: &Looks,
) -> Standing {
    let names: Vec<String> = candidates.iter().map(|c| c.name.clone()).collect();
    let first = names.first().cloned().unwrap_or_default();
    let by_first = verdicts::decide(measurements, &first, margin_pct, looks, &key_metric);
    let Some(by_mean) = best(&scores(&by_first, &names, &first), &names) else {
        let fates = names.iter().map(|n| (n.clone(), Fate::Failed)).collect();
        return Standing {
            leader: None,
            fates,
            open: Vec::new(),
            points: by_first,
            pooled: false,
        };
    };
    let decide = |leader: &str| {
        let points = verdicts::decide(measurements, leader, margin_pct, looks, &key_metric);
        let fates: BTreeMap<String, Fate> = names
            .iter()
            .map(|n| (n.clone(), fate(&points, n, leader)))
            .collect();
        (points, fates)
    };
    let (mut points, mut fates) = decide(&by_mean);
    let mut leader = by_mean;
    let mut pooled = false;
    if let Some(pick) = pooled_pick(measurements, candidates, &fates).filter(|p| *p != leader) {
        let (p, f) = decide(&pick);
        if !any_better(&p, &pick) {
            (points, fates, leader, pooled) = (p, f, pick, true);
        }
    }
    let open = points
        .iter()
        .flat_map(|p| open_in(p, &leader, looks))
        .filter(|o| fates.get(&o.group.target) == Some(&Fate::Open))
        .collect();
    Standing {
        leader: Some(leader),
        fates,
        open,
        points,
        pooled,
    }
}

/// Among the leader by mean and the candidates not separated from it (equivalent, or still
/// undecided), the one the main-effects model scores best; `None` when the model has no
/// score for one of them.
fn pooled_pick(
    measurements: &[Measurement],
    candidates: &[Candidate],
    fates: &BTreeMap<String, Fate>,
) -> Option<String> {
    let levels: Vec<(&str, &[usize])> = candidates
        .iter()
        .map(|c| (c.name.as_str(), c.levels.as_slice()))
        .collect();
    let model = super::model::pooled_scores(measurements, &levels)?;
    let mut pick: Option<(&str, f64)> = None;
    for c in candidates {
        if !matches!(
            fates.get(&c.name),
            Some(Fate::Leader | Fate::Equivalent | Fate::Open)
        ) {
            continue;
        }
        let s = *model.get(&c.name)?;
        if pick.map_or(true, |(_, b)| s > b) {
            pick = Some((&c.name, s));
        }
    }
    pick.map(|(n, _)| n.to_string())
}

/// Whether some candidate is decided better than `leader` at some point.
fn any_better(points: &[Point], leader: &str) -> bool {
    points.iter().any(|p| {
        (0..p.groups.len())
            .filter(|&i| p.groups[i].key.target != leader)
            .filter_map(|i| p.vs_baseline(i))
            .filter_map(|c| c.verdict.as_ref())
            .any(|v| v.decision == Decision::Better)
    })
}

/// Candidate `name`'s fate from its verdicts against `leader` at each point.
fn fate(points: &[Point], name: &str, leader: &str) -> Fate {
    if name == leader {
        return Fate::Leader;
    }
    let mut decisions = Vec::new();
    for p in points {
        let d = p
            .groups
            .iter()
            .position(|g| g.key.target == name)
            .filter(|&i| p.mean(i).is_some())
            .and_then(|i| p.vs_baseline(i))
            .and_then(|c| c.verdict.as_ref())
            .map(|v| v.decision);
        match d {
            Some(d) => decisions.push(d),
            None => return Fate::Failed,
        }
    }
    let any = |x: Decision| decisions.contains(&x);
    if decisions.is_empty() {
        Fate::Failed
    } else if any(Decision::Worse) && !any(Decision::Better) {
        Fate::Dropped
    } else if decisions.iter().all(|d| *d == Decision::Equivalent) {
        Fate::Equivalent
    } else if any(Decision::Undecided) {
        Fate::Open
    } else {
        Fate::Traded
    }
}

/// The race's questions for the runner's rounds: the comparisons still open with the
/// leader of the records so far.
pub struct Race {
    pub candidates: Vec<Candidate>,
}

impl Questions for Race {
    fn ask(&self, state: &Loaded, plan: &Plan) -> Result<Asked, BudgetError> {
        if !(plan.margin_pct.is_finite() && plan.margin_pct > 0.0) {
            return Err(BudgetError::Decide(format!(
                "the equivalence margin {} % is not a positive number",
                plan.margin_pct
            )));
        }
        let looks = Looks::of_runs(&plan.runs);
        let s = standing(
            &state.measurements,
            &self.candidates,
            plan.margin_pct,
            &looks,
        );
        let Some(leader) = s.leader else {
            return Ok(Asked {
                open: Vec::new(),
                against: plan.baseline.clone(),
                settled: "race: no candidate has a measurement at every point".into(),
            });
        };
        let dropped = s.fates.values().filter(|f| **f == Fate::Dropped).count();
        Ok(Asked {
            settled: format!(
                "race: {leader} leads, decided better than or equivalent to every candidate left ({dropped} dropped)"
            ),
            open: s.open,
            against: leader,
        })
    }

    /// The candidates were drawn to fit the budget at their minimum runs
    /// ([`super::afford`]); if the estimate was short, the minimum stops at the budget too,
    /// and the answer names the candidates it left unraced.
    fn minimum_within_budget(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests;
