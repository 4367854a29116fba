//! The terminal report: per workload point, targets as rows. Colour on a TTY (unless
//! NO_COLOR), plain text otherwise, so logs and snapshots stay clean.

use comfy_table::presets::{ASCII_MARKDOWN, UTF8_FULL_CONDENSED};
use comfy_table::{Attribute, Cell, Color, Table};

use super::format::{header, legend, row_cells, value};
use super::model::{Mark, Report, Section};

/// Renders the whole report as text.
pub fn render(r: &Report, color: bool) -> String {
    let mut out = String::new();
    if let Some(why) = &r.incomplete {
        out.push_str(&format!("INCOMPLETE: {why}\n\n"));
    }
    out.push_str(&format!(
        "fresh file system per repetition; baseline {}; 95 % intervals; {}\n",
        r.baseline,
        legend(r.margin_pct)
    ));
    for s in &r.sections {
        out.push('\n');
        out.push_str(&section(s, &r.baseline, color));
    }
    for (n, why) in &r.skipped_lines {
        out.push_str(&format!("results.jsonl line {n} skipped: {why}\n"));
    }
    out
}

fn section(s: &Section, baseline: &str, color: bool) -> String {
    let mut t = Table::new();
    t.load_preset(if color {
        UTF8_FULL_CONDENSED
    } else {
        ASCII_MARKDOWN
    });
    if color {
        t.enforce_styling();
    } else {
        t.force_no_tty();
    }
    let key = &s.key_metric;
    let mut head = vec![
        Cell::new("target"),
        Cell::new("runs"),
        Cell::new(format!(
            "{} ({})",
            header(key),
            if s.higher_is_better {
                "higher is better"
            } else {
                "lower is better"
            }
        )),
        Cell::new("CV"),
        Cell::new(format!("vs {baseline}")),
    ];
    head.extend(
        s.columns
            .iter()
            .filter(|c| *c != key)
            .map(|c| Cell::new(header(c))),
    );
    t.set_header(head);
    for row in &s.rows {
        let c = row_cells(row, key, baseline);
        let mut key_cell = Cell::new(format!("{}{}", c.key, c.mark));
        if color {
            key_cell = match row.mark {
                Some(Mark::Best) => key_cell.fg(Color::Green).add_attribute(Attribute::Bold),
                Some(Mark::Worst) => key_cell.fg(Color::Red),
                None => key_cell,
            };
        }
        let mut cells = vec![
            Cell::new(&c.target),
            Cell::new(c.runs),
            key_cell,
            Cell::new(c.cv),
            Cell::new(c.vs),
        ];
        for col in s.columns.iter().filter(|c| *c != key) {
            cells.push(Cell::new(
                row.mean(col)
                    .map(|v| value(col, v))
                    .unwrap_or_else(|| "—".into()),
            ));
        }
        t.add_row(cells);
    }
    let mut out = format!("{} — {}\n{t}\n", s.title(), s.decision);
    for why in s.rows.iter().filter_map(|r| r.why.as_ref()) {
        out.push_str(&format!("  why: {why}\n"));
    }
    for row in &s.rows {
        for (rep, status, err) in &row.failed {
            out.push_str(&format!(
                "  {} repetition {}: {}{}\n",
                row.target,
                rep + 1,
                status.as_str(),
                err.as_ref().map(|e| format!(" ({e})")).unwrap_or_default()
            ));
        }
        for w in &row.warnings {
            out.push_str(&format!("  {}: {w}\n", row.target));
        }
    }
    out
}
