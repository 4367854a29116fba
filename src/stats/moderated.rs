//! A variance borrowed from the neighbours: with three runs a side, Welch's test has about
//! two degrees of freedom, and its t quantile (4.3 at 95 %, 9.9 at 99 %) leaves clear
//! differences undecided. The targets and thread counts of one workload point are measured
//! by the same harness on the same machine, so their run-to-run spreads on the log scale
//! are alike more often than not; the empirical-Bayes "moderated" variance of Smyth (2004,
//! *Linear models and empirical Bayes methods for assessing differential expression*,
//! Stat. Appl. Genet. Mol. Biol. 3(1)) uses that without trusting it blindly.
//!
//! Each group's sample variance `s²` (with `d` degrees of freedom) is taken as drawn from a
//! scaled inverse χ² prior with `d₀` degrees of freedom around `s₀²`; both are estimated
//! from the groups by the method of moments on `ln s²` ([`prior`]). The posterior variance
//! `(d₀ s₀² + d s²) / (d₀ + d)` then carries `d₀ + d` degrees of freedom. When the groups'
//! spreads really differ (one noisy target beside steady ones) the spread of `ln s²` is
//! large, `d₀` comes out small and each group keeps mostly its own variance; when they
//! agree, `d₀` is large and the test gains the pooled degrees of freedom. `d₀` is capped at
//! the other groups' own degrees of freedom ([`prior`]), so no group borrows more than the
//! data hold, and a side's variance is never moderated *below* its own (such a side keeps
//! its own variance and degrees of freedom): shrinking a noisy target towards steady
//! neighbours made false calls in the A/A simulation (`tests/sequential.rs`). The comparison itself stays Welch's (each side its own
//! moderated variance).

use statrs::distribution::{ChiSquared, ContinuousCDF, StudentsT};
use statrs::function::gamma::digamma;

use super::estimators::{all_finite, mean, stddev, t_quantile};

/// Fewest groups whose spreads are needed to estimate a prior: two variances say nothing
/// about how much variances vary.
pub const MIN_GROUPS_FOR_PRIOR: usize = 3;

/// The prior of the groups' variances: centre `var` (s₀²) and weight `df` (d₀).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prior {
    pub var: f64,
    pub df: f64,
}

/// The trigamma function ψ′(x) for x > 0: recurrence up to x ≥ 6, then the asymptotic
/// series (relative error below 1e-9).
pub fn trigamma(mut x: f64) -> f64 {
    let mut acc = 0.0;
    while x < 6.0 {
        acc += 1.0 / (x * x);
        x += 1.0;
    }
    let x2 = 1.0 / (x * x);
    acc + 1.0 / x
        + x2 / 2.0
        + (1.0 / 6.0 - x2 * (1.0 / 30.0 - x2 * (1.0 / 42.0 - x2 / 30.0))) * x2 / x
}

/// The x > 0 with ψ′(x) = y (y > 0), by Smyth's Newton iteration on 1/ψ′.
fn inverse_trigamma(y: f64) -> f64 {
    if y > 1e7 {
        return 1.0 / y.sqrt();
    }
    if y < 1e-6 {
        return 1.0 / y;
    }
    let mut x = 0.5 + 1.0 / y;
    for _ in 0..50 {
        let tri = trigamma(x);
        let step = tri * (1.0 - tri / y) / psi2(x);
        x += step;
        if (-step / x) < 1e-10 {
            break;
        }
    }
    x
}

/// ψ″(x) by a central difference of [`trigamma`]: only the Newton step's slope needs it.
fn psi2(x: f64) -> f64 {
    let h = 1e-5 * x.max(1.0);
    (trigamma(x + h) - trigamma((x - h).max(x / 2.0))) / (h + h.min(x / 2.0))
}

/// The prior of the variances of `groups` (each a sample on the scale compared, at least 2
/// values), by Smyth's method of moments; `None` below [`MIN_GROUPS_FOR_PRIOR`] usable
/// groups or when a group has no spread. `d₀` is capped at the smallest sum of the *other*
/// groups' degrees of freedom: with equal spreads everywhere the moment estimate is
/// infinite, and a group must not borrow more degrees of freedom than its neighbours have.
pub fn prior(groups: &[&[f64]]) -> Option<Prior> {
    prior_within(groups, f64::INFINITY)
}

