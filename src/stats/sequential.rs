//! Looking at the data more than once without lying about it.
//!
//! `--runs auto` decides after every round and stops a comparison as soon as it is decided.
//! Tested at α after each round, a comparison with no real difference gets many chances to
//! cross the line by luck (optional stopping): with up to 30 runs, far more than α of A/A
//! comparisons end "better" or "worse". The fix used here is a **group-sequential design with
//! α spending** (Lan & DeMets 1983, *Discrete sequential boundaries for clinical trials*,
//! Biometrika 70(3)): the looks that may call a difference are fixed before the run, at
//! [`Looks::schedule`] run counts between the plan's minimum and maximum, and look k may spend
//! the share `w_k` of α that a Pocock-type spending function `α(t) = α·ln(1 + (e − 1)t)`
//! gives the information fraction `t = n_k / n_max`. Look k's test is made on the **first
//! n_k repetitions** of each side (by repetition number), so it is an ordinary fixed-size
//! test whatever happened at the other looks, and a report of the results file sees exactly
//! what the run saw.
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
//! Pocock's shape rather than O'Brien–Fleming's, and half of α at the first look
//! ([`FIRST_LOOK_SHARE`]): most comparisons of a run are decided at the first look or never
//! (a budgeted run often has time for little more than the minimum runs), so the first look
//! gets a real share instead of almost none (Pocock alone gives it 16 %, O'Brien–Fleming far
//! less). A fixed `--runs N` run is one look with the whole of α ([`Looks::fixed`]).

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

/// Pocock-type spending (Lan & DeMets 1983): the share of α spent by information fraction t.
pub fn pocock_spent(t: f64) -> f64 {
    (1.0 + (std::f64::consts::E - 1.0) * t.clamp(0.0, 1.0)).ln()
}

/// The share of α the first look of an adaptive run spends. A budgeted run usually ends at
/// its first look: the default run's budget paid for the minimum runs of every group and a
/// few repetitions more (BENCHMARKS.md, "The default run under the sequential rule"), so the
/// first look's share is most of the power a run has. Half of α there, the other half spread
/// over the later looks in Pocock's shape, keeps the union bound (the shares still sum to 1).
pub const FIRST_LOOK_SHARE: f64 = 0.5;

/// Each look's share of α from the Pocock-type amounts `spent` at the looks' information
/// fractions: [`FIRST_LOOK_SHARE`] to the first, the rest in proportion to the later looks'
/// increments of `spent`.
fn shares(spent: &[f64]) -> Vec<f64> {
    let Some((&first, _)) = spent.split_first() else {
        return Vec::new();
    };
    let rest = spent[spent.len() - 1] - first;
    if spent.len() == 1 || rest <= 0.0 {
        return std::iter::once(1.0)
            .chain(std::iter::repeat(0.0))
            .take(spent.len())
            .collect();
    }
    std::iter::once(FIRST_LOOK_SHARE)
        .chain(
            spent
                .windows(2)
                .map(|w| (1.0 - FIRST_LOOK_SHARE) * (w[1] - w[0]) / rest),
        )
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
        let spent: Vec<f64> = runs
            .iter()
            .map(|&n| pocock_spent(n as f64 / max as f64))
            .collect();
        Looks {
            share: shares(&spent),
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
        // The first look gets half of α; the later ones Pocock's increments, scaled to the
        // other half: look 2 (5 runs) gets ln(1.2863/1.1718) / ln(e/1.1718) of it.
        assert_eq!(l.share[0], FIRST_LOOK_SHARE);
        let second = (1.0 - FIRST_LOOK_SHARE) * (pocock_spent(5.0 / 30.0) - pocock_spent(0.1))
            / (1.0 - pocock_spent(0.1));
        assert!((l.share[1] - second).abs() < 1e-12, "{}", l.share[1]);
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
