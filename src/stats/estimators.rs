//! The numerically careful building blocks every statistic here rests on: mean, sample
//! standard deviation, median, Student's t quantile and the logarithms of the ratio scale.
//! Kept apart from [`super::summary`] so that the summary, the outlier rule, the
//! significance tests and the decision rules all stand on them without standing on each
//! other.

use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// Whether every value is a finite number; the tests decline anything else.
pub(crate) fn all_finite(xs: &[f64]) -> bool {
    xs.iter().all(|x| x.is_finite())
}

/// Arithmetic mean of finite values; NaN for an empty slice.
///
/// Accumulated incrementally, which keeps a run of equal values exactly equal to their mean
/// (so identical samples get a zero spread, not a rounding residue). When values near
/// ±f64::MAX make a step overflow, it falls back to summing `x / n`, which cannot.
pub(crate) fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut m = 0.0;
    for (i, &x) in xs.iter().enumerate() {
        m += (x - m) / (i as f64 + 1.0);
    }
    if m.is_finite() {
        m
    } else {
        let n = xs.len() as f64;
        xs.iter().map(|x| x / n).sum()
    }
}

/// Sample standard deviation (divisor n − 1) around a known mean; 0 for fewer than 2 values.
///
/// Two-pass for accuracy, and the deviations are divided by the largest one before
/// squaring, so values far from 1 (1e200 or 1e-200) neither overflow nor underflow: the
/// result is infinite only when the spread itself exceeds f64.
pub(crate) fn stddev(xs: &[f64], mean: f64) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let scale = xs.iter().map(|x| (x - mean).abs()).fold(0.0, f64::max);
    if scale == 0.0 || !scale.is_finite() {
        return scale;
    }
    let ss: f64 = xs.iter().map(|x| ((x - mean) / scale).powi(2)).sum();
    scale * (ss / (xs.len() as f64 - 1.0)).sqrt()
}

/// Median of an already sorted, non-empty slice (mean of the middle two for even n).
pub(crate) fn median_of_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        // Halve first so two values near f64::MAX do not overflow.
        sorted[n / 2 - 1] / 2.0 + sorted[n / 2] / 2.0
    }
}

/// The 97.5 % quantile of Student's t with `df` degrees of freedom: the multiplier of a
/// two-sided 95 % interval. `None` when `df` is not a positive finite number.
pub(crate) fn t_quantile_975(df: f64) -> Option<f64> {
    t_quantile(0.975, df)
}

/// The standard normal's quantile at `p`: a lower bound of [`t_quantile`] at `p` > ½ for any
/// degrees of freedom, and cheap, so a check that fails at it can skip t's inversion.
/// `None` when `p` is not strictly between 0 and 1.
pub(crate) fn z_quantile(p: f64) -> Option<f64> {
    if !(p > 0.0 && p < 1.0) {
        return None;
    }
    Some(Normal::new(0.0, 1.0).ok()?.inverse_cdf(p))
}

/// The `p` quantile of Student's t with `df` degrees of freedom (0.95 for the multiplier of
/// a two-sided 90 % interval). `None` when `df` is not a positive finite number or `p` is
/// not strictly between 0 and 1.
///
/// Remembered per thread: statrs inverts the t distribution by iterating on the incomplete
/// beta function, which made it most of the time a budget round's decisions take (and of the
/// A/A simulations in tests/sequential.rs), while a run asks for the same few (p, df) pairs
/// over and over (each comparison's level at each candidate run count).
pub(crate) fn t_quantile(p: f64, df: f64) -> Option<f64> {
    if !(df.is_finite() && df > 0.0 && p > 0.0 && p < 1.0) {
        return None;
    }
    T_QUANTILES.with(|memo| {
        let key = (p.to_bits(), df.to_bits());
        if let Some(&q) = memo.borrow().get(&key) {
            return Some(q);
        }
        let q = StudentsT::new(0.0, 1.0, df).ok()?.inverse_cdf(p);
        let mut memo = memo.borrow_mut();
        if memo.len() >= T_QUANTILE_MEMO {
            memo.clear();
        }
        memo.insert(key, q);
        Some(q)
    })
}

/// How many quantiles a thread remembers before it starts again: a bound on the memory, far
/// above what one run's decisions ask for.
const T_QUANTILE_MEMO: usize = 1 << 16;

thread_local! {
    static T_QUANTILES: std::cell::RefCell<std::collections::HashMap<(u64, u64), f64>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

/// The logarithms of `xs` when every value is positive and finite: the ratio scale that
/// [`super::compare`] and the decision rules ([`super::decision`]) both work on.
pub fn log_values(xs: &[f64]) -> Option<Vec<f64>> {
    xs.iter()
        .all(|&x| x > 0.0 && x.is_finite())
        .then(|| xs.iter().map(|x| x.ln()).collect())
}

/// Median of finite values; `None` for an empty slice or when any value is non-finite
/// (there is no meaningful middle then).
pub(crate) fn median(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() || !all_finite(xs) {
        return None;
    }
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some(median_of_sorted(&sorted))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::fixtures::close;

    #[test]
    fn t_quantiles_match_scipy() {
        // python: from scipy import stats; print([repr(stats.t.ppf(0.975, d)) for d in (1, 2, 4.5, 30, 1000)])
        let cases = [
            (1.0, 12.706204736174694),
            (2.0, 4.302652729749462),
            (4.5, 2.6589123472044034),
            (30.0, 2.0422724563012378),
            (1000.0, 1.9623390808264083),
        ];
        for (df, want) in cases {
            let got = t_quantile_975(df).unwrap();
            assert!(close(got, want, 1e-9), "df {df}: {got} vs {want}");
        }
        assert_eq!(t_quantile_975(0.0), None);
        // python: from scipy import stats; print([repr(float(stats.t.ppf(0.95, d))) for d in (2, 4.5, 30)])
        let cases = [
            (2.0, 2.9199855803537242),
            (4.5, 2.065575888878524),
            (30.0, 1.697260886593957),
        ];
        for (df, want) in cases {
            let got = t_quantile(0.95, df).unwrap();
            assert!(close(got, want, 1e-9), "df {df}: {got} vs {want}");
        }
        assert_eq!(t_quantile(1.0, 3.0), None);
        assert_eq!(t_quantile_975(f64::NAN), None);
    }
}
