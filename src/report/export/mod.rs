//! The report's outputs: one file per format, each an [`exporter::Exporter`], and the
//! registry [`all`], the one list of them. The report's files, `--format`'s values and
//! `compare`'s formats are all read from it, so a new format is one file here and one line
//! in [`all`]. Text that several formats lay out alike is in [`text`]; the HTML page's
//! charts and figures are under [`html`].

pub mod csv;
pub mod exporter;
pub mod html;
pub mod json;
pub mod markdown;
pub mod study_table;
pub mod terminal;
pub mod text;

use exporter::Exporter;

/// Every output format, in the order the report's files are written and `--format` lists
/// them.
static ALL: [&dyn Exporter; 6] = [
    &terminal::Terminal,
    &json::Json,
    &csv::Csv,
    &markdown::Markdown,
    &html::Html,
    &study_table::StudyTable,
];

/// Every output format ([`ALL`]).
pub fn all() -> &'static [&'static dyn Exporter] {
    &ALL
}

/// A format `run`, `report` and `compare` can print on stdout: an exporter with a `--format`
/// value.
#[derive(Clone, Copy)]
pub struct Format(&'static dyn Exporter);

impl Format {
    /// The formats stdout can take, in `--format`'s order.
    pub fn all() -> impl Iterator<Item = Format> {
        all()
            .iter()
            .filter(|e| e.help().is_some())
            .map(|e| Format(*e))
    }

    /// The format `--format NAME` names.
    pub fn named(name: &str) -> Option<Format> {
        Format::all().find(|f| f.name() == name)
    }

    /// `--format`'s value for it.
    pub fn name(&self) -> &'static str {
        self.0.name()
    }

    /// `--format`'s help line for it.
    pub fn help(&self) -> &'static str {
        self.0.help().unwrap_or_default()
    }

    /// The exporter that writes it.
    pub fn exporter(&self) -> &'static dyn Exporter {
        self.0
    }
}

impl std::fmt::Debug for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl PartialEq for Format {
    fn eq(&self, other: &Format) -> bool {
        self.name() == other.name()
    }
}

impl Eq for Format {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_have_one_name_each_and_stdout_keeps_its_four() {
        let mut names: Vec<_> = all().iter().map(|e| e.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all().len());
        let stdout: Vec<_> = Format::all().map(|f| f.name()).collect();
        assert_eq!(stdout, ["table", "json", "csv", "markdown"]);
    }
}
