//! Reports: one model built from a results directory and its statistics ([`model`]), and one
//! exporter per output: terminal, `summary.json`, `summary.csv`, `summary.md`, `report.html`.

pub mod charts;
pub mod compare;
pub mod csv;
pub mod curves;
pub mod format;
pub mod html;
pub mod json;
pub mod markdown;
pub mod model;
pub mod terminal;

use std::io::IsTerminal;
use std::path::Path;

use anyhow::{Context, Result};

use crate::results::store;

/// The files written into a results directory.
pub const FILES: [&str; 4] = ["summary.json", "summary.csv", "summary.md", "report.html"];

/// Writes every report file into `dir` (atomically: temp file, then rename) and returns the
/// model, so a crash mid-write never leaves half a report.
pub fn write_files(dir: &Path) -> Result<model::Report> {
    let loaded = store::load(dir)?;
    let report = model::build(&loaded);
    let outputs = [
        ("summary.json", json::render(&report)?),
        ("summary.csv", csv::render(&report)?),
        ("summary.md", markdown::render(&report)),
        ("report.html", html::render(&report)),
    ];
    for (name, text) in outputs {
        let tmp = dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
        std::fs::rename(&tmp, dir.join(name)).with_context(|| format!("cannot write {name}"))?;
    }
    Ok(report)
}

/// Prints the terminal report of a results directory and (re)writes its report files.
pub fn report_dir(dir: &Path) -> Result<()> {
    let report = write_files(dir)?;
    let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    print!("{}", terminal::render(&report, color));
    println!("\nreport: {}", dir.join("report.html").display());
    Ok(())
}

/// Prints two results directories side by side.
pub fn compare_dirs(a: &Path, b: &Path) -> Result<()> {
    print!("{}", compare::render(a, b)?);
    Ok(())
}
