//! Reports: one model built from a results directory and its statistics ([`model`]), and one
//! exporter per output: terminal, `summary.json`, `summary.csv`, `summary.md`, `report.html`.

pub mod charts;
pub mod compare;
pub mod csv;
pub mod curves;
pub mod explain;
pub mod format;
pub mod html;
pub mod json;
pub mod markdown;
pub mod model;
pub mod study_table;
pub mod terminal;
pub mod verdicts;

use std::io::IsTerminal;
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

/// Prints the terminal report of a results directory and (re)writes its report files.
pub fn report_dir(dir: &Path, margin_pct: Option<f64>) -> Result<()> {
    let report = write_files(dir, margin_pct)?;
    let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    print!("{}", terminal::render(&report, color));
    println!("\nreport: {}", dir.join("report.html").display());
    Ok(())
}

/// Prints two results directories side by side.
pub fn compare_dirs(a: &Path, b: &Path, margin_pct: Option<f64>) -> Result<()> {
    print!("{}", compare::render(a, b, margin_pct)?);
    Ok(())
}
