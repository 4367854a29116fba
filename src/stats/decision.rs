//! Three-way decisions: is a candidate **better**, **worse**, **equivalent** to its
//! baseline, or is it still **undecided**? A bare "not significant" mixes "equal" with "we
//! cannot tell"; these rules keep the two apart.
//!
//! * **better / worse**: the difference is significant after control of the false discovery
//!   rate over every comparison of the run, by the adaptive two-stage step-up ([`two_stage`],
//!   built on Benjamini–Hochberg, [`benjamini_hochberg`]; `fsarena compare` uses plain BH,
//!   [`Adjustment`]); the direction follows the metric's `higher_is_better`. Why BH and not Holm: a run makes
//!   dozens of comparisons, and most of them are real differences (file systems *do*
//!   differ). Holm protects against even one false "better" in the whole run by asking the
//!   first comparison for p < α/m (0.05/56 ≈ 0.0009), which three runs can rarely give;
//!   BH promises instead that at most α (5 %) of the differences it reports are false,
//!   which is what a reader of a table of verdicts needs, and it decides far more of them.
//!   BH holds for independent or positively dependent tests; comparisons against one
//!   shared baseline are positively dependent.
//! * **equivalent**: two one-sided tests (TOST) at 5 % each, i.e. the 90 % Welch interval of
//!   the percentage difference lies inside ±margin ([`tost_p`] gives the matching p-value).
//! * **undecided**: neither, with an estimate of how many further runs per target would
//!   decide it ([`runs_to_decide`]).
//!
//! Like [`super::compare`], every rule works on the ratio scale (logarithms) when both
//! samples are positive, else on raw differences.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

use super::estimators::{all_finite, log_values, mean, stddev, t_quantile, z_quantile};
use super::moderated::Prior;
use super::sequential::Looks;

/// [`runs_to_decide`] looks no further than this many runs per target.
pub const MAX_RUNS_ESTIMATE: usize = 1000;

/// The significance level of every "is it real" decision of a run: the family's false
/// discovery rate, and the level each single comparison is tested at.
pub const ALPHA: f64 = 0.05;

pub use super::adjustment::Adjustment;

/// The answer for one comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Better,
    Worse,
    Equivalent,
    Undecided,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Better => "better",
            Decision::Worse => "worse",
            Decision::Equivalent => "equivalent",
            Decision::Undecided => "undecided",
        }
    }
}

/// Where a comparison was found equivalent ([`super::verdicts::looks::Judged::equivalent`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Equivalence {
    /// The interval of the difference, in % of the baseline, that lies inside the margin.
    pub pct_ci: (f64, f64),
    /// Its level: 1 − 2 × the look's share of α (0.90 for a fixed run).
    pub ci_level: f64,
    /// Runs per side of the look.
    pub runs: usize,
}

/// A decided comparison: the word and the numbers it rests on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub decision: Decision,
    /// The p-value adjusted over the whole family of comparisons by `adjustment` (a
    /// difference is called when it is below α = 0.05).
    pub p_adjusted: f64,
    /// The procedure that adjusted `p_adjusted`.
    pub adjustment: Adjustment,
    /// The equivalence margin in percent of the baseline.
    pub margin_pct: f64,
    /// For `undecided`: estimated further runs per target that would decide it; `None` when
    /// decided, or when even [`MAX_RUNS_ESTIMATE`] runs would not. Written as null when
    /// it is 0 (the estimate says the runs made would decide it, the family's adjustment
    /// did not): an undecided comparison never reads "0 more runs".
    #[serde(serialize_with = "zero_as_null")]
    pub runs_to_decide: Option<usize>,
    /// The sequential p-value the family adjusted: the best look's p over its share of α
    /// ([`super::sequential`]); the test's own p for a fixed-size run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p_sequential: Option<f64>,
    /// Runs per side of the look a called difference rests on (`--runs auto` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub look_runs: Option<usize>,
    /// The confidence of the shown `pct_ci95`: 0.95 for an uncalled comparison, the
    /// false-coverage-adjusted level for a called one (Benjamini & Yekutieli 2005).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci_level: Option<f64>,
    /// The most runs per side the run's rule looks at (`--runs auto`'s maximum), so that an
    /// undecided comparison no look would decide says "not within 10 runs", not the
    /// estimate's own far limit ([`MAX_RUNS_ESTIMATE`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs_limit: Option<usize>,
    /// For `undecided`: the interval of the difference, in % of the baseline, that the runs
    /// so far still allow, at `within_level`: "undecided: within −8 % to +3 %" tells a
    /// reader there is no larger difference without more runs (issue 61).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within_pct: Option<(f64, f64)>,
    /// The confidence of `within_pct`: 1 − the p the comparison would have to reach at its
    /// latest look to be called now (the look's share of the family's next level,
    /// [`super::verdicts`]), so that the range of an uncalled comparison holds zero, as
    /// its test says. A plain 95 % interval could leave zero out beside "undecided".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within_level: Option<f64>,
    /// For `equivalent`: the look whose two one-sided tests called it, with the interval
    /// they rest on and its level ([`crate::stats::verdicts::looks::Judged::equivalent`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equivalence: Option<Equivalence>,
    /// Set when the difference, interval and test are at equal CPU steal.
    #[serde(flatten)]
    pub steal: Option<super::steal::StealNote>,
}

