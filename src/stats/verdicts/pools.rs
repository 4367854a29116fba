//! The pools comparisons borrow their spread from: the moderated variances' priors of each
//! pool (one workload, data set and variant, every target and thread count) at each look,
//! and the steal fit each point's figures may be adjusted by. Apart from the family, which
//! only asks a pool for a comparison's priors.

use std::collections::{HashMap, HashSet};

use super::looks::{round_differences, Priors};
use super::points::{Point, Sample};
use crate::stats::estimators::log_values;
use crate::stats::moderated::{alike, prior_of, Prior, Spread};
use crate::stats::steal::{fit, Slope};

/// The moderated variances' priors ([`crate::stats::moderated`]), one per pool (the
/// points of one workload, data set and variant: every target and thread count) and look.
pub(super) struct Pools<'a> {
    points: &'a [Point],
    baseline: &'a str,
    pool_of: Vec<usize>,
    cache: HashMap<(usize, usize), PoolPriors>,
    /// Each point's steal fit per look ([`point_slope`]).
    slopes: HashMap<(usize, usize), Option<Slope>>,
    /// The points judged on their raw figures whatever their fit (`family::decide_points`).
    raw: &'a HashSet<usize>,
}

impl<'a> Pools<'a> {
    pub(super) fn new(
        points: &'a [Point],
        baseline: &'a str,
        raw: &'a HashSet<usize>,
    ) -> Pools<'a> {
        let mut keys: Vec<(&str, Option<&str>, &str)> = Vec::new();
        let pool_of = points
            .iter()
            .map(|p| {
                let k = (
                    p.workload.as_str(),
                    p.dataset.as_deref(),
                    p.variant.as_str(),
                );
                keys.iter().position(|x| *x == k).unwrap_or_else(|| {
                    keys.push(k);
                    keys.len() - 1
                })
            })
            .collect();
        Pools {
            points,
            baseline,
            pool_of,
            cache: HashMap::new(),
            slopes: HashMap::new(),
            raw,
        }
    }

    /// The priors of point `pi`'s pool from the first `n` runs of each group: of the
    /// groups' log values, and of the per-round differences of each group paired with its
    /// point's baseline ([`round_differences`]), each adjusted for steal where its point
    /// has a fit ([`point_slope`]); and point `pi`'s own fit.
    ///
    /// When the pool's targets' spreads differ, `sides` (the baseline's and the candidate's
    /// targets) get their own targets' priors instead ([`PoolPriors::own`]).
    pub(super) fn priors(&mut self, pi: usize, n: usize, sides: (&str, &str)) -> Priors {
        let pool = self.pool_of[pi];
        let (points, pool_of, baseline, raw) =
            (self.points, &self.pool_of, self.baseline, self.raw);
        let cached = self.cache.entry((pool, n)).or_insert_with(|| {
            let in_pool: Vec<(&Point, bool)> = (points.iter().enumerate())
                .zip(pool_of)
                .filter(|(_, &q)| q == pool)
                .map(|((i, p), _)| (p, raw.contains(&i)))
                .collect();
            pool_priors(&in_pool, baseline, n)
        });
        let own = |t: &str| cached.own.get(t).copied();
        let shared = Priors {
            own: (own(sides.0), own(sides.1)),
            ..cached.shared
        };
        let slope = *self
            .slopes
            .entry((pi, n))
            .or_insert_with(|| point_slope(&points[pi], n).filter(|_| !raw.contains(&pi)));
        Priors { slope, ..shared }
    }
}

/// Point `p`'s fit of its log key metric on the stolen CPU time from the first `n` runs of
/// each group that has a steal figure for every one of them and only positive values
/// ([`crate::stats::steal::fit`]).
fn point_slope(p: &Point, n: usize) -> Option<Slope> {
    let data: Vec<(Vec<f64>, Vec<f64>)> = (0..p.groups.len())
        .filter_map(|g| {
            let s = p.sample(g).first(n);
            Some((log_values(s.values)?, s.stolen()?))
        })
        .collect();
    let groups: Vec<(&[f64], &[f64])> = data
        .iter()
        .map(|(y, x)| (y.as_slice(), x.as_slice()))
        .collect();
    fit(&groups)
}

