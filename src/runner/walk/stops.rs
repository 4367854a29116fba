//! Why a target's cells stop before the plan's end: its first file system could not be made
//! (every cell would fail the same way), or a minimum kept within the budget has no room
//! left for them (`fsarena tune`, whose answer names the candidates left unraced).

use super::{budget, cell, rounds, Cell, Walk};
use crate::plan::Runs;
use crate::results::Measurement;

impl Walk<'_> {
    /// Says once of each comparison the budget stopped giving runs that it did, and why,
    /// and records it, so the report's row says why it stayed undecided. With nothing left
    /// (the minimum spent the budget) the closing line says it all; the record is kept
    /// either way. A failed write costs only that sentence: the run goes on (its
    /// measurements are what must not be lost) and says so.
    pub(super) fn keep_stops(&mut self, stopped: &[rounds::Stopped], remaining: f64) {
        for s in stopped {
            if !self.beyond.insert((s.group.clone(), s.variant.clone())) {
                continue;
            }
            if remaining > 0.0 && !matches!(s.why, rounds::Beyond::Spent { .. }) {
                self.progress.println(&rounds::stopped_line(s));
            }
            let record = s.record();
            match self.store.append_stop(&record) {
                Ok(()) => self.state.budget_stops.push(record),
                Err(e) => eprintln!("fsarena: cannot write {}: {e}", self.store.path().display()),
            }
        }
    }

    /// Records the comparisons still `open` when no further round fits in the `remaining`
    /// seconds as stopped by the budget too (those it stopped before keep their reason);
    /// the closing line says it for all of them.
    pub(super) fn keep_spent(&mut self, open: &[budget::Open], remaining: f64) {
        let spent: Vec<rounds::Stopped> = (open.iter())
            .map(|o| rounds::Stopped {
                group: o.group.clone(),
                variant: o.variant.clone(),
                why: rounds::Beyond::Spent { left: remaining },
            })
            .collect();
        self.keep_stops(&spent, remaining);
    }

    /// A target whose first cell could not even make its file system (mkfs or mount
    /// options the tool rejects, a size it refuses) would fail the same way in every cell:
    /// it is stopped with one line, and its other cells are not run.
    pub(super) fn stop_if_unprovisionable(&mut self, target: &str, records: &[Measurement]) {
        if self.provisioned.contains(target) || records.is_empty() {
            return;
        }
        if !records.iter().all(cell::is_provision_failure) {
            self.provisioned.insert(target.to_string());
            return;
        }
        let why = records[0].error.clone().unwrap_or_default();
        let line = format!(
            "fsarena: target {target} stopped: its first file system could not be made ({why}); its other cells are skipped"
        );
        // Said even with --quiet: it changes what the run measures.
        if self.inputs.opts.quiet {
            eprintln!("{line}");
        } else {
            self.progress.println(&line);
        }
        self.stopped.insert(target.to_string(), why);
    }

    /// When the questions keep the minimum within the budget
    /// ([`budget::Questions::minimum_within_budget`], a process alone): whether the first of
    /// the minimum's `rest` no longer fits in what is left of it, priced as its group's
    /// cells so far. Then every cell of `rest` not yet recorded is left out, with one line,
    /// and its target stopped (it is not incomplete: the budget left it out) — but the
    /// baseline's: the others are compared with it, so its minimum always runs.
    pub(super) fn minimum_overruns(&mut self, rest: &[Cell]) -> bool {
        let Runs::Auto { budget, .. } = self.inputs.plan.runs else {
            return false;
        };
        if !self.inputs.questions.minimum_within_budget() || !self.inputs.team.is_alone() {
            return false;
        }
        let Some(first) = rest
            .first()
            .filter(|c| !self.done.contains(&self.cell_id(c)))
        else {
            return false;
        };
        let left = self.deadline(budget).left_s();
        let cost = self.costs.estimate(&self.group(first));
        if cost <= left {
            return false;
        }
        let baseline = &self.inputs.plan.baseline;
        let left_out: Vec<Cell> = (rest.iter())
            .filter(|c| !self.done.contains(&self.cell_id(c)))
            .filter(|c| self.group(c).target != *baseline)
            .cloned()
            .collect();
        if left_out.is_empty() {
            return false;
        }
        let line = rounds::minimum_left_out(left_out.len(), cost, left);
        // Said even with --quiet: it changes what the run measures.
        if self.inputs.opts.quiet {
            eprintln!("fsarena: {line}");
        } else {
            self.progress.println(&line);
        }
        for c in &left_out {
            let target = self.group(c).target;
            (self.stopped)
                .entry(target)
                .or_insert_with(|| "the budget ran out before its minimum repetitions".to_string());
        }
        true
    }
}
