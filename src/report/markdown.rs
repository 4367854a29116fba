//! `summary.md`: the terminal tables as Markdown, for pasting into an issue or a wiki.

use super::format::{header, legend, row_cells, value};
use super::model::Report;

pub fn render(r: &Report) -> String {
    let mut out = String::from("# fsarena results\n\n");
    if let Some(why) = &r.incomplete {
        out.push_str(&format!("> **Incomplete:** {why}\n\n"));
    }
    out.push_str(&super::header::markdown(r));
    out.push('\n');
    out.push_str(&format!(
        "Baseline **{}**; 95 % intervals (FCR-adjusted when called); {}.\n",
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
    }
    if s_wide(r) {
        out.push_str(&format!("\n{}\n", super::format::WIDE_NOTE));
    }
    if let Some(c) = &r.scale_check {
        out.push_str("\n## Across scales\n\n");
        for line in super::scales::check_lines(c) {
            out.push_str(&format!("- {line}\n"));
        }
    }
    out
}

/// Whether any table left an interval out as meaningless ([`super::format::WIDE_NOTE`]).
fn s_wide(r: &Report) -> bool {
    r.sections.iter().any(|s| {
        s.rows
            .iter()
            .any(|row| row_cells(row, &s.key_metric, &r.baseline).wide)
    })
}
