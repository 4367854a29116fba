//! The run's family of comparisons and their verdicts: every key-metric comparison with the
//! baseline, plus each point's ranking pairs that are not already one, adjusted together by
//! Benjamini–Hochberg; then each gets better / worse / equivalent / undecided, and the
//! undecided ones an estimate of the runs that would decide them.

use super::points::{Point, RankedPair};
use crate::stats::decision::{
    benjamini_hochberg, decide, next_level, runs_to_decide, Decision, Verdict, ALPHA,
};
use crate::stats::significance::{compare, Comparison};

/// A family of comparisons under Benjamini–Hochberg control.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    /// The adjusted p-values, in the order of the raw ones.
    pub adjusted: Vec<f64>,
    /// The level BH asks of the next comparison it would call: what a runs-to-decide
    /// estimate must reach ([`next_level`]).
    pub level: f64,
}

impl Family {
    /// The family of the raw p-values `p`, at [`ALPHA`].
    pub fn new(p: &[f64]) -> Family {
        let adjusted = benjamini_hochberg(p);
        let called = adjusted.iter().filter(|&&x| x < ALPHA).count();
        Family {
            level: next_level(ALPHA, called, p.len()),
            adjusted,
        }
    }
}

/// The verdict on comparison `c` whose adjusted p-value is `p_adjusted`; `runs` estimates the
/// runs that would decide it, asked only when it is undecided.
pub fn verdict(
    c: &Comparison,
    p_adjusted: f64,
    higher_is_better: bool,
    margin_pct: f64,
    runs: impl FnOnce() -> Option<usize>,
) -> Verdict {
    let decision = decide(
        c.pct_diff,
        c.pct_ci90,
        p_adjusted,
        ALPHA,
        margin_pct,
        higher_is_better,
    );
    Verdict {
        decision,
        p_adjusted,
        margin_pct,
        runs_to_decide: (decision == Decision::Undecided).then(runs).flatten(),
    }
}

/// Where a p-value of the family came from.
enum Slot {
    /// The key metric of group `.1` of point `.0`, against the baseline.
    Group(usize, usize),
    /// Ranking pair `.1` of point `.0`.
    Pair(usize, usize),
}

/// The point's disk groups with a key-metric mean, best first.
fn ranked(p: &Point) -> Vec<usize> {
    let mut order: Vec<usize> = (0..p.groups.len())
        .filter(|&i| !p.reference(i) && p.mean(i).is_some())
        .collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (p.mean(a).unwrap_or(0.0), p.mean(b).unwrap_or(0.0));
        let o = x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal);
        if p.key.higher_is_better {
            o.reverse()
        } else {
            o
        }
    });
    order
}

/// The ranking pairs of a point, compared but not yet decided: leader vs runner-up, and the
/// last two read "worst trails the second-worst" (so led by the second-worst); with two
/// targets both are the same comparison and only one is kept.
fn ranking_pairs(p: &Point, baseline: &str) -> Vec<RankedPair> {
    let order = ranked(p);
    if order.len() < 2 {
        return Vec::new();
    }
    let top = (order[0], order[1]);
    let bottom = (order[order.len() - 1], order[order.len() - 2]);
    let mut wanted = vec![top];
    if (bottom.1, bottom.0) != top {
        wanted.push((bottom.1, bottom.0));
    }
    let target = |i: usize| p.groups[i].key.target.as_str();
    wanted
        .into_iter()
        .map(|(win, next)| RankedPair {
            win,
            next,
            cmp: compare(p.raw(next), p.raw(win), ALPHA),
            same_as: if target(win) == baseline {
                Some(next)
            } else if target(next) == baseline {
                Some(win)
            } else {
                None
            },
        })
        .collect()
}