/// Sets each group's key-metric runs at no steal ([`crate::stats::MetricStats::at_no_steal`])
/// when the point's fit over every run adjusts its comparisons, as the latest test adjusts
/// them ([`super::looks::test`]): only when every group with a key metric is in the fit and
/// keeps a degree of freedom after paying its share of the slope's (else its tests fall
/// back to the raw values), so a row never shows an adjusted figure beside an unadjusted %.
pub(super) fn mark_at_no_steal(p: &mut Point) {
    let Some(slope) = point_slope(p, usize::MAX) else {
        return;
    };
    let adjusted: Vec<Option<Vec<f64>>> = (0..p.groups.len())
        .map(|g| {
            let s = p.sample(g);
            let logs = log_values(s.values).filter(|l| !l.is_empty())?;
            let x = s.stolen()?;
            let adjusted = slope.adjust(&logs, &x);
            (slope.spread(&adjusted, &x).df > 0.0)
                .then(|| adjusted.iter().map(|v| v.exp()).collect())
        })
        .collect();
    let measured = |g: usize| !p.raw(g).is_empty();
    if (0..p.groups.len()).any(|g| measured(g) && adjusted[g].is_none()) {
        return;
    }
    let key = p.key.name.clone();
    for (group, runs) in p.groups.iter_mut().zip(adjusted) {
        if let Some(m) = group.metrics.get_mut(&key) {
            m.at_no_steal = runs;
        }
    }
}

/// Shows point `p`'s figures raw again (`family::decide_points`).
pub(super) fn clear_at_no_steal(p: &mut Point) {
    let key = p.key.name.clone();
    for group in p.groups.iter_mut() {
        if let Some(m) = group.metrics.get_mut(&key) {
            m.at_no_steal = None;
        }
    }
}

/// The spread of a group's first `n` log values, adjusted for steal by `slope` when it has
/// a steal figure for each.
fn group_spread(s: Sample, slope: Option<Slope>) -> Option<Spread> {
    let logs = log_values(s.values).filter(|l| l.len() >= 2)?;
    Some(match slope.zip(s.stolen()) {
        Some((sl, x)) => sl.spread(&sl.adjust(&logs, &x), &x),
        None => Spread::of(&logs),
    })
}

/// The per-round differences of logs of `c` against `b` and their spread, adjusted for
/// steal by `slope` when both sides have a steal figure for each run.
fn pair_spread(b: Sample, c: Sample, slope: Option<Slope>) -> Option<(Vec<f64>, Spread)> {
    let d = round_differences(b, c)?;
    Some(match (slope, b.stolen(), c.stolen()) {
        (Some(sl), Some(xb), Some(xc)) => {
            let dx: Vec<f64> = xc.iter().zip(&xb).map(|(c, b)| c - b).collect();
            let adjusted: Vec<f64> = d.iter().zip(&dx).map(|(d, x)| d - sl.b * x).collect();
            let spread = sl.paired_spread(&adjusted, &dx);
            (adjusted, spread)
        }
        _ => {
            let spread = Spread::of(&d);
            (d, spread)
        }
    })
}

/// What a pool lends at one look: the priors every comparison shares, and when its targets'
/// spreads differ ([`alike`] rejects) each target's own prior, from its groups at the pool's
/// thread counts and points: a target measured at three thread counts has its spread known
/// from three groups, whatever its neighbours' spreads.
struct PoolPriors {
    shared: Priors,
    own: HashMap<String, Prior>,
}

/// The spreads of target `t`'s groups among a pool's `spreads`.
fn of_target(spreads: &[(&str, Spread)], t: &str) -> Vec<Spread> {
    (spreads.iter().filter(|(u, _)| *u == t))
        .map(|(_, s)| *s)
        .collect()
}