/// [`prior`] with `d₀` also capped at `cap_df`: for samples that are not independent of
/// each other (the paired differences of one point's candidates share its baseline's
/// runs), whose spreads agree more than independent ones would, so that the method of
/// moments overstates how much they can lend.
pub fn prior_within(groups: &[&[f64]], cap_df: f64) -> Option<Prior> {
    let spreads: Vec<Spread> = groups
        .iter()
        .filter(|g| g.len() >= 2 && all_finite(g))
        .map(|g| Spread::of(g))
        .collect();
    prior_of(&spreads, cap_df)
}

/// [`prior_within`] from the groups' spreads themselves, each with its own degrees of
/// freedom (a group adjusted for a covariate has fewer than its runs less one:
/// [`crate::stats::steal`]).
pub fn prior_of(spreads: &[Spread], cap_df: f64) -> Option<Prior> {
    let stats: Vec<(f64, f64)> = spreads.iter().map(|s| (s.var, s.df)).collect();
    if stats.len() < MIN_GROUPS_FOR_PRIOR
        || stats
            .iter()
            .any(|&(v, d)| v.is_nan() || v <= 0.0 || d.is_nan() || d <= 0.0)
    {
        return None;
    }
    let g = stats.len() as f64;
    let e: Vec<f64> = stats
        .iter()
        .map(|&(v, d)| v.ln() - digamma(d / 2.0) + (d / 2.0).ln())
        .collect();
    let e_mean = mean(&e);
    let spread = e.iter().map(|x| (x - e_mean).powi(2)).sum::<f64>() / (g - 1.0)
        - stats.iter().map(|&(_, d)| trigamma(d / 2.0)).sum::<f64>() / g;
    let total: f64 = stats.iter().map(|&(_, d)| d).sum();
    let cap = (total - stats.iter().map(|&(_, d)| d).fold(0.0, f64::max)).min(cap_df);
    let df = if spread > 0.0 {
        (2.0 * inverse_trigamma(spread)).min(cap)
    } else {
        cap
    };
    let var = (e_mean + digamma(df / 2.0) - (df / 2.0).ln()).exp();
    (var.is_finite() && var > 0.0 && df > 0.0).then_some(Prior { var, df })
}

/// The level of the homogeneity check before pooling ([`alike`]): a pool whose targets'
/// spreads differ at this level borrows nothing. Generous on purpose: a missed difference
/// lets a noisy target take a steady one's small variance (a false call), a false alarm only
/// costs the degrees of freedom a run with equal spreads would have borrowed.
pub const HOMOGENEITY_LEVEL: f64 = 0.10;

/// Whether the spreads of `sides` (each a target's, pooled over its groups: [`Spread::pooled`])
/// are alike enough to lend each other a variance: Bartlett's test of equal variances
/// (Snedecor & Cochran, *Statistical Methods*, 8th ed., § 13.10) does not reject at
/// [`HOMOGENEITY_LEVEL`]. Fewer than two usable sides say nothing against pooling.
///
/// Why a test first: the prior ([`prior_of`]) assumes every group's variance is drawn around
/// one centre. One target at a 20 % CV among 5 % ones breaks it, and with 2 degrees of
/// freedom its variance often falls below the prior by chance, takes the prior's small
/// centre with its many degrees of freedom, and calls a false difference (issue 58: 6.9 %
/// of A/A runs at three runs a side). Pooled over the thread counts a target was measured
/// at, its spread is known well enough for the test to see it.
pub fn alike(sides: &[Spread]) -> bool {
    let usable: Vec<&Spread> = sides
        .iter()
        .filter(|s| s.df > 0.0 && s.var > 0.0 && s.var.is_finite())
        .collect();
    let k = usable.len() as f64;
    if usable.len() < 2 {
        return true;
    }
    let total: f64 = usable.iter().map(|s| s.df).sum();
    let pooled: f64 = usable.iter().map(|s| s.df * s.var).sum::<f64>() / total;
    let m = total * pooled.ln() - usable.iter().map(|s| s.df * s.var.ln()).sum::<f64>();
    let c =
        1.0 + (usable.iter().map(|s| 1.0 / s.df).sum::<f64>() - 1.0 / total) / (3.0 * (k - 1.0));
    let Ok(chi) = ChiSquared::new(k - 1.0) else {
        return true;
    };
    chi.sf(m / c) >= HOMOGENEITY_LEVEL
}

