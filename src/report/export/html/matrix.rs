//! The decision matrix: the answer of a run on one screen. One row per workload point (and
//! thread count, when a workload ran at several), one column per target (the baseline
//! first, the memory references last), each cell the key metric's difference against the
//! baseline and its decision. Built from the report model's comparisons, so the page's
//! first screen says what the tables below it say; the HTML page draws it as a table and
//! as a forest plot (`charts::forest`).

use crate::report::model::format::{header, pct_interval_meaningless, value, vs_baseline_with};
use crate::report::model::report::Report;
use crate::report::model::section::{Row, Section};
use crate::stats::Decision;

/// What a column is to the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Baseline,
    Candidate,
    /// A memory file system (tmpfs): compared, never ranked.
    Reference,
}

/// One target of the matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub target: String,
    pub role: Role,
}

/// What a cell says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// The baseline's own cell: its key metric as measured.
    Baseline,
    Decided(Decision),
    /// A difference with no test behind it (a side with a single run).
    Untested,
    /// No successful measurement of this target at this point.
    Missing,
}

/// The 95 % interval of a difference, as it can be drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Interval {
    /// Both ends, in % of the baseline.
    Bounded(f64, f64),
    /// The interval says nothing ([`crate::report::model::format::WIDE_MARK`]: two runs, or wider than
    /// ±100 %).
    Wide,
    /// No interval (no test).
    None,
}

/// One cell: the difference in % of the baseline (none for the baseline and a missing
/// target), its interval, and the words shown and hovered.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub state: State,
    pub pct: Option<f64>,
    pub interval: Interval,
    pub text: String,
    /// The full comparison, as the tables word it (shown on hover).
    pub title: String,
}

impl Cell {
    /// The page's one set of marks: ✓ for better, ✗ for worse, = for equivalent (the seeds
    /// wrote √ and ×, but × is the page's ratio sign: 1.5×).
    pub fn mark(&self) -> &'static str {
        match self.state {
            State::Decided(Decision::Better) => "✓",
            State::Decided(Decision::Worse) => "✗",
            State::Decided(Decision::Equivalent) => "=",
            _ => "",
        }
    }

    /// The CSS class of the cell ([`state_class`]).
    pub fn class(&self) -> &'static str {
        state_class(self.state)
    }
}

/// The CSS class of a state, one per decision: the page colours cells and plot lines by it.
pub fn state_class(state: State) -> &'static str {
    match state {
        State::Baseline => "baseline",
        State::Decided(d) => d.as_str(),
        State::Untested => "untested",
        State::Missing => "missing",
    }
}

/// One workload point.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixRow {
    pub workload: String,
    /// The point within its workload (data set and variant; empty for a workload with one
    /// point).
    pub point: String,
    /// The worker threads, when the workload ran at more than one count.
    pub threads: Option<u32>,
    /// The key metric's column header and its direction: "files/s ↑".
    pub metric: String,
    /// One per column, in column order.
    pub cells: Vec<Cell>,
}

impl MatrixRow {
    /// "scan [cold]", "create, 4 threads".
    pub fn label(&self) -> String {
        let mut l = self.workload.clone();
        if !self.point.is_empty() {
            l.push_str(&format!(" [{}]", self.point));
        }
        if let Some(n) = self.threads {
            l.push_str(&format!(", {}", threads_text(n)));
        }
        l
    }

    /// What tells the row from its workload's others: "cold", "4 threads", "cold, 4
    /// threads"; empty for a workload with one row.
    pub fn point_text(&self) -> String {
        match (self.point.is_empty(), self.threads) {
            (_, None) => self.point.clone(),
            (true, Some(n)) => threads_text(n),
            (false, Some(n)) => format!("{}, {}", self.point, threads_text(n)),
        }
    }
}

fn threads_text(n: u32) -> String {
    format!("{n} thread{}", if n == 1 { "" } else { "s" })
}

/// The whole matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix {
    pub baseline: String,
    pub columns: Vec<Column>,
    pub rows: Vec<MatrixRow>,
}

