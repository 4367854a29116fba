//! Is a difference between two file systems real? [`compare`] judges the samples' shape,
//! picks [Welch's t-test](super::welch) or [Mann–Whitney U](super::mann_whitney) by the
//! rule documented there, and turns the answer into a percentage with an interval.
//!
//! Positive samples (times, rates, bytes: almost every metric) are compared on the **ratio
//! scale**: Welch's test runs on the logarithms, and the difference and its intervals are
//! ratios of geometric means, shown as percentages. Benchmark noise is multiplicative (a
//! file system three times slower also wobbles three times as much in seconds), so on raw
//! values the slow side's spread swamps a large difference; on logs both sides have the
//! same spread for the same CV, and "12 % faster" is exactly what the test tests. Samples
//! with a zero or negative value fall back to raw differences ([`Scale::Difference`]).

use serde::Serialize;

use super::decision::Verdict;
use super::estimators::{all_finite, log_values, mean};
use super::mann_whitney::mann_whitney;
use super::outliers::mad_outliers;
use super::shift::Shifts;
use super::welch::{welch, WelchResult};

/// Which test produced a [`Comparison`]'s p-value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Test {
    Welch,
    MannWhitney,
    /// The paired t-test on the per-round differences (blocked by round,
    /// [`super::verdicts::looks`]): chosen by the run's verdicts, never by [`compare`].
    Paired,
    /// The paired t-test on the per-cell differences of a point measured in turn (the
    /// candidate's passes and the baseline's alternating in one phase,
    /// [`super::verdicts::looks`]), a call held beyond what copies of one image differ by.
    InTurn,
    /// No spread on either side: the difference is exact, no test was needed.
    Exact,
}

impl Test {
    pub fn as_str(self) -> &'static str {
        match self {
            Test::Welch => "Welch's t-test",
            Test::MannWhitney => "Mann–Whitney U",
            Test::Paired => "paired t-test",
            Test::InTurn => "paired t-test, in turn",
            Test::Exact => "exact (no spread)",
        }
    }
}

/// Where [`compare`] measured the difference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scale {
    /// Welch on logarithms; the difference is the ratio of geometric means − 1.
    Ratio,
    /// Welch on raw values (a sample had a value ≤ 0); the difference is of arithmetic
    /// means, relative to the baseline mean.
    Difference,
}

/// A candidate measured against a baseline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// The difference in percent of the baseline: on the [`Scale::Ratio`] scale
    /// `(geomean(candidate) / geomean(baseline) − 1) × 100`, else `(candidate mean −
    /// baseline mean) / baseline mean × 100`. For run-to-run CVs of a few percent the two
    /// agree to a fraction of a percent. When `test` is Mann–Whitney it is the test's own
    /// estimate instead, the Hodges–Lehmann shift (median of every pairwise difference, of
    /// logs on the ratio scale) — robust to the outlier that made the test a rank test.
    pub pct_diff: f64,
    /// 95 % interval of `pct_diff`. With Welch's test, on the ratio scale: Welch's interval
    /// of the difference of log means, exponentiated (exact, no approximation); on the
    /// difference scale: Welch's interval of the mean difference divided by the baseline
    /// mean, which treats the baseline mean as exact (no Fieller correction). With
    /// Mann–Whitney: the shifts that test does not reject ([`super::shift`]), so the
    /// interval excludes 0 exactly when the test calls the difference (a Welch interval
    /// beside a rank test's p once read "better, p = 0.04, 95 % CI −3 % to +20 %"). Always
    /// a 95 % interval, whatever `alpha` is.
    pub pct_ci95: Option<(f64, f64)>,
    /// 90 % interval of `pct_diff`, built like `pct_ci95`: the interval the equivalence test
    /// (TOST, [`super::decision`]) checks against the margin.
    pub pct_ci90: Option<(f64, f64)>,
    /// Two-sided p-value of `test`.
    pub p_value: f64,
    pub test: Test,
    /// The degrees of freedom of a t-test's statistic (Welch–Satterthwaite's, or a
    /// moderated test's with what it borrowed); none for a rank test or an exact one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub df: Option<f64>,
    pub scale: Scale,
    /// From [`compare`]: `p_value < alpha`, before any multiple-comparison control. Once
    /// the run's verdict is set ([`super::verdicts`]): whether the run called the difference
    /// (better or worse), so that it never reads `true` beside an `undecided`.
    pub significant: bool,
    /// The three-way decision, set by whoever knows the family of comparisons and the
    /// metric's direction (the report model, for key metrics); `None` from [`compare`].
    #[serde(flatten)]
    pub verdict: Option<Verdict>,
}

