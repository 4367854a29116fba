//! The Mann–Whitney U test (Wilcoxon rank-sum), exact when it can be and asymptotic
//! otherwise: the test [`super::significance::compare`] uses when a sample has an outlier
//! or is skewed, where a t-test's assumptions are visibly broken.

use serde::Serialize;
use statrs::function::erf::erfc;

use super::estimators::all_finite;

/// How a [`MannWhitneyResult`]'s p-value was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MwMethod {
    /// The exact null distribution of U (no ties, n₁ + n₂ ≤ [`MW_EXACT_MAX_N`]).
    Exact,
    /// Normal approximation with tie and continuity correction.
    Asymptotic,
}

/// Result of [`mann_whitney`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MannWhitneyResult {
    /// U of the first sample: the number of pairs (aᵢ, bⱼ) with aᵢ > bⱼ, ties counting ½
    /// (scipy's `mannwhitneyu(a, b).statistic`).
    pub u: f64,
    /// Two-sided p-value.
    pub p: f64,
    pub method: MwMethod,
}

/// Largest pooled sample size for which [`mann_whitney`] computes the exact distribution.
/// The count of arrangements, C(n₁+n₂, n₁), must fit in an `i128`; C(120, 60) ≈ 10³⁵ does.
/// Beyond that the normal approximation is excellent anyway.
pub const MW_EXACT_MAX_N: usize = 120;

/// The Mann–Whitney U test (Wilcoxon rank-sum), two-sided.
///
/// Exact distribution when there are no ties in the pooled sample and n₁ + n₂ ≤
/// [`MW_EXACT_MAX_N`]; otherwise the normal approximation with tie correction and
/// continuity correction (scipy's `method='asymptotic'`, `use_continuity=True`). When
/// every value is the same the samples are indistinguishable and p = 1.
///
/// `None` when either sample is empty or any value is non-finite.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<MannWhitneyResult> {
    if a.is_empty() || b.is_empty() || !all_finite(a) || !all_finite(b) {
        return None;
    }
    let n1f = a.len() as f64;
    let (rank_sum_a, tie_term) = rank_sum_first(a, b);
    let u = rank_sum_a - n1f * (n1f + 1.0) / 2.0;
    Some(test_u(a.len(), b.len(), u, tie_term))
}

/// The two-sided test of `u`, the U of a first sample of `n1` values against `n2`, whose
/// pooled sample's ties give `tie_term` (Σ(t³ − t) over groups of tied values). Split from
/// [`mann_whitney`] for [`super::shift`], which knows U and the ties of every shift it tries
/// without ranking the shifted samples again.
pub fn test_u(n1: usize, n2: usize, u: f64, tie_term: f64) -> MannWhitneyResult {
    let (n1f, n2f) = (n1 as f64, n2 as f64);
    let u_big = u.max(n1f * n2f - u);
    if tie_term == 0.0 && n1 + n2 <= MW_EXACT_MAX_N {
        // Without ties U is an integer; the rounding only removes float noise.
        let p = exact_upper_tail(n1, n2, u_big.round() as usize) * 2.0;
        return MannWhitneyResult {
            u,
            p: p.min(1.0),
            method: MwMethod::Exact,
        };
    }
    let n = n1f + n2f;
    let mu = n1f * n2f / 2.0;
    let var = n1f * n2f / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    let p = if var > 0.0 {
        let z = (u_big - mu - 0.5) / var.sqrt();
        (2.0 * normal_sf(z)).min(1.0)
    } else {
        1.0
    };
    MannWhitneyResult {
        u,
        p,
        method: MwMethod::Asymptotic,
    }
}

/// The smallest two-sided p-value the exact Mann–Whitney test can produce for these
/// sample sizes, 2 / C(n₁+n₂, n₁): 0.1 for 3 vs 3, 0.029 for 4 vs 4, 0.0079 for 5 vs 5.
pub fn mann_whitney_min_p(n1: usize, n2: usize) -> f64 {
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    // C(n, k) in floating point; exact enough for a lower bound shown to users.
    let k = n1.min(n2);
    let n = n1 + n2;
    let c = (0..k).fold(1.0_f64, |acc, i| acc * (n - i) as f64 / (i + 1) as f64);
    (2.0 / c).min(1.0)
}

