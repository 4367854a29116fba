//! Comparisons adjusted for the CPU time the hypervisor stole: analysis of covariance
//! (ANCOVA; e.g. Montgomery, *Design and Analysis of Experiments*, ch. "Analysis of
//! covariance", or Snedecor & Cochran, *Statistical Methods*, ch. 18).
//!
//! On a virtual machine every measured phase records `cpu_steal_pct`, the share of all CPUs'
//! time over the phase that the hypervisor kept ([`crate::stats::disturbed`]). Within a group
//! of repetitions (one workload point, target and thread count) the log of the key metric
//! rises almost linearly with it: on three quiet default runs one slope per point, pooled
//! within groups, explained 79–89 % of the within-group variance (BENCHMARKS.md). A run's
//! steal comes in bursts that have nothing to do with the target, so it is noise the
//! comparison can take out instead of waiting for more runs.
//!
//! The model, per point and look: `ln y_gi = μ_g + β x_gi + e_gi`, with `x` the stolen
//! fraction (`cpu_steal_pct / 100`; the machine's CPU count is the same for every phase of a
//! run, so any other scaling only rescales β), one β for every target of the point
//! ([`fit`]: each group centred on its own means, `β̂ = Sxy / Sxx`). A comparison then tests
//! the difference of **adjusted means** `(ȳc − ȳb) − β̂ (x̄c − x̄b)`: the difference at
//! equal steal, which is what a machine whose hypervisor kept nothing would show if the
//! line holds. Its variance is each side's `σ²/n` plus the slope's own uncertainty
//! `(x̄c − x̄b)² σ²/Sxx` ([`Slope::shift_var`]), the latter with the fit's `N − G − 1`
//! residual degrees of freedom in Welch–Satterthwaite's sum.
//!
//! **How it composes.** The log values of each side are adjusted first (`ln y − β̂ x`,
//! [`Slope::adjust`]) and handed to the machinery that was there (the moderated variances,
//! Welch, the blocked test, the rank test, the looks and the step-up); only two things are
//! added: the slope term above, and the degree of freedom the slope costs. The adjusted
//! values of group g are the fit's residuals around its mean, whose sum of squares has
//! expectation `σ² (n_g − 1 − h_g)`, `h_g = Sxx_g / Sxx` the group's share of the slope's
//! leverage ([`Slope::spread`]); so each group's variance is that sum over `n_g − 1 − h_g`,
//! with as many degrees of freedom, and the groups together pay exactly the one degree of
//! freedom the slope took. A paired comparison's per-round differences pay
//! `Q / (2 Sxx)`, with `Q` the sum of squares of the rounds' steal differences about their
//! mean ([`Slope::paired_spread`]). The rank test (chosen from five runs when a side still
//! looks skewed after adjustment) has no place for the slope's term: there the slope is
//! taken as known, which the simulation checks.
//!
//! **When.** Whether a comparison is adjusted follows from the data's shape, never from
//! whether adjusting helps: a group enters its point's fit when every one of the look's
//! runs has a steal figure and every key value is positive; the fit is made when its groups'
//! steal varies (by at least [`MIN_STEAL_SPREAD`]) and leaves at least [`MIN_RESIDUAL_DF`]
//! residual degrees of freedom; a comparison is adjusted when both its sides are in the fit. Old records without
//! the figure are judged as before, and on bare metal (steal always 0, `Sxx = 0`) nothing
//! changes.
//!
//! **Assumed:** that the target does not itself cause the steal it suffers. A phase that
//! keeps more CPUs busy can be kept from more of them; adjusting to equal steal then takes
//! out what the hypervisor would have cost it, which is the machine's, not the file
//! system's. The simulation in `tests/sequential.rs` checks the false-call rate with steal
//! drawn independently of the target, with a slope and without one.

use serde::Serialize;

use super::estimators::mean;
use super::moderated::Spread;

/// The metric every measurement of a virtual machine carries: the share (%) of all CPUs'
/// time over the phase that the hypervisor kept.
pub const STEAL_METRIC: &str = "cpu_steal_pct";

/// The fewest residual degrees of freedom (`N − G − 1`) a fit must leave: with fewer, its
/// residual variance, and so the slope's own uncertainty, is too unsure to lean on.
pub const MIN_RESIDUAL_DF: f64 = 3.0;

