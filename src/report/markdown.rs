//! `summary.md`: the terminal tables as Markdown, for pasting into an issue or a wiki.

use super::format::{header, legend, row_cells, value};
use super::model::Report;

pub fn render(r: &Report) -> String {
    let mut out = String::from("# fsarena results\n\n");
    if let Some(why) = &r.incomplete {
        out.push_str(&format!("> **Incomplete:** {why}\n\n"));
    }
    out.push_str(&format!(
        "Kernel {}, {} × {}, fsarena {}. Fresh file system per repetition; baseline **{}**; \
         95 % intervals (FCR-adjusted when called); {}.\n",
        r.host.kernel,
        r.host.cpus,
        r.host.cpu_model,
        r.host.fsarena_version,
        r.baseline,
        legend(r.margin_pct)
    ));
    if let Some(sizes) = &r.file_systems {
        out.push_str(&format!("\n{}.\n", sizes.replacen("file", "File", 1)));
    }
    if let Some(size) = super::scales::size_line(&r.sizes, r.host.mem_total_bytes) {
        out.push_str(&format!("\nData set: {size}.\n"));
    }
    if let Some(s) = super::notes::steadiness_text(r) {
        out.push_str(&format!("\n{s}.\n"));
    }
    if let Some(s) = &r.set_aside {
        out.push_str(&format!("\n{}.\n", super::set_aside::line(s)));
    }
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
                        row.mean(col)
                            .map(|v| value(col, v))
                            .unwrap_or_else(|| "—".into())
                    ))
                    .collect::<String>()
            ));
        }
    }
    if let Some(c) = &r.scale_check {
        out.push_str("\n## Across scales\n\n");
        for line in super::scales::check_lines(c) {
            out.push_str(&format!("- {line}\n"));
        }
    }
    out
}
