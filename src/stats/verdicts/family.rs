//! The run's family of comparisons and their verdicts: every key-metric comparison with the
//! baseline, plus each point's ranking pairs that are not already one, adjusted together by
//! the adaptive two-stage step-up ([`Family::adaptive`]); then each gets better / worse /
//! equivalent / undecided, and the undecided ones an estimate of the runs that would decide
//! them. `fsarena compare` builds its own family with plain Benjamini–Hochberg
//! ([`Family::new`]); each verdict says which procedure adjusted it.

use std::collections::{HashMap, HashSet};

use super::looks::{judge, Judged, IN_TURN_TOLERANCE_PCT};
use super::points::{Point, RankedPair};
use super::pools::{clear_at_no_steal, mark_at_no_steal, Pools};
use crate::stats::decision::{
    benjamini_hochberg, decide, next_level, runs_to_decide_at, runs_to_decide_paired, two_stage,
    Adjustment, Decision, Verdict, ALPHA,
};
use crate::stats::moderated::Prior;
use crate::stats::sequential::Looks;
use crate::stats::significance::{compare, Comparison, Test};

/// A family of comparisons under false-discovery-rate control.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    /// The procedure that adjusted the p-values.
    pub adjustment: Adjustment,
    /// The adjusted p-values, in the order of the raw ones.
    pub adjusted: Vec<f64>,
    /// The level the procedure asks of the next comparison it would call: what a
    /// runs-to-decide estimate must reach ([`next_level`]).
    pub level: f64,
    /// The p at or below which a comparison is called (R·α/m for BH with R called of m):
    /// the false-coverage level of a called comparison's interval (Benjamini & Yekutieli
    /// 2005), so that a called comparison's interval excludes 0.
    pub threshold: f64,
}

impl Family {
    /// The family of the raw p-values `p` under plain Benjamini–Hochberg, at [`ALPHA`].
    pub fn new(p: &[f64]) -> Family {
        let adjusted = benjamini_hochberg(p);
        let called = adjusted.iter().filter(|&&x| x < ALPHA).count();
        Family {
            adjustment: Adjustment::BenjaminiHochberg,
            level: next_level(ALPHA, called, p.len()),
            threshold: called as f64 * ALPHA / p.len().max(1) as f64,
            adjusted,
        }
    }

    /// The run's family of the raw p-values `p` under the adaptive two-stage step-up
    /// ([`two_stage`]): a run whose differences are mostly real is not judged as if none
    /// were. The next comparison's level is stage 2's, never above α.
    pub fn adaptive(p: &[f64]) -> Family {
        let s = two_stage(p, ALPHA);
        let called = s.adjusted.iter().filter(|&&x| x < ALPHA).count();
        Family {
            adjustment: Adjustment::TwoStage,
            level: next_level(s.level, called, p.len()).min(ALPHA),
            threshold: s.threshold,
            adjusted: s.adjusted,
        }
    }
}

/// The verdict on comparison `c` whose p-value `adjustment` adjusted to `p_adjusted`; `runs`
/// estimates the runs that would decide it, asked only when it is undecided.
pub fn verdict(
    c: &Comparison,
    (p_adjusted, adjustment): (f64, Adjustment),
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
        adjustment,
        margin_pct,
        runs_to_decide: (decision == Decision::Undecided).then(runs).flatten(),
        p_sequential: None,
        look_runs: None,
        ci_level: None,
        runs_limit: None,
        within_pct: (decision == Decision::Undecided)
            .then_some(c.pct_ci95)
            .flatten(),
        within_level: (decision == Decision::Undecided && c.pct_ci95.is_some()).then_some(0.95),
        equivalence: None,
        steal: None,
    }
}

