//! `--runs auto` after the minimum repetitions: what a round is, apart from walking it.
//! Rounds give one more repetition to the groups of the comparisons still undecided,
//! closest first, while the budget lasts (what to repeat is decided in [`super::budget`];
//! [`super::walk`] runs the chosen cells).

use std::collections::{HashMap, HashSet};

use super::budget::{Group, Round};
use crate::plan::cells::Cell;
use crate::results::record::CellId;

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

/// The line that starts round `round`, which works on `r` of the `open` comparisons.
pub fn round_line(round: usize, open: usize, r: &Round, remaining: f64) -> String {
    format!(
        "budget round {round}: {open} undecided, repeating {} group{} for {} of them \
         (~{:.0} s of {:.0} s left)",
        r.groups.len(),
        if r.groups.len() == 1 { "" } else { "s" },
        r.questions,
        r.cost_s,
        remaining
    )
}

/// The line that ends the budget with `open` comparisons still undecided.
pub fn no_further_round(open: usize, remaining: f64) -> String {
    format!(
        "budget: {open} comparison{} still undecided; {remaining:.0} s left, which pays for no \
         further round (or their groups reached the most runs allowed)",
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
