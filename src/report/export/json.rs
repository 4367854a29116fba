//! `summary.json`: the report model as JSON (schema in docs/summary-schema.md). The schema is
//! the model's shape, so its version, [`crate::report::model::report::SCHEMA_VERSION`], lives beside the model.

use super::exporter::{Destination, ExportError, Exporter};
use crate::report::model::compare::Comparison;
use crate::report::model::report::Report;

/// Serialises the model as pretty-printed JSON.
pub fn render(r: &Report) -> serde_json::Result<String> {
    serde_json::to_string_pretty(r)
}

/// `summary.json`, and `--format json`: the same text, ending with a newline on stdout.
pub struct Json;

impl Exporter for Json {
    fn name(&self) -> &'static str {
        "json"
    }

    fn help(&self) -> Option<&'static str> {
        Some("The report model (docs/summary-schema.md), as summary.json holds it")
    }

    fn file(&self) -> Option<&'static str> {
        Some("summary.json")
    }

    fn serialize(&self, r: &Report, to: Destination) -> Result<String, ExportError> {
        let text = render(r)?;
        Ok(match to {
            Destination::File => text,
            Destination::Stdout { .. } => text + "\n",
        })
    }

    fn serialize_comparison(
        &self,
        c: &Comparison,
        _color: bool,
    ) -> Option<Result<String, ExportError>> {
        Some(
            serde_json::to_string_pretty(c)
                .map(|text| text + "\n")
                .map_err(Into::into),
        )
    }
}
