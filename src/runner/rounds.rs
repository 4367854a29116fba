//! `--runs auto` after the minimum repetitions: what a round is, apart from walking it.
//! Rounds give one more repetition to the groups of the comparisons still undecided,
//! cheapest decision first, while the budget lasts (what to repeat is decided in
//! [`super::budget`]; [`super::walk`] runs the chosen cells). Here: what a round is made
//! of ([`Group`], [`Round`], and the comparisons it [`Stopped`]), the repetition each group
//! goes on with, the order of a round's cells, the lines the budget prints, and what cells
//! have cost so far ([`Costs`], what rounds are priced from).

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::plan::cells::Cell;
pub use crate::results::budget_stop::Beyond;
use crate::results::budget_stop::BudgetStop;
use crate::results::record::CellId;

/// One (target, workload, thread count): the unit a round repeats.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Group {
    pub target: String,
    pub workload: String,
    /// The data set's profile, when the run has several.
    pub dataset: Option<String>,
    pub threads: u32,
}

impl Group {
    /// Whether `cell` is one of this group's repetitions.
    pub fn holds(&self, cell: &CellId) -> bool {
        self.target == cell.target
            && self.workload == cell.workload
            && self.threads == cell.threads
            && self.dataset == cell.dataset
    }

    /// A one-thread group of the run's only data set: what the tests of the rounds and of
    /// the budget build their questions from.
    #[cfg(test)]
    pub fn one_thread(target: &str, workload: &str) -> Group {
        Group {
            target: target.into(),
            workload: workload.into(),
            dataset: None,
            threads: 1,
        }
    }
}

/// What one round will repeat, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Round {
    /// The groups to give one more repetition, in the order their questions were chosen.
    pub groups: Vec<Group>,
    /// Estimated seconds the round costs, and the undecided comparisons it works on.
    pub cost_s: f64,
    pub questions: usize,
    /// The comparisons the budget no longer pays for, and why.
    pub stopped: Vec<Stopped>,
}

/// An undecided comparison the budget gives no further runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Stopped {
    /// The candidate's group.
    pub group: Group,
    /// The point within the workload (`cold`, `within`, …).
    pub variant: String,
    pub why: Beyond,
}

/// The repetition each of `groups` goes on with: after the last one `done` holds (a
/// resumed run's included), and never below the plan's `minimum`.
pub fn next_repetitions(
    groups: impl IntoIterator<Item = Group>,
    done: &HashSet<CellId>,
    minimum: u32,
) -> HashMap<Group, u32> {
    groups
        .into_iter()
        .map(|g| {
            let recorded = done
                .iter()
                .filter(|k| g.holds(k))
                .map(|k| k.repetition + 1)
                .max()
                .unwrap_or(0);
            (g, recorded.max(minimum))
        })
        .collect()
}

/// Puts a round's cells in the order the minimum repetitions run in: interleaved, the
/// `targets` rotated by the `round`.
pub fn interleave(cells: &mut [Cell], round: usize, targets: usize) {
    let n = targets.max(1);
    cells.sort_by_key(|c| {
        (
            (c.target + n - round % n) % n,
            c.dataset,
            c.workload,
            c.threads,
        )
    });
}

/// The line that starts round `round`, which works on `r` of the `open` comparisons (and
/// says how many the budget stopped).
pub fn round_line(round: usize, open: usize, r: &Round, remaining: f64) -> String {
    let stopped = match r.stopped.len() {
        0 => String::new(),
        n => format!(", {n} beyond the budget"),
    };
    format!(
        "budget round {round}: {open} undecided{stopped}, repeating {} group{} for {} of them \
         (~{:.0} s of {:.0} s left)",
        r.groups.len(),
        if r.groups.len() == 1 { "" } else { "s" },
        r.questions,
        r.cost_s,
        remaining
    )
}

/// The line that ends the budget with `open` comparisons still undecided, `stopped` of
/// them beyond it.
pub fn no_further_round(open: usize, stopped: usize, remaining: f64) -> String {
    format!(
        "budget: {open} comparison{} still undecided, {stopped} beyond the budget; \
         {remaining:.0} s left, which pays for no further round",
        if open == 1 { "" } else { "s" },
    )
}

/// The line that ends the budget when the last `left_out` cells of `round` no longer fit
/// in what is `left` of it (each costs about `cost` seconds).
pub fn left_out(round: usize, left_out: usize, cost: f64, left: f64) -> String {
    format!(
        "budget: {left_out} cell{} of round {round} left out: ~{cost:.0} s each, {left:.0} s left",
        if left_out == 1 { "" } else { "s" },
    )
}

/// The line that ends a minimum kept within the budget when its last `left_out` cells no
/// longer fit in what is `left` of it (the next costs about `cost` seconds).
pub fn minimum_left_out(left_out: usize, cost: f64, left: f64) -> String {
    format!(
        "budget: {left_out} cell{} of the minimum repetitions left out (the baseline's still run): ~{cost:.0} s the next, {left:.0} s left",
        if left_out == 1 { "" } else { "s" },
    )
}

