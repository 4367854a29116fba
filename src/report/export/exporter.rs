//! What an output format is: an [`Exporter`] turns the report model, and the comparison of
//! two runs where the format prints on stdout, into that format's text. It sits below every
//! format's file and the registry that lists them, so neither imports the other's parent.

use std::path::Path;

use crate::report::model::compare::Comparison;
use crate::report::model::report::Report;

/// Why a format's text could not be made: its serializer failed. The message is the
/// serializer's own, as it was before exporters had a type of their own.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Csv(#[from] csv::Error),
}

/// Where a report goes, which decides the few things a format does differently there.
#[derive(Debug, Clone, Copy)]
pub enum Destination<'a> {
    /// The format's file in the results directory.
    File,
    /// Stdout, for `run` and `report`: the table may be coloured and ends by naming the HTML
    /// report of `dir`; JSON ends with a newline there, as a line of output should.
    Stdout { color: bool, dir: &'a Path },
}

/// One output format, in the spirit of hyperfine's `export::Exporter`: a format is one file
/// implementing this trait plus one line in the registry (`export::all`).
pub trait Exporter: Sync {
    /// The format's name: `--format`'s value for a format that prints on stdout.
    fn name(&self) -> &'static str;

    /// `--format`'s help line for a format that prints on stdout; `None` for a format that
    /// only writes its file.
    fn help(&self) -> Option<&'static str> {
        None
    }

    /// The file this format writes into a results directory, if it writes one.
    fn file(&self) -> Option<&'static str> {
        None
    }

    /// The report in this format.
    fn serialize(&self, r: &Report, to: Destination) -> Result<String, ExportError>;

    /// The comparison of two runs in this format: every format that prints on stdout has
    /// one (`compare` offers the same `--format` values as `report`), the others `None`.
    fn serialize_comparison(
        &self,
        _c: &Comparison,
        _color: bool,
    ) -> Option<Result<String, ExportError>> {
        None
    }
}