fn zero_as_null<S: serde::Serializer>(n: &Option<usize>, s: S) -> Result<S::Ok, S::Error> {
    match n {
        Some(n) if *n > 0 => s.serialize_some(n),
        _ => s.serialize_none(),
    }
}

fn clean_p(x: f64) -> f64 {
    if x.is_finite() {
        x.clamp(0.0, 1.0)
    } else {
        1.0
    }
}

/// Benjamini–Hochberg step-up adjusted p-values, in input order
/// (`statsmodels.stats.multitest.multipletests(p, method='fdr_bh')[1]`).
///
/// Sorted ascending, the i-th smallest (1-based) of m gets `m/i · p`, made monotone from the
/// largest down by a running minimum and capped at 1. Calling every comparison whose
/// adjusted p is below α keeps the expected share of false calls among them at most α.
/// Non-finite p-values are treated as 1.
pub fn benjamini_hochberg(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| clean_p(p[a]).total_cmp(&clean_p(p[b])));
    let mut out = vec![1.0; m];
    let mut running = 1.0f64;
    for (i, &k) in order.iter().enumerate().rev() {
        running = running.min((m as f64 / (i + 1) as f64 * clean_p(p[k])).min(1.0));
        out[k] = running;
    }
    out
}

/// The two-stage adaptive step-up of Benjamini, Krieger & Yekutieli (2006, *Adaptive linear
/// step-up procedures that control the false discovery rate*, Biometrika 93(3)), with no
/// comparison called whose own p is `alpha` or more.
///
/// BH controls the false discovery rate at `m₀/m · α`, m₀ the comparisons with no real
/// difference: when most of a run's differences are real (file systems *do* differ), it is
/// far stricter than α. Stage 1 runs BH at `q = α/(1 + α)` and counts its calls r₁; stage 2
/// runs BH at `q · m/m₀'` with `m₀' = m − r₁` (at least 1), which keeps the rate at α for
/// independent tests (their Theorem 1) and, in their simulations, for positively dependent
/// ones. When stage 1 calls nothing it is BH at `q`, a little stricter than BH at α, so a
/// run with no real difference calls no more than before. A comparison whose own
/// (sequential) p is not below α is never called: no "better" rests on p = 0.08, and a called
/// difference's interval ([`super::verdicts`]) stays at 95 % or more. The theorem does not
/// cover that guard; `tests/sequential.rs` measures the rate with real and null differences.
pub fn two_stage(p: &[f64], alpha: f64) -> TwoStage {
    let m = p.len();
    let bh = benjamini_hochberg(p);
    let q = alpha / (1.0 + alpha);
    let r1 = bh.iter().filter(|&&a| a <= q).count();
    let m0 = m.saturating_sub(r1).max(1);
    // BH at level q·m/m₀ calls a comparison when its BH-adjusted p is at most that level;
    // scaled by α/(q·m/m₀) the same rule reads "below α".
    let scale = alpha * m0 as f64 / (q * m.max(1) as f64);
    let adjusted: Vec<f64> = bh
        .iter()
        .zip(p)
        .map(|(&a, &raw)| (a * scale).max(clean_p(raw)).min(1.0))
        .collect();
    let stage_two = bh.iter().filter(|&&a| a * scale < alpha).count();
    TwoStage {
        adjusted,
        level: q * m as f64 / m0 as f64,
        threshold: (stage_two as f64 * q / m0 as f64).min(alpha),
    }
}