/// A sample this small is not judged for shape (see [`choose_test`]).
pub const MIN_N_FOR_SHAPE: usize = 5;

/// Absolute sample skewness (adjusted Fisher–Pearson G₁) above which a sample counts as
/// skewed; 1 is the usual "highly skewed" boundary (Bulmer).
pub const SKEW_LIMIT: f64 = 1.0;

/// Compares `candidate` against `baseline` and says whether the difference is real.
///
/// # Which test
///
/// * If either sample has fewer than [`MIN_N_FOR_SHAPE`] (5) values: **Welch's t-test**.
/// * Otherwise **Mann–Whitney U** when either sample looks non-normal, i.e. has a MAD
///   outlier (see [`super::outliers`]) or |G₁| > [`SKEW_LIMIT`]; **Welch** when both look
///   normal enough.
///
/// Why not a rank test for small samples: with the default 3 runs per side the exact
/// Mann–Whitney test has only C(6, 3) = 20 equally likely arrangements, so its smallest
/// two-sided p is 0.1 (0.029 at 4 vs 4). It could never call anything significant at
/// 0.05, and a user comparing 10.0 ± 0.1 s against 12.0 ± 0.1 s would be told "noise".
/// Below 5 runs there is also too little data to judge the shape at all, so the choice
/// rests on Welch's t-test, whose small-df t-distribution already widens the interval for
/// small n. **Consequence:** with fewer than 5 runs the verdict assumes roughly normal run
/// times. A wild run does not make it over-confident: it inflates that side's variance, so
/// |t| shrinks and the test errs towards "not significant" (and the outlier is flagged in
/// the summary). From 5 runs per side the rank test can reach p = 0.008, so it is used
/// whenever the data look skewed or contain an outlier, where the t-test's assumptions
/// are visibly broken.
///
/// # When there is no answer
///
/// `None` when either side has fewer than 2 values, any value is non-finite, the baseline
/// mean is 0 (a percentage of zero is meaningless), both sides have zero variance and
/// equal means, or the numbers are so large (beyond ±1e307) that their difference overflows. Zero variance on both sides with *different* means (a deterministic
/// counter that changed) is reported as significant with p = 0 and a zero-width interval:
/// Welch's statistic is infinite there, and no amount of repetition would change it.
pub fn compare(baseline: &[f64], candidate: &[f64], alpha: f64) -> Option<Comparison> {
    if baseline.len() < 2 || candidate.len() < 2 || !all_finite(baseline) || !all_finite(candidate)
    {
        return None;
    }
    let (mb, mc) = (mean(baseline), mean(candidate));
    if mb == 0.0 || !mb.is_finite() || !mc.is_finite() {
        return None;
    }
    let zero_spread = |xs: &[f64]| xs.iter().all(|&x| x == xs[0]);
    if zero_spread(baseline) && zero_spread(candidate) {
        return deterministic(mb, mc, alpha);
    }
    let on = Scaled::new(baseline, candidate, mb, mc);
    let pct = |(lo, hi): (f64, f64)| {
        let (lo, hi) = ((on.to_pct)(lo), (on.to_pct)(hi));
        (lo.min(hi), lo.max(hi))
    };
    let test = choose_test(baseline, candidate);
    let (p_value, pct_diff, pct_ci95, pct_ci90) = match test {
        Test::Welch | Test::Paired | Test::InTurn | Test::Exact => (
            on.welch?.p,
            on.pct_diff,
            on.welch.map(|w| pct(w.ci95)),
            on.welch.map(|w| pct(w.ci90)),
        ),
        Test::MannWhitney => {
            let r = rank_test(baseline, candidate, on.scale)?;
            (
                r.p,
                (on.to_pct)(r.shift),
                Some(pct(r.ci95)),
                Some(pct(r.ci90)),
            )
        }
    };
    Some(Comparison {
        pct_diff,
        pct_ci95,
        pct_ci90,
        p_value,
        test,
        df: on.welch.filter(|_| test == Test::Welch).map(|w| w.df),
        scale: on.scale,
        significant: p_value < alpha,
        verdict: None,
    })
}

