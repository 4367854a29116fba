//! Three-way decisions: is a candidate **better**, **worse**, **equivalent** to its
//! baseline, or is it still **undecided**? A bare "not significant" mixes "equal" with "we
//! cannot tell"; these rules keep the two apart.
//!
//! * **better / worse**: the difference is significant after Holm–Bonferroni control over
//!   every comparison of the run ([`holm`]); the direction follows the metric's
//!   `higher_is_better`.
//! * **equivalent**: two one-sided tests (TOST) at 5 % each, i.e. the 90 % Welch interval of
//!   the percentage difference lies inside ±margin ([`tost_p`] gives the matching p-value).
//! * **undecided**: neither, with an estimate of how many further runs per target would
//!   decide it ([`runs_to_decide`]).

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

use super::estimators::{all_finite, mean, stddev, t_quantile};

/// [`runs_to_decide`] looks no further than this many runs per target.
pub const MAX_RUNS_ESTIMATE: usize = 1000;

/// The answer for one comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Better,
    Worse,
    Equivalent,
    Undecided,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Better => "better",
            Decision::Worse => "worse",
            Decision::Equivalent => "equivalent",
            Decision::Undecided => "undecided",
        }
    }
}

/// A decided comparison: the word and the numbers it rests on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub decision: Decision,
    /// Holm–Bonferroni adjusted p-value over the run's whole family of comparisons.
    pub p_holm: f64,
    /// The equivalence margin in percent of the baseline mean.
    pub margin_pct: f64,
    /// For `undecided`: estimated further runs per target that would decide it; `None` when
    /// decided, or when even [`MAX_RUNS_ESTIMATE`] runs would not.
    pub runs_to_decide: Option<usize>,
}

/// Holm–Bonferroni step-down adjusted p-values, in input order
/// (`statsmodels.stats.multitest.multipletests(p, method='holm')[1]`).
///
/// Sorted ascending, the i-th smallest (0-based) of m gets `(m − i)·p`, made monotone by a
/// running maximum and capped at 1. Rejecting where the adjusted p < α controls the
/// family-wise error rate at α without assuming independence. Non-finite p-values are
/// treated as 1.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let clean = |x: f64| {
        if x.is_finite() {
            x.clamp(0.0, 1.0)
        } else {
            1.0
        }
    };
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| clean(p[a]).total_cmp(&clean(p[b])));
    let mut out = vec![1.0; m];
    let mut running = 0.0f64;
    for (i, &k) in order.iter().enumerate() {
        running = running.max(((m - i) as f64 * clean(p[k])).min(1.0));
        out[k] = running;
    }
    out
}

/// The three-way answer for a comparison whose Holm-adjusted p-value is `p_holm` and whose
/// 90 % interval of the percentage difference (candidate vs baseline) is `pct_ci90`.
///
/// Significance wins over equivalence: a difference that is real but inside the margin is
/// still a real difference, and says so. `pct_diff` is the observed difference; its sign,
/// with `higher_is_better`, says whether the candidate is better or worse.
pub fn decide(
    pct_diff: f64,
    pct_ci90: Option<(f64, f64)>,
    p_holm: f64,
    alpha: f64,
    margin_pct: f64,
    higher_is_better: bool,
) -> Decision {
    if p_holm < alpha {
        if (pct_diff > 0.0) == higher_is_better {
            Decision::Better
        } else {
            Decision::Worse
        }
    } else if pct_ci90.is_some_and(|(lo, hi)| -margin_pct < lo && hi < margin_pct) {
        Decision::Equivalent
    } else {
        Decision::Undecided
    }
}