/// One side of a test: its sample variance, the degrees of freedom that variance carries,
/// and its size. Plain samples carry `n − 1`; a sample adjusted for a covariate fewer
/// ([`crate::stats::steal`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub var: f64,
    pub df: f64,
    pub n: f64,
}

impl Spread {
    /// The sample variance of `xs` with `n − 1` degrees of freedom.
    pub fn of(xs: &[f64]) -> Spread {
        let s = stddev(xs, mean(xs));
        Spread {
            var: s * s,
            df: xs.len() as f64 - 1.0,
            n: xs.len() as f64,
        }
    }

    /// One spread from several samples' (a target's groups at its thread counts): their sums
    /// of squares over their summed degrees of freedom; `None` without a degree of freedom.
    pub fn pooled(parts: &[Spread]) -> Option<Spread> {
        let df: f64 = parts.iter().map(|s| s.df).sum();
        (df > 0.0).then(|| Spread {
            var: parts.iter().map(|s| s.var * s.df).sum::<f64>() / df,
            df,
            n: parts.iter().map(|s| s.n).sum(),
        })
    }

    /// The sum of squares of `xs` about their mean over `df`, with `df` degrees of freedom.
    pub fn with_df(xs: &[f64], df: f64) -> Spread {
        let m = mean(xs);
        let ss: f64 = xs.iter().map(|x| (x - m).powi(2)).sum();
        Spread {
            var: ss / df,
            df,
            n: xs.len() as f64,
        }
    }
}

/// Welch's test of `mean(c) − mean(b)` with each side's variance moderated by `prior`
/// (plain Welch without one).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Moderated {
    pub diff: f64,
    pub se: f64,
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
}

impl Moderated {
    /// The (1 − `alpha`) interval of `diff`.
    pub fn interval(&self, alpha: f64) -> Option<(f64, f64)> {
        let half = t_quantile(1.0 - alpha / 2.0, self.df)? * self.se;
        Some((self.diff - half, self.diff + half))
    }
}

/// One side's squared standard error and its degrees of freedom, moderated.
fn side(s: Spread, prior: Option<Prior>) -> (f64, f64) {
    let d = s.df;
    // Never below the side's own variance, and a side above the prior keeps its own degrees
    // of freedom: a noisy target beside steady ones must not borrow their small spread nor
    // their degrees of freedom (the A/A simulation with a 20 % CV candidate among 5 % ones
    // called 12.5 % of runs false with the plain posterior, 9.5 % with the variance alone
    // kept from shrinking).
    let (var, df) = match prior {
        Some(p) if (p.df * p.var + d * s.var) / (p.df + d) > s.var => {
            ((p.df * p.var + d * s.var) / (p.df + d), p.df + d)
        }
        _ => (s.var, d),
    };
    (var / s.n, df)
}

/// Welch's test of `mean(c) − mean(b)` between sides whose spreads differ, on **Hsu's
/// degrees of freedom**: the fewer of the two sides' (Hsu 1938), which never rejects more
/// than its level whatever the ratio of the variances. Each side's variance may be
/// moderated by its own target's prior (`own`: baseline's, candidate's, from the target's
/// groups at its other thread counts and points, [`prior_of`]), with the posterior
/// `(d₀s₀² + d·s²)/(d₀ + d)` on `d₀ + d` degrees of freedom either way, up or down: the
/// prior is the target's own spread, not a steadier neighbour's. Without a prior a side
/// keeps its sample variance and `n − 1`.
pub fn hsu_welch(b: &[f64], c: &[f64], own: (Option<Prior>, Option<Prior>)) -> Option<Moderated> {
    if b.len() < 2 || c.len() < 2 || !all_finite(b) || !all_finite(c) {
        return None;
    }
    let side = |xs: &[f64], prior: Option<Prior>| {
        let s = Spread::of(xs);
        let (var, df) = match prior {
            Some(p) => ((p.df * p.var + s.df * s.var) / (p.df + s.df), p.df + s.df),
            None => (s.var, s.df),
        };
        (var / s.n, df)
    };
    let ((vb, db), (vc, dc)) = (side(b, own.0), side(c, own.1));
    t_test(mean(c) - mean(b), vb + vc, db.min(dc))
}

