//! Reports: one model built from a results directory and its statistics ([`model`]), and one
//! exporter per output ([`export`]): terminal, `summary.json`, `summary.csv`, `summary.md`,
//! `report.html` and `study.md`. This file holds the report's entry points, which `cli` calls,
//! and the few pieces the runner and the tuner read, so that neither names an exporter.

pub mod export;
pub mod model;

use std::path::Path;

use anyhow::{Context, Result};

use crate::results::store;
use export::exporter::Destination;

pub use export::html::charts;
pub use export::text::width::{output_width, wrap_lines};
pub use export::Format;
pub use model::compare::Comparison;
pub use model::format::{header, sig3, value};
pub use model::report::{build, key_metric, Report};

/// The files written into a results directory, one per exporter that writes one.
pub fn files() -> impl Iterator<Item = &'static str> {
    export::all().iter().filter_map(|e| e.file())
}

/// Writes every report file into `dir` (atomically: temp file, then rename) and returns the
/// model, so a crash mid-write never leaves half a report. `margin_pct` overrides the run's
/// equivalence margin.
pub fn write_files(dir: &Path, margin_pct: Option<f64>) -> Result<Report> {
    let loaded = store::load(dir)?;
    let report = build(&loaded, margin_pct);
    let mut outputs = Vec::new();
    for e in export::all() {
        if let Some(name) = e.file() {
            outputs.push((name, e.serialize(&report, Destination::File)?));
        }
    }
    for (name, text) in outputs {
        let tmp = dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
        std::fs::rename(&tmp, dir.join(name)).with_context(|| format!("cannot write {name}"))?;
    }
    Ok(report)
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
    let to = Destination::Stdout { color, dir };
    Ok(format.exporter().serialize(&report, to)?)
}

/// Two results directories side by side in `format`, and the comparison itself (for
/// `--fail-if-worse`).
pub fn compare_text(
    a: &Path,
    b: &Path,
    margin_pct: Option<f64>,
    format: Format,
    color: bool,
) -> Result<(String, Comparison)> {
    compare_text_leaving_out(a, b, margin_pct, format, color, &[])
}

/// [`compare_text`] without the points of the workloads `left_out`
/// ([`model::compare::build_leaving_out`]).
pub fn compare_text_leaving_out(
    a: &Path,
    b: &Path,
    margin_pct: Option<f64>,
    format: Format,
    color: bool,
    left_out: &[String],
) -> Result<(String, Comparison)> {
    let c = model::compare::build_leaving_out(a, b, margin_pct, left_out)?;
    let text = format
        .exporter()
        .serialize_comparison(&c, color)
        .with_context(|| format!("compare has no {} output", format.name()))??;
    Ok((text, c))
}
