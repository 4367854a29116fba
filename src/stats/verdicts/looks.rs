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
//!
//! **Adjusted for steal.** When the point's fit at the look has a slope of the log key
//! metric on the CPU time the hypervisor stole ([`crate::stats::steal`]) and both sides are
//! in it, the same tests are made on the adjusted log values, with the slope's own
//! uncertainty added to the difference's variance and its degree of freedom paid by the
//! groups ([`adjusted_test`]).

use crate::stats::decision::{Equivalence, ALPHA};
use crate::stats::estimators::{all_finite, log_values, mean, median};
use crate::stats::mann_whitney::mann_whitney;
use crate::stats::moderated::{
    hsu_welch, moderated_paired, moderated_welch, paired_of, t_test, welch_of, Moderated, Prior,
};
use crate::stats::sequential::{sequential_p, Looks};
use crate::stats::shift::hodges_lehmann;
use crate::stats::significance::{choose_test, compare, Scale, Test};
use crate::stats::steal::Slope;

use super::points::Sample;

/// The moderated variances' priors of a point's pool at one look, and the point's slope on
/// the stolen CPU time at that look.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Priors {
    /// The point's fit of its log key metric on the stolen fraction, when it has one
    /// ([`crate::stats::steal::fit`]).
    pub slope: Option<Slope>,
    /// Of each group's log values ([`moderated_welch`]).
    pub groups: Option<Prior>,
    /// Of the per-round differences of logs of each paired comparison with the baseline
    /// ([`moderated_paired`]).
    pub pairs: Option<Prior>,
    /// The pool's targets' spreads differ ([`crate::stats::moderated::alike`] rejects): no
    /// shared prior is lent, and a comparison is Welch's with Hsu's conservative degrees of
    /// freedom, each side moderated by its own target's prior (`own`), never Mann–Whitney
    /// ([`crate::stats::moderated::hsu_welch`]; [`unequal_welch`] when adjusted for steal).
    pub unequal: bool,
    /// Where `unequal`: the baseline's and the candidate's own targets' priors, from each
    /// target's groups at the pool's other thread counts and points
    /// ([`crate::stats::moderated::hsu_welch`]).
    pub own: (Option<Prior>, Option<Prior>),
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
    /// The paired test of a side measured in turn with the baseline, and the tolerance
    /// (a log ratio) its interval is widened by on each side ([`in_turn_test`]).
    InTurn(Moderated, f64),
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
    /// The test that gave `p` (Welch's, moderated or not; the paired one; the rank test;
    /// exact), and its statistic's degrees of freedom for a t-test: what `summary.json`
    /// names.
    pub test: Test,
    pub df: Option<f64>,
    how: How,
    /// When the test was adjusted for steal: the slope, and both sides' values adjusted to
    /// no steal (baseline, candidate), for the runs-to-decide estimate.
    pub steal: Option<Adjusted>,
}

/// A comparison adjusted for the stolen CPU time ([`crate::stats::steal`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Adjusted {
    /// The point's slope of the log key metric per unit of stolen fraction.
    pub slope: f64,
    /// The baseline's and the candidate's values at no steal, `exp(ln y − β̂ x)`.
    pub base: Vec<f64>,
    pub cand: Vec<f64>,
}

fn to_pct(x: f64, scale: Scale, mb: f64) -> f64 {
    match scale {
        Scale::Ratio => x.exp_m1() * 100.0,
        Scale::Difference => x / mb * 100.0,
    }
}

impl How {
    /// The unpaired test this is (a paired test is told by its caller).
    fn test(&self) -> Test {
        match self {
            How::Welch(..) => Test::Welch,
            How::Rank(..) => Test::MannWhitney,
            How::Exact(_) => Test::Exact,
            How::InTurn(..) => Test::InTurn,
        }
    }

    /// A t-test's degrees of freedom.
    fn df(&self) -> Option<f64> {
        match self {
            How::Welch(m, ..) | How::InTurn(m, _) => Some(m.df),
            _ => None,
        }
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
            How::InTurn(m, tolerance) => {
                let (lo, hi) = m.interval(alpha)?;
                (lo - tolerance, hi + tolerance, Scale::Ratio, 1.0)
            }
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
        return exact(b, c, runs);
    }
    if let Some(t) = in_turn_test((bs, cs), mb) {
        return Some(t);
    }
    let (lb, lc, scale) = match (log_values(b), log_values(c)) {
        (Some(lb), Some(lc)) => (lb, lc, Scale::Ratio),
        _ => (b.to_vec(), c.to_vec(), Scale::Difference),
    };
    if let Some(t) = priors
        .slope
        .filter(|_| scale == Scale::Ratio)
        .and_then(|slope| adjusted_test((bs, cs), (&lb, &lc), slope, priors, mb))
    {
        return Some(t);
    }
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
            test: Test::Paired,
            df: Some(m.df),
            how,
            steal: None,
        });
    }
    let (p, pct, how) = match choose_test(b, c) {
        _ if priors.unequal => {
            let own = match scale {
                Scale::Ratio => priors.own,
                Scale::Difference => (None, None),
            };
            let m = hsu_welch(&lb, &lc, own)?;
            (m.p, to_pct(m.diff, scale, mb), How::Welch(m, scale, mb))
        }
        Test::MannWhitney => rank(lc, lb, scale, mb)?,
        _ => {
            let prior = priors.groups.filter(|_| scale == Scale::Ratio);
            let m = moderated_welch(&lb, &lc, prior)?;
            (m.p, to_pct(m.diff, scale, mb), How::Welch(m, scale, mb))
        }
    };
    Some(Tested {
        p,
        runs,
        pct,
        test: how.test(),
        df: how.df(),
        how,
        steal: None,
    })
}