/// What [`two_stage`] says of a family.
#[derive(Debug, Clone, PartialEq)]
pub struct TwoStage {
    /// Adjusted p-values in input order: a comparison is called when below α.
    pub adjusted: Vec<f64>,
    /// Stage 2's BH level `q · m/m₀'`.
    pub level: f64,
    /// The p at or below which a comparison is called: stage 2's `R₂ · q/m₀'` for its R₂
    /// calls, at most α.
    pub threshold: f64,
}

/// The level the next comparison must reach for BH to call it, given `called` comparisons
/// of a family of `m` are called already: `α · (called + 1) / m`. [`runs_to_decide`] asks
/// this of an undecided comparison, so its estimate neither promises too early (Holm's α/m
/// would be stricter than BH ever is once something is called) nor too late.
pub fn next_level(alpha: f64, called: usize, m: usize) -> f64 {
    alpha * (called + 1) as f64 / m.max(1) as f64
}

/// The three-way answer for a comparison whose adjusted p-value is `p_adjusted` and whose
/// 90 % interval of the percentage difference (candidate vs baseline) is `pct_ci90`.
///
/// Significance wins over equivalence: a difference that is real but inside the margin is
/// still a real difference, and says so. `pct_diff` is the observed difference; its sign,
/// with `higher_is_better`, says whether the candidate is better or worse.
pub fn decide(
    pct_diff: f64,
    pct_ci90: Option<(f64, f64)>,
    p_adjusted: f64,
    alpha: f64,
    margin_pct: f64,
    higher_is_better: bool,
) -> Decision {
    if p_adjusted < alpha {
        if (pct_diff > 0.0) == higher_is_better {
            Decision::Better
        } else {
            Decision::Worse
        }
    } else if pct_ci90.is_some_and(|(lo, hi)| -margin_pct < lo && hi < margin_pct) {
        Decision::Equivalent
    } else {
        Decision::Undecided
    }
}

/// Two samples on the scale the rules use: logarithms when both are positive (the margin
/// becomes `ln(1 ± margin)`), else raw values (the margin is a share of the baseline mean).
struct OnScale {
    b: Vec<f64>,
    c: Vec<f64>,
    /// Lower and upper equivalence bounds for `mean(c) − mean(b)`.
    bounds: (f64, f64),
}

fn on_scale(baseline: &[f64], candidate: &[f64], margin_pct: f64) -> Option<OnScale> {
    if baseline.len() < 2 || candidate.len() < 2 || !all_finite(baseline) || !all_finite(candidate)
    {
        return None;
    }
    let m = margin_pct / 100.0;
    if let (Some(b), Some(c)) = (log_values(baseline), log_values(candidate)) {
        if m < 1.0 {
            return Some(OnScale {
                b,
                c,
                bounds: ((-m).ln_1p(), m.ln_1p()),
            });
        }
    }
    let mb = mean(baseline);
    if mb == 0.0 {
        return None;
    }
    let bound = (m * mb).abs();
    Some(OnScale {
        b: baseline.to_vec(),
        c: candidate.to_vec(),
        bounds: (-bound, bound),
    })
}

/// TOST p-value for equivalence within ±`margin_pct` %: the larger of the two one-sided
/// Welch p-values against the bounds (statsmodels `ttost_ind(candidate, baseline, low, upp,
/// usevar='unequal')`, on logarithms with bounds `ln(1 ± margin)` for positive samples).
/// Below 0.05 exactly when the 90 % interval lies inside the margin. `None` when Welch has
/// no answer (too few values, no spread, non-finite values) or the baseline mean is 0.
pub fn tost_p(baseline: &[f64], candidate: &[f64], margin_pct: f64) -> Option<f64> {
    let s = on_scale(baseline, candidate, margin_pct)?;
    let (mb, mc) = (mean(&s.b), mean(&s.c));
    let (vb, vc) = (
        stddev(&s.b, mb).powi(2) / s.b.len() as f64,
        stddev(&s.c, mc).powi(2) / s.c.len() as f64,
    );
    let se = (vb + vc).sqrt();
    if !(se > 0.0 && se.is_finite()) {
        return None;
    }
    let df = welch_df(vb, vc, s.b.len(), s.c.len());
    let t = StudentsT::new(0.0, 1.0, df).ok()?;
    let d = mc - mb;
    let (low, high) = s.bounds;
    // H0: d ≤ low (reject when d is far above it), and H0: d ≥ high.
    let p_low = t.sf((d - low) / se);
    let p_high = t.cdf((d - high) / se);
    Some(p_low.max(p_high).clamp(0.0, 1.0))
}