/// P(Z > z) for a standard normal, via erfc so small tails keep their precision.
fn normal_sf(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// Σ(t³ − t) over the groups of `t` equal values in `xs`: one sample's share of the tie
/// term of any pooled sample it is part of without meeting the other's values.
pub fn tie_term(xs: &[f64]) -> f64 {
    let mut sorted = xs.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    sorted
        .chunk_by(|x, y| x == y)
        .map(|g| {
            let t = g.len() as f64;
            t * t * t - t
        })
        .sum()
}

/// Sum of the mid-ranks of `a` in the pooled sample, and the tie term Σ(t³ − t) over
/// groups of tied values (0 when there are no ties).
fn rank_sum_first(a: &[f64], b: &[f64]) -> (f64, f64) {
    let mut pooled: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, true))
        .chain(b.iter().map(|&x| (x, false)))
        .collect();
    pooled.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut rank_sum = 0.0;
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < pooled.len() {
        let mut j = i + 1;
        while j < pooled.len() && pooled[j].0 == pooled[i].0 {
            j += 1;
        }
        // Positions i..j (0-based) share the mean of ranks i+1..=j.
        let mid_rank = (i + 1 + j) as f64 / 2.0;
        let in_a = pooled[i..j].iter().filter(|p| p.1).count();
        rank_sum += mid_rank * in_a as f64;
        let t = (j - i) as f64;
        tie_term += t * t * t - t;
        i = j;
    }
    (rank_sum, tie_term)
}

/// P(U ≥ u) under the null hypothesis for sample sizes `m` and `n`, exactly
/// ([`upper_tails`], kept per thread).
fn exact_upper_tail(m: usize, n: usize, u: usize) -> f64 {
    if u > m * n {
        return 0.0;
    }
    TAILS.with(|tails| {
        let mut tails = tails.borrow_mut();
        let t = tails.entry((m, n)).or_insert_with(|| upper_tails(m, n));
        t[u]
    })
}