/// The line that says the budget stopped giving runs to a comparison, and why:
/// "budget: no more runs for xfs cold-read (2 threads): needs ~14 more runs (~6 min),
/// beyond the 2 min left of the budget".
pub fn stopped_line(s: &Stopped) -> String {
    let g = &s.group;
    let point: Vec<&str> = [g.workload.as_str(), s.variant.as_str()]
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect();
    let threads = match g.threads {
        1 => "1 thread".to_string(),
        n => format!("{n} threads"),
    };
    let data = g
        .dataset
        .as_ref()
        .map_or(String::new(), |d| format!(", {d}"));
    format!(
        "budget: no more runs for {} {} ({threads}{data}): {}",
        g.target,
        point.join(" "),
        beyond_reason(&s.why)
    )
}

/// Why a comparison is beyond the budget, in words: "needs ~14 more runs (~6 min), beyond
/// the 2 min left of the budget" ([`Beyond::words`], what the report's rows say too).
pub fn beyond_reason(why: &Beyond) -> String {
    why.words()
}

impl Stopped {
    /// The record `results.jsonl` keeps of the stop, for the report's rows.
    pub fn record(&self) -> BudgetStop {
        BudgetStop {
            target: self.group.target.clone(),
            workload: self.group.workload.clone(),
            dataset: self.group.dataset.clone(),
            variant: self.variant.clone(),
            threads: self.group.threads,
            why: self.why,
        }
    }
}

/// What cells have cost so far, per group, for the budget and the progress ETA.
#[derive(Debug, Default, Clone)]
pub struct Costs {
    per_group: BTreeMap<Group, Spent>,
}

/// What one group's finished cells took.
#[derive(Debug, Default, Clone, Copy)]
struct Spent {
    seconds: f64,
    cells: u32,
    longest: f64,
}

impl Costs {
    /// Records one finished cell's wall seconds.
    pub fn add(&mut self, g: Group, seconds: f64) {
        let e = self.per_group.entry(g).or_default();
        e.seconds += seconds;
        e.cells += 1;
        e.longest = e.longest.max(seconds);
    }

    /// The mean cost of `g`'s cells; else of the target's cells; else of all cells; else 0.
    /// What a round is planned from.
    pub fn estimate(&self, g: &Group) -> f64 {
        let spent = self.known(g);
        let cells: u32 = spent.iter().map(|s| s.cells).sum();
        match cells {
            0 => 0.0,
            n => spent.iter().map(|s| s.seconds).sum::<f64>() / f64::from(n),
        }
    }

    /// The longest of `g`'s cells, with the same fallbacks: what must still be left of the
    /// budget to start one, so that the last cells of a run do not overrun it (with the
    /// mean, the default run's last round ended 2.8 s past its budget).
    pub fn longest(&self, g: &Group) -> f64 {
        self.known(g).iter().map(|s| s.longest).fold(0.0, f64::max)
    }

    /// What is known of `g`'s cost: its own cells; else its target's; else every group's.
    fn known(&self, g: &Group) -> Vec<Spent> {
        if let Some(s) = self.per_group.get(g) {
            return vec![*s];
        }
        let target: Vec<Spent> = self
            .per_group
            .iter()
            .filter(|(k, _)| k.target == g.target)
            .map(|(_, s)| *s)
            .collect();
        match target.is_empty() {
            false => target,
            true => self.per_group.values().copied().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(t: &str, w: &str) -> Group {
        Group::one_thread(t, w)
    }

    #[test]
    fn costs_fall_back_from_group_to_target_to_all() {
        let mut c = Costs::default();
        assert_eq!(c.estimate(&g("ext4", "scan")), 0.0);
        c.add(g("ext4", "scan"), 2.0);
        c.add(g("ext4", "scan"), 4.0);
        c.add(g("ntfs", "delete"), 10.0);
        assert_eq!(c.estimate(&g("ext4", "scan")), 3.0);
        assert_eq!(c.estimate(&g("ext4", "touch")), 3.0);
        assert_eq!(c.estimate(&g("xfs", "touch")), 16.0 / 3.0);
        assert_eq!(c.longest(&g("ext4", "scan")), 4.0);
        assert_eq!(c.longest(&g("ext4", "touch")), 4.0);
        assert_eq!(c.longest(&g("xfs", "touch")), 10.0);
    }

    #[test]
    fn a_stopped_comparison_says_what_it_needs_and_what_is_left() {
        let mut s = Stopped {
            group: Group {
                threads: 2,
                ..g("xfs", "cold-read")
            },
            variant: "launch".into(),
            why: Beyond::Budget {
                runs: 14,
                seconds: 364.0,
                left: 100.0,
            },
        };
        assert_eq!(
            stopped_line(&s),
            "budget: no more runs for xfs cold-read launch (2 threads): needs ~14 more runs \
             (~6 min), beyond the 2 min left of the budget"
        );
        s.why = Beyond::Budget {
            runs: 1,
            seconds: 40.0,
            left: 12.4,
        };
        s.variant.clear();
        s.group.dataset = Some("medium".into());
        assert_eq!(
            stopped_line(&s),
            "budget: no more runs for xfs cold-read (2 threads, medium): needs ~1 more run \
             (~40 s), beyond the 12 s left of the budget"
        );
    }
}