/// TOST p-value for equivalence within ±`margin_pct` % of the baseline mean: the larger of
/// the two one-sided Welch p-values against the bounds (statsmodels `ttost_ind(candidate,
/// baseline, low, upp, usevar='unequal')`). Below 0.05 exactly when the 90 % interval lies
/// inside the margin. `None` when Welch has no answer (too few values, no spread, non-finite
/// values) or the baseline mean is 0.
pub fn tost_p(baseline: &[f64], candidate: &[f64], margin_pct: f64) -> Option<f64> {
    if baseline.len() < 2 || candidate.len() < 2 || !all_finite(baseline) || !all_finite(candidate)
    {
        return None;
    }
    let (mb, mc) = (mean(baseline), mean(candidate));
    let bound = (margin_pct / 100.0 * mb).abs();
    let (vb, vc) = (
        stddev(baseline, mb).powi(2) / baseline.len() as f64,
        stddev(candidate, mc).powi(2) / candidate.len() as f64,
    );
    let se = (vb + vc).sqrt();
    if mb == 0.0 || !(se > 0.0 && se.is_finite()) {
        return None;
    }
    let df = welch_df(vb, vc, baseline.len(), candidate.len());
    let t = StudentsT::new(0.0, 1.0, df).ok()?;
    let d = mc - mb;
    // H0: d ≤ −bound (reject when d is far above it), and H0: d ≥ +bound.
    let p_low = t.sf((d + bound) / se);
    let p_high = t.cdf((d - bound) / se);
    Some(p_low.max(p_high).clamp(0.0, 1.0))
}

/// Welch–Satterthwaite degrees of freedom from the squared standard errors of two means.
fn welch_df(va: f64, vb: f64, na: usize, nb: usize) -> f64 {
    (va + vb).powi(2) / (va * va / (na as f64 - 1.0) + vb * vb / (nb as f64 - 1.0))
}

