//! A pooled estimate of each candidate: the main-effects model fitted by least squares over
//! every ok run of the race. A candidate's own mean rests on its own few runs (two, at the
//! first look), and the highest of many such means is the luckiest as often as the best
//! (the winner's curse); but each parameter's effect is seen in the runs of every candidate
//! that sets it, so the model's prediction for a candidate (intercept plus the effect of
//! each of its values, on the logarithm of the key metric) rests on all of them. The race
//! uses it only to choose among the candidates its tests could not separate from the best
//! mean (`race::standing`), so a real interaction the model misses can cost no more than
//! what the tests already could not see. Where the design does not identify every effect
//! (more coefficients than distinct configurations, or a value no run has), there is no
//! prediction and the race keeps its own means.

use std::collections::BTreeMap;

use crate::report::key_metric;
use crate::results::{Measurement, Status};

/// Per point (workload, variant, data set, threads): each run's value index per parameter
/// and the oriented log key metric (higher is better).
pub type Runs = BTreeMap<(String, String, Option<String>, u32), Vec<(Vec<usize>, f64)>>;

/// The ok runs of `measurements` by point, each with the levels `levels_of` gives its
/// target (runs of other targets are left out).
pub fn gather<'a>(
    levels_of: &dyn Fn(&str) -> Option<&'a [usize]>,
    measurements: &[Measurement],
) -> Runs {
    let mut runs: Runs = BTreeMap::new();
    for m in measurements.iter().filter(|m| m.status == Status::Ok) {
        let Some(levels) = levels_of(&m.target) else {
            continue;
        };
        let key = key_metric(&m.workload).unwrap_or_default();
        let Some(v) = m.metrics.get(&key.name).filter(|v| **v > 0.0) else {
            continue;
        };
        let y = if key.higher_is_better {
            v.ln()
        } else {
            -v.ln()
        };
        runs.entry((
            m.workload.clone(),
            m.variant.clone(),
            m.dataset.clone(),
            m.threads,
        ))
        .or_default()
        .push((levels.to_vec(), y));
    }
    runs
}

/// The columns of the design: (parameter, value) for every value some run sets that is not
/// the value of the first run (the reference, absorbed in the intercept).
fn columns(runs: &[(Vec<usize>, f64)]) -> Vec<(usize, usize)> {
    let Some((reference, _)) = runs.first() else {
        return Vec::new();
    };
    let mut cols: Vec<(usize, usize)> = runs
        .iter()
        .flat_map(|(l, _)| l.iter().copied().enumerate())
        .filter(|(j, i)| reference.get(*j) != Some(i))
        .collect();
    cols.sort_unstable();
    cols.dedup();
    cols
}

/// The design row of `levels`: 1 for the intercept, then 1 for each column it sets.
fn row(levels: &[usize], cols: &[(usize, usize)]) -> Vec<f64> {
    std::iter::once(1.0)
        .chain(
            cols.iter()
                .map(|(j, i)| f64::from(u8::from(levels.get(*j) == Some(i)))),
        )
        .collect()
}

/// Forward elimination of `a x = b` with partial pivoting, in place (`a` left upper
/// triangular); `None` when `a` is singular (a pivot below 1e-9 of its largest entry): some
/// effect is not identified.
fn eliminate(a: &mut [Vec<f64>], b: &mut [f64]) -> Option<()> {
    let n = b.len();
    let scale = a.iter().flatten().fold(0.0f64, |m, x| m.max(x.abs()));
    for k in 0..n {
        let p = (k..n).max_by(|&x, &y| a[x][k].abs().total_cmp(&a[y][k].abs()))?;
        if a[p][k].abs() <= 1e-9 * scale {
            return None;
        }
        a.swap(k, p);
        b.swap(k, p);
        let (top, below) = a.split_at_mut(k + 1);
        let pivot = &top[k];
        for (r, row) in below.iter_mut().enumerate() {
            let f = row[k] / pivot[k];
            for (x, p) in row[k..].iter_mut().zip(&pivot[k..]) {
                *x -= f * p;
            }
            b[k + 1 + r] -= f * b[k];
        }
    }
    Some(())
}

/// Solves `a x = b`; `None` when `a` is singular.
fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    eliminate(&mut a, &mut b)?;
    let n = b.len();
    let mut x = vec![0.0; n];
    for k in (0..n).rev() {
        let s: f64 = (k + 1..n).map(|c| a[k][c] * x[c]).sum();
        x[k] = (b[k] - s) / a[k][k];
    }
    Some(x)
}

/// XᵀX of the design rows of `levels` over `cols`.
fn normal_matrix(levels: &[&[usize]], cols: &[(usize, usize)]) -> Vec<Vec<f64>> {
    let p = cols.len() + 1;
    let mut xtx = vec![vec![0.0; p]; p];
    for l in levels {
        let x = row(l, cols);
        for r in 0..p {
            for c in 0..p {
                xtx[r][c] += x[r] * x[c];
            }
        }
    }
    xtx
}