/// The targets in column order: the baseline, the disk targets as they first appear, then
/// the references.
fn columns(r: &Report) -> Vec<Column> {
    let mut cols: Vec<Column> = Vec::new();
    for row in r.sections.iter().flat_map(|s| s.rows.iter()) {
        if !cols.iter().any(|c| c.target == row.target) {
            let role = if row.target == r.baseline {
                Role::Baseline
            } else if row.reference {
                Role::Reference
            } else {
                Role::Candidate
            };
            cols.push(Column {
                target: row.target.clone(),
                role,
            });
        }
    }
    let order = |c: &Column| match c.role {
        Role::Baseline => 0,
        Role::Candidate => 1,
        Role::Reference => 2,
    };
    cols.sort_by_key(order);
    cols
}

/// The thread count of a section, when its workload ran at more than one.
fn threads(s: &Section, sections: &[Section]) -> Option<u32> {
    let n = s.worker_threads();
    sections
        .iter()
        .any(|o| o.workload == s.workload && o.worker_threads() != n)
        .then_some(n)
}

/// A side with one run: the ratio of the shown figures (geometric means), said to be
/// untested; `None` when the baseline has no such figure.
fn untested(s: &Section, row: &Row, baseline: &str) -> Option<Cell> {
    let key = &s.key_metric;
    let bm = s
        .rows
        .iter()
        .find(|r| r.target == baseline)
        .and_then(|b| b.shown_value(key))
        .filter(|b| b.is_finite() && *b != 0.0)?;
    let pct = (row.shown_value(key)? / bm - 1.0) * 100.0;
    Some(Cell {
        state: State::Untested,
        pct: Some(pct),
        interval: Interval::None,
        text: format!("{pct:+.1} %"),
        title: format!(
            "{}: ratio of the geometric means, no test (one run)",
            row.target
        ),
    })
}

/// A target's cell in section `s`.
fn cell(s: &Section, row: Option<&Row>, baseline: &str) -> Cell {
    let key = &s.key_metric;
    let missing = |why: &str| Cell {
        state: State::Missing,
        pct: None,
        interval: Interval::None,
        text: "—".into(),
        title: why.into(),
    };
    let Some(row) = row else {
        return missing("not measured");
    };
    let Some(m) = row.metric(key) else {
        return missing("no successful run");
    };
    if row.target == baseline {
        return Cell {
            state: State::Baseline,
            pct: None,
            interval: Interval::None,
            text: row
                .shown_value(key)
                .map_or_else(|| "—".into(), |v| value(key, v)),
            title: format!(
                "{}: baseline, {} of {} runs",
                row.target,
                row.shown.get(key).map_or("mean", |s| s.statistic.as_str()),
                m.summary.n
            ),
        };
    }
    let Some(c) = m.vs_baseline.as_ref() else {
        return untested(s, row, baseline)
            .unwrap_or_else(|| missing("no comparison with the baseline"));
    };
    let state = c
        .verdict
        .as_ref()
        .map_or(State::Untested, |v| State::Decided(v.decision));
    let interval = match c.pct_ci95 {
        _ if pct_interval_meaningless(c, m.summary.n) => Interval::Wide,
        Some((lo, hi)) => Interval::Bounded(lo, hi),
        None => Interval::None,
    };
    let mut cell = Cell {
        state,
        pct: Some(c.pct_diff),
        interval,
        text: format!("{:+.1} %", c.pct_diff),
        title: format!(
            "{} vs {baseline}: {}",
            row.target,
            vs_baseline_with(Some(c), m.summary.n, row.budget_stop.as_ref())
        ),
    };
    let mark = cell.mark();
    if !mark.is_empty() {
        cell.text = format!("{} {mark}", cell.text);
    }
    cell
}

/// The matrix of a report.
pub fn build(r: &Report) -> Matrix {
    let columns = columns(r);
    let rows = r
        .sections
        .iter()
        .map(|s| MatrixRow {
            workload: s.workload.clone(),
            point: s.point_label(),
            threads: threads(s, &r.sections),
            metric: format!(
                "{} {}",
                header(&s.key_metric),
                if s.higher_is_better { "↑" } else { "↓" }
            ),
            cells: columns
                .iter()
                .map(|c| {
                    let row = s.rows.iter().find(|row| row.target == c.target);
                    cell(s, row, &r.baseline)
                })
                .collect(),
        })
        .collect();
    Matrix {
        baseline: r.baseline.clone(),
        columns,
        rows,
    }
}

#[cfg(test)]
mod tests;
