//! `summary.json`: the report model as JSON (schema in docs/summary-schema.md). Bump
//! [`SCHEMA_VERSION`] on any change that could break a reader.

use super::model::Report;

pub const SCHEMA_VERSION: u32 = 1;

pub fn render(r: &Report) -> serde_json::Result<String> {
    serde_json::to_string_pretty(r)
}