/// What two copies of one file system's populated image may read apart, in percent, in a
/// point measured in turn: every cell of a target copies one image, so its own offset is
/// in every run and no number of runs averages it away. Two fresh ext4 images of the
/// default data set read +0.04 % and +0.46 % apart in 60 rounds of paired warm walks each
/// (bench/journal/default-run.md, "Interleaved passes"); this is twice the larger.
pub const IN_TURN_TOLERANCE_PCT: f64 = 1.0;

/// The test of a candidate `cs` measured in turn with the baseline `bs` in every one of its
/// runs ([`Sample::in_turn_differences`]; or of the baseline as `cs` against such a
/// candidate as `bs`, a ranking pair read from the other side): the paired t-test of the per-run differences of
/// logs, each run's two sides from one phase, so the machine's spells cancel within the
/// run. A call must clear [`IN_TURN_TOLERANCE_PCT`]: its p is the t-test of how far the
/// mean difference lies beyond it (1 inside it), a valid test of "the difference is within
/// the tolerance"; the interval, and the equivalence drawn from it, is widened by the
/// tolerance on each side. Its runs are the paired side's: each holds both sides. `None`
/// when the side was not measured in turn every run, or its differences have no spread.
fn in_turn_test((bs, cs): (Sample, Sample), mb: f64) -> Option<Tested> {
    let d = cs.in_turn_differences().or_else(|| {
        let d = bs.in_turn_differences()?;
        Some(d.iter().map(|x| -x).collect())
    })?;
    let m = moderated_paired(&d, None)?;
    let tolerance = (IN_TURN_TOLERANCE_PCT / 100.0).ln_1p();
    let beyond = m.diff.abs() - tolerance;
    let p = match beyond > 0.0 {
        true => t_test(beyond, m.se * m.se, m.df)?.p,
        false => 1.0,
    };
    Some(Tested {
        p,
        runs: d.len(),
        pct: to_pct(m.diff, Scale::Ratio, mb),
        test: Test::InTurn,
        df: Some(m.df),
        how: How::InTurn(m, tolerance),
        steal: None,
    })
}

/// Two sides without spread: the difference exactly ([`compare`]).
fn exact(b: &[f64], c: &[f64], runs: usize) -> Option<Tested> {
    let cmp = compare(b, c, ALPHA)?;
    Some(Tested {
        p: cmp.p_value,
        runs,
        pct: cmp.pct_diff,
        test: cmp.test,
        df: cmp.df,
        how: How::Exact(cmp.pct_diff),
        steal: None,
    })
}

/// Welch's test `m` again on Hsu's degrees of freedom, the smaller side's `side_df`
/// (Welch–Satterthwaite's are never fewer), for a pool whose targets' spreads differ. With
/// three runs a side and one side's variance 16 times the other's (CV 20 % beside 5 %),
/// Welch–Satterthwaite's estimate rejected 1.4 times as often as its level at the 1 % a
/// family asks (60,000 simulated draws, docs/statistics.md): when the two sample variances
/// happen to be close it counts 4 degrees of freedom where the noisy side alone holds 2.
/// Hsu's (1938) t on the smaller side's degrees of freedom never rejects more than its
/// level, whatever the ratio. Mann–Whitney is no test of location between unequal spreads
/// (beside a noisy side it rejects when the medians agree), so it is not used either.
/// Where the spreads differ, a call costs runs, not its error rate.
fn unequal_welch(m: Moderated, side_df: f64) -> Option<Moderated> {
    t_test(m.diff, m.se * m.se, side_df.min(m.df))
}

/// Mann–Whitney of `lc` against `lb` (values on `scale`), with the Hodges–Lehmann estimate
/// in percent (without the interval's search).
fn rank(lc: Vec<f64>, lb: Vec<f64>, scale: Scale, mb: f64) -> Option<(f64, f64, How)> {
    let p = mann_whitney(&lc, &lb)?.p;
    let pairs: Vec<f64> = lc
        .iter()
        .flat_map(|x| lb.iter().map(move |y| x - y))
        .collect();
    let shift = median(&pairs)?;
    Some((p, to_pct(shift, scale, mb), How::Rank(lc, lb, scale, mb)))
}

