//! The interval a fixed-sample comparison's verdict rests on, at the level that verdict was
//! made at: what `fsarena compare` shows beside each of its rows. A run's report draws the
//! same intervals from its looks ([`super::family`]); compare tests every run of both
//! sides once, so its rule is the run's with a single look.

use super::family::Family;
use super::looks::{test, Priors};
use super::points::Sample;
use crate::stats::decision::Decision;
use crate::stats::significance::Comparison;

/// The interval of `c` (candidate `cand` against baseline `base`, every run of each) that
/// its `decision` in `family` rests on, in percent of the baseline, with its level:
///
/// * better / worse: the false-coverage-adjusted interval (Benjamini & Yekutieli 2005) at
///   1 − [`Family::threshold`], the p at or below which the family called, so it leaves
///   zero out;
/// * equivalent: the 90 % interval the two one-sided tests put inside the margin;
/// * undecided: the interval at 1 − [`Family::level`], the level the next call would need,
///   which holds zero: an uncalled comparison's p is at least that level (under
///   Benjamini–Hochberg the k-th smallest p, uncalled, is at least k·α/m, and k exceeds
///   the calls made), so the range never reads as a call the family did not make.
///
/// `None` when the test draws no interval (fewer than 2 runs a side).
pub fn decided_interval(
    base: &[f64],
    cand: &[f64],
    c: &Comparison,
    decision: Decision,
    family: &Family,
) -> Option<((f64, f64), f64)> {
    let alpha = match decision {
        Decision::Equivalent => return c.pct_ci90.map(|ci| (ci, 0.90)),
        Decision::Better | Decision::Worse => family.threshold,
        Decision::Undecided => family.level,
    };
    let all = |values| Sample {
        values,
        ..Sample::default()
    };
    let t = test(all(base), all(cand), Priors::default())?;
    Some((t.pct_interval(alpha)?, 1.0 - alpha))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::significance::compare;
    use crate::stats::ALPHA;

    /// Issue 58 item 4 in `fsarena compare`: its undecided rows showed no range, and its
    /// legend spoke of one ("within A to B") at a level a call would need. In a family of
    /// four where one difference is called, the three others' ranges are drawn at
    /// 1 − 2·α/4 = 97.5 % and each holds zero, though the plain 95 % interval of the
    /// second leaves it out (p = 0.031 > 0.025); the called one's interval, at
    /// 1 − 1·α/4 = 98.75 %, leaves zero out.
    #[test]
    fn a_compare_rows_interval_is_at_its_decisions_level_and_agrees_with_it() {
        let base = [10.0, 10.2, 9.9, 10.1, 10.0];
        let rows: [&[f64]; 4] = [
            &[13.0, 13.1, 12.9, 13.2, 13.0],
            &[10.5, 10.0, 10.9, 10.3, 10.6],
            &[10.1, 9.8, 10.3, 10.0, 9.9],
            &[9.6, 10.6, 10.1, 9.7, 10.4],
        ];
        let cmps: Vec<Comparison> = rows
            .iter()
            .map(|c| compare(&base, c, ALPHA).unwrap())
            .collect();
        let p: Vec<f64> = cmps.iter().map(|c| c.p_value).collect();
        let family = Family::new(&p);
        assert!(p[0] < 1e-6 && p[1] > 0.025 && p[1] < 0.05, "{p:?}");
        for ((c, cand), &adj) in cmps.iter().zip(rows).zip(&family.adjusted) {
            let called = adj < ALPHA;
            let d = if called {
                Decision::Worse
            } else {
                Decision::Undecided
            };
            let ((lo, hi), level) = decided_interval(&base, cand, c, d, &family).unwrap();
            assert_eq!(lo <= 0.0 && 0.0 <= hi, !called, "{lo} {hi} {d:?}");
            let want = if called { 0.9875 } else { 0.975 };
            assert!((level - want).abs() < 1e-12, "{level}");
        }
        let (lo, hi) = cmps[1].pct_ci95.unwrap();
        assert!(
            lo > 0.0 && hi > lo,
            "the plain 95 % interval leaves zero out"
        );
    }
}
