//! `summary.md`: the terminal tables as Markdown, for pasting into an issue or a wiki.

use super::exporter::{Destination, ExportError, Exporter};
use crate::report::model::compare::{legend as comparison_legend, p_header, Comparison};
use crate::report::model::format::{header, legend, row_cells, value, INTERVALS};
use crate::report::model::report::Report;

pub fn render(r: &Report) -> String {
    let mut out = String::from("# fsarena results\n\n");
    if let Some(why) = &r.incomplete {
        out.push_str(&format!("> **Incomplete:** {why}\n\n"));
    }
    out.push_str(&super::text::header::markdown(r));
    out.push('\n');
    out.push_str(&format!(
        "Baseline **{}**; {INTERVALS}; {}.\n",
        r.baseline,
        legend(r)
    ));
    for s in &r.sections {
        let key = &s.key_metric;
        out.push_str(&format!("\n## {}\n\n{}\n\n", s.title(), s.decision));
        let cols: Vec<&String> = s.columns.iter().filter(|c| *c != key).collect();
        out.push_str(&format!(
            "| target | runs | {} | CV | vs {} |{}\n",
            header(key),
            r.baseline,
            cols.iter()
                .map(|c| format!(" {} |", header(c)))
                .collect::<String>()
        ));
        out.push_str(&format!(
            "|---|---|---|---|---|{}\n",
            "---|".repeat(cols.len())
        ));
        for row in &s.rows {
            let c = row_cells(row, key, &r.baseline);
            out.push_str(&format!(
                "| {} | {} | {}{} | {} | {} |{}\n",
                c.target,
                c.runs,
                c.key,
                c.mark,
                c.cv,
                c.vs,
                cols.iter()
                    .map(|col| format!(
                        " {} |",
                        row.shown_value(col)
                            .map(|v| value(col, v))
                            .unwrap_or_else(|| "—".into())
                    ))
                    .collect::<String>()
            ));
        }
        if let Some(line) = s.in_turn_line(&r.baseline) {
            out.push_str(&format!("\n{line}\n"));
        }
    }
    if s_wide(r) {
        out.push_str(&format!("\n{}\n", crate::report::model::format::WIDE_NOTE));
    }
    if let Some(c) = &r.scale_check {
        out.push_str("\n## Across scales\n\n");
        for line in crate::report::model::scales::check_lines(c) {
            out.push_str(&format!("- {line}\n"));
        }
    }
    out
}

/// Whether any table left an interval out as meaningless ([`crate::report::model::format::WIDE_NOTE`]).
fn s_wide(r: &Report) -> bool {
    r.sections.iter().any(|s| {
        s.rows
            .iter()
            .any(|row| row_cells(row, &s.key_metric, &r.baseline).wide)
    })
}

/// The comparison as a Markdown table.
pub fn render_comparison(c: &Comparison) -> String {
    let mut out = format!(
        "# fsarena compare\n\nA = `{}` (kernel {}, {}), B = `{}` (kernel {}, {}). {}.\n\n",
        c.a,
        c.kernel_a,
        c.condition_a,
        c.b,
        c.kernel_b,
        c.condition_b,
        comparison_legend(c)
    );
    for n in c.host_notes() {
        out.push_str(&format!("> {n}.\n\n"));
    }
    out.push_str("| workload | threads | target | metric | A | B | B vs A | decision | ");
    out.push_str(p_header(c));
    out.push_str(" |\n|---|---|---|---|---|---|---|---|---|\n");
    for r in &c.rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.point(),
            r.threads,
            r.target,
            header(&r.metric),
            r.a_text,
            r.b_text,
            r.pct_diff.map(|p| format!("{p:+.1} %")).unwrap_or_default(),
            r.decision_text(),
            r.p_adjusted.map(|p| format!("{p:.3}")).unwrap_or_default()
        ));
    }
    if !c.missing.is_empty() {
        out.push_str("\nNo figure in B:\n\n");
        for m in &c.missing {
            out.push_str(&format!("- {}\n", m.line()));
        }
    }
    out
}

/// `summary.md`, and `--format markdown`: the same text in both places.
pub struct Markdown;

impl Exporter for Markdown {
    fn name(&self) -> &'static str {
        "markdown"
    }

    fn help(&self) -> Option<&'static str> {
        Some("Markdown tables, as summary.md holds them")
    }

    fn file(&self) -> Option<&'static str> {
        Some("summary.md")
    }

    fn serialize(&self, r: &Report, _to: Destination) -> Result<String, ExportError> {
        Ok(render(r))
    }

    fn serialize_comparison(
        &self,
        c: &Comparison,
        _color: bool,
    ) -> Option<Result<String, ExportError>> {
        Some(Ok(render_comparison(c)))
    }
}