/// The least spread of the steal within a point's groups (the standard deviation of the
/// stolen fraction about each group's mean, pooled) for a fit to be made: 1 % of the CPUs'
/// time. On the dev VM the slopes ran 1.7–4.4 per unit of stolen fraction, so steal that
/// varies by less than 1 % moves a run's time by a few per cent at most, less than the
/// run-to-run spread of the steadiest workloads, and the slope cannot be told from noise:
/// adjusting would extrapolate an unsure line to no steal and add its uncertainty. The
/// scale-1 study's long phases lost 0–4 % (within-group spread 0.00–1.7 %) and fitted
/// slopes of −6,000 to +600 before this rule (BENCHMARKS.md). The rule reads the steal
/// only, never the key metric, so it cannot favour a verdict.
pub const MIN_STEAL_SPREAD: f64 = 0.01;

/// A group's steal figures as the covariate: the stolen fraction of the CPUs' time.
pub fn fractions(steal_pct: &[f64]) -> Vec<f64> {
    steal_pct.iter().map(|s| s / 100.0).collect()
}

/// What a verdict says of its adjustment (`summary.json`: `steal_adjusted`, `steal_slope`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StealNote {
    /// Always true: the difference, its interval and its test are at equal steal.
    pub steal_adjusted: bool,
    /// The slope the adjustment used: ln(key metric) per unit of stolen fraction.
    pub steal_slope: f64,
}

/// The within-group slope of a point's log key metric on the stolen fraction, fitted at one
/// look.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slope {
    /// β̂: the change of the log key metric per unit of stolen fraction.
    pub b: f64,
    /// Σ over the groups of Σ (x − x̄_g)².
    pub sxx: f64,
    /// The residual variance σ̂² = RSS / (N − G − 1).
    pub var: f64,
    /// The residual degrees of freedom N − G − 1.
    pub df: f64,
}

/// Sum of squares of `x` about its mean, and the cross-products with `y` about theirs.
fn centred(y: &[f64], x: &[f64]) -> (f64, f64, f64) {
    let (my, mx) = (mean(y), mean(x));
    y.iter()
        .zip(x)
        .fold((0.0, 0.0, 0.0), |(sxx, sxy, syy), (y, x)| {
            let (dx, dy) = (x - mx, y - my);
            (sxx + dx * dx, sxy + dx * dy, syy + dy * dy)
        })
}

/// The pooled within-group slope of `groups`, each (log values, stolen fractions) of the
/// same length; `None` when a group's lengths differ or a value is not finite, when the
/// steal barely varies within the groups (`Sxx = 0` on bare metal; below
/// [`MIN_STEAL_SPREAD`]), or when fewer than [`MIN_RESIDUAL_DF`] residual degrees of
/// freedom would be left.
pub fn fit(groups: &[(&[f64], &[f64])]) -> Option<Slope> {
    let usable = groups
        .iter()
        .all(|(y, x)| y.len() == x.len() && y.iter().chain(x.iter()).all(|v| v.is_finite()));
    let groups: Vec<&(&[f64], &[f64])> = groups.iter().filter(|(y, _)| !y.is_empty()).collect();
    if !usable || groups.is_empty() {
        return None;
    }
    let (sxx, sxy, syy) = groups.iter().fold((0.0, 0.0, 0.0), |acc, (y, x)| {
        let (a, b, c) = centred(y, x);
        (acc.0 + a, acc.1 + b, acc.2 + c)
    });
    let n: usize = groups.iter().map(|(y, _)| y.len()).sum();
    let df = n as f64 - groups.len() as f64 - 1.0;
    let spread = (sxx / (df + 1.0)).sqrt();
    if sxx.is_nan() || sxx <= 0.0 || df < MIN_RESIDUAL_DF || spread < MIN_STEAL_SPREAD {
        return None;
    }
    let b = sxy / sxx;
    let var = ((syy - b * sxy) / df).max(0.0);
    (b.is_finite() && var.is_finite()).then_some(Slope { b, sxx, var, df })
}

