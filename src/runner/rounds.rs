//! `--runs auto` after the minimum repetitions: rounds of one more repetition for the
//! groups of the comparisons still undecided, closest first, while the budget lasts (what
//! to repeat is decided in [`super::budget`]; this walks the chosen cells).

use std::collections::HashMap;
use std::ops::ControlFlow;

use super::{budget, schedule, Walk};

/// What a run keeps of its budget for its start, before the budget's clock, and its end:
/// the populated images removed and the report written.
const CLOSING: std::time::Duration = std::time::Duration::from_secs(3);

impl Walk<'_> {
    /// `--runs auto` after the minimum: rounds of one more repetition for the groups of the
    /// comparisons still undecided, closest first, while the budget lasts ([`budget`]).
    pub(super) fn spend_budget(&mut self, max: u32, budget: std::time::Duration) {
        // The run's own start (before this clock) and end (images removed, report
        // written) come out of the same budget: a 5-minute budget means 5 minutes of wall.
        let budget = budget.saturating_sub(CLOSING);
        let mut next_rep: HashMap<budget::Group, u32> = HashMap::new();
        let wl = schedule::thread_lists(self.plan, self.workloads);
        for t in 0..self.usable.len() {
            for (w, threads) in &wl {
                for &th in threads {
                    for d in 0..=self.plan.extra_profiles.len() {
                        let cell = schedule::Cell {
                            repetition: 0,
                            target: t,
                            dataset: d,
                            workload: *w,
                            threads: th,
                        };
                        let g = self.group(&cell);
                        let recorded = self
                            .done
                            .iter()
                            .filter(|k| {
                                k.0 == g.target
                                    && k.1 == g.workload
                                    && k.2 == g.threads
                                    && k.4 == g.dataset
                            })
                            .map(|k| k.3 + 1)
                            .max()
                            .unwrap_or(0);
                        next_rep.insert(g, recorded.max(self.plan.runs.min()));
                    }
                }
            }
        }
        for round in 1.. {
            let remaining = budget.saturating_sub(self.started.elapsed()).as_secs_f64();
            let open = match crate::results::store::load(&self.opts.out) {
                Ok(state) => budget::open_questions(&state, self.plan.margin_pct),
                Err(e) => Err(budget::BudgetError::Decide(e.to_string())),
            };
            let open = match open {
                Ok(open) => open,
                Err(e) => {
                    self.progress.println(&format!("budget: {e}"));
                    return;
                }
            };
            if let Some(r) = self.ranks {
                if self
                    .ranked_round(r, round, &open, &mut next_rep, max, remaining)
                    .is_break()
                {
                    return;
                }
                continue;
            }
            if open.is_empty() {
                self.progress
                    .println("budget: every comparison with the baseline is decided");
                return;
            }
            let costs = &self.costs;
            let r = budget::plan_round(
                &open,
                &self.plan.baseline,
                &next_rep,
                max,
                &|g| costs.estimate(g),
                remaining,
            );
            if r.groups.is_empty() {
                self.progress.println(&format!(
                    "budget: {} comparison{} still undecided; {:.0} s left, which pays for no \
                     further round (or their groups reached the most runs allowed)",
                    open.len(),
                    if open.len() == 1 { "" } else { "s" },
                    remaining
                ));
                return;
            }
            self.progress.println(&format!(
                "budget round {round}: {} undecided, repeating {} group{} for {} of them \
                 (~{:.0} s of {:.0} s left)",
                open.len(),
                r.groups.len(),
                if r.groups.len() == 1 { "" } else { "s" },
                r.questions,
                r.cost_s,
                remaining
            ));
            if self
                .run_round(round, &r.groups, &mut next_rep, budget)
                .is_break()
            {
                return;
            }
        }
    }

    /// One budget round: a further repetition of each of `groups`.
    pub(super) fn run_round(
        &mut self,
        round: usize,
        groups: &[budget::Group],
        next_rep: &mut HashMap<budget::Group, u32>,
        budget: std::time::Duration,
    ) -> ControlFlow<()> {
        self.progress.grow(groups.len() as u64);
        let mut cells: Vec<schedule::Cell> = Vec::new();
        for g in groups {
            let Some(cell) = self.cell_of(g, next_rep.get(g).copied().unwrap_or(0)) else {
                continue;
            };
            cells.push(cell);
        }
        // Interleaved as the minimum repetitions are: targets rotated by the round.
        let n = self.usable.len().max(1);
        cells.sort_by_key(|c| {
            (
                (c.target + n - round % n) % n,
                c.dataset,
                c.workload,
                c.threads,
            )
        });
        for (i, cell) in cells.iter().enumerate() {
            // A round is planned from cells' average costs; a cell that would no longer fit
            // in what is left of the budget is not started.
            let left = budget.saturating_sub(self.started.elapsed()).as_secs_f64();
            let cost = self.costs.estimate(&self.group(cell));
            if cost > left {
                self.progress.println(&format!(
                    "budget: {} cell{} of round {round} left out: ~{cost:.0} s each, {left:.0} s left",
                    cells.len() - i,
                    if cells.len() - i == 1 { "" } else { "s" },
                ));
                return ControlFlow::Break(());
            }
            let eta = self.eta(&cells[i..]);
            self.progress.set_eta(eta);
            self.run_cell(cell)?;
            let g = self.group(cell);
            *next_rep.entry(g).or_insert(0) += 1;
        }
        ControlFlow::Continue(())
    }

    /// The cell of group `g` at repetition `rep`.
    fn cell_of(&self, g: &budget::Group, rep: u32) -> Option<schedule::Cell> {
        let target = self
            .usable
            .iter()
            .position(|&i| self.plan.targets[i].name == g.target)?;
        let workload = self.workloads.iter().position(|w| w.name() == g.workload)?;
        let dataset = self.plan.dataset_index(g.dataset.as_deref())?;
        Some(schedule::Cell {
            repetition: rep,
            target,
            dataset,
            workload,
            threads: g.threads as usize,
        })
    }
}
