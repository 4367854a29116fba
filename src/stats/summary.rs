//! Descriptive statistics of one set of repetitions, with a t-based 95 % confidence interval.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

use super::outliers::mad_outliers;

/// What a set of repetitions of one metric looks like.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    pub median: f64,
    /// Sample standard deviation (divisor n − 1); 0 when n < 2.
    pub stddev: f64,
    /// Coefficient of variation, `stddev / |mean|`; 0 when n < 2 or when every sample is
    /// equal. Infinite when the mean is exactly 0 but the samples differ: a spread around
    /// zero has no meaningful relative size, and infinity makes every CV threshold trip.
    pub cv: f64,
    pub min: f64,
    pub max: f64,
    /// Two-sided 95 % interval of the mean, `mean ± t(0.975, n−1) · stddev / √n`.
    /// `None` when n < 2 (no spread to estimate).
    pub ci95: Option<(f64, f64)>,
    /// Indices into the input that look like outliers (see [`super::outliers`]). They are
    /// flagged, never dropped: a slow run is data, and hiding it would flatter a file system.
    pub outliers: Vec<usize>,
}

/// Summarises `samples`. `None` for an empty input or when any value is NaN or infinite,
/// because a single non-finite value poisons every moment and the caller should see that
/// rather than a plausible-looking number.
pub fn summarize(samples: &[f64]) -> Option<Summary> {
    if samples.is_empty() || samples.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let n = samples.len();
    let mean = mean(samples);
    let stddev = stddev(samples, mean);
    let cv = if n < 2 || stddev == 0.0 {
        0.0
    } else {
        stddev / mean.abs()
    };
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let ci95 = if n < 2 {
        None
    } else {
        t_quantile_975(n as f64 - 1.0).map(|t| {
            let half = t * stddev / (n as f64).sqrt();
            (mean - half, mean + half)
        })
    };
    Some(Summary {
        n,
        mean,
        median: median_of_sorted(&sorted),
        stddev,
        cv,
        min: sorted[0],
        max: sorted[n - 1],
        ci95,
        outliers: mad_outliers(samples),
    })
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
    if !(df.is_finite() && df > 0.0) {
        return None;
    }
    StudentsT::new(0.0, 1.0, df)
        .ok()
        .map(|t| t.inverse_cdf(0.975))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-300)
    }

    #[test]
    fn empty_and_non_finite_are_none() {
        assert!(summarize(&[]).is_none());
        assert!(summarize(&[1.0, f64::NAN, 3.0]).is_none());
        assert!(summarize(&[1.0, f64::INFINITY]).is_none());
        assert!(summarize(&[f64::NEG_INFINITY]).is_none());
    }

    #[test]
    fn single_sample_has_no_spread_and_no_interval() {
        let s = summarize(&[42.5]).unwrap();
        assert_eq!(s.n, 1);
        assert_eq!(s.mean, 42.5);
        assert_eq!(s.median, 42.5);
        assert_eq!(s.stddev, 0.0);
        assert_eq!(s.cv, 0.0);
        assert_eq!((s.min, s.max), (42.5, 42.5));
        assert_eq!(s.ci95, None);
        assert!(s.outliers.is_empty());
    }

    #[test]
    fn identical_samples_have_zero_width_interval() {
        let s = summarize(&[7.0, 7.0, 7.0, 7.0]).unwrap();
        assert_eq!(s.stddev, 0.0);
        assert_eq!(s.cv, 0.0);
        assert_eq!(s.ci95, Some((7.0, 7.0)));
        assert!(s.outliers.is_empty());
    }

    #[test]
    fn huge_values_do_not_overflow_the_mean() {
        let s = summarize(&[f64::MAX, f64::MAX, f64::MAX]).unwrap();
        assert_eq!(s.mean, f64::MAX);
        assert_eq!(s.stddev, 0.0);
        let s = summarize(&[-f64::MAX, f64::MAX, f64::MAX]).unwrap();
        assert!(s.mean.is_finite() && s.mean > 0.0);
    }

    #[test]
    fn zero_mean_with_spread_has_infinite_cv() {
        let s = summarize(&[-1.0, 1.0]).unwrap();
        assert_eq!(s.mean, 0.0);
        assert!(s.cv.is_infinite());
    }

    #[test]
    fn matches_scipy_for_three_runs() {
        let xs = [10.2, 9.8, 10.5];
        let s = summarize(&xs).unwrap();
        // python: import numpy as np; x=[10.2,9.8,10.5]; print(repr(np.mean(x)), repr(np.std(x, ddof=1)))
        assert!(close(s.mean, 10.166666666666666, 1e-12));
        assert!(close(s.stddev, 0.3511884584284242, 1e-12));
        assert!(close(s.cv, 0.3511884584284242 / 10.166666666666666, 1e-12));
        assert_eq!(s.median, 10.2);
        assert_eq!((s.min, s.max), (9.8, 10.5));
        // python: from scipy import stats; import numpy as np; x=[10.2,9.8,10.5]; print(stats.t.interval(0.95, len(x)-1, loc=np.mean(x), scale=stats.sem(x)))
        let (lo, hi) = s.ci95.unwrap();
        assert!(close(lo, 9.294266173153154, 1e-9), "{lo}");
        assert!(close(hi, 11.039067160180178, 1e-9), "{hi}");
    }

    #[test]
    fn matches_scipy_for_ten_runs_even_median() {
        let xs = [
            1523.0, 1498.5, 1510.2, 1561.7, 1489.9, 1502.3, 1533.8, 1517.4, 1495.0, 1540.6,
        ];
        let s = summarize(&xs).unwrap();
        // python: import numpy as np; x=[1523.0,1498.5,1510.2,1561.7,1489.9,1502.3,1533.8,1517.4,1495.0,1540.6]; print(repr(np.mean(x)), repr(np.std(x, ddof=1)), repr(np.median(x)))
        assert!(close(s.mean, 1517.24, 1e-12));
        assert!(close(s.stddev, 22.84212482819114, 1e-10));
        assert!(close(s.median, 1513.8000000000002, 1e-12));
        // python: from scipy import stats; import numpy as np; x=[1523.0,1498.5,1510.2,1561.7,1489.9,1502.3,1533.8,1517.4,1495.0,1540.6]; print(stats.t.interval(0.95, len(x)-1, loc=np.mean(x), scale=stats.sem(x)))
        let (lo, hi) = s.ci95.unwrap();
        assert!(close(lo, 1500.8997282571095, 1e-9), "{lo}");
        assert!(close(hi, 1533.5802717428905, 1e-9), "{hi}");
    }

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
        assert_eq!(t_quantile_975(f64::NAN), None);
    }
}
