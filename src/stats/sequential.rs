//! Looking at the data more than once without lying about it.
//!
//! `--runs auto` decides after every round and stops a comparison as soon as it is decided.
//! Tested at α after each round, a comparison with no real difference gets many chances to
//! cross the line by luck (optional stopping): with up to 30 runs, far more than α of A/A
//! comparisons end "better" or "worse". The fix used here is a **group-sequential design with
//! α spending** (Lan & DeMets 1983, *Discrete sequential boundaries for clinical trials*,
//! Biometrika 70(3)): the looks that may call a difference are fixed before the run, at
//! [`Looks::schedule`] run counts between the plan's minimum and maximum, and each look k may
//! spend a share `w_k` of α fixed with the schedule ([`Looks::share`]). Look k's test is made
//! on the **first n_k repetitions** of each side (by repetition number), so it is an ordinary
//! fixed-size test whatever happened at the other looks, and a report of the results file
//! sees exactly what the run saw.
//!
//! By the union bound, the chance that any look calls a difference that is not there is at
//! most `Σ w_k α = α`, whatever the correlation between the looks and whichever looks the
//! run reaches (a look not reached cannot call). Equivalently `p* = min_k p_k / w_k` is a
//! valid p-value (P(p* ≤ u) ≤ Σ P(p_k ≤ w_k u) ≤ u), and the two-stage step-up takes it
//! over the run's family like any other ([`sequential_p`]). The union bound is conservative next
//! to exact group-sequential boundaries, but it needs no assumption about the test at each
//! look (Welch, moderated, or a rank test), which is why it was chosen over those, and over
//! anytime-valid confidence sequences (Howard et al. 2021), which spend their error over
//! unboundedly many looks and are wider at the few runs a file-system benchmark affords.
//!
//! **Where α goes.** Any fixed shares keep the bound; what they change is power, and a
//! share spent on a look the run never reaches is lost. A budgeted run reaches its first
//! look always and the next one or two only for the comparisons nearest a decision (the
//! default run's groups end at 3 to 10 runs), so the shares fall with each look: half of α
//! at the first ([`FIRST_LOOK_SHARE`]), and the other half over the later looks in shares
//! that fall by 30 % from one look to the next ([`LATER_LOOK_DECAY`]): 17 %, 12 %, 8 %, … of
//! α at 5, 8, 12, … runs for a maximum of 30. Pocock's spending function, used before, gave
//! the looks at 5 and 8 runs 6 % and 7 % and kept 37 % for looks at 12 to 30 runs that a
//! 5-minute run does not reach (BENCHMARKS.md, "Where the looks spend α"). A fixed
//! `--runs N` run is one look with the whole of α ([`Looks::fixed`]).

use crate::plan::Runs;

/// The looks a comparison may be decided at, and the share of α each may spend.
#[derive(Debug, Clone, PartialEq)]
pub struct Looks {
    /// Runs per side at each look, increasing; empty for a fixed-size run (one look at
    /// whatever each side has).
    pub runs: Vec<usize>,
    /// The share of α each look spends; they sum to 1.
    pub share: Vec<f64>,
}

/// How much the run count grows from one look to the next.
const GROWTH: f64 = 1.5;

/// The share of α the first look of an adaptive run spends: the one look every comparison
/// of a budgeted run reaches (the module's doc).
pub const FIRST_LOOK_SHARE: f64 = 0.5;

/// How each later look's share of α compares with the one before it (the module's doc).
pub const LATER_LOOK_DECAY: f64 = 0.7;

/// The shares of α of `looks` looks: [`FIRST_LOOK_SHARE`] to the first and the rest to the
/// later ones, each [`LATER_LOOK_DECAY`] of the one before; they sum to 1.
fn shares(looks: usize) -> Vec<f64> {
    if looks <= 1 {
        return vec![1.0; looks];
    }
    let weights: Vec<f64> = (0..looks - 1)
        .map(|k| LATER_LOOK_DECAY.powi(k as i32))
        .collect();
    let total: f64 = weights.iter().sum();
    std::iter::once(FIRST_LOOK_SHARE)
        .chain(weights.iter().map(|w| (1.0 - FIRST_LOOK_SHARE) * w / total))
        .collect()
}

impl Looks {
    /// A fixed-size run: one look, all of α.
    pub fn fixed() -> Looks {
        Looks {
            runs: Vec::new(),
            share: vec![1.0],
        }
    }

    /// The looks of an adaptive run from `min` to `max` runs per side: `min`, then ×1.5
    /// (rounded up) while below `max`, then `max` (3, 5, 8, 12, 18, 27, 30 for 3 to 30).
    pub fn schedule(min: usize, max: usize) -> Looks {
        let (min, max) = (min.max(2), max.max(min.max(2)));
        let mut runs = vec![min];
        loop {
            let last = runs[runs.len() - 1];
            let next = ((last as f64 * GROWTH).ceil() as usize).max(last + 1);
            if next >= max {
                if last < max {
                    runs.push(max);
                }
                break;
            }
            runs.push(next);
        }
        Looks {
            share: shares(runs.len()),
            runs,
        }
    }