/// Welch–Satterthwaite degrees of freedom from the squared standard errors of two means.
fn welch_df(va: f64, vb: f64, na: usize, nb: usize) -> f64 {
    (va + vb).powi(2) / (va * va / (na as f64 - 1.0) + vb * vb / (nb as f64 - 1.0))
}

/// Estimated further runs per target after which this comparison would be decided.
///
/// **Assumption:** the means and standard deviations observed so far are the true ones;
/// only the number of runs `n` (the same on both sides) changes. On the scale the rules use
/// (logarithms for positive samples), the standard error of the difference is then
/// `se(n) = √((s_b² + s_c²) / n)` and the Welch–Satterthwaite df is
/// `(n − 1)(s_b² + s_c²)² / (s_b⁴ + s_c⁴)`. The answer is the smallest `n` at which either
///
/// * `|d| − t(1 − level/2, df) · se(n) > 0`: the interval at `level` excludes 0 (a
///   significant difference), or
/// * `|d| + t(0.95, df) · se(n) < bound`: the 90 % interval fits inside the margin
///   (equivalent; `bound` is the nearer of the two margin bounds, `ln(1 + margin)` on logs),
///
/// minus the runs already made (the smaller side). `d` is the observed difference. `level`
/// should be the level the multiple-comparison control asks of this comparison
/// ([`next_level`]). It is an estimate: the next runs will move the means and spreads.
///
/// `None` when the inputs say nothing (fewer than 2 values, non-finite, baseline mean 0,
/// no spread) or when no `n` up to [`MAX_RUNS_ESTIMATE`] decides it (a difference sitting on
/// the margin).
pub fn runs_to_decide(
    baseline: &[f64],
    candidate: &[f64],
    margin_pct: f64,
    level: f64,
) -> Option<usize> {
    runs_to_decide_at(
        baseline,
        candidate,
        margin_pct,
        level,
        &Looks::fixed(),
        None,
    )
}

/// [`runs_to_decide`] under the run's rule: only at the looks still ahead, each at its
/// share of `level` ([`Looks::ahead`]), and with each side's variance moderated by `prior`
/// as the test will moderate it ([`super::moderated`]: `(d₀s₀² + (n−1)s²)/(d₀ + n − 1)`
/// with `d₀ + n − 1` degrees of freedom). For a sequential run a look already made is not
/// counted again: the answer is the runs to the first look ahead that would decide it, or
/// `None` when no look up to the plan's maximum would.
pub fn runs_to_decide_at(
    baseline: &[f64],
    candidate: &[f64],
    margin_pct: f64,
    level: f64,
    looks: &Looks,
    prior: Option<Prior>,
) -> Option<usize> {
    if !(level > 0.0 && level < 1.0) {
        return None;
    }
    let s = on_scale(baseline, candidate, margin_pct)?;
    let (mb, mc) = (mean(&s.b), mean(&s.c));
    let (sb, sc) = (stddev(&s.b, mb), stddev(&s.c, mc));
    let d = (mc - mb).abs();
    let bound = s.bounds.0.abs().min(s.bounds.1.abs());
    let now = s.b.len().min(s.c.len());
    let moderated = |s: f64, n: f64| match prior {
        Some(p) if (p.df * p.var + (n - 1.0) * s * s) / (p.df + n - 1.0) > s * s => (
            (p.df * p.var + (n - 1.0) * s * s) / (p.df + n - 1.0),
            p.df + n - 1.0,
        ),
        _ => (s * s, n - 1.0),
    };
    let ahead: Vec<(usize, f64)> = looks
        .ahead(now, MAX_RUNS_ESTIMATE)
        .into_iter()
        .filter(|&(n, _)| !looks.is_sequential() || n > now)
        .collect();
    ahead
        .into_iter()
        .find(|&(n, w)| {
            let ((vb, db), (vc, dc)) = (moderated(sb, now as f64), moderated(sc, now as f64));
            let (eb, ec) = (vb / n as f64, vc / n as f64);
            let se = (eb + ec).sqrt();
            let grown = (n - now) as f64;
            let df = (eb + ec).powi(2) / (eb * eb / (db + grown) + ec * ec / (dc + grown));
            if !(se > 0.0 && se.is_finite() && d.is_finite()) {
                return false;
            }
            // Equivalence is tested at the look's share of α too ([`Equivalence`]). Most looks
            // ahead decide nothing; t's quantile is never below the normal's, so a look the
            // normal's cannot decide is passed without inverting t.
            let (p_sig, p_eq) = (1.0 - w * level / 2.0, 1.0 - w * ALPHA);
            let (Some(z_sig), Some(z_eq)) = (z_quantile(p_sig), z_quantile(p_eq)) else {
                return false;
            };
            let significant =
                d - z_sig * se > 0.0 && t_quantile(p_sig, df).is_some_and(|t| d - t * se > 0.0);
            let equivalent =
                d + z_eq * se < bound && t_quantile(p_eq, df).is_some_and(|t| d + t * se < bound);
            significant || equivalent
        })
        .map(|(n, _)| n - now)
}

