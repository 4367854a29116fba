//! One comparison tested at each look of the run ([`crate::stats::sequential`]): the test of
//! the first n repetitions of each side, with the variance moderated by the point's
//! neighbours ([`crate::stats::moderated`]), and the sequential p-value over the looks.
//!
//! **Blocked by round.** Repetition r of every group of a point is measured in round r of
//! the run (the minimum repetitions are interleaved by round, [`crate::runner`]'s
//! `rounds::interleave`), and the machine drifts between rounds for every target at once.
//! When both sides' runs carry the same repetition numbers and the pool has paired
//! neighbours at two thread counts or more, the comparison is tested on the per-round
//! differences of logs (a paired test: each round's drift cancels), their variance
//! moderated by the pool's paired differences ([`Priors::pairs`]); else, or when a side
//! is not positive, it is the unpaired moderated Welch test. Which test is used follows
//! from the repetition numbers and the plan's shape, never from the values.

use crate::stats::decision::ALPHA;
use crate::stats::estimators::{all_finite, log_values, mean, median};
use crate::stats::mann_whitney::mann_whitney;
use crate::stats::moderated::{moderated_paired, moderated_welch, Moderated, Prior};
use crate::stats::sequential::{sequential_p, Looks};
use crate::stats::shift::hodges_lehmann;
use crate::stats::significance::{choose_test, compare, Scale, Test};

use super::points::Sample;

/// The moderated variances' priors of a point's pool at one look.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Priors {
    /// Of each group's log values ([`moderated_welch`]).
    pub groups: Option<Prior>,
    /// Of the per-round differences of logs of each paired comparison with the baseline
    /// ([`moderated_paired`]).
    pub pairs: Option<Prior>,
}

/// The per-round differences `ln c − ln b` when `b` and `c` hold the same repetitions
/// (the same numbers in the same order) and every value is positive; else `None`.
pub fn round_differences(b: Sample, c: Sample) -> Option<Vec<f64>> {
    if b.reps != c.reps || b.values.len() != b.reps.len() || c.values.len() != c.reps.len() {
        return None;
    }
    let (lb, lc) = (log_values(b.values)?, log_values(c.values)?);
    Some(lc.iter().zip(&lb).map(|(x, y)| x - y).collect())
}

/// How a look's test was made, enough to draw its interval at any level.
#[derive(Debug, Clone, PartialEq)]
enum How {
    /// (Moderated) Welch on `scale`; `mb` the baseline mean for the difference scale.
    Welch(Moderated, Scale, f64),
    /// Mann–Whitney on the scale's values of candidate and baseline.
    Rank(Vec<f64>, Vec<f64>, Scale, f64),
    /// No spread on either side: the difference in percent, exactly.
    Exact(f64),
}

/// A comparison's test at one look.
#[derive(Debug, Clone, PartialEq)]
pub struct Tested {
    /// Two-sided p-value.
    pub p: f64,
    /// Runs per side the test saw (the smaller side).
    pub runs: usize,
    /// The difference in percent of the baseline, by the test's own estimate.
    pub pct: f64,
    how: How,
}

fn to_pct(x: f64, scale: Scale, mb: f64) -> f64 {
    match scale {
        Scale::Ratio => x.exp_m1() * 100.0,
        Scale::Difference => x / mb * 100.0,
    }
}

impl Tested {
    /// The (1 − `alpha`) interval of the difference in percent of the baseline.
    pub fn pct_interval(&self, alpha: f64) -> Option<(f64, f64)> {
        let (lo, hi, scale, mb) = match &self.how {
            How::Welch(m, scale, mb) => {
                let (lo, hi) = m.interval(alpha)?;
                (lo, hi, *scale, *mb)
            }
            How::Rank(c, b, scale, mb) => {
                let (lo, hi) = hodges_lehmann(c, b, alpha)?.ci;
                (lo, hi, *scale, *mb)
            }
            How::Exact(d) => return Some((*d, *d)),
        };
        let (lo, hi) = (to_pct(lo, scale, mb), to_pct(hi, scale, mb));
        Some((lo.min(hi), lo.max(hi)))
    }
}

