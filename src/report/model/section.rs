//! A report's sections: one per workload point, a row per target, as every exporter shows
//! them. Plain data: the model builds them, and the pieces that fill them in (the headline,
//! the explanations, the ranking) read them from here, below all of them.

use std::collections::BTreeMap;

use serde::Serialize;

use super::shown::Shown;
use crate::results::Status;
use crate::stats::{MetricStats, Warning};

/// The metric a workload that runs its own worker threads records their count in.
pub const WORKER_THREADS: &str = "worker_threads";

/// Best (✓) or worst (✗) among the disk targets, only when the gap to the neighbour is
/// significant after the run's adjustment (see [`crate::stats::verdicts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mark {
    Best,
    Worst,
}

/// One target's row in a section.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub target: String,
    pub fs: String,
    pub ok: usize,
    pub failed: Vec<(u32, Status, Option<String>)>,
    pub invalid: usize,
    pub mark: Option<Mark>,
    /// A memory file system (tmpfs): shown for reference, never ranked or marked.
    pub reference: bool,
    pub metrics: BTreeMap<String, MetricStats>,
    /// The figure every output shows for each metric and which statistic it is
    /// ([`super::shown`]): the key metric's geometric mean, the other columns' medians.
    pub shown: BTreeMap<String, Shown>,
    pub warnings: Vec<Warning>,
    /// Why this row differs significantly from the baseline, from the monitor's figures in
    /// the same cells (`report::explain`); absent when nothing measured explains it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// Why `--runs auto` stopped giving runs to its undecided comparison with the baseline
    /// ([`crate::results::BudgetStop`]); absent otherwise, and in results from before the
    /// record.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_stop: Option<StopShown>,
}

/// A budget's stop as the outputs show it: the record's reason and its words, said alike
/// everywhere ([`crate::results::Beyond::row_words`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StopShown {
    #[serde(flatten)]
    pub why: crate::results::Beyond,
    pub words: String,
}

impl StopShown {
    pub fn new(why: crate::results::Beyond) -> StopShown {
        StopShown {
            words: why.row_words(),
            why,
        }
    }
}

impl Row {
    pub fn metric(&self, name: &str) -> Option<&MetricStats> {
        self.metrics.get(name)
    }
    pub fn mean(&self, name: &str) -> Option<f64> {
        self.metrics.get(name).map(|m| m.summary.mean)
    }
    /// The value shown for `name` ([`super::shown`]).
    pub fn shown_value(&self, name: &str) -> Option<f64> {
        self.shown.get(name).map(|s| s.value)
    }
}

/// One workload point at one thread count: the unit users compare.
#[derive(Debug, Clone, Serialize)]
pub struct Section {
    pub workload: String,
    /// The data set's profile, when the run had several (each is its own section).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dataset: Option<String>,
    pub variant: String,
    pub threads: u32,
    pub key_metric: String,
    pub higher_is_better: bool,
    /// Extra metrics worth a column for this workload.
    pub columns: Vec<String>,
    pub rows: Vec<Row>,
    /// One sentence about the disk targets: who wins (better, after the run's adjustment), that the two
    /// leaders are equivalent, or that it is undecided and how many runs would decide it.
    pub decision: String,
}

impl Section {
    /// The worker threads the measurement ran: the workload's own count when it ignores
    /// `--threads` and records how many it ran ([`WORKER_THREADS`]; `db` runs 12 by
    /// default), else the `--threads` value it ran with.
    pub fn worker_threads(&self) -> u32 {
        self.rows
            .iter()
            .filter_map(|r| r.metric(WORKER_THREADS))
            .map(|m| m.summary.max.round() as u32)
            .max()
            .unwrap_or(self.threads)
    }

    /// What tells this point from the workload's others: the data set (when the run had
    /// several) and the variant, e.g. `medium · cold`; empty for a single-point workload.
    pub fn point_label(&self) -> String {
        point_label(self.dataset.as_deref(), &self.variant)
    }

    /// The line that says which rows were measured in turn with the baseline (its file
    /// system beside each of their cells, `stats::verdicts::looks`) and so what their
    /// figure is: the baseline's times their ratio to the baseline beside them
    /// (`MetricStats::in_turn`), which their paired % compares; `None` when none was.
    pub fn in_turn_line(&self, baseline: &str) -> Option<String> {
        let paired: Vec<&str> = (self.rows.iter())
            .filter(|r| {
                let c = r
                    .metric(&self.key_metric)
                    .and_then(|m| m.vs_baseline.as_ref());
                c.is_some_and(|c| c.test == crate::stats::significance::Test::InTurn)
            })
            .map(|r| r.target.as_str())
            .collect();
        let whose = if paired.len() == 1 { "its" } else { "their" };
        (!paired.is_empty()).then(|| {
            format!(
                "in turn: {baseline} was measured beside {} in each of {whose} cells; the \
                 figure is {baseline}'s times the ratio to the {baseline} beside it, and the % \
                 is paired",
                paired.join(", ")
            )
        })
    }