/// Sets every point's ranking pairs and lists the family's members with their raw
/// p-values: per point, its comparisons with the baseline, then its pairs that are not one.
fn members(points: &mut [Point], baseline: &str) -> (Vec<Slot>, Vec<f64>) {
    let (mut slots, mut p) = (Vec::new(), Vec::new());
    for (pi, point) in points.iter_mut().enumerate() {
        for gi in 0..point.groups.len() {
            if let Some(c) = point.vs_baseline(gi) {
                slots.push(Slot::Group(pi, gi));
                p.push(c.p_value);
            }
        }
        point.pairs = ranking_pairs(point, baseline);
        for (ri, pair) in point.pairs.iter().enumerate() {
            if let (None, Some(c)) = (pair.same_as, &pair.cmp) {
                slots.push(Slot::Pair(pi, ri));
                p.push(c.p_value);
            }
        }
    }
    (slots, p)
}

/// Each point's adjusted p-values: per group (its comparison with the baseline) and per
/// ranking pair (its own, or the group's it shares).
struct Adjusted {
    groups: Vec<Vec<Option<f64>>>,
    pairs: Vec<Vec<Option<f64>>>,
}

/// Hands the family's adjusted p-values back to the comparisons they came from.
fn spread(points: &[Point], slots: &[Slot], family: &Family) -> Adjusted {
    let mut a = Adjusted {
        groups: points.iter().map(|p| vec![None; p.groups.len()]).collect(),
        pairs: points.iter().map(|p| vec![None; p.pairs.len()]).collect(),
    };
    for (slot, &ph) in slots.iter().zip(&family.adjusted) {
        match *slot {
            Slot::Group(pi, gi) => a.groups[pi][gi] = Some(ph),
            Slot::Pair(pi, ri) => a.pairs[pi][ri] = Some(ph),
        }
    }
    for (pi, p) in points.iter().enumerate() {
        for (ri, pair) in p.pairs.iter().enumerate() {
            if let Some(gi) = pair.same_as {
                a.pairs[pi][ri] = a.groups[pi][gi];
            }
        }
    }
    a
}

/// Decides one point's comparisons with the baseline and its ranking pairs.
fn decide_point(
    p: &mut Point,
    baseline: &str,
    groups: &[Option<f64>],
    pairs: &[Option<f64>],
    margin_pct: f64,
    level: f64,
) {
    let higher = p.key.higher_is_better;
    let base_raw = p.baseline_index(baseline).map(|b| p.raw(b).to_vec());
    for (gi, ph) in groups.iter().enumerate() {
        let Some(ph) = *ph else { continue };
        let cand = p.raw(gi).to_vec();
        let key = &p.key.name;
        let Some(c) = p.groups[gi]
            .metrics
            .get_mut(key)
            .and_then(|m| m.vs_baseline.as_mut())
        else {
            continue;
        };
        c.verdict = Some(verdict(c, ph, higher, margin_pct, || {
            base_raw
                .as_ref()
                .and_then(|b| runs_to_decide(b, &cand, margin_pct, level))
        }));
    }
    for (ri, ph) in pairs.iter().enumerate() {
        let (next, win) = (p.pairs[ri].next, p.pairs[ri].win);
        let (next, win) = (p.raw(next).to_vec(), p.raw(win).to_vec());
        let (Some(c), Some(ph)) = (p.pairs[ri].cmp.as_mut(), *ph) else {
            continue;
        };
        c.verdict = Some(verdict(c, ph, higher, margin_pct, || {
            runs_to_decide(&next, &win, margin_pct, level)
        }));
    }
}

/// Decides every point of a run against `baseline` within ±`margin_pct` %: sets the verdicts
/// on the key metrics' `vs_baseline` and on the ranking pairs, over one family.
pub fn decide_points(points: &mut [Point], baseline: &str, margin_pct: f64) {
    let (slots, p) = members(points, baseline);
    let family = Family::new(&p);
    let adjusted = spread(points, &slots, &family);
    for (pi, point) in points.iter_mut().enumerate() {
        decide_point(
            point,
            baseline,
            &adjusted.groups[pi],
            &adjusted.pairs[pi],
            margin_pct,
            family.level,
        );
    }
}
