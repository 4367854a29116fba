//! Statistics over repetitions: which differences between file systems are real, and which
//! are noise. Pure functions over numbers and [`crate::results::Measurement`] records; no I/O.
//!
//! * [`estimators`]: mean, standard deviation, median, t quantile: the shared building blocks.
//! * [`summary`]: mean, median, spread and a t-based 95 % interval of one metric.
//! * [`outliers`]: robust (MAD) outlier flags; flagged, never dropped.
//! * [`welch`](mod@welch), [`mann_whitney`](mod@mann_whitney): the two tests, each checked
//!   against scipy.
//! * [`significance`]: [`compare`], which picks one of them and says whether a difference is
//!   real.
//! * [`decision`]: better / worse / equivalent / undecided: false-discovery-rate control (the
//!   two-stage step-up over a run, plain Benjamini–Hochberg for `compare`), TOST, and the
//!   runs a comparison still needs.
//! * [`moderated`]: a group's variance moderated by its point's neighbours (Smyth 2004).
//! * [`sequential`]: the looks of a `--runs auto` run and the share of α each may spend.
//! * [`steal`]: a point's comparisons adjusted for the CPU time the hypervisor stole
//!   (analysis of covariance on each phase's `cpu_steal_pct`).
//! * [`adjustment`]: which procedure adjusted a family's p-values, as the outputs name it.
//! * [`aggregate`](mod@aggregate): groups measurements and compares each target to a baseline.
//! * [`verdicts`]: the run's decisions, one family over every key-metric comparison, which
//!   the report prints and the time budget spends its rounds on.
//! * [`warnings`]: what a reader should distrust, in plain words.
//! * [`steadiness`](mod@steadiness): how steady the host was over the run (the probe timed
//!   before each phase).
//! * [`disturbed`]: whether the hypervisor kept so much of the CPU from a phase that it is
//!   set aside and measured again.

pub mod adjustment;
pub mod aggregate;
pub mod decision;
pub mod disturbed;
pub mod estimators;
#[cfg(test)]
mod fixtures;
pub mod mann_whitney;
pub mod moderated;
pub mod outliers;
pub mod sequential;
pub mod shift;
pub mod significance;
pub mod steadiness;
pub mod steal;
pub mod summary;
pub mod verdicts;
pub mod warnings;
pub mod welch;

pub use aggregate::{aggregate, Group, GroupKey, MetricStats};
pub use decision::{
    benjamini_hochberg, decide, next_level, next_run_side, runs_to_decide, runs_to_decide_paired,
    tost_p, Adjustment, Decision, Side, Verdict, ALPHA,
};
pub use estimators::log_values;
pub use mann_whitney::{mann_whitney, mann_whitney_min_p, MannWhitneyResult, MwMethod};
pub use outliers::{mad_outliers, robust_sigma, OUTLIER_SIGMAS};
pub use significance::{choose_test, compare, skewness, Comparison, Scale, Test};
pub use summary::{summarize, Summary};
pub use warnings::Warning;
pub use welch::{welch, WelchResult};

#[cfg(test)]
mod proptests {
    //! Whatever numbers arrive (from a broken workload, a hand-edited results file), the
    //! statistics must answer or decline, never panic, and what they answer must be coherent.

    use proptest::prelude::*;

    use super::*;
    use crate::results::{Measurement, Status};

    /// Realistic values, repeated small integers (ties), extremes and non-finite values.
    fn value() -> impl Strategy<Value = f64> {
        prop_oneof![
            4 => -1e6..1e6f64,
            2 => (0i32..4).prop_map(f64::from),
            2 => any::<f64>(),
            1 => Just(f64::NAN),
            1 => Just(f64::INFINITY),
            1 => Just(f64::NEG_INFINITY),
            1 => Just(f64::MAX),
            1 => Just(-f64::MAX),
            1 => Just(f64::MIN_POSITIVE),
        ]
    }

    fn finite() -> impl Strategy<Value = f64> {
        prop_oneof![
            4 => -1e6..1e6f64,
            2 => (0i32..4).prop_map(f64::from),
            1 => any::<f64>().prop_filter("finite", |x| x.is_finite()),
        ]
    }