    pub fn title(&self) -> String {
        let mut t = self.workload.clone();
        let point = self.point_label();
        if !point.is_empty() {
            t.push_str(&format!(" [{point}]"));
        }
        t.push_str(&threads_phrase(self.threads_said()));
        t
    }

    /// The thread count, where it tells something ([`threads_told`]); a workload that
    /// records its own count (a replay's trace) says that one.
    fn threads_said(&self) -> Option<u32> {
        let recorded = self.rows.iter().any(|r| r.metric(WORKER_THREADS).is_some());
        match recorded {
            true => Some(self.worker_threads()),
            false => threads_told(&self.workload, self.worker_threads()),
        }
    }
}

/// A point's `--threads` count, where it tells something: a workload that ignores
/// `--threads` (`io-*`, whose job count is in the variant; `untar`) runs as it must, and
/// "1 thread" beside "j4" would mislead.
pub fn threads_told(workload: &str, threads: u32) -> Option<u32> {
    let ignores = crate::workload::by_name(workload).is_some_and(|w| !w.spec().uses_threads);
    (!ignores).then_some(threads)
}

/// ", 1 thread" or ", 4 threads" after a point's name; nothing for a count that says
/// nothing ([`threads_told`]). Every title and line that names a point uses it.
pub fn threads_phrase(threads: Option<u32>) -> String {
    match threads {
        Some(1) => ", 1 thread".to_string(),
        Some(n) => format!(", {n} threads"),
        None => String::new(),
    }
}

/// A workload point's name in a line: the workload, and its variant in brackets.
pub fn point_name(workload: &str, variant: &str) -> String {
    match variant.is_empty() {
        true => workload.to_string(),
        false => format!("{workload} [{variant}]"),
    }
}

/// A point's label from its data set (when a run had several) and its variant.
pub fn point_label(dataset: Option<&str>, variant: &str) -> String {
    match (dataset, variant.is_empty()) {
        (Some(d), true) => d.to_string(),
        (Some(d), false) => format!("{d} · {variant}"),
        (None, _) => variant.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(workload: &str, variant: &str) -> Section {
        Section {
            workload: workload.into(),
            dataset: None,
            variant: variant.into(),
            threads: 1,
            key_metric: "iops".into(),
            higher_is_better: true,
            columns: Vec::new(),
            rows: Vec::new(),
            decision: String::new(),
        }
    }

    /// Defect: an fio point was titled "io-sweep [randread-bs8k-j4-qd32-small-direct],
    /// 1 thread": io ignores `--threads` and its four jobs are in the variant.
    #[test]
    fn a_workload_that_ignores_threads_is_not_titled_one_thread() {
        let io = section("io-sweep", "randread-bs8k-j4-qd32-small-direct");
        assert_eq!(io.title(), "io-sweep [randread-bs8k-j4-qd32-small-direct]");
        assert_eq!(section("create", "").title(), "create, 1 thread");
    }

    /// Defect: the gate's missing-point line and the scale check's line still said
    /// "io-quick [read-bs1m-j1-qd1], 1 thread", and the gate's worse line "1 threads": each
    /// formatted the count itself. They now share [`threads_phrase`] with the titles.
    #[test]
    fn every_line_naming_a_point_says_its_threads_as_the_title_does() {
        let missing = |workload: &str, threads| crate::report::model::compare::MissingPoint {
            workload: workload.into(),
            variant: "v".into(),
            threads,
            target: "xfs".into(),
            recorded_in_b: false,
            why: "missing in B".into(),
        };
        assert_eq!(
            missing("io-quick", 1).line(),
            "io-quick [v], xfs: missing in B"
        );
        assert_eq!(
            missing("create", 1).line(),
            "create [v], 1 thread, xfs: missing in B"
        );
        assert_eq!(
            missing("create", 4).line(),
            "create [v], 4 threads, xfs: missing in B"
        );
        assert_eq!(threads_phrase(threads_told("untar", 2)), "");
        assert_eq!(point_name("scan", ""), "scan");
    }
}