/// The test of the log values `(lb, lc)` of `(bs, cs)` adjusted for the stolen CPU time by
/// the point's `slope` ([`crate::stats::steal`]), when both sides have a steal figure for
/// every run: blocked by round as [`test`] is, else the rank test when an adjusted side
/// still looks skewed, else the moderated Welch test, each on the adjusted logs, Welch's
/// and the paired test with the slope's own variance term and the groups' degrees of
/// freedom less what the slope took.
fn adjusted_test(
    (bs, cs): (Sample, Sample),
    (lb, lc): (&[f64], &[f64]),
    slope: Slope,
    priors: Priors,
    mb: f64,
) -> Option<Tested> {
    let (xb, xc) = (bs.stolen()?, cs.stolen()?);
    let (ab, ac) = (slope.adjust(lb, &xb), slope.adjust(lc, &xc));
    let extra = Some(slope.shift_var(mean(&xc) - mean(&xb)));
    let exp = |xs: &[f64]| xs.iter().map(|x| x.exp()).collect::<Vec<f64>>();
    let steal = Some(Adjusted {
        slope: slope.b,
        base: exp(&ab),
        cand: exp(&ac),
    });
    let runs = lb.len().min(lc.len());
    let paired = priors.pairs.filter(|_| bs.reps == cs.reps).and_then(|pr| {
        let d: Vec<f64> = ac.iter().zip(&ab).map(|(c, b)| c - b).collect();
        let dx: Vec<f64> = xc.iter().zip(&xb).map(|(c, b)| c - b).collect();
        paired_of(mean(&d), slope.paired_spread(&d, &dx), Some(pr), extra)
    });
    let test_of = |how: &How| match paired {
        Some(_) => Test::Paired,
        None => how.test(),
    };
    let (p, pct, how) = match paired {
        Some(m) => (
            m.p,
            to_pct(m.diff, Scale::Ratio, mb),
            How::Welch(m, Scale::Ratio, mb),
        ),
        None => match choose_test(&exp(&ab), &exp(&ac)) {
            Test::MannWhitney if !priors.unequal => rank(ac, ab, Scale::Ratio, mb)?,
            _ => {
                let sides = (slope.spread(&ab, &xb), slope.spread(&ac, &xc));
                let m = welch_of(mean(&ac) - mean(&ab), sides, priors.groups, extra)?;
                let m = match priors.unequal {
                    true => unequal_welch(m, sides.0.df.min(sides.1.df))?,
                    false => m,
                };
                (
                    m.p,
                    to_pct(m.diff, Scale::Ratio, mb),
                    How::Welch(m, Scale::Ratio, mb),
                )
            }
        },
    };
    Some(Tested {
        p,
        runs,
        pct,
        test: test_of(&how),
        df: how.df(),
        how,
        steal,
    })
}

/// A comparison judged over the looks it reached.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    /// The sequential p-value ([`sequential_p`]): what the family adjusts.
    pub p: f64,
    /// The look that gave `p`, with its share of α.
    pub at: Option<(Tested, f64)>,
    /// The test of every run so far: the interval of an uncalled comparison.
    pub latest: Option<Tested>,
    /// The test at every look reached, with its share of α: where equivalence is tested
    /// ([`Judged::equivalent`]).
    pub looks: Vec<(Tested, f64)>,
}

impl Judged {
    /// The first look whose two one-sided tests, each at the look's share of α, put the
    /// difference inside ±`margin_pct` %: its (1 − 2·share·α) interval lies inside the
    /// margin. Equivalence is its own family, tested at the looks with their shares like
    /// better/worse ([`crate::stats::sequential`]): by the union bound a comparison whose
    /// true difference is at the margin is called equivalent at most α of the time
    /// however many looks the run makes (re-checked every round at the full α, 11.7 % of
    /// such comparisons were). A fixed run's one look is the plain TOST, the 90 % interval.
    pub fn equivalent(&self, margin_pct: f64) -> Option<Equivalence> {
        self.looks.iter().find_map(|(t, w)| {
            let alpha = 2.0 * w * ALPHA;
            let ci = t.pct_interval(alpha)?;
            (-margin_pct < ci.0 && ci.1 < margin_pct).then_some(Equivalence {
                pct_ci: ci,
                ci_level: 1.0 - alpha,
                runs: t.runs,
            })
        })
    }
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
    // A side measured in turn with the baseline in each of its runs carries both sides of
    // its comparison: its own runs reach the looks, however many the baseline's cells have.
    let (nb, nc) = match (b.in_turn_differences(), c.in_turn_differences()) {
        (_, Some(_)) => (c.values.len(), c.values.len()),
        (Some(_), None) => (b.values.len(), b.values.len()),
        (None, None) => (b.values.len(), c.values.len()),
    };
    for (n, w) in looks.reached(nb, nc) {
        if let Some(t) = test(b.first(n), c.first(n), prior_at(n)) {
            at_looks.push((t, w));
        }
    }
    let pw: Vec<(f64, f64)> = at_looks.iter().map(|(t, w)| (t.p, *w)).collect();
    let (p, k) = sequential_p(&pw);
    let latest = test(b, c, prior_at(usize::MAX));
    Judged {
        p,
        at: k.and_then(|k| at_looks.get(k).cloned()),
        latest,
        looks: at_looks,
    }
}