/// Estimated further runs per target after which this comparison would be decided.
///
/// **Assumption:** the means and standard deviations observed so far are the true ones;
/// only the number of runs `n` (the same on both sides) changes. The standard error of the
/// percentage difference is then `se(n) = 100 · √((s_b² + s_c²) / n) / |m_b|` and the
/// Welch–Satterthwaite df is `(n − 1)(s_b² + s_c²)² / (s_b⁴ + s_c⁴)`. The answer is the
/// smallest `n` at which either
///
/// * `|d| − t(1 − α_strict/2, df) · se(n) > 0`: the 95 %-type interval at the Holm level
///   excludes 0 (a significant difference), or
/// * `|d| + t(0.95, df) · se(n) < margin`: the 90 % interval fits inside ±margin
///   (equivalent),
///
/// minus the runs already made (the smaller side). `d` is the observed percentage
/// difference. `alpha_strict` should be Holm's strictest level α/m (m = family size): Holm
/// never asks more than that of any comparison, so the estimate does not promise a decision
/// too early. It is an estimate: the next runs will move the means and spreads.
///
/// `None` when the inputs say nothing (fewer than 2 values, non-finite, baseline mean 0,
/// no spread) or when no `n` up to [`MAX_RUNS_ESTIMATE`] decides it (a difference sitting on
/// the margin).
pub fn runs_to_decide(
    baseline: &[f64],
    candidate: &[f64],
    margin_pct: f64,
    alpha_strict: f64,
) -> Option<usize> {
    if baseline.len() < 2 || candidate.len() < 2 || !all_finite(baseline) || !all_finite(candidate)
    {
        return None;
    }
    let (mb, mc) = (mean(baseline), mean(candidate));
    let (sb, sc) = (stddev(baseline, mb), stddev(candidate, mc));
    if mb == 0.0 || !(alpha_strict > 0.0 && alpha_strict < 1.0) {
        return None;
    }
    let d = ((mc - mb) / mb * 100.0).abs();
    let var_sum = sb * sb + sc * sc;
    if !(var_sum > 0.0 && var_sum.is_finite() && d.is_finite()) {
        return None;
    }
    let df_per_run = var_sum.powi(2) / (sb.powi(4) + sc.powi(4));
    let now = baseline.len().min(candidate.len());
    (now.max(2)..=MAX_RUNS_ESTIMATE)
        .find(|&n| {
            let se = 100.0 * (var_sum / n as f64).sqrt() / mb.abs();
            let df = (n as f64 - 1.0) * df_per_run;
            let (Some(t_sig), Some(t_eq)) = (
                t_quantile(1.0 - alpha_strict / 2.0, df),
                t_quantile(0.95, df),
            ) else {
                return false;
            };
            d - t_sig * se > 0.0 || d + t_eq * se < margin_pct
        })
        .map(|n| n - now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::fixtures::close;

    #[test]
    fn holm_matches_statsmodels() {
        // python: from statsmodels.stats.multitest import multipletests; print(multipletests([0.01,0.04,0.03,0.005,0.2], method='holm')[1])
        let got = holm(&[0.01, 0.04, 0.03, 0.005, 0.2]);
        let want = [0.04, 0.09, 0.09, 0.025, 0.2];
        for (g, w) in got.iter().zip(want) {
            assert!(close(*g, w, 1e-12), "{got:?} vs {want:?}");
        }
        // python: print(multipletests([0.0001,0.02,0.021,0.5], method='holm')[1])
        let got = holm(&[0.0001, 0.02, 0.021, 0.5]);
        let want = [0.0004, 0.06, 0.06, 0.5];
        for (g, w) in got.iter().zip(want) {
            assert!(close(*g, w, 1e-12), "{got:?} vs {want:?}");
        }
        assert!(holm(&[]).is_empty());
        assert_eq!(holm(&[f64::NAN, 0.01]), vec![1.0, 0.02]);
    }

    // Reference values for TOST come from (base, cand as in the call, margin 5 %):
    // python: import numpy as np; from scipy import stats; from statsmodels.stats.weightstats import ttost_ind; mb=np.mean(base); r=ttost_ind(np.array(cand),np.array(base),-0.05*mb,0.05*mb,usevar='unequal'); ci=stats.ttest_ind(cand,base,equal_var=False).confidence_interval(0.90); print(repr(float(r[0])), repr(float(ci.low/mb*100)), repr(float(ci.high/mb*100)))
    #[test]
    fn tost_and_the_90_interval_match_statsmodels() {
        let cases: [(&[f64], &[f64], [f64; 3]); 3] = [
            // base=[1000.0,1010.0,990.0,1005.0,995.0]; cand=[1002.0,1012.0,992.0,1001.0,998.0]
            (
                &[1000.0, 1010.0, 990.0, 1005.0, 995.0],
                &[1002.0, 1012.0, 992.0, 1001.0, 998.0],
                [
                    3.857744102557663e-06,
                    -0.7945290008449855,
                    0.9945290008449853,
                ],
            ),
            // base=[1000.0,1010.0,990.0]; cand=[1000.0,1020.0,985.0]
            (
                &[1000.0, 1010.0, 990.0],
                &[1000.0, 1020.0, 985.0],
                [0.011439804652200567, -2.518691939871001, 2.8520252732043256],
            ),
            // base=[10.0,10.1,10.2]; cand=[12.0,12.3,11.8]
            (
                &[10.0, 10.1, 10.2],
                &[12.0, 12.3, 11.8],
                [0.9976527286442246, 15.27038808292691, 23.013440299911377],
            ),
        ];
        for (base, cand, [p, lo, hi]) in cases {
            let got = tost_p(base, cand, 5.0).unwrap();
            assert!(close(got, p, 1e-8), "tost {got} vs {p}");
            let c = super::super::compare(base, cand, 0.05).unwrap();
            let (glo, ghi) = c.pct_ci90.unwrap();
            assert!(close(glo, lo, 1e-8) && close(ghi, hi, 1e-8), "{glo} {ghi}");
            // TOST rejects at 5 % exactly when the 90 % interval is inside the margin.
            assert_eq!(got < 0.05, -5.0 < glo && ghi < 5.0);
        }
        assert_eq!(tost_p(&[1.0], &[1.0, 2.0], 5.0), None);
        assert_eq!(tost_p(&[2.0, 2.0], &[2.0, 2.0], 5.0), None);
    }

    #[test]
    fn decide_gives_each_of_the_four_words() {
        // Significant after Holm: direction from higher_is_better.
        assert_eq!(
            decide(10.0, Some((5.0, 15.0)), 0.01, 0.05, 5.0, true),
            Decision::Better
        );
        assert_eq!(
            decide(10.0, Some((5.0, 15.0)), 0.01, 0.05, 5.0, false),
            Decision::Worse
        );
        assert_eq!(
            decide(-10.0, Some((-15.0, -5.0)), 0.01, 0.05, 5.0, false),
            Decision::Better
        );
        // Not significant, 90 % interval inside ±5 %.
        assert_eq!(
            decide(0.2, Some((-2.5, 2.9)), 0.6, 0.05, 5.0, true),
            Decision::Equivalent
        );
        // Same interval, tighter margin: cannot tell.
        assert_eq!(
            decide(0.2, Some((-2.5, 2.9)), 0.6, 0.05, 2.0, true),
            Decision::Undecided
        );
        // Raw p 0.03 would be significant, but not after Holm.
        assert_eq!(
            decide(6.0, Some((0.5, 11.5)), 0.09, 0.05, 5.0, true),
            Decision::Undecided
        );
        assert_eq!(decide(1.0, None, 0.5, 0.05, 5.0, true), Decision::Undecided);
    }

    // Reference values come from the same rule written independently with scipy:
    // python: import numpy as np; from scipy import stats
    //   def rtd(b,c,m,a):
    //     mb=np.mean(b); sb=np.std(b,ddof=1); sc=np.std(c,ddof=1); d=abs(np.mean(c)-mb)/mb*100; v=sb**2+sc**2; k=v**2/(sb**4+sc**4); now=min(len(b),len(c))
    //     for n in range(max(now,2),1001):
    //       se=100*np.sqrt(v/n)/abs(mb); df=(n-1)*k
    //       if d-stats.t.ppf(1-a/2,df)*se>0 or d+stats.t.ppf(0.95,df)*se<m: return n-now
    //   print(rtd(b,c,margin,alpha_strict)) with the arguments of each call
    #[test]
    fn runs_to_decide_matches_an_independent_computation() {
        // b=[100,104,96]; c=[103,108,98]: 3 % apart with 4–5 % spread → significance or equivalence needs more runs
        let b = [100.0, 104.0, 96.0];
        let c = [103.0, 108.0, 98.0];
        assert_eq!(runs_to_decide(&b, &c, 5.0, 0.005), Some(26));
        // b=[1000,1010,990]; c=[1000,1020,985]: nearly equal, wide spread
        let b2 = [1000.0, 1010.0, 990.0];
        let c2 = [1000.0, 1020.0, 985.0];
        assert_eq!(runs_to_decide(&b2, &c2, 1.0, 0.005), Some(15));
        // b=[100,103,97]; c=[104,108,101]: 4.3 % apart, spread 3 %
        let b3 = [100.0, 103.0, 97.0];
        let c3 = [104.0, 108.0, 101.0];
        assert_eq!(runs_to_decide(&b3, &c3, 5.0, 0.005), Some(9));
        // b=[100,101,99]; c=[105,106,104]: already decided at this level
        assert_eq!(
            runs_to_decide(&[100.0, 101.0, 99.0], &[105.0, 106.0, 104.0], 5.0, 0.005),
            Some(0)
        );
        assert_eq!(runs_to_decide(&[1.0, 1.0], &[1.0, 1.0], 5.0, 0.05), None);
        assert_eq!(runs_to_decide(&[1.0], &[1.0, 2.0], 5.0, 0.05), None);
    }
}
