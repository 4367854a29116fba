//! Whether a verdict holds across the data-set sizes of a run (`--scale 0.01,0.1`): each
//! comparison of a target with the baseline at one workload point (workload, variant,
//! threads) is gathered over the data sets of one scale series, smallest first, and called
//!
//! * **holds** — at least two sizes decided it, and all of them alike;
//! * **flips** — two sizes decided it differently (better at one, worse or equivalent at
//!   another): the answer depends on the size, and the sizes are named;
//! * **undecided** — fewer than two sizes decided it.
//!
//! "Decided" is better, worse or equivalent, each as the run's family decided it
//! ([`super::family`]); the check adds no test of its own. The steps (which data-set labels
//! form a series, in which order) come from the caller: the statistics know no plan.

use serde::Serialize;

use super::points::Point;
use crate::stats::decision::Decision;

/// One comparison followed across the sizes of a series.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScaleCheck {
    pub workload: String,
    pub variant: String,
    pub threads: u32,
    pub target: String,
    pub baseline: String,
    /// The comparison at each size, smallest first (sizes the run has no verdict for are
    /// left out).
    pub per_scale: Vec<ScaleStep>,
    pub outcome: Outcome,
}

/// The comparison at one data-set size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScaleStep {
    /// The data set's label ("2.5k files · 38.9 MiB").
    pub dataset: String,
    pub decision: Decision,
    /// The difference in percent of the baseline, on the key metric.
    pub pct_diff: f64,
}

/// What the sizes say together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Holds,
    Flips,
    Undecided,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Holds => "holds",
            Outcome::Flips => "flips",
            Outcome::Undecided => "undecided",
        }
    }
}

/// The outcome of one comparison's decisions, smallest size first.
pub fn outcome(decisions: &[Decision]) -> Outcome {
    let decided: Vec<Decision> = decisions
        .iter()
        .copied()
        .filter(|d| *d != Decision::Undecided)
        .collect();
    match decided.as_slice() {
        [] | [_] => Outcome::Undecided,
        [first, rest @ ..] if rest.iter().all(|d| d == first) => Outcome::Holds,
        _ => Outcome::Flips,
    }
}

/// Every comparison of the decided `points` followed across each series of `steps` (one
/// list of data-set labels per series, smallest first), in the order of the points.
pub fn check(points: &[Point], baseline: &str, steps: &[Vec<String>]) -> Vec<ScaleCheck> {
    let mut out = Vec::new();
    for series in steps.iter().filter(|s| s.len() > 1) {
        let mut mine = Vec::new();
        for label in series {
            for p in points
                .iter()
                .filter(|p| p.dataset.as_deref() == Some(label.as_str()))
            {
                add_point(&mut mine, p, baseline, label);
            }
        }
        for c in &mut mine {
            let d: Vec<Decision> = c.per_scale.iter().map(|s| s.decision).collect();
            c.outcome = outcome(&d);
        }
        out.extend(mine);
    }
    out
}

/// Adds point `p`'s comparisons at size `label` to the checks of its series.
fn add_point(checks: &mut Vec<ScaleCheck>, p: &Point, baseline: &str, label: &str) {
    for (i, g) in p.groups.iter().enumerate() {
        let Some(c) = p.vs_baseline(i) else { continue };
        let Some(v) = &c.verdict else { continue };
        if g.key.target == baseline || p.reference(i) {
            continue;
        }
        let step = ScaleStep {
            dataset: label.to_string(),
            decision: v.decision,
            pct_diff: c.pct_diff,
        };
        let same = |k: &ScaleCheck| {
            k.workload == p.workload
                && k.variant == p.variant
                && k.threads == p.threads
                && k.target == g.key.target
        };
        match checks.iter_mut().find(|k| same(k)) {
            Some(k) => k.per_scale.push(step),
            None => checks.push(ScaleCheck {
                workload: p.workload.clone(),
                variant: p.variant.clone(),
                threads: p.threads,
                target: g.key.target.clone(),
                baseline: baseline.to_string(),
                per_scale: vec![step],
                outcome: Outcome::Undecided,
            }),
        }
    }
}

/// How many checks hold, flip and stay undecided.
pub fn tally(checks: &[ScaleCheck]) -> (usize, usize, usize) {
    let n = |o| checks.iter().filter(|c| c.outcome == o).count();
    (n(Outcome::Holds), n(Outcome::Flips), n(Outcome::Undecided))
}

#[cfg(test)]
mod tests;