    proptest! {
        #[test]
        fn summarize_never_panics_and_is_coherent(xs in prop::collection::vec(value(), 0..40)) {
            let s = summarize(&xs);
            let all_finite = xs.iter().all(|x| x.is_finite());
            prop_assert_eq!(s.is_some(), !xs.is_empty() && all_finite);
            if let Some(s) = s {
                prop_assert_eq!(s.n, xs.len());
                prop_assert!(s.min <= s.median && s.median <= s.max);
                prop_assert!(!s.mean.is_nan() && !s.stddev.is_nan() && !s.cv.is_nan());
                prop_assert!(s.stddev >= 0.0 && s.cv >= 0.0);
                prop_assert!(s.outliers.iter().all(|&i| i < xs.len()));
                if let Some((lo, hi)) = s.ci95 {
                    prop_assert!(lo <= s.mean && s.mean <= hi, "{} {} {}", lo, s.mean, hi);
                }
            }
        }

        #[test]
        fn compare_never_panics_and_is_coherent(
            a in prop::collection::vec(value(), 0..25),
            b in prop::collection::vec(value(), 0..25),
            alpha in 0.0..1.0f64,
        ) {
            if let Some(c) = compare(&a, &b, alpha) {
                prop_assert!(a.iter().chain(&b).all(|x| x.is_finite()));
                prop_assert!((0.0..=1.0).contains(&c.p_value), "p {}", c.p_value);
                prop_assert_eq!(c.significant, c.p_value < alpha);
                if let Some((lo, hi)) = c.pct_ci95 {
                    prop_assert!(lo <= hi, "{} > {}", lo, hi);
                }
            }
            if let Some(w) = welch(&a, &b) {
                prop_assert!((0.0..=1.0).contains(&w.p));
            }
            if let Some(m) = mann_whitney(&a, &b) {
                prop_assert!((0.0..=1.0).contains(&m.p), "p {}", m.p);
                prop_assert!(m.u >= 0.0 && m.u <= (a.len() * b.len()) as f64);
            }
        }

        /// The verdict and its interval never contradict each other: significant at 5 %
        /// exactly when the 95 % interval leaves out no difference (both tests, both
        /// scales). A Welch interval beside a rank test's p once did.
        #[test]
        fn the_interval_agrees_with_the_test(
            a in prop::collection::vec(0.5..2.0f64, 2..20),
            b in prop::collection::vec(0.5..2.0f64, 2..20),
            outlier in prop::option::of(5.0..50.0f64),
        ) {
            let mut a = a;
            a.extend(outlier);
            if let Some(c) = compare(&b, &a, 0.05) {
                if let Some((lo, hi)) = c.pct_ci95 {
                    let excludes = lo > 0.0 || hi < 0.0;
                    let on_edge = lo == 0.0 || hi == 0.0;
                    prop_assert!(
                        excludes == c.significant || on_edge,
                        "{:?}: p {} with interval {} .. {}", c.test, c.p_value, lo, hi
                    );
                    prop_assert!(lo <= c.pct_diff && c.pct_diff <= hi);
                }
            }
        }

        #[test]
        fn compare_answers_for_usable_finite_samples(
            a in prop::collection::vec(finite(), 2..25),
            b in prop::collection::vec(finite(), 2..25),
        ) {
            let differs = |xs: &[f64]| xs.iter().any(|&x| x != xs[0]);
            let mean = |xs: &[f64]| xs.iter().map(|x| x / xs.len() as f64).sum::<f64>();
            let (ma, mb) = (mean(&a), mean(&b));
            // Declining is allowed only for the documented reasons.
            let c = compare(&a, &b, 0.05);
            if c.is_none() {
                prop_assert!(
                    ma == 0.0 || !(mb - ma).is_finite() || !(differs(&a) || differs(&b)),
                    "declined {:?} vs {:?}", a, b
                );
            }
        }

        #[test]
        fn aggregate_never_panics(
            rows in prop::collection::vec(
                (0usize..3, 0usize..2, 1u32..3, 0usize..3, value()),
                0..40,
            ),
        ) {
            let statuses = [Status::Ok, Status::Ok, Status::Invalid, Status::Eio];
            let input: Vec<Measurement> = rows
                .iter()
                .enumerate()
                .map(|(i, &(target, workload, threads, status, v))| Measurement {
                    target: format!("t{target}"),
                    workload: format!("w{workload}"),
                    threads,
                    repetition: i as u32,
                    status: statuses[(i + status) % statuses.len()],
                    metrics: [("x".to_string(), v)].into_iter().collect(),
                    ..Default::default()
                })
                .collect();
            let groups = aggregate(&input, "t0", 0.05);
            let counted: usize = groups.iter().map(|g| g.ok + g.failed.len() + g.invalid).sum();
            prop_assert_eq!(counted, input.len());
            for g in &groups {
                for w in &g.warnings {
                    prop_assert!(!w.to_string().is_empty());
                }
            }
        }
    }
}