impl Slope {
    /// The log values `y` adjusted to no steal: `y − β̂ x`.
    pub fn adjust(&self, y: &[f64], x: &[f64]) -> Vec<f64> {
        y.iter().zip(x).map(|(y, x)| y - self.b * x).collect()
    }

    /// The variance the slope's own uncertainty adds to a difference of adjusted means
    /// whose sides' mean steal differs by `dx`: `dx² σ̂² / Sxx`, with the fit's degrees of
    /// freedom.
    pub fn shift_var(&self, dx: f64) -> (f64, f64) {
        (dx * dx * self.var / self.sxx, self.df)
    }

    /// The spread of a group's adjusted values `adjusted` (whose steal was `x`): their
    /// sum of squares over `n − 1 − h`, `h = Sxx_g / Sxx` the group's share of the slope's
    /// degree of freedom, with as many degrees of freedom.
    pub fn spread(&self, adjusted: &[f64], x: &[f64]) -> Spread {
        let h = centred(x, x).0 / self.sxx;
        Spread::with_df(adjusted, adjusted.len() as f64 - 1.0 - h)
    }

    /// The spread of a comparison's per-round differences of adjusted logs `d`, whose
    /// rounds' steal differed by `dx` (candidate minus baseline): they lose `Q / (2 Sxx)`
    /// degrees of freedom, `Q` the sum of squares of `dx` about its mean (the module's doc).
    pub fn paired_spread(&self, d: &[f64], dx: &[f64]) -> Spread {
        let q = centred(dx, dx).0;
        Spread::with_df(d, d.len() as f64 - 1.0 - q / (2.0 * self.sxx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::fixtures::close;

    /// The pooled within-group slope and residual variance of a small two-group example,
    /// worked by hand: group A y = (1.0, 1.2, 1.1, 1.5) at x = (0, 0.2, 0.1, 0.4), group B
    /// y = (2.0, 2.1, 2.6) at x = (0, 0.1, 0.5).
    #[test]
    fn the_slope_is_the_pooled_within_group_least_squares_slope() {
        let (ya, xa) = ([1.0, 1.2, 1.1, 1.5], [0.0, 0.2, 0.1, 0.4]);
        let (yb, xb) = ([2.0, 2.1, 2.6], [0.0, 0.1, 0.5]);
        let s = fit(&[(&ya, &xa), (&yb, &xb)]).unwrap();
        // A: x̄ 0.175, ȳ 1.2: Sxx 0.0875, Sxy 0.1100, Syy 0.14.
        // B: x̄ 0.2, ȳ 2.2333: Sxx 0.14, Sxy 0.1700, Syy 0.2067.
        let (sxx, sxy, syy) = (0.0875 + 0.14, 0.11 + 0.17, 0.14 + 0.206_666_666_666_666_7);
        assert!(close(s.sxx, sxx, 1e-12), "{s:?}");
        assert!(close(s.b, sxy / sxx, 1e-12), "{s:?}");
        assert_eq!(s.df, 7.0 - 2.0 - 1.0);
        assert!(close(s.var, (syy - sxy * sxy / sxx) / 4.0, 1e-12), "{s:?}");
        // The groups' shares of the slope's degree of freedom add up to one.
        let h = |y: &[f64], x: &[f64]| {
            let sp = s.spread(&s.adjust(y, x), x);
            y.len() as f64 - 1.0 - sp.df
        };
        assert!(close(h(&ya, &xa) + h(&yb, &xb), 1.0, 1e-12));
    }

    #[test]
    fn no_fit_without_varying_steal_or_enough_degrees_of_freedom() {
        let y = [1.0, 1.1, 0.9, 1.05];
        assert!(
            fit(&[(&y, &[0.0; 4]), (&y, &[0.0; 4])]).is_none(),
            "bare metal"
        );
        let x = [0.0, 0.1, 0.3, 0.2];
        assert!(fit(&[(&y, &x), (&y, &x)]).is_some());
        let slight = [0.0, 0.001, 0.003, 0.002];
        assert!(fit(&[(&y, &slight), (&y, &slight)]).is_none(), "under 1 %");
        assert!(
            fit(&[(&y[..3], &x[..3]), (&y[..2], &x[..2])]).is_none(),
            "df 1"
        );
        assert!(fit(&[(&y, &x[..3])]).is_none(), "lengths differ");
    }
}
