//! Where a series changed: the one split of a series of runs that best separates its
//! values into a before and an after, and a permutation test of whether such a split
//! could come from no change at all.
//!
//! Hunter and Apache Otava use E-divisive means, which splits recursively on a
//! divergence of the two sides' distributions. A regression check needs less: the most
//! recent shift of the level, and whether it is real. So this splits once, at a run
//! boundary (a run's repetitions are never cut apart), maximising the weighted squared
//! difference of the two sides' means, `nL·nR/n · (mean_L − mean_R)²` (the CUSUM
//! statistic), on logarithms when every value is positive (a change is a ratio). Its
//! p-value is a permutation test: the values shuffled across the runs (each run keeps its
//! size) [`PERMUTATIONS`] times, the statistic's maximum over the splits taken again each
//! time, p = (1 + shuffles at least as extreme) / (1 + shuffles). Under no change every
//! arrangement is equally likely when the repetitions are exchangeable, so a change is
//! called with probability at most α: the false-alarm rate is α by construction, and the
//! unit test `aa_series_raise_few_false_alarms` measures it over 1,000 simulated series.
//! What that assumes: runs of an unchanged system differ no more than the repetitions
//! within a run. A host whose runs drift from day to day more than that raises false alarms;
//! a baseline of several runs under one label (`--against`) is the remedy.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::stats::log_values;

/// Shuffles per test: enough that p is known to about ±0.01 near 0.05.
pub const PERMUTATIONS: usize = 999;

/// A change found in a series of runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// The index of the first run after the change.
    pub at_run: usize,
    /// The permutation test's p-value.
    pub p: f64,
    /// The after side's level over the before side's, minus one, in percent (ratio of
    /// geometric means on the ratio scale).
    pub pct: f64,
}

/// The best split of `runs` (each run's values, oldest first) and its p-value; `None`
/// with fewer than two runs holding values, or fewer than three values in all.
pub fn detect(runs: &[Vec<f64>], seed: u64) -> Option<Change> {
    let measured: Vec<(usize, &Vec<f64>)> = runs
        .iter()
        .enumerate()
        .filter(|(_, v)| !v.is_empty())
        .collect();
    let all: Vec<f64> = measured
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .collect();
    if measured.len() < 2 || all.len() < 3 || all.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let ratio = log_values(&all);
    let xs = ratio.clone().unwrap_or_else(|| all.clone());
    let sizes: Vec<usize> = measured.iter().map(|(_, v)| v.len()).collect();
    let (split, observed) = best_split(&xs, &sizes)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut shuffled = xs.clone();
    let mut extreme = 0usize;
    for _ in 0..PERMUTATIONS {
        shuffled.shuffle(&mut rng);
        if best_split(&shuffled, &sizes).is_some_and(|(_, s)| s >= observed * (1.0 - 1e-12)) {
            extreme += 1;
        }
    }
    let cut: usize = sizes[..split].iter().sum();
    let (before, after) = (mean(&xs[..cut]), mean(&xs[cut..]));
    let pct = match ratio {
        Some(_) => ((after - before).exp() - 1.0) * 100.0,
        None if before != 0.0 => (after - before) / before.abs() * 100.0,
        None => return None,
    };
    Some(Change {
        at_run: measured[split].0,
        p: (1 + extreme) as f64 / (1 + PERMUTATIONS) as f64,
        pct,
    })
}

/// The run boundary (index of the first run after it) with the largest CUSUM statistic,
/// and that statistic.
fn best_split(xs: &[f64], sizes: &[usize]) -> Option<(usize, f64)> {
    let n = xs.len() as f64;
    let total: f64 = xs.iter().sum();
    let mut best: Option<(usize, f64)> = None;
    let (mut left_n, mut left_sum) = (0usize, 0.0);
    for (j, size) in sizes.iter().enumerate().take(sizes.len() - 1) {
        left_sum += xs[left_n..left_n + size].iter().sum::<f64>();
        left_n += size;
        let (nl, nr) = (left_n as f64, n - left_n as f64);
        let d = left_sum / nl - (total - left_sum) / nr;
        let stat = nl * nr / n * d * d;
        if best.map_or(true, |b| stat > b.1) {
            best = Some((j + 1, stat));
        }
    }
    best
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

#[cfg(test)]
mod tests {
    use rand::Rng;

    use super::*;

    /// A standard normal draw (Box–Muller).
    pub fn normal(rng: &mut impl Rng) -> f64 {
        let u: f64 = rng.gen_range(f64::EPSILON..1.0);
        let v: f64 = rng.gen();
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    /// A series of `runs` runs of `reps` repetitions around 100 with a 3 % spread, the
    /// runs from `from` on scaled by `factor`.
    pub fn series(
        rng: &mut ChaCha8Rng,
        runs: usize,
        reps: usize,
        from: usize,
        factor: f64,
    ) -> Vec<Vec<f64>> {
        (0..runs)
            .map(|i| {
                (0..reps)
                    .map(|_| {
                        let f = if i >= from { factor } else { 1.0 };
                        100.0 * f * (0.03 * normal(rng)).exp()
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn a_step_is_found_where_it_began() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let s = series(&mut rng, 8, 3, 5, 0.7);
        let c = detect(&s, 7).expect("a change");
        assert_eq!(c.at_run, 5);
        assert!(c.p < 0.01, "{c:?}");
        assert!((c.pct + 30.0).abs() < 5.0, "{c:?}");
    }

    #[test]
    fn a_flat_series_has_a_large_p() {
        let s = vec![vec![10.0, 10.5, 9.5]; 4];
        let c = detect(&s, 7).expect("an answer");
        assert!(c.p > 0.5, "{c:?}");
    }

    #[test]
    fn too_little_to_split_gives_no_answer() {
        assert_eq!(detect(&[vec![1.0, 2.0]], 1), None);
        assert_eq!(detect(&[vec![1.0], vec![]], 1), None);
    }

    /// The permutation test's promise, measured: 1,000 unchanged series of 6 runs × 3
    /// repetitions are called changed at α = 0.05 no more than 5 % of the time.
    #[test]
    fn aa_series_raise_few_false_alarms() {
        let mut rng = ChaCha8Rng::seed_from_u64(42);
        let n = 1000;
        let alarms = (0..n)
            .filter(|&i| {
                let s = series(&mut rng, 6, 3, 6, 1.0);
                detect(&s, i as u64).is_some_and(|c| c.p < 0.05)
            })
            .count();
        let rate = alarms as f64 / n as f64;
        assert!(rate <= 0.05, "false-alarm rate {rate}");
        // A test that never alarms would pass the line above: it must be near α.
        assert!(
            rate >= 0.02,
            "false-alarm rate {rate}: the test is not calibrated"
        );
    }
}