/// The test of `c` against `b` as [`compare`] chooses it (Welch, or Mann–Whitney from five
/// runs when a side looks skewed), Welch's variances moderated by `priors` on the ratio
/// scale, and blocked by round (paired) when the two sides hold the same repetitions (the
/// module's doc). A rank test's interval is drawn only when asked for
/// ([`Tested::pct_interval`]): the budget asks for the p-value every round.
pub fn test(bs: Sample, cs: Sample, priors: Priors) -> Option<Tested> {
    let (b, c) = (bs.values, cs.values);
    if b.len() < 2 || c.len() < 2 || !all_finite(b) || !all_finite(c) {
        return None;
    }
    let runs = b.len().min(c.len());
    let (mb, mc) = (mean(b), mean(c));
    if mb == 0.0 || !mb.is_finite() || !mc.is_finite() {
        return None;
    }
    let flat = |xs: &[f64]| xs.iter().all(|&x| x == xs[0]);
    if flat(b) && flat(c) {
        let cmp = compare(b, c, ALPHA)?;
        return Some(Tested {
            p: cmp.p_value,
            runs,
            pct: cmp.pct_diff,
            how: How::Exact(cmp.pct_diff),
        });
    }
    let (lb, lc, scale) = match (log_values(b), log_values(c)) {
        (Some(lb), Some(lc)) => (lb, lc, Scale::Ratio),
        _ => (b.to_vec(), c.to_vec(), Scale::Difference),
    };
    // Blocked by round: the paired t-test whatever each side's shape (a side may look
    // skewed from the drift alone, which pairing takes out); a wild round inflates the
    // differences' variance, so it errs towards undecided, as Welch's test does below five
    // runs ([`choose_test`]).
    let paired = priors
        .pairs
        .and_then(|pr| moderated_paired(&round_differences(bs, cs)?, Some(pr)));
    if let Some(m) = paired {
        let how = How::Welch(m, Scale::Ratio, mb);
        return Some(Tested {
            p: m.p,
            runs,
            pct: to_pct(m.diff, Scale::Ratio, mb),
            how,
        });
    }
    let (p, pct, how) = match choose_test(b, c) {
        Test::MannWhitney => {
            let p = mann_whitney(&lc, &lb)?.p;
            // The Hodges–Lehmann estimate, without the interval's search.
            let pairs: Vec<f64> = lc
                .iter()
                .flat_map(|x| lb.iter().map(move |y| x - y))
                .collect();
            let shift = median(&pairs)?;
            (p, to_pct(shift, scale, mb), How::Rank(lc, lb, scale, mb))
        }
        Test::Welch => {
            let prior = priors.groups.filter(|_| scale == Scale::Ratio);
            let m = moderated_welch(&lb, &lc, prior)?;
            (m.p, to_pct(m.diff, scale, mb), How::Welch(m, scale, mb))
        }
    };
    Some(Tested { p, runs, pct, how })
}

/// A comparison judged over the looks it reached.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    /// The sequential p-value ([`sequential_p`]): what the family adjusts.
    pub p: f64,
    /// The look that gave `p`, with its share of α.
    pub at: Option<(Tested, f64)>,
    /// The test of every run so far: the interval of an uncalled comparison and its
    /// equivalence test.
    pub latest: Option<Tested>,
}

/// `b` and `c` (in repetition order) judged at each look of `looks` they reached;
/// `prior_at(n)` is the point's priors from the first `n` runs of each of its groups.
pub fn judge(
    b: Sample,
    c: Sample,
    looks: &Looks,
    prior_at: &mut dyn FnMut(usize) -> Priors,
) -> Judged {
    let mut at_looks: Vec<(Tested, f64)> = Vec::new();
    for (n, w) in looks.reached(b.values.len(), c.values.len()) {
        if let Some(t) = test(b.first(n), c.first(n), prior_at(n)) {
            at_looks.push((t, w));
        }
    }
    let pw: Vec<(f64, f64)> = at_looks.iter().map(|(t, w)| (t.p, *w)).collect();
    let (p, k) = sequential_p(&pw);
    let latest = test(b, c, prior_at(usize::MAX));
    Judged {
        p,
        at: k.map(|k| at_looks.swap_remove(k)),
        latest,
    }
}
