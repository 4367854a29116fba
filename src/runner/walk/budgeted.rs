//! The budget's rounds of a `--runs auto` run, once the minimum is measured: which groups
//! get one more repetition ([`budget`]), and each round's cells while they fit before the
//! deadline.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::time::Duration;

use super::Walk;
use crate::plan::cells::Cell;
use crate::runner::budget::{self, BudgetError, Group};
use crate::runner::deadline::Deadline;
use crate::runner::{rounds, schedule};

impl<'a> Walk<'a> {
    /// `--runs auto` after the minimum: rounds of one more repetition for the groups of
    /// the comparisons still undecided, cheapest decision first, while the budget lasts
    /// ([`budget`]).
    /// `Err` when what is still open cannot be told.
    pub(super) fn spend_budget(&mut self, max: u32, budget: Duration) -> Result<(), BudgetError> {
        let mut next_rep =
            rounds::next_repetitions(self.groups(), &self.done, self.inputs.plan.runs.min());
        for round in 1.. {
            let deadline = self.deadline(budget);
            let remaining = deadline.left_s();
            // The root (which holds the results) decides the round; every process runs it.
            let decided = self
                .inputs
                .team
                .is_root()
                .then(|| self.decide_round(round, &next_rep, max, remaining));
            let groups = self.inputs.team.round_from_root(decided)?;
            if groups.is_empty() {
                return Ok(());
            }
            // Ranks run every cell of the round: one that left a cell out on its own clock
            // would wait for ever at the others' barriers.
            let limit = if self.inputs.team.is_alone() {
                deadline
            } else {
                Deadline::never(self.started)
            };
            if self
                .run_round(round, &groups, &mut next_rep, limit)
                .is_break()
            {
                return Ok(());
            }
        }
        Ok(())
    }

    /// The end of `budget` for the cells: the run's own start (before this clock) and end
    /// (its images removed, as long as removing an image has taken in this run, and the
    /// report written) come out of it, so a 5-minute budget means 5 minutes of wall.
    pub(super) fn deadline(&self, budget: Duration) -> Deadline {
        let removals = &self.inputs.work.removals;
        Deadline::new(budget, self.started).closing(self.masters.images(), removals.mean())
    }

    /// Every group of the plan on the targets that can run here.
    fn groups(&self) -> Vec<Group> {
        let takes_threads = schedule::takes_threads(self.inputs.workloads);
        (self
            .inputs
            .plan
            .cells(0..1, self.inputs.usable.len(), &takes_threads)
            .iter())
        .map(|c| self.group(c))
        .collect()
    }

    /// The groups of round `round`, from the comparisons still open in what the run has
    /// recorded, and what is left of the budget; none when the budget is done, with the
    /// line that says why.
    fn decide_round(
        &mut self,
        round: usize,
        next_rep: &HashMap<Group, u32>,
        max: u32,
        remaining: f64,
    ) -> Result<Vec<Group>, BudgetError> {
        let asked = self.inputs.questions.ask(&self.state, self.inputs.plan)?;
        let open = asked.open;
        if open.is_empty() {
            self.progress.println(&asked.settled);
            return Ok(Vec::new());
        }
        let costs = &self.costs;
        let r = budget::plan_round(
            &open,
            &asked.against,
            next_rep,
            max,
            &|g| costs.estimate(g),
            remaining,
        );
        self.keep_stops(&r.stopped, remaining);
        if r.groups.is_empty() {
            self.keep_spent(&open, remaining);
            self.progress.println(&rounds::no_further_round(
                open.len(),
                r.stopped.len(),
                remaining,
            ));
            return Ok(Vec::new());
        }
        self.progress
            .println(&rounds::round_line(round, open.len(), &r, remaining));
        Ok(r.groups)
    }

    /// One budget round: a further repetition of each of `groups`, each cell started only
    /// while it fits before the `deadline`.
    fn run_round(
        &mut self,
        round: usize,
        groups: &[Group],
        next_rep: &mut HashMap<Group, u32>,
        deadline: Deadline,
    ) -> ControlFlow<()> {
        self.progress.grow(groups.len() as u64);
        let mut cells: Vec<Cell> = groups
            .iter()
            .filter_map(|g| self.cell_of(g, next_rep.get(g).copied().unwrap_or(0)))
            .collect();
        rounds::interleave(&mut cells, round, self.inputs.usable.len());
        for (i, cell) in cells.iter().enumerate() {
            // A round is planned from cells' average costs; a cell whose group's longest
            // would no longer fit in what is left of the budget is not started.
            let left = deadline.left_s();
            let cost = self.costs.longest(&self.group(cell));
            if cost > left {
                self.progress
                    .println(&rounds::left_out(round, cells.len() - i, cost, left));
                return ControlFlow::Break(());
            }
            let eta = self.eta(&cells[i..]);
            self.progress.set_eta(eta);
            self.run_cell(cell)?;
            *next_rep.entry(self.group(cell)).or_insert(0) += 1;
        }
        ControlFlow::Continue(())
    }

    /// The cell of group `g` at repetition `rep`.
    fn cell_of(&self, g: &Group, rep: u32) -> Option<Cell> {
        let target = self
            .inputs
            .usable
            .iter()
            .position(|&i| self.inputs.plan.targets[i].name == g.target)?;
        let workload = self
            .inputs
            .workloads
            .iter()
            .position(|w| w.spec().name == g.workload)?;
        let dataset = self.inputs.plan.dataset_index(g.dataset.as_deref())?;
        Some(Cell {
            repetition: rep,
            target,
            dataset,
            workload,
            threads: g.threads as usize,
        })
    }
}
