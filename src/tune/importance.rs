//! How much each parameter matters: a main-effects analysis of variance over every ok run
//! of the race (Carver, FAST '20, ranks parameters by the variance each explains). For each
//! workload point, on the logarithm of its key metric (so a parameter that doubles a rate
//! counts the same at any scale), a parameter's share is η² = the sum of squares between
//! its values' means over the total sum of squares; the shares of a point need not add up
//! to one (the design is not orthogonal: a race gives the leaders more runs), and the
//! figure shown is the mean over the points. A rough guide to where the effect is, not a
//! test.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::model::gather;
use super::setup::Setup;
use crate::results::Measurement;

/// One parameter's share of the variance, and its best value by mean.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Importance {
    pub param: String,
    /// η², from 0 to 1, the mean over the workload points.
    pub share: f64,
    /// The value whose runs have the best mean key metric (first point), as written.
    pub best_value: String,
}

/// η² of parameter `j` over `runs`, and the index of its best value; `None` without spread.
fn eta_squared(runs: &[(Vec<usize>, f64)], j: usize) -> Option<(f64, usize)> {
    let n = runs.len() as f64;
    let mean = runs.iter().map(|r| r.1).sum::<f64>() / n;
    let total: f64 = runs.iter().map(|r| (r.1 - mean).powi(2)).sum();
    if total.is_nan() || total <= 0.0 {
        return None;
    }
    let mut by_level: BTreeMap<usize, (f64, usize)> = BTreeMap::new();
    for (levels, y) in runs {
        let e = by_level.entry(levels[j]).or_insert((0.0, 0));
        e.0 += y;
        e.1 += 1;
    }
    let between: f64 = by_level
        .values()
        .map(|(s, k)| *k as f64 * (s / *k as f64 - mean).powi(2))
        .sum();
    let best = by_level
        .iter()
        .max_by(|a, b| {
            let (x, y) = (a.1 .0 / a.1 .1 as f64, b.1 .0 / b.1 .1 as f64);
            x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal)
        })
        .map_or(0, |(l, _)| *l);
    Some(((between / total).clamp(0.0, 1.0), best))
}

/// Every parameter's importance over the race's `measurements`, largest first.
pub fn importance(setup: &Setup, measurements: &[Measurement]) -> Vec<Importance> {
    let levels_of = |t: &str| setup.candidate(t).map(|c| c.levels.as_slice());
    let runs = gather(&levels_of, measurements);
    let mut out: Vec<Importance> = setup
        .space
        .params
        .iter()
        .enumerate()
        .map(|(j, p)| {
            let shares: Vec<(f64, usize)> =
                runs.values().filter_map(|r| eta_squared(r, j)).collect();
            let share = if shares.is_empty() {
                0.0
            } else {
                shares.iter().map(|s| s.0).sum::<f64>() / shares.len() as f64
            };
            let best = shares.first().map_or(p.default_index(), |s| s.1);
            Importance {
                param: p.name.clone(),
                share,
                best_value: p.values[best].clone(),
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.share
            .partial_cmp(&a.share)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parameter_that_moves_the_metric_explains_its_variance() {
        // Parameter 0 doubles the metric; parameter 1 does nothing but jitter.
        let runs: Vec<(Vec<usize>, f64)> = (0..16)
            .map(|i| {
                let (a, b) = (i % 2, (i / 2) % 2);
                let y = (1000.0 * (1.0 + a as f64) * (1.0 + 0.01 * (i % 3) as f64)).ln();
                (vec![a, b], y)
            })
            .collect();
        let (big, best) = eta_squared(&runs, 0).unwrap();
        let (small, _) = eta_squared(&runs, 1).unwrap();
        assert!(big > 0.95, "{big}");
        assert!(small < 0.05, "{small}");
        assert_eq!(best, 1);
        assert_eq!(eta_squared(&[(vec![0], 1.0), (vec![1], 1.0)], 0), None);
    }
}
