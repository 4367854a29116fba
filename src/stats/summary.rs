//! Descriptive statistics of one set of repetitions, with a t-based 95 % confidence interval.

use serde::Serialize;

use super::estimators::{mean, median_of_sorted, stddev, t_quantile_975};
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::fixtures::close;

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
}
