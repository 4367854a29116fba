//! Welch's unequal-variance t-test: the test [`super::significance::compare`] uses for small
//! or normal-looking samples, and the source of every difference's 95 % interval. Run
//! times of two file systems rarely share a variance, so the pooled-variance t-test is
//! never used.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

use super::estimators::{all_finite, mean, stddev, t_quantile, t_quantile_975};

/// Result of [`welch`]. The difference is `mean(a) − mean(b)`, as in
/// `scipy.stats.ttest_ind(a, b, equal_var=False)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct WelchResult {
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom (not an integer in general).
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
    pub mean_diff: f64,
    /// 95 % interval of `mean_diff`.
    pub ci95: (f64, f64),
    /// 90 % interval of `mean_diff`: the interval of the two one-sided tests (TOST) at 5 %
    /// each, which decides equivalence (see [`super::decision`]).
    pub ci90: (f64, f64),
    /// Standard error of `mean_diff`.
    pub se: f64,
}

/// Welch's unequal-variance t-test of `mean(a) − mean(b)`.
///
/// `None` when either sample has fewer than 2 values, any value is non-finite, both
/// samples have zero variance (the statistic is 0/0 or ±∞ and has no distribution), or the
/// difference of the means overflows f64.
pub fn welch(a: &[f64], b: &[f64]) -> Option<WelchResult> {
    if a.len() < 2 || b.len() < 2 || !all_finite(a) || !all_finite(b) {
        return None;
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (ma, mb) = (mean(a), mean(b));
    // Standard errors of each mean, combined without squaring them (hypot), and the
    // Welch–Satterthwaite df from their shares of the total, which are scale-free: values
    // near the ends of the f64 range neither overflow nor underflow.
    let (ea, eb) = (stddev(a, ma) / na.sqrt(), stddev(b, mb) / nb.sqrt());
    let se = ea.hypot(eb);
    if !(se > 0.0 && se.is_finite()) {
        return None;
    }
    let mean_diff = ma - mb;
    let t = mean_diff / se;
    let (sa, sb) = ((ea / se).powi(2), (eb / se).powi(2));
    let df = 1.0 / (sa * sa / (na - 1.0) + sb * sb / (nb - 1.0));
    if !(t.is_finite() && df.is_finite() && df > 0.0) {
        return None;
    }
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    let p = (2.0 * dist.sf(t.abs())).clamp(0.0, 1.0);
    let half = t_quantile_975(df)? * se;
    let half90 = t_quantile(0.95, df)? * se;
    Some(WelchResult {
        t,
        df,
        p,
        mean_diff,
        ci95: (mean_diff - half, mean_diff + half),
        ci90: (mean_diff - half90, mean_diff + half90),
        se,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::fixtures::{close, A, B};

    fn welch_case(a: &[f64], b: &[f64], want: [f64; 5]) {
        let w = welch(a, b).unwrap();
        let [t, p, df, lo, hi] = want;
        assert!(close(w.t, t, 1e-10), "t {} vs {t}", w.t);
        assert!(close(w.p, p, 1e-8), "p {} vs {p}", w.p);
        assert!(close(w.df, df, 1e-10), "df {} vs {df}", w.df);
        assert!(close(w.ci95.0, lo, 1e-8), "lo {} vs {lo}", w.ci95.0);
        assert!(close(w.ci95.1, hi, 1e-8), "hi {} vs {hi}", w.ci95.1);
        assert!(close(w.mean_diff, (lo + hi) / 2.0, 1e-10));
    }

    // Reference values for every welch case come from (with a, b as in the call):
    // python: from scipy import stats; r=stats.ttest_ind(a,b,equal_var=False); ci=r.confidence_interval(0.95); print(repr(float(r.statistic)), repr(float(r.pvalue)), repr(float(r.df)), repr(float(ci.low)), repr(float(ci.high)))
    #[test]
    fn welch_matches_scipy() {
        // a=[12.1,11.8,12.6,12.0,11.9,12.3]; b=[13.0,12.4,13.5,12.9,13.2]
        welch_case(
            &A,
            &B,
            [
                -4.062525422500226,
                0.004597527393201991,
                7.140697779898796,
                -1.3954377579401063,
                -0.37122890872655945,
            ],
        );
        // a=[10.0,10.1,10.2]; b=[12.0,12.3,11.8]: the default 3 runs
        welch_case(
            &[10.0, 10.1, 10.2],
            &[12.0, 12.3, 11.8],
            [
                -12.365641548625412,
                0.0021568335397668293,
                2.6162162162162117,
                -2.474852305479617,
                -1.3918143611870502,
            ],
        );
        // a=[5.0,5.0,5.0]; b=[4.0,4.5,5.5]: one side without spread
        welch_case(
            &[5.0, 5.0, 5.0],
            &[4.0, 4.5, 5.5],
            [
                0.7559289460184537,
                0.5285954792089687,
                2.0,
                -1.5639581834650467,
                2.2306248501317127,
            ],
        );
    }

    #[test]
    fn welch_tiny_p_keeps_relative_precision() {
        // a=[100.0,100.1,99.9,100.05,99.95]; b=[120.0,120.2,119.8,120.1,119.9]
        // (scipy warns about precision loss in its own moment calculation here; the t, df
        // and p agree with ours to 1e-8, which a catastrophic loss would not.)
        welch_case(
            &[100.0, 100.1, 99.9, 100.05, 99.95],
            &[120.0, 120.2, 119.8, 120.1, 119.9],
            [
                -252.98221281347324,
                4.229145540704959e-13,
                5.882352941176282,
                -20.194387082186847,
                -19.805612917813153,
            ],
        );
    }

    #[test]
    fn welch_refuses_degenerate_input() {
        assert!(welch(&[1.0], &[1.0, 2.0]).is_none());
        assert!(welch(&[1.0, 2.0], &[]).is_none());
        assert!(welch(&[3.0, 3.0], &[4.0, 4.0]).is_none());
        assert!(welch(&[1.0, f64::NAN], &[1.0, 2.0]).is_none());
        assert!(welch(&[1.0, 2.0], &[1.0, f64::INFINITY]).is_none());
    }
}
