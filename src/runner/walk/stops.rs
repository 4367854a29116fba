//! Why a target's cells stop before the plan's end: its first file system could not be made
//! (every cell would fail the same way), or a minimum kept within the budget has no room
//! left for them (`fsarena tune`, whose answer names the candidates left unraced).

use super::{cell, rounds, Cell, Walk};
use crate::plan::Runs;
use crate::results::Measurement;
use crate::runner::deadline::Deadline;

impl Walk<'_> {
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
        let left = Deadline::new(budget, self.started).left_s();
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