/// Two samples without any spread and with different means (a deterministic counter that
/// changed): significant with p = 0 and a zero-width interval, since Welch's statistic is
/// infinite and no repetition would change it. `None` when the means are equal too.
fn deterministic(mb: f64, mc: f64, alpha: f64) -> Option<Comparison> {
    if mb == mc {
        return None;
    }
    let pct_diff = (mc - mb) / mb * 100.0;
    Some(Comparison {
        pct_diff,
        pct_ci95: Some((pct_diff, pct_diff)),
        pct_ci90: Some((pct_diff, pct_diff)),
        p_value: 0.0,
        test: Test::Exact,
        df: None,
        scale: Scale::Difference,
        significant: 0.0 < alpha,
        verdict: None,
    })
}

/// Welch's test on the scale the comparison is made on, and the way back to percent.
struct Scaled {
    scale: Scale,
    /// The difference in percent of the baseline, by Welch's estimate.
    pct_diff: f64,
    welch: Option<WelchResult>,
    /// From a difference on `scale` to percent of the baseline.
    to_pct: Box<dyn Fn(f64) -> f64>,
}

impl Scaled {
    /// Logarithms when both samples are positive (the ratio scale), else raw values
    /// relative to the baseline mean `mb`.
    fn new(baseline: &[f64], candidate: &[f64], mb: f64, mc: f64) -> Scaled {
        match (log_values(baseline), log_values(candidate)) {
            (Some(lb), Some(lc)) => {
                let to_pct = |x: f64| x.exp_m1() * 100.0;
                Scaled {
                    scale: Scale::Ratio,
                    pct_diff: to_pct(mean(&lc) - mean(&lb)),
                    welch: welch(&lc, &lb),
                    to_pct: Box::new(to_pct),
                }
            }
            _ => Scaled {
                scale: Scale::Difference,
                pct_diff: (mc - mb) / mb * 100.0,
                welch: welch(candidate, baseline),
                to_pct: Box::new(move |x: f64| x / mb * 100.0),
            },
        }
    }
}

/// What the rank test says on the comparison's scale.
struct RankTest {
    p: f64,
    /// Its own estimate of the shift (Hodges–Lehmann).
    shift: f64,
    /// The shifts the test does not reject at 5 % and at 10 %.
    ci95: (f64, f64),
    ci90: (f64, f64),
}

/// Mann–Whitney on `scale` (logs, else raw values): the same scale as Welch's would have
/// been, so the interval excludes 0 exactly when the test calls the difference.
fn rank_test(baseline: &[f64], candidate: &[f64], scale: Scale) -> Option<RankTest> {
    let (c, b) = match scale {
        Scale::Ratio => (log_values(candidate)?, log_values(baseline)?),
        Scale::Difference => (candidate.to_vec(), baseline.to_vec()),
    };
    let shifts = Shifts::new(&c, &b)?;
    Some(RankTest {
        p: mann_whitney(&c, &b)?.p,
        shift: shifts.estimate(),
        ci95: shifts.interval(0.05)?,
        ci90: shifts.interval(0.10)?,
    })
}