/// A term added to a difference's variance, with its own degrees of freedom: the
/// uncertainty of a covariate's slope ([`crate::stats::steal::Slope::shift_var`]).
pub type Extra = Option<(f64, f64)>;

/// The t-test of `diff` with squared standard error `var` on `df` degrees of freedom.
pub fn t_test(diff: f64, var: f64, df: f64) -> Option<Moderated> {
    let se = var.sqrt();
    if !(se > 0.0 && se.is_finite() && diff.is_finite()) {
        return None;
    }
    let t = StudentsT::new(0.0, 1.0, df).ok()?;
    let p = (2.0 * t.sf((diff / se).abs())).clamp(0.0, 1.0);
    p.is_finite().then_some(Moderated { diff, se, df, p })
}

/// The moderated Welch test of `c` against `b`; `None` with fewer than 2 values a side,
/// non-finite values or no spread at all.
pub fn moderated_welch(b: &[f64], c: &[f64], prior: Option<Prior>) -> Option<Moderated> {
    if b.len() < 2 || c.len() < 2 || !all_finite(b) || !all_finite(c) {
        return None;
    }
    welch_of(
        mean(c) - mean(b),
        (Spread::of(b), Spread::of(c)),
        prior,
        None,
    )
}

/// The moderated Welch test of a difference `diff` of two means whose sides have the
/// spreads `(b, c)`, plus an `extra` variance term in Welch–Satterthwaite's sum; without
/// one, exactly [`moderated_welch`].
pub fn welch_of(
    diff: f64,
    (b, c): (Spread, Spread),
    prior: Option<Prior>,
    extra: Extra,
) -> Option<Moderated> {
    if !(b.df > 0.0 && c.df > 0.0) {
        return None;
    }
    let ((vb, db), (vc, dc)) = (side(b, prior), side(c, prior));
    let (ve, de) = extra.unwrap_or((0.0, f64::INFINITY));
    let var = vb + vc + ve;
    let df = var.powi(2) / (vb * vb / db + vc * vc / dc + ve * ve / de);
    t_test(diff, var, df)
}

/// The moderated paired test of the differences `d` (one per round, candidate minus
/// baseline): a one-sample t-test of mean 0 whose variance is moderated by `prior` (the
/// prior of the point's paired differences) like one side of [`moderated_welch`]; `None`
/// with fewer than 2 differences, non-finite values or no spread at all.
pub fn moderated_paired(d: &[f64], prior: Option<Prior>) -> Option<Moderated> {
    if d.len() < 2 || !all_finite(d) {
        return None;
    }
    paired_of(mean(d), Spread::of(d), prior, None)
}

