//! How steady the host was over a run, from the probe timed before every measured phase
//! ([`crate::monitor::steadiness`]): the same work, so its spread is the machine's own.
//!
//! The spread is robust (the MAD scaled to a standard deviation, over the median): one probe
//! caught by a preemption should not call a whole run unsteady, while a machine that runs
//! the same walk at different speeds through the run should.
//!
//! Beside it, what the monitor saw of the hypervisor: the share of the CPU time each phase
//! asked for that went to something else (`steal`, [`stolen_pct`]). It names one cause of
//! an unsteady virtual machine; the verdict stays the probe's.

use serde::Serialize;

use super::estimators::median;
use super::outliers::robust_sigma;

/// The robust CV from which a run's host counts as unsteady. The dev VM measured 9–11 %
/// beside noisy neighbours (the walk alone, by hand: 7–9 % plain CV); a machine steadier
/// than 5 % still shows in the report, just without the warning.
pub const UNSTEADY_CV: f64 = 0.05;

/// Fewer probes than this say nothing about the run.
const MIN_PROBES: usize = 5;

/// The host's steadiness over a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Steadiness {
    /// Probes taken: one before each measured phase.
    pub probes: usize,
    pub median_ms: f64,
    /// Robust coefficient of variation: 1.4826 · MAD / median.
    pub cv: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    /// `cv` ≥ [`UNSTEADY_CV`]: part of the spread between runs is the machine's.
    pub unsteady: bool,
    /// Of the CPU time the measured phases asked for, the share the hypervisor gave to
    /// something else, in percent: the median phase's and the largest. `None` when no
    /// record says (older results, a phase too short for one clock tick).
    pub stolen_median_pct: Option<f64>,
    pub stolen_max_pct: Option<f64>,
}

/// Of the CPU time a phase asked for (busy plus kept waiting), the share stolen, in
/// percent, from its `cpu_*_pct` metrics (shares of all CPUs' time, so an idle CPU, which
/// asks for nothing, does not dilute it). `None` without the figures or with no CPU time.
pub fn stolen_pct(user: f64, system: f64, steal: f64) -> Option<f64> {
    let asked = user + system + steal;
    (asked > 0.0 && steal.is_finite() && asked.is_finite()).then(|| 100.0 * steal / asked)
}

/// The steadiness of probe timings `ms`, with `stolen` the phases' [`stolen_pct`]; `None`
/// with fewer than [`MIN_PROBES`] finite, positive probes (an old results file has none).
pub fn steadiness(ms: &[f64], stolen: &[f64]) -> Option<Steadiness> {
    let xs: Vec<f64> = ms
        .iter()
        .copied()
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    if xs.len() < MIN_PROBES {
        return None;
    }
    let med = median(&xs)?;
    let cv = robust_sigma(&xs)? / med;
    let stolen: Vec<f64> = stolen.iter().copied().filter(|x| x.is_finite()).collect();
    Some(Steadiness {
        probes: xs.len(),
        median_ms: med,
        cv,
        min_ms: xs.iter().copied().fold(f64::INFINITY, f64::min),
        max_ms: xs.iter().copied().fold(0.0, f64::max),
        unsteady: cv >= UNSTEADY_CV,
        stolen_median_pct: median(&stolen),
        stolen_max_pct: stolen.iter().copied().reduce(f64::max),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::fixtures::close;

    #[test]
    fn too_few_probes_say_nothing() {
        assert_eq!(steadiness(&[], &[]), None);
        assert_eq!(steadiness(&[3.0, 3.1, 2.9, 3.0], &[]), None);
        assert_eq!(steadiness(&[3.0, 3.1, f64::NAN, 2.9, 0.0, 3.0], &[]), None);
    }

    #[test]
    fn matches_scipy_on_a_steady_and_an_unsteady_run() {
        let steady = [3.00, 3.02, 2.98, 3.01, 2.99, 3.03, 2.97];
        let s = steadiness(&steady, &[]).unwrap();
        // python: import numpy as np; from scipy.stats import median_abs_deviation as mad
        // x=[3.00,3.02,2.98,3.01,2.99,3.03,2.97]; print(mad(x, scale='normal')/np.median(x))
        assert!(close(s.cv, 0.009884014790037355, 1e-9), "{}", s.cv);
        assert!(!s.unsteady);
        assert_eq!(
            (s.probes, s.median_ms, s.min_ms, s.max_ms),
            (7, 3.0, 2.97, 3.03)
        );
        let unsteady = [3.0, 3.4, 2.7, 3.6, 2.8, 3.2, 2.6, 3.9];
        let u = steadiness(&unsteady, &[]).unwrap();
        // python: x=[3.0,3.4,2.7,3.6,2.8,3.2,2.6,3.9]; print(mad(x, scale='normal')/np.median(x))
        assert!(close(u.cv, 0.16739057305708413, 1e-9), "{}", u.cv);
        assert!(u.unsteady);
    }

    #[test]
    fn one_preempted_probe_does_not_make_a_steady_run_unsteady() {
        let mut xs = vec![3.0, 3.02, 2.98, 3.01, 2.99, 3.03, 2.97, 3.0, 3.01];
        xs.push(40.0);
        let s = steadiness(&xs, &[]).unwrap();
        assert!(!s.unsteady, "robust CV {}", s.cv);
        assert_eq!(s.max_ms, 40.0);
    }

    #[test]
    fn the_stolen_share_is_of_the_time_asked_for_and_summed_up_by_median_and_max() {
        // One CPU of two busy 30 % of the time and kept waiting 20 %: 40 % of what it asked.
        assert!(close(stolen_pct(20.0, 10.0, 20.0).unwrap(), 40.0, 1e-12));
        assert_eq!(stolen_pct(0.0, 0.0, 0.0), None, "nothing asked for");
        assert_eq!(stolen_pct(10.0, 5.0, f64::NAN), None);
        let probes = [3.0, 3.02, 2.98, 3.01, 2.99];
        let s = steadiness(&probes, &[0.0, 2.0, 40.0, 1.0, f64::NAN]).unwrap();
        assert_eq!(
            (s.stolen_median_pct, s.stolen_max_pct),
            (Some(1.5), Some(40.0))
        );
        let none = steadiness(&probes, &[]).unwrap();
        assert_eq!((none.stolen_median_pct, none.stolen_max_pct), (None, None));
    }
}