/// [`runs_to_decide_at`] for a comparison paired by run (a point measured in turn): `d`
/// the per-run differences of logs so far, a call due only beyond `tolerance` (a log
/// ratio) and an equivalence whose interval is widened by it on each side, as the test
/// makes them (`verdicts::looks`). The standard error at `n` runs is `s_d / √n` on `n − 1`
/// degrees of freedom, `s_d` and the mean taken as the true ones.
pub fn runs_to_decide_paired(
    d: &[f64],
    (tolerance, margin_pct): (f64, f64),
    level: f64,
    looks: &Looks,
) -> Option<usize> {
    if !(level > 0.0 && level < 1.0) || d.len() < 2 || !all_finite(d) || margin_pct >= 100.0 {
        return None;
    }
    let m = margin_pct / 100.0;
    let bound = m.ln_1p().min(-(-m).ln_1p());
    let mean_d = mean(d);
    let (sd, diff, now) = (stddev(d, mean_d), mean_d.abs(), d.len());
    looks
        .ahead(now, MAX_RUNS_ESTIMATE)
        .into_iter()
        .filter(|&(n, _)| !looks.is_sequential() || n > now)
        .find(|&(n, w)| {
            let se = sd / (n as f64).sqrt();
            let df = n as f64 - 1.0;
            if !(se > 0.0 && se.is_finite()) {
                return false;
            }
            let (p_sig, p_eq) = (1.0 - w * level / 2.0, 1.0 - w * ALPHA);
            let significant =
                t_quantile(p_sig, df).is_some_and(|t| diff - tolerance - t * se > 0.0);
            let equivalent =
                t_quantile(p_eq, df).is_some_and(|t| diff + tolerance + t * se < bound);
            significant || equivalent
        })
        .map(|(n, _)| n - now)
}

/// Which side of an undecided comparison a further repetition should go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Candidate,
    Baseline,
    Both,
}

/// Where one more run narrows the interval of the difference most, per run paid.
///
/// The squared standard error of the difference is `s_b²/n_b + s_c²/n_c` (on the rules'
/// scale). One more run on a side removes `s²/n − s²/(n+1) = s²/(n(n+1))` of it. When one
/// side's gain is at least [`SIDE_RATIO`] times the other's, only that side is repeated (a
/// noisy FUSE file system beside a steady baseline needs its own runs, not the baseline's);
/// otherwise both are. This is Neyman allocation, one run at a time. `Both` when the inputs
/// say nothing (fewer than 2 values on a side, non-finite values).
pub fn next_run_side(baseline: &[f64], candidate: &[f64]) -> Side {
    let Some(s) = on_scale(baseline, candidate, 5.0) else {
        return Side::Both;
    };
    if s.b.len() < 2 || s.c.len() < 2 {
        return Side::Both;
    }
    let gain = |xs: &[f64]| {
        let m = mean(xs);
        let n = xs.len() as f64;
        stddev(xs, m).powi(2) / (n * (n + 1.0))
    };
    let (gb, gc) = (gain(&s.b), gain(&s.c));
    if !(gb.is_finite() && gc.is_finite()) {
        return Side::Both;
    }
    if gc >= SIDE_RATIO * gb && gc > 0.0 {
        Side::Candidate
    } else if gb >= SIDE_RATIO * gc && gb > 0.0 {
        Side::Baseline
    } else {
        Side::Both
    }
}

/// How much more one side's next run must gain than the other's for [`next_run_side`] to
/// repeat that side alone.
pub const SIDE_RATIO: f64 = 3.0;

#[cfg(test)]
mod tests;