/// The point's disk groups with a key-metric centre, best first.
fn ranked(p: &Point) -> Vec<usize> {
    let mut order: Vec<usize> = (0..p.groups.len())
        .filter(|&i| !p.reference(i) && p.centre(i).is_some())
        .collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (p.centre(a).unwrap_or(0.0), p.centre(b).unwrap_or(0.0));
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
            cmp: compare(p.shown_runs(next), p.shown_runs(win), ALPHA),
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

/// Where a comparison of the run sits.
#[derive(Clone, Copy)]
enum Slot {
    /// The key metric of group `.1` of point `.0`, against the baseline.
    Group(usize, usize),
    /// Ranking pair `.1` of point `.0`.
    Pair(usize, usize),
}

/// One comparison of the run, judged over its looks.
struct Member {
    slot: Slot,
    /// Its own place in the family, or the group whose place it shares (a ranking pair
    /// holding the baseline).
    shares: Option<usize>,
    judged: Judged,
    base: Vec<f64>,
    cand: Vec<f64>,
    /// The per-run differences the latest test paired, when the candidate was measured in
    /// turn with the baseline ([`super::looks`]): what its runs-to-decide estimate reads.
    in_turn: Option<Vec<f64>>,
    /// The point's prior from every run so far, for the runs-to-decide estimate.
    prior: Option<Prior>,
}

/// Every comparison of the run judged over its looks: per point, its comparisons with the
/// baseline, then its ranking pairs (a pair holding the baseline shares that group's place).
fn members(points: &[Point], baseline: &str, looks: &Looks, raw: &HashSet<usize>) -> Vec<Member> {
    let mut pools = Pools::new(points, baseline, raw);
    let mut out = Vec::new();
    for (pi, point) in points.iter().enumerate() {
        let base_index = point.baseline_index(baseline);
        let mut group_member = HashMap::new();
        let mut push = |slot, shares, (bi, ci): (usize, usize), pools: &mut Pools| {
            let (mut base, mut cand) = (point.sample(bi), point.sample(ci));
            if !base_index.is_some_and(|b| b == bi || b == ci) {
                // Each side was measured in turn with the baseline, not with the other: the
                // two are compared on the figures their rows show.
                (base, cand) = (point.shown_sample(bi), point.shown_sample(ci));
            }
            let sides = (
                point.groups[bi].key.target.as_str(),
                point.groups[ci].key.target.as_str(),
            );
            let judged = judge(base, cand, looks, &mut |n| pools.priors(pi, n, sides));
            let paired = (cand.in_turn_differences())
                .or_else(|| Some(base.in_turn_differences()?.iter().map(|x| -x).collect()));
            // The runs-to-decide estimate reads the values the test saw: adjusted for
            // steal when it was.
            let (base, cand) = match judged.latest.as_ref().and_then(|t| t.steal.as_ref()) {
                Some(a) => (a.base.clone(), a.cand.clone()),
                None => (base.values.to_vec(), cand.values.to_vec()),
            };
            let in_turn = (judged.latest.as_ref())
                .filter(|t| t.test == Test::InTurn)
                .and_then(|_| paired.clone());
            out.push(Member {
                slot,
                shares,
                judged,
                base,
                cand,
                in_turn,
                prior: pools.priors(pi, usize::MAX, sides).groups,
            });
            out.len() - 1
        };
        for gi in 0..point.groups.len() {
            if let (Some(_), Some(b)) = (point.vs_baseline(gi), base_index) {
                let m = push(Slot::Group(pi, gi), None, (b, gi), &mut pools);
                group_member.insert(gi, m);
            }
        }
        for (ri, pair) in point.pairs.iter().enumerate() {
            if pair.cmp.is_none() {
                continue;
            }
            let shares = pair.same_as.and_then(|g| group_member.get(&g).copied());
            if pair.same_as.is_some() && shares.is_none() {
                continue;
            }
            push(
                Slot::Pair(pi, ri),
                shares,
                (pair.next, pair.win),
                &mut pools,
            );
        }
    }
    out
}

/// The comparison a member stands for.
fn comparison(points: &mut [Point], slot: Slot) -> Option<&mut Comparison> {
    match slot {
        Slot::Group(pi, gi) => {
            let key = points[pi].key.name.clone();
            points[pi].groups[gi]
                .metrics
                .get_mut(&key)
                .and_then(|m| m.vs_baseline.as_mut())
        }
        Slot::Pair(pi, ri) => points[pi].pairs[ri].cmp.as_mut(),
    }
}

/// What the family says of every member.
struct Outcome {
    /// The procedure ([`Family::adaptive`]'s).
    adjustment: Adjustment,
    /// Adjusted p-value per member ([`Family::adaptive`]; a sharing pair takes its group's).
    adjusted: Vec<f64>,
    /// The level the procedure asks of the next comparison ([`Family::level`]).
    level: f64,
    /// The false-coverage level of a called comparison's interval, before its look's share
    /// ([`Family::threshold`]).
    fcr: f64,
}

fn outcome(members: &[Member]) -> Outcome {
    let own: Vec<usize> = (0..members.len())
        .filter(|&i| members[i].shares.is_none())
        .collect();
    let p: Vec<f64> = own.iter().map(|&i| members[i].judged.p).collect();
    let family = Family::adaptive(&p);
    let mut adjusted = vec![1.0; members.len()];
    for (&i, &a) in own.iter().zip(&family.adjusted) {
        adjusted[i] = a;
    }
    for i in 0..members.len() {
        if let Some(g) = members[i].shares {
            adjusted[i] = adjusted[g];
        }
    }
    Outcome {
        adjustment: family.adjustment,
        adjusted,
        level: family.level,
        fcr: family.threshold,
    }
}

/// Sets one comparison's verdict and the interval it shows: for a called difference the
/// look's interval at the false-coverage level `share · threshold` (the p at or below which
/// the family calls, [`Family::threshold`]), which excludes 0; else the 95 % interval of
/// every run so far.
fn settle(c: &mut Comparison, m: Member, ph: f64, o: &Outcome, how: (bool, f64, &Looks)) {
    let (higher, margin_pct, looks) = how;
    if let Some(latest) = &m.judged.latest {
        c.p_value = latest.p;
        c.pct_ci95 = latest.pct_interval(0.05);
        c.pct_ci90 = latest.pct_interval(0.10);
        if latest.steal.is_some() || latest.test == Test::InTurn {
            // The difference at equal steal, or paired in turn, which the interval is about.
            c.pct_diff = latest.pct;
        }
    }
    let direction = m.judged.at.as_ref().map_or(c.pct_diff, |(t, _)| t.pct);
    let equivalence = m.judged.equivalent(margin_pct);
    let inside = equivalence.map(|e| e.pct_ci);
    let decision = decide(direction, inside, ph, ALPHA, margin_pct, higher);
    let mut v = verdict(c, (ph, o.adjustment), higher, margin_pct, || {
        match &m.in_turn {
            Some(d) => {
                let tolerance = (IN_TURN_TOLERANCE_PCT / 100.0).ln_1p();
                runs_to_decide_paired(d, (tolerance, margin_pct), o.level, looks)
            }
            None => runs_to_decide_at(&m.base, &m.cand, margin_pct, o.level, looks, m.prior),
        }
    });
    v.decision = decision;
    v.equivalence = equivalence.filter(|_| decision == Decision::Equivalent);
    v.p_sequential = Some(m.judged.p);
    v.ci_level = Some(0.95);
    // Name what decided: the test of the look a call rests on, else of every run so far.
    if let Some(t) = (m.judged.at.as_ref())
        .filter(|_| matches!(decision, Decision::Better | Decision::Worse))
        .map(|(t, _)| t)
        .or(m.judged.latest.as_ref())
    {
        c.test = t.test;
        c.df = t.df;
    }
    // `significant` is the run's word, not the test's own p beside an "undecided".
    c.significant = matches!(decision, Decision::Better | Decision::Worse);
    if let (Decision::Better | Decision::Worse, Some((t, w))) = (decision, &m.judged.at) {
        let alpha = (w * o.fcr).min(ALPHA);
        if let Some(ci) = t.pct_interval(alpha) {
            c.pct_ci95 = Some(ci);
            v.ci_level = Some(1.0 - alpha);
        }
        v.look_runs = looks.is_sequential().then_some(t.runs);
    }
    if decision != Decision::Undecided {
        v.runs_to_decide = None;
    }
    if decision == Decision::Undecided {
        (v.within_pct, v.within_level) = within(&m.judged, o.level).unzip();
        // The interval every output prints beside the % ("+5.0 % ±3.0") is that range
        // too: a plain 95 % one could leave zero out beside "undecided".
        if let Some(range) = v.within_pct {
            c.pct_ci95 = Some(range);
            v.ci_level = v.within_level;
        }
    }
    v.runs_limit = looks.last();
    let rests_on = match decision {
        Decision::Better | Decision::Worse => m.judged.at.as_ref().map(|(t, _)| t),
        _ => m.judged.latest.as_ref(),
    };
    if let Some(a) = rests_on.and_then(|t| t.steal.as_ref()) {
        v.steal = Some(crate::stats::steal::StealNote {
            steal_adjusted: true,
            steal_slope: a.slope,
        });
    }
    c.verdict = Some(v);
}

/// The range an undecided comparison still allows, and its level: its latest look's interval
/// at the level it would have to pass to be called now, the look's share of the family's
/// `level` (the p the step-up asks of the next comparison it would call,
/// [`Family::level`]). An uncalled comparison's sequential p is at least `level`
/// (`an_uncalled_p_is_never_below_the_next_level`), so every look's p is at least its
/// share of it and the interval, the test's own, holds zero: the range never reads as a
/// call the family did not make. Without a look, the test of every run so far at `level`.
fn within(judged: &Judged, level: f64) -> Option<((f64, f64), f64)> {
    let (t, w) = match judged.looks.last() {
        Some((t, w)) => (t, *w),
        None => (judged.latest.as_ref()?, 1.0),
    };
    let alpha = (w * level).min(ALPHA);
    Some((t.pct_interval(alpha)?, 1.0 - alpha))
}

/// The points whose figures and tests disagree on the stolen CPU time: a row shows its
/// figures at no steal ([`mark_at_no_steal`]) while a test its decision or % rests on fell
/// back to the raw values (a look too early for the point's fit, a side whose adjusted
/// spread had no degree of freedom left), or the other way round. Such a headline once named
/// the leader of the raw test above figures at no steal that ranked the other way.
fn mixed_points(points: &[Point], members: &[Member], o: &Outcome) -> HashSet<usize> {
    let mut mixed = HashSet::new();
    for (m, &ph) in members.iter().zip(&o.adjusted) {
        let (Slot::Group(pi, _) | Slot::Pair(pi, _)) = m.slot;
        let shown = points[pi].groups.iter().any(|g| {
            g.metrics
                .get(&points[pi].key.name)
                .is_some_and(|k| k.at_no_steal.is_some())
        });
        // No test of every run leaves the comparison's raw figures in place.
        let latest = m.judged.latest.as_ref().is_some_and(|t| t.steal.is_some());
        let called = (ph < ALPHA).then_some(m.judged.at.as_ref()).flatten();
        if latest != shown || called.is_some_and(|(t, _)| t.steal.is_some() != shown) {
            mixed.insert(pi);
        }
    }
    mixed
}

/// Decides every point of a run against `baseline` within ±`margin_pct` %, looking at the
/// repetitions as `looks` says: sets the verdicts on the key metrics' `vs_baseline` and on
/// the ranking pairs, over one family.
///
/// One source for every figure printed: a point's decisions, its %, its ranking and the
/// figures its rows show are all at no CPU steal or all raw. A point whose tests and
/// figures would disagree ([`mixed_points`]) is judged again on its raw values, and the
/// family with it, until none does (a raw point stays raw, so this ends).
pub fn decide_points(points: &mut [Point], baseline: &str, margin_pct: f64, looks: &Looks) {
    let mut raw = HashSet::new();
    let (members, o) = loop {
        for (pi, point) in points.iter_mut().enumerate() {
            match raw.contains(&pi) {
                true => clear_at_no_steal(point),
                false => mark_at_no_steal(point),
            }
            point.mark_in_turn(baseline);
            point.pairs = ranking_pairs(point, baseline);
        }
        let members = members(points, baseline, looks, &raw);
        let o = outcome(&members);
        let mixed = mixed_points(points, &members, &o);
        if mixed.is_subset(&raw) {
            break (members, o);
        }
        raw.extend(mixed);
    };
    for (i, m) in members.into_iter().enumerate() {
        let (Slot::Group(pi, _) | Slot::Pair(pi, _)) = m.slot;
        let higher = points[pi].key.higher_is_better;
        if let Some(c) = comparison(points, m.slot) {
            settle(c, m, o.adjusted[i], &o, (higher, margin_pct, looks));
        }
    }
}