/// The test [`compare`] uses for these two samples (the rule is documented there).
pub fn choose_test(baseline: &[f64], candidate: &[f64]) -> Test {
    if baseline.len() < MIN_N_FOR_SHAPE || candidate.len() < MIN_N_FOR_SHAPE {
        return Test::Welch;
    }
    let looks_non_normal =
        |xs: &[f64]| !mad_outliers(xs).is_empty() || skewness(xs).abs() > SKEW_LIMIT;
    if looks_non_normal(baseline) || looks_non_normal(candidate) {
        Test::MannWhitney
    } else {
        Test::Welch
    }
}

/// Adjusted Fisher–Pearson sample skewness G₁ (scipy's `skew(x, bias=False)`). 0 when
/// fewer than 3 values or no spread, where skewness is undefined.
pub fn skewness(xs: &[f64]) -> f64 {
    let n = xs.len() as f64;
    if xs.len() < 3 {
        return 0.0;
    }
    let m = mean(xs);
    let m2 = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n;
    let m3 = xs.iter().map(|x| (x - m).powi(3)).sum::<f64>() / n;
    if m2.is_nan() || m2 <= 0.0 {
        return 0.0;
    }
    let g1 = m3 / m2.powf(1.5);
    let adjusted = g1 * (n * (n - 1.0)).sqrt() / (n - 2.0);
    if adjusted.is_finite() {
        adjusted
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::fixtures::close;

    #[test]
    fn skewness_matches_scipy() {
        // python: from scipy import stats; print(repr(float(stats.skew([1.0,1.1,1.2,1.3,5.0,1.15],bias=False))), repr(float(stats.skew([3.0,1.0,4.0,1.0,5.0,9.0,2.0,6.0],bias=False))))
        assert!(close(
            skewness(&[1.0, 1.1, 1.2, 1.3, 5.0, 1.15]),
            2.4273001676347543,
            1e-10
        ));
        assert!(close(
            skewness(&[3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0]),
            0.8335031385336658,
            1e-10
        ));
        assert_eq!(skewness(&[1.0, 2.0]), 0.0);
        assert_eq!(skewness(&[4.0, 4.0, 4.0]), 0.0);
    }

    // Reference values for compare() come from (base, cand as in the call), on the ratio scale:
    // python: from scipy import stats; import numpy as np; lb,lc=np.log(base),np.log(cand); r=stats.ttest_ind(lc,lb,equal_var=False); ci=r.confidence_interval(0.95); print(repr(float((np.exp(np.mean(lc)-np.mean(lb))-1)*100)), repr(float((np.exp(ci.low)-1)*100)), repr(float((np.exp(ci.high)-1)*100)), repr(float(r.pvalue)), repr(float(stats.mannwhitneyu(cand,base,alternative='two-sided').pvalue)))
    #[test]
    fn compare_three_runs_uses_welch_and_can_be_significant() {
        // base=[10.0,10.1,10.2]; cand=[12.0,12.3,11.8] (exact MW p would be 0.1)
        let c = compare(&[10.0, 10.1, 10.2], &[12.0, 12.3, 11.8], 0.05).unwrap();
        assert_eq!((c.test, c.scale), (Test::Welch, Scale::Ratio));
        assert!(close(c.pct_diff, 19.12848161987457, 1e-12));
        let (lo, hi) = c.pct_ci95.unwrap();
        assert!(close(lo, 14.036775931993194, 1e-8), "{lo}");
        assert!(close(hi, 24.447530343369863, 1e-8), "{hi}");
        assert!(close(c.p_value, 0.0012189908936560698, 1e-8));
        assert!(c.significant);
        // The same data at a stricter alpha is not significant.
        assert!(
            !compare(&[10.0, 10.1, 10.2], &[12.0, 12.3, 11.8], 0.001)
                .unwrap()
                .significant
        );
    }

    // python: import numpy as np; from scipy import stats; b=[10.0,10.5,9.5]; c=[30.0,31.5,28.5]; print(repr(float(stats.ttest_ind(np.log(c),np.log(b),equal_var=False).pvalue)), repr(float(stats.ttest_ind(c,b,equal_var=False).pvalue)))
    #[test]
    fn compare_on_the_ratio_scale_sees_a_threefold_difference_with_multiplicative_noise() {
        // Both sides wobble by 5 %: on raw values the slow side's spread (±1.5) hides the
        // tripling (p 7.3e-4, not enough for a run of many comparisons); on logs it does not.
        let c = compare(&[10.0, 10.5, 9.5], &[30.0, 31.5, 28.5], 0.05).unwrap();
        assert_eq!(c.scale, Scale::Ratio);
        assert!(
            close(c.p_value, 1.1379055755948069e-05, 1e-8),
            "{}",
            c.p_value
        );
        assert!(close(c.pct_diff, 200.0, 1e-9));
    }

    #[test]
    fn compare_noise_is_not_significant() {
        // base=[1000.0,1010.0,990.0]; cand=[1000.0,1020.0,985.0]
        let c = compare(&[1000.0, 1010.0, 990.0], &[1000.0, 1020.0, 985.0], 0.05).unwrap();
        assert_eq!(c.test, Test::Welch);
        assert!(close(c.pct_diff, 0.15976063108631422, 1e-9));
        let (lo, hi) = c.pct_ci95.unwrap();
        assert!(close(lo, -3.371899430308989, 1e-8) && close(hi, 3.820499321945725, 1e-8));
        assert!(close(c.p_value, 0.8991671385288196, 1e-8));
        assert!(!c.significant);
    }

    #[test]
    fn compare_uses_mann_whitney_for_outliers_from_five_runs() {
        // base=[100.0,101.0,99.5,100.5,100.2]; cand=[90.0,91.0,90.5,89.8,120.0] (120 is an outlier)
        let base = [100.0, 101.0, 99.5, 100.5, 100.2];
        let cand = [90.0, 91.0, 90.5, 89.8, 120.0];
        let c = compare(&base, &cand, 0.05).unwrap();
        assert_eq!(c.test, Test::MannWhitney);
        // The rank test's own estimate and interval, on logs. R 4.2.2:
        //   w <- wilcox.test(log(cand), log(base), conf.int = TRUE)
        //   (exp(c(w$estimate, w$conf.int)) - 1) * 100; w$p.value
        //   (exp(wilcox.test(log(cand), log(base), conf.int = TRUE, conf.level = 0.9)$conf.int) - 1) * 100
        assert!(
            close(c.pct_diff, -9.680638722554836, 1e-9),
            "{}",
            c.pct_diff
        );
        let (lo, hi) = c.pct_ci95.unwrap();
        assert!(close(lo, -10.646766169154208, 1e-9) && close(hi, 19.760479041916202, 1e-9));
        let (lo, hi) = c.pct_ci90.unwrap();
        assert!(close(lo, -10.396039603960395, 1e-9) && close(hi, 18.81188118811876, 1e-9));
        assert!(close(c.p_value, 0.15079365079365079, 1e-9));
        assert!(!c.significant);
    }

    #[test]
    fn compare_uses_mann_whitney_for_skewed_samples_with_ties() {
        // base=[5.0,5.1,5.0,5.2,5.05,9.0]; cand=[5.5,5.6,5.4,5.7,5.55,5.45] (base skew 2.44, ties → asymptotic)
        let base = [5.0, 5.1, 5.0, 5.2, 5.05, 9.0];
        let cand = [5.5, 5.6, 5.4, 5.7, 5.55, 5.45];
        let c = compare(&base, &cand, 0.05).unwrap();
        assert_eq!(c.test, Test::MannWhitney);
        // The Hodges–Lehmann estimate: the median of every pairwise log ratio
        // (python: statistics.median(log(x) - log(y) for x in cand for y in base), as %):
        // +8.4 %, where the geometric means, dragged by the 9.0, said -0.8 %.
        assert!(close(c.pct_diff, 8.4109827299365, 1e-9), "{}", c.pct_diff);
        assert!(close(c.p_value, 0.06508095865779158, 1e-9));
        assert!(!c.significant);
        // Not significant at 5 %, so the 95 % interval holds 0; significant at 10 %, so the
        // 90 % interval does not (R computes tied intervals by root-finding, not pasted).
        let (lo, hi) = c.pct_ci95.unwrap();
        assert!(lo <= 0.0 && hi > 0.0, "{lo} {hi}");
        let (lo, _) = c.pct_ci90.unwrap();
        assert!(lo > 0.0, "{lo}");
        // With alpha 0.1 the rank test's verdict flips.
        assert!(compare(&base, &cand, 0.1).unwrap().significant);
    }

    #[test]
    fn compare_degenerate_inputs() {
        // Too few runs.
        assert!(compare(&[1.0], &[1.0, 2.0], 0.05).is_none());
        assert!(compare(&[1.0, 2.0], &[3.0], 0.05).is_none());
        // Identical constant samples: nothing to compare.
        assert!(compare(&[4.0, 4.0, 4.0], &[4.0, 4.0], 0.05).is_none());
        // Baseline mean 0: a percentage is meaningless.
        assert!(compare(&[-1.0, 1.0], &[2.0, 3.0], 0.05).is_none());
        // Non-finite values.
        assert!(compare(&[1.0, f64::NAN], &[2.0, 3.0], 0.05).is_none());
        assert!(compare(&[1.0, 2.0], &[f64::NEG_INFINITY, 3.0], 0.05).is_none());
        // Deterministic counters that changed.
        let c = compare(&[100.0, 100.0, 100.0], &[110.0, 110.0, 110.0], 0.05).unwrap();
        assert_eq!(c.p_value, 0.0);
        assert!(c.significant);
        assert!(close(c.pct_diff, 10.0, 1e-12));
        assert_eq!(c.pct_ci95, Some((c.pct_diff, c.pct_diff)));
    }

    #[test]
    fn compare_survives_extreme_magnitudes() {
        // Found by the proptest: the variance of the second sample (~1e542) overflowed f64
        // before the standard deviation was computed by scaling.
        let c = compare(
            &[0.0, -958868.5102307461],
            &[-2.456592688410405e271, 0.0],
            0.05,
        );
        let c = c.unwrap();
        assert!(c.pct_diff.is_finite() && c.p_value > 0.05);
        // Found by the proptest in CI: a ratio of means that overflows is still answered
        // (an infinite difference), not declined.
        assert!(compare(
            &[0.0, 8.36016418532636e-218],
            &[-4.497259112645703e258, 0.0],
            0.05
        )
        .is_some());
        // And underflow: a spread of 1e-200 is still a spread. t is scale-free, so:
        // python: from scipy import stats; print(repr(float(stats.ttest_ind([1.,2.,3.],[4.,5.,6.],equal_var=False).statistic)))
        let w = welch(&[1e-200, 2e-200, 3e-200], &[4e-200, 5e-200, 6e-200]).unwrap();
        assert!(close(w.t, -3.6742346141747673, 1e-9), "{}", w.t);
    }

    #[test]
    fn compare_negative_baseline_keeps_interval_ordered() {
        let c = compare(&[-10.0, -10.5, -9.5], &[-12.0, -12.5, -11.0], 0.05).unwrap();
        assert_eq!(c.scale, Scale::Difference);
        let (lo, hi) = c.pct_ci95.unwrap();
        assert!(
            lo <= c.pct_diff && c.pct_diff <= hi,
            "{lo} {} {hi}",
            c.pct_diff
        );
    }

    #[test]
    fn choose_test_rule() {
        let normal5 = [10.0, 10.2, 9.9, 10.1, 10.05];
        let skewed5 = [1.0, 1.1, 1.2, 1.3, 5.0];
        assert_eq!(choose_test(&normal5, &normal5), Test::Welch);
        assert_eq!(choose_test(&normal5, &skewed5), Test::MannWhitney);
        assert_eq!(choose_test(&skewed5, &normal5), Test::MannWhitney);
        // Below five runs on either side the shape is not judged.
        assert_eq!(choose_test(&skewed5[..4], &skewed5), Test::Welch);
    }
}