/// The moderated paired test of a mean difference `diff` whose differences have the spread
/// `d`, plus an `extra` variance term; without one, exactly [`moderated_paired`].
pub fn paired_of(diff: f64, d: Spread, prior: Option<Prior>, extra: Extra) -> Option<Moderated> {
    if d.df.is_nan() || d.df <= 0.0 {
        return None;
    }
    let (v, df) = side(d, prior);
    match extra {
        None => t_test(diff, v, df),
        Some((ve, de)) => {
            let var = v + ve;
            t_test(diff, var, var.powi(2) / (v * v / df + ve * ve / de))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::fixtures::close;

    #[test]
    fn trigamma_and_its_inverse_match_closed_forms() {
        // ψ′(1/2) = π²/2, ψ′(1) = π²/6, ψ′(5/2) = π²/2 − 4 − 4/9, ψ′(10) = π²/6 − Σ_{k<10} 1/k².
        let cases = [
            (0.5, 4.934802200544679),
            (1.0, 1.6449340668482264),
            (2.5, 0.4903577561002349),
            (10.0, 0.10516633568168575),
        ];
        for (x, want) in cases {
            assert!(close(trigamma(x), want, 1e-9), "{x}: {}", trigamma(x));
            assert!(close(inverse_trigamma(want), x, 1e-6), "{x}");
        }
    }

    #[test]
    fn the_prior_borrows_little_from_unlike_spreads_and_much_from_alike_ones() {
        let alike: [&[f64]; 4] = [
            &[0.0, 0.05, -0.05],
            &[1.0, 1.04, 0.95],
            &[2.0, 2.06, 1.96],
            &[3.0, 2.95, 3.04],
        ];
        let p = prior(&alike).unwrap();
        assert_eq!(p.df, 6.0, "capped at the others' degrees of freedom");
        let unlike: [&[f64]; 4] = [
            &[0.0, 0.001, -0.001],
            &[1.0, 1.3, 0.7],
            &[2.0, 2.002, 1.999],
            &[3.0, 3.4, 2.7],
        ];
        let q = prior(&unlike).unwrap();
        assert!(q.df < 1.0, "{q:?}");
        assert!(prior(&alike[..2]).is_none());
    }

    #[test]
    fn without_a_prior_it_is_welch() {
        // Welch's own test is checked against scipy (`super::super::welch`).
        let (b, c) = ([10.0, 10.1, 10.2], [12.0, 12.3, 11.8]);
        let m = moderated_welch(&b, &c, None).unwrap();
        let w = crate::stats::welch(&c, &b).unwrap();
        assert!(
            close(m.p, w.p, 1e-12) && close(m.df, w.df, 1e-12),
            "{m:?} {w:?}"
        );
        let (lo, hi) = m.interval(0.05).unwrap();
        assert!(lo > 0.0 && hi > lo);
    }

    /// Issue 58 item 2: where the homogeneity check rejected, a comparison fell back to
    /// Welch on its own 2 degrees of freedom a side at three runs, and power at ±10 % / CV
    /// 5 % fell from 25.58 % to 22.97 %. Each side now takes its own target's prior, on
    /// Hsu's degrees of freedom: the fewer of the two sides' posterior ones.
    #[test]
    fn sides_of_unlike_spreads_borrow_only_their_own_targets_prior() {
        let (b, c) = ([0.0, 0.05, -0.05], [0.1, 0.3, -0.1]);
        let own = |var, df| Some(Prior { var, df });
        let plain = hsu_welch(&b, &c, (None, None)).unwrap();
        assert_eq!(plain.df, 2.0, "no prior: the smaller side's n - 1");
        let w = moderated_welch(&b, &c, None).unwrap();
        assert!(close(plain.se, w.se, 1e-12) && w.df > plain.df);
        // The baseline's target lends 4 degrees of freedom, the candidate's 3: Hsu takes 5.
        let m = hsu_welch(&b, &c, (own(0.0025, 4.0), own(0.04, 3.0))).unwrap();
        assert_eq!(m.df, 5.0);
        // A posterior below the side's own variance is taken too: the prior is its own
        // target's spread, not a steadier neighbour's.
        let vb: f64 = (4.0 * 0.0025 + 2.0 * 0.0025) / 6.0 / 3.0;
        let vc = (3.0 * 0.01 + 2.0 * 0.04) / 5.0 / 3.0;
        let low = hsu_welch(&b, &c, (own(0.0025, 4.0), own(0.01, 3.0))).unwrap();
        assert!(close(low.se, (vb + vc).sqrt(), 1e-12), "{low:?}");
    }

    #[test]
    fn the_paired_test_without_a_prior_is_the_paired_t_test() {
        // The paired t-test of d = ln c − ln b with 2 degrees of freedom: t = 21.80,
        // p = 2·(1 − F₂(t)) = 0.0020984522384629944 (the closed form of the t distribution
        // with 2 degrees of freedom: F₂(t) = ½ + t / (2·√(2 + t²))).
        let d: Vec<f64> = [(10.0f64, 12.0f64), (10.4, 12.3), (10.1, 11.8)]
            .iter()
            .map(|(b, c)| c.ln() - b.ln())
            .collect();
        let m = moderated_paired(&d, None).unwrap();
        assert_eq!(m.df, 2.0);
        let t = mean(&d) / (stddev(&d, mean(&d)) / 3f64.sqrt());
        let closed = 1.0 - t / (2.0 + t * t).sqrt();
        assert!(close(closed, 0.0020984522384629944, 1e-9), "{closed}");
        assert!(close(m.p, closed, 1e-9), "{} {closed}", m.p);
        // A prior with many degrees of freedom and a larger variance widens it, but gives
        // the test the prior's degrees of freedom.
        let wide = moderated_paired(
            &d,
            Some(Prior {
                var: 0.01,
                df: 20.0,
            }),
        )
        .unwrap();
        assert_eq!(wide.df, 22.0);
        assert!(wide.se > m.se);
        assert!(moderated_paired(&[0.1, 0.1], None).is_none());
    }
}