thread_local! {
    /// [`upper_tails`] per sample sizes, made once per thread: a Hodges–Lehmann interval
    /// ([`super::shift`]) asks for the same sizes dozens of times while it searches, and the
    /// budget asks every round, so building the distribution each time made the statistics,
    /// not the measurements, the cost of a run's decisions (and of the sequential
    /// simulation in the test suite).
    static TAILS: std::cell::RefCell<std::collections::HashMap<(usize, usize), Vec<f64>>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

/// `P(U ≥ u)` for every `u` in `0..=m·n`, from the exact counts.
///
/// The number of arrangements with U = k is the coefficient of qᵏ in the Gaussian binomial
/// coefficient [m+n choose m]_q = ∏ᵢ₌₁..ₘ (1 − q^(n+i)) / (1 − qⁱ). Each factor is applied
/// as an in-place multiplication and an exact division, in integers, so no probability is
/// lost to rounding.
fn upper_tails(m: usize, n: usize) -> Vec<f64> {
    let max_u = m * n;
    let mut c = vec![0_i128; max_u + m + 1];
    c[0] = 1;
    for i in 1..=m {
        let k = n + i;
        for j in (k..c.len()).rev() {
            c[j] -= c[j - k];
        }
        for j in i..c.len() {
            c[j] += c[j - i];
        }
    }
    let total: i128 = c[..=max_u].iter().sum();
    let mut tail = 0_i128;
    let mut out = vec![0.0; max_u + 1];
    for u in (0..=max_u).rev() {
        tail += c[u];
        out[u] = tail as f64 / total as f64;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::fixtures::{close, A, B};

    fn mw_case(a: &[f64], b: &[f64], method: MwMethod, u: f64, p: f64) {
        let r = mann_whitney(a, b).unwrap();
        assert_eq!(r.method, method, "{a:?} vs {b:?}");
        assert_eq!(r.u, u, "{a:?} vs {b:?}");
        assert!(close(r.p, p, 1e-9), "p {} vs {p}", r.p);
        // Swapping the samples mirrors U and keeps p.
        let s = mann_whitney(b, a).unwrap();
        assert_eq!(s.u, a.len() as f64 * b.len() as f64 - u);
        assert!(close(s.p, p, 1e-9));
    }

    // Reference values for every Mann–Whitney case come from (a, b and METHOD as noted):
    // python: from scipy import stats; r=stats.mannwhitneyu(a,b,alternative='two-sided',method=METHOD); print(repr(float(r.statistic)), repr(float(r.pvalue)))
    #[test]
    fn mann_whitney_exact_matches_scipy() {
        // a=[12.1,11.8,12.6,12.0,11.9,12.3]; b=[13.0,12.4,13.5,12.9,13.2]; METHOD='exact'
        mw_case(&A, &B, MwMethod::Exact, 1.0, 0.008658008658008658);
        // a=[1.0,2.0,3.0]; b=[4.0,5.0,6.0]; METHOD='exact': complete separation at 3 vs 3
        mw_case(
            &[1.0, 2.0, 3.0],
            &[4.0, 5.0, 6.0],
            MwMethod::Exact,
            0.0,
            0.1,
        );
        // a=[1.1,3.4,2.2,5.6]; b=[2.5,4.4,6.1,7.3,0.9]; METHOD='exact'
        mw_case(
            &[1.1, 3.4, 2.2, 5.6],
            &[2.5, 4.4, 6.1, 7.3, 0.9],
            MwMethod::Exact,
            7.0,
            0.5555555555555556,
        );
    }

    fn spread(n: usize, mult: usize, offset: f64) -> Vec<f64> {
        (0..n)
            .map(|i| (i * mult % 1000) as f64 / 10.0 + offset)
            .collect()
    }

    #[test]
    fn mann_whitney_exact_large_matches_scipy() {
        // a=[(i*7919 % 1000)/10 for i in range(40)]; b=[(i*7907 % 1000)/10 + 0.05 for i in range(45)]; METHOD='exact'
        let (a, b) = (spread(40, 7919, 0.0), spread(45, 7907, 0.05));
        mw_case(&a, &b, MwMethod::Exact, 914.0, 0.9058871142867212);
        // a=[(i*7919 % 1000)/10 + 30 for i in range(40)]; b as above; METHOD='exact'
        let a = spread(40, 7919, 30.0);
        mw_case(&a, &b, MwMethod::Exact, 1353.0, 4.3761962611955034e-05);
        // At the exact limit (n1 + n2 = 120), where the i128 counts are largest:
        // a=[(i*7919 % 1000)/10 + 3 for i in range(60)]; b=[(i*7907 % 1000)/10 + 0.05 for i in range(60)]; METHOD='exact'
        let (a, b) = (spread(60, 7919, 3.0), spread(60, 7907, 0.05));
        mw_case(&a, &b, MwMethod::Exact, 1856.0, 0.7716380536474137);
        // a=[(i*7919 % 1000)/10 + 3 for i in range(110)]; b=[(i*7907 % 1000)/10 + 0.05 for i in range(10)]; METHOD='exact'
        let (a, b) = (spread(110, 7919, 3.0), spread(10, 7907, 0.05));
        mw_case(&a, &b, MwMethod::Exact, 595.0, 0.6770727606792463);
    }

    #[test]
    fn mann_whitney_asymptotic_matches_scipy() {
        // a=[1.0,2.0,2.0,3.0,3.0,3.0]; b=[3.0,4.0,4.0,5.0]; METHOD='asymptotic' (ties)
        mw_case(
            &[1.0, 2.0, 2.0, 3.0, 3.0, 3.0],
            &[3.0, 4.0, 4.0, 5.0],
            MwMethod::Asymptotic,
            1.5,
            0.026826219079541514,
        );
        // a=[10.0,10.0,11.0]; b=[11.0,12.0,12.0]; METHOD='asymptotic' (ties at 3 vs 3)
        mw_case(
            &[10.0, 10.0, 11.0],
            &[11.0, 12.0, 12.0],
            MwMethod::Asymptotic,
            0.5,
            0.11014892418594699,
        );
        // a=[7.0,7.0]; b=[7.0,7.0,7.0]; METHOD='asymptotic' (all tied)
        mw_case(
            &[7.0, 7.0],
            &[7.0, 7.0, 7.0],
            MwMethod::Asymptotic,
            3.0,
            1.0,
        );
        // a=[(i*7919 % 1000)/10 for i in range(70)]; b=[(i*7907 % 1000)/10 + 0.05 for i in range(60)]; METHOD='asymptotic' (no ties, too large for exact)
        let (a, b) = (spread(70, 7919, 0.0), spread(60, 7907, 0.05));
        mw_case(&a, &b, MwMethod::Asymptotic, 2094.0, 0.9795079537192081);
    }

    #[test]
    fn mann_whitney_refuses_empty_and_non_finite() {
        assert!(mann_whitney(&[], &[1.0]).is_none());
        assert!(mann_whitney(&[1.0, f64::NAN], &[1.0]).is_none());
    }

    #[test]
    fn mann_whitney_min_p_values() {
        assert!(close(mann_whitney_min_p(3, 3), 0.1, 1e-12));
        assert!(close(mann_whitney_min_p(4, 4), 2.0 / 70.0, 1e-12));
        assert!(close(mann_whitney_min_p(5, 5), 2.0 / 252.0, 1e-12));
        assert!(close(mann_whitney_min_p(2, 5), 2.0 / 21.0, 1e-12));
        assert_eq!(mann_whitney_min_p(1, 1), 1.0);
        assert_eq!(mann_whitney_min_p(0, 4), 1.0);
    }
}
