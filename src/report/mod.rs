//! Reports: one model built from a results directory and its statistics ([`model`]), and one
//! exporter per output: terminal, `summary.json`, `summary.csv`, `summary.md`, `report.html`.

pub mod call_types;
pub mod charts;
pub mod compare;
pub mod cpus;
pub mod csv;
pub mod curves;
pub mod explain;
pub mod file_systems;
pub mod fit;
pub mod format;
pub mod header;
pub mod headline;
pub mod html;
pub mod json;
pub mod markdown;
pub mod matrix;
pub mod model;
pub mod notes;
pub mod ranking;
pub mod scales;
pub mod section;
pub mod set_aside;
pub mod shown;
pub mod study_table;
pub mod terminal;
pub mod width;

use std::path::Path;

use anyhow::{Context, Result};

use crate::results::store;

/// The files written into a results directory.
pub const FILES: [&str; 5] = [
    "summary.json",
    "summary.csv",
    "summary.md",
    "report.html",
    "study.md",
];

/// Writes every report file into `dir` (atomically: temp file, then rename) and returns the
/// model, so a crash mid-write never leaves half a report. `margin_pct` overrides the run's
/// equivalence margin.
pub fn write_files(dir: &Path, margin_pct: Option<f64>) -> Result<model::Report> {
    let loaded = store::load(dir)?;
    let report = model::build(&loaded, margin_pct);
    let outputs = [
        ("summary.json", json::render(&report)?),
        ("summary.csv", csv::render(&report)?),
        ("summary.md", markdown::render(&report)),
        ("report.html", html::render(&report)),
        ("study.md", study_table::render(&report)),
    ];
    for (name, text) in outputs {
        let tmp = dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
        std::fs::rename(&tmp, dir.join(name)).with_context(|| format!("cannot write {name}"))?;
    }
    Ok(report)
}

/// What `run`, `report` and `compare` print on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Tables fitted to the terminal ([`width::output_width`]).
    Table,
    Json,
    Csv,
    Markdown,
}

/// The report of a results directory in `format`, after (re)writing its report files.
/// Only the table is fitted to a width: machine formats are never cut.
pub fn report_text(
    dir: &Path,
    margin_pct: Option<f64>,
    format: Format,
    color: bool,
) -> Result<String> {
    let report = write_files(dir, margin_pct)?;
    Ok(match format {
        Format::Table => format!(
            "{}\nreport: {}\n",
            terminal::render(&report, color),
            dir.join("report.html").display()
        ),
        Format::Json => json::render(&report)? + "\n",
        Format::Csv => csv::render(&report)?,
        Format::Markdown => markdown::render(&report),
    })
}

/// Two results directories side by side in `format`, and the comparison itself (for
/// `--fail-if-worse`).
pub fn compare_text(
    a: &Path,
    b: &Path,
    margin_pct: Option<f64>,
    format: Format,
    color: bool,
) -> Result<(String, compare::Comparison)> {
    let c = compare::build(a, b, margin_pct)?;
    let text = match format {
        Format::Table => compare::render_table(&c, color, width::output_width()),
        Format::Json => serde_json::to_string_pretty(&c)? + "\n",
        Format::Csv => compare::render_csv(&c)?,
        Format::Markdown => compare::render_markdown(&c),
    };
    Ok((text, c))
}