    /// The looks a plan's `runs` call for: one for a fixed count, the schedule for `auto`.
    pub fn of_runs(runs: &Runs) -> Looks {
        match *runs {
            Runs::Fixed(_) => Looks::fixed(),
            Runs::Auto { min, max, .. } => Looks::schedule(min as usize, max as usize),
        }
    }

    /// Whether more than one look is made.
    pub fn is_sequential(&self) -> bool {
        !self.runs.is_empty()
    }

    /// The looks reached by sides of `nb` and `nc` runs: (runs per side, share of α); a
    /// fixed run's one look takes each side whole (`usize::MAX` runs).
    pub fn reached(&self, nb: usize, nc: usize) -> Vec<(usize, f64)> {
        if !self.is_sequential() {
            return vec![(usize::MAX, 1.0)];
        }
        let n = nb.min(nc);
        self.runs
            .iter()
            .zip(&self.share)
            .filter(|(&r, _)| r <= n)
            .map(|(&r, &w)| (r, w))
            .collect()
    }

    /// The looks still ahead of sides of `now` runs (each at least `now`), with their shares;
    /// for a fixed run every run count from `now` to `limit`, each with all of α (what a
    /// run with more repetitions would test at).
    pub fn ahead(&self, now: usize, limit: usize) -> Vec<(usize, f64)> {
        if !self.is_sequential() {
            return (now.max(2)..=limit).map(|n| (n, 1.0)).collect();
        }
        self.runs
            .iter()
            .zip(&self.share)
            .filter(|(&r, _)| r >= now)
            .map(|(&r, &w)| (r, w))
            .collect()
    }

    /// The runs per side of the last look, `None` for a fixed run (which looks once, at
    /// whatever it has).
    pub fn last(&self) -> Option<usize> {
        self.runs.last().copied()
    }

    /// The next look beyond `now` runs per side, if any.
    pub fn next_after(&self, now: usize) -> Option<usize> {
        self.runs.iter().copied().find(|&r| r > now)
    }
}

/// The sequential p-value `min_k p_k / w_k` (capped at 1) of a comparison's tests at the
/// looks it reached, given as (p, share of α); 1 when no look was reached.
pub fn sequential_p(looks: &[(f64, f64)]) -> (f64, Option<usize>) {
    let mut best = (1.0, None);
    for (k, &(p, w)) in looks.iter().enumerate() {
        let q = if w > 0.0 && p.is_finite() {
            (p / w).min(1.0)
        } else {
            1.0
        };
        if q < best.0 || best.1.is_none() {
            best = (q, Some(k));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_spends_alpha_once() {
        let l = Looks::schedule(3, 30);
        assert_eq!(l.runs, vec![3, 5, 8, 12, 18, 27, 30]);
        let total: f64 = l.share.iter().sum();
        assert!((total - 1.0).abs() < 1e-12, "{total}");
        assert!(l.share.iter().all(|&w| w > 0.0));
        // The first look gets half of α; the six later ones share the other half, each
        // 0.7 of the one before: 1/2.94117, 0.7/2.94117, … of it (1 + 0.7 + … + 0.7⁵).
        assert_eq!(l.share[0], FIRST_LOOK_SHARE);
        let total: f64 = (0..6).map(|k| 0.7f64.powi(k)).sum();
        assert!((total - 2.94117).abs() < 1e-5, "{total}");
        for (k, w) in l.share[1..].iter().enumerate() {
            let want = 0.5 * 0.7f64.powi(k as i32) / total;
            assert!(
                (w - want).abs() < 1e-12,
                "look {}: {w} against {want}",
                k + 2
            );
        }
        assert!((l.share[1] - 0.17).abs() < 0.001, "{}", l.share[1]);
        assert!(l.share.windows(2).all(|w| w[0] > w[1]));
        assert_eq!(Looks::schedule(5, 5).share, vec![1.0]);
        assert_eq!(Looks::schedule(5, 5).runs, vec![5]);
        assert_eq!(Looks::schedule(3, 4).runs, vec![3, 4]);
        assert_eq!(l.reached(4, 9), vec![(3, l.share[0])]);
        assert!(l.reached(2, 9).is_empty());
        assert_eq!(Looks::fixed().reached(3, 7), vec![(usize::MAX, 1.0)]);
        assert_eq!(l.next_after(5), Some(8));
        assert_eq!(l.next_after(30), None);
    }

    #[test]
    fn the_sequential_p_is_the_best_look_over_its_share() {
        assert_eq!(sequential_p(&[(0.02, 0.5), (0.004, 0.1)]), (0.04, Some(0)));
        assert_eq!(sequential_p(&[(0.9, 0.5), (0.001, 0.1)]), (0.01, Some(1)));
        assert_eq!(sequential_p(&[]), (1.0, None));
    }
}
