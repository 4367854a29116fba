//! `summary.json`: the report model as JSON (schema in docs/summary-schema.md). The schema is
//! the model's shape, so its version, [`super::model::SCHEMA_VERSION`], lives beside the model.

use super::model::Report;

/// Serialises the model as pretty-printed JSON.
pub fn render(r: &Report) -> serde_json::Result<String> {
    serde_json::to_string_pretty(r)
}