/// How well configurations `levels` (one run each) pin down every main effect of a space
/// whose parameters have `values` values each, against the reference `defaults`: the log
/// determinant of XᵀX (D-optimality: larger is a smaller joint confidence region of the
/// effects), `None` when some effect is not identified by them.
pub fn design_score(levels: &[Vec<usize>], values: &[usize], defaults: &[usize]) -> Option<f64> {
    let cols: Vec<(usize, usize)> = values
        .iter()
        .enumerate()
        .flat_map(|(j, &k)| {
            (0..k)
                .filter(move |&i| Some(&i) != defaults.get(j))
                .map(move |i| (j, i))
        })
        .collect();
    let rows: Vec<&[usize]> = levels.iter().map(Vec::as_slice).collect();
    let mut a = normal_matrix(&rows, &cols);
    let mut b = vec![0.0; a.len()];
    eliminate(&mut a, &mut b)?;
    Some((0..a.len()).map(|k| a[k][k].abs().ln()).sum())
}

/// The fitted main-effects model of one point: its columns and coefficients.
pub struct Fit {
    cols: Vec<(usize, usize)>,
    beta: Vec<f64>,
}

impl Fit {
    /// The least-squares fit over `runs`, when every coefficient is identified.
    pub fn of(runs: &[(Vec<usize>, f64)]) -> Option<Fit> {
        let cols = columns(runs);
        let levels: Vec<&[usize]> = runs.iter().map(|(l, _)| l.as_slice()).collect();
        let xtx = normal_matrix(&levels, &cols);
        let mut xty = vec![0.0; cols.len() + 1];
        for (l, y) in runs {
            for (r, x) in row(l, &cols).iter().enumerate() {
                xty[r] += x * y;
            }
        }
        let beta = solve(xtx, xty)?;
        Some(Fit { cols, beta })
    }

    /// The predicted oriented log key metric of a configuration; `None` when it sets a
    /// value no run had (its effect is unknown).
    pub fn predict(&self, levels: &[usize], reference: &[usize]) -> Option<f64> {
        let known = levels
            .iter()
            .enumerate()
            .all(|(j, i)| reference.get(j) == Some(i) || self.cols.binary_search(&(j, *i)).is_ok());
        let x = row(levels, &self.cols);
        known.then(|| x.iter().zip(&self.beta).map(|(a, b)| a * b).sum())
    }
}

/// Each candidate's pooled score: the model's prediction, the mean over the points (as
/// `race::scores` means its own); `None` for all when some point's model is not identified,
/// so that scores on different footings are never compared.
pub fn pooled_scores(
    measurements: &[Measurement],
    candidates: &[(&str, &[usize])],
) -> Option<BTreeMap<String, f64>> {
    let levels_of =
        |t: &str| -> Option<&[usize]> { candidates.iter().find(|c| c.0 == t).map(|c| c.1) };
    let runs = gather(&levels_of, measurements);
    if runs.is_empty() {
        return None;
    }
    let mut sums: BTreeMap<String, f64> = BTreeMap::new();
    for r in runs.values() {
        let fit = Fit::of(r)?;
        let reference = &r.first()?.0;
        for (name, levels) in candidates {
            if let Some(y) = fit.predict(levels, reference) {
                *sums.entry(name.to_string()).or_default() += y;
            }
        }
    }
    let points = runs.len() as f64;
    Some(
        candidates
            .iter()
            .filter_map(|(n, _)| sums.get(*n).map(|s| (n.to_string(), s / points)))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_additive_effect_is_recovered_from_runs_of_every_candidate() {
        // Two two-valued parameters: the first adds 0.5, the second 0.1, in log units.
        let runs: Vec<(Vec<usize>, f64)> = [[0, 0], [1, 0], [0, 1], [1, 1]]
            .iter()
            .flat_map(|l| {
                let y = 1.0 + 0.5 * l[0] as f64 + 0.1 * l[1] as f64;
                [(l.to_vec(), y + 0.01), (l.to_vec(), y - 0.01)]
            })
            .collect();
        let fit = Fit::of(&runs).unwrap();
        let p = fit.predict(&[1, 1], &[0, 0]).unwrap();
        assert!((p - 1.6).abs() < 1e-9, "{p}");
        assert_eq!(fit.predict(&[2, 0], &[0, 0]), None, "a value never run");
        // Only one configuration with the second parameter changed, and always together
        // with the first: the two effects are not separable.
        let confounded = vec![(vec![0, 0], 1.0), (vec![1, 1], 2.0)];
        assert!(Fit::of(&confounded).is_none());
    }
}