/// The priors of a pool's points from the first `n` runs of each group (the slope left to
/// each point: [`Pools::priors`]).
fn pool_priors(in_pool: &[(&Point, bool)], baseline: &str, n: usize) -> PoolPriors {
    let slopes: Vec<Option<Slope>> = (in_pool.iter())
        .map(|&(p, raw)| point_slope(p, n).filter(|_| !raw))
        .collect();
    let in_pool: Vec<&Point> = in_pool.iter().map(|&(p, _)| p).collect();
    let spreads: Vec<(&str, Spread)> = in_pool
        .iter()
        .zip(&slopes)
        .flat_map(|(p, &sl)| (0..p.groups.len()).map(move |g| (p, g, sl)))
        .filter_map(|(p, g, sl)| {
            let spread = group_spread(p.sample(g).first(n), sl)?;
            Some((p.groups[g].key.target.as_str(), spread))
        })
        .collect();
    // Borrow only between targets whose spreads are alike ([`alike`]).
    let mut targets: Vec<&str> = spreads.iter().map(|(t, _)| *t).collect();
    targets.sort_unstable();
    targets.dedup();
    let per_target: Vec<Spread> = (targets.iter())
        .filter_map(|t| Spread::pooled(&of_target(&spreads, t)))
        .collect();
    if !alike(&per_target) {
        let own = (targets.iter())
            .filter_map(|t| {
                Some((
                    t.to_string(),
                    prior_of(&of_target(&spreads, t), f64::INFINITY)?,
                ))
            })
            .collect();
        return PoolPriors {
            shared: Priors {
                unequal: true,
                ..Priors::default()
            },
            own,
        };
    }
    let groups: Vec<Spread> = spreads.into_iter().map(|(_, s)| s).collect();
    // Per point, its paired differences (one per candidate), all sharing the baseline's
    // runs ([`lent_df`]).
    let per_point: Vec<Vec<(Vec<f64>, Spread)>> = in_pool
        .iter()
        .zip(&slopes)
        .filter_map(|(p, &sl)| p.baseline_index(baseline).map(|b| (p, b, sl)))
        .map(|(p, b, sl)| {
            (0..p.groups.len())
                .filter(|&g| g != b)
                .filter_map(|g| pair_spread(p.sample(b).first(n), p.sample(g).first(n), sl))
                .collect()
        })
        .collect();
    let diffs: Vec<Vec<Vec<f64>>> = per_point
        .iter()
        .map(|ds| ds.iter().map(|(d, _)| d.clone()).collect())
        .collect();
    let cap = lent_df(&diffs);
    let pairs: Vec<Spread> = per_point
        .iter()
        .flatten()
        .filter(|(d, _)| d.len() >= 2 && d.iter().all(|x| x.is_finite()))
        .map(|(_, s)| *s)
        .collect();
    // Blocking needs neighbours that are independent of the comparison: with one point in
    // the pool (one thread count) the paired differences share a single baseline and lend
    // little, and the unpaired test borrows from every target.
    let points_paired = per_point.iter().filter(|d| !d.is_empty()).count();
    PoolPriors {
        shared: Priors {
            groups: prior_of(&groups, f64::INFINITY),
            pairs: (points_paired >= 2)
                .then(|| prior_of(&pairs, cap))
                .flatten(),
            ..Priors::default()
        },
        own: HashMap::new(),
    }
}

/// The degrees of freedom the paired differences of a pool (per point, one per candidate)
/// may lend one comparison: what they hold independently, less the comparison's own. The
/// K differences of one point share its baseline's runs; with equal spreads two of them
/// correlate ½ and their sample variances ¼, so K of them are worth K / (1 + (K − 1)/4)
/// independent ones (Kish's design effect), and the points of a pool are independent.
fn lent_df(per_point: &[Vec<Vec<f64>>]) -> f64 {
    let df = |d: &Vec<f64>| d.len() as f64 - 1.0;
    let worth: f64 = per_point
        .iter()
        .filter(|ds| !ds.is_empty())
        .map(|ds| {
            let k = ds.len() as f64;
            ds.iter().map(df).fold(0.0, f64::max) * k / (1.0 + (k - 1.0) / 4.0)
        })
        .sum();
    let own = per_point.iter().flatten().map(df).fold(0.0, f64::max);
    (worth - own).max(0.0)
}
