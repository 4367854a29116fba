//! `study.md`: each section as the studies printed their results — one row per metric, one
//! column per configuration, and the % difference against the baseline beside each value —
//! with the explanation lines under it. The same model as every other output; only the
//! table is turned on its side.

use std::fmt::Write;

use super::exporter::{Destination, ExportError, Exporter};
use crate::report::model::format::header;
use crate::report::model::report::Report;

mod cell;
mod groups;

use cell::cell;

/// Monitor figures every table shows where measured, beside the workload's own columns: the
/// seeds' monitors showed the cache and the free memory during each test.
const MONITOR_ROWS: &[&str] = &["peak_cached_bytes", "min_mem_free_bytes"];

/// Renders every section as a metric × configuration table.
pub fn render(r: &Report) -> String {
    let mut out = String::from("# Results by metric\n\n");
    if let Some(why) = &r.incomplete {
        let _ = writeln!(out, "> **Incomplete:** {why}\n");
    }
    out.push_str(&super::text::header::markdown(r));
    let _ = writeln!(
        out,
        "\nOne column per configuration (a memory file system is a reference, never ranked); in \
         brackets the difference against {} (≈: not significant). The key metric (first row) is \
         the geometric mean of the runs ± its 95 % interval, its difference the tables' own; \
         every other row is the median of the runs, its difference the ratio of the medians.",
        r.baseline
    );
    for (i, s) in r.sections.iter().enumerate() {
        if groups::render_at(&mut out, r, i) {
            continue;
        }
        let _ = write!(out, "\n## {}\n\n{}\n\n| metric |", s.title(), s.decision);
        for row in &s.rows {
            if row.reference {
                let _ = write!(out, " {} (reference, RAM) |", row.target);
            } else {
                let _ = write!(out, " {} |", row.target);
            }
        }
        out.push_str("\n|---|");
        out.push_str(&"---|".repeat(s.rows.len()));
        out.push('\n');
        let mut metrics = vec![s.key_metric.clone()];
        metrics.extend(s.columns.iter().filter(|c| **c != s.key_metric).cloned());
        for m in MONITOR_ROWS {
            if !metrics.iter().any(|x| x == m) && s.rows.iter().any(|row| row.metric(m).is_some()) {
                metrics.push(m.to_string());
            }
        }
        for metric in &metrics {
            let _ = write!(out, "| {} |", header(metric));
            for ti in 0..s.rows.len() {
                let _ = write!(out, " {} |", cell(s, metric, ti, &r.baseline));
            }
            out.push('\n');
        }
        for why in s.rows.iter().filter_map(|r| r.why.as_ref()) {
            let _ = writeln!(out, "\nwhy: {why}");
        }
    }
    out
}

/// `study.md`, written into the results directory only.
pub struct StudyTable;

impl Exporter for StudyTable {
    fn name(&self) -> &'static str {
        "study"
    }

    fn file(&self) -> Option<&'static str> {
        Some("study.md")
    }

    fn serialize(&self, r: &Report, _to: Destination) -> Result<String, ExportError> {
        Ok(render(r))
    }
}
