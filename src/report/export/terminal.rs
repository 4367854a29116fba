//! The terminal report: per workload point, targets as rows, fitted to the output width
//! ([`super::text::width::output_width`]). Secondary columns are left out, rightmost first, until a
//! table fits; the target, the key metric with its interval, the decision and the
//! amplification columns never are (they fold instead). Warnings, the columns left out, the
//! overall ranking and the host are said once, after the tables. Colour only when asked
//! (`--color`, which honours NO_COLOR and a non-terminal stdout), so logs stay clean.

use comfy_table::{Attribute, Cell, Color};

use super::exporter::{Destination, ExportError, Exporter};
use super::text::fit::{fit, Col};
use super::text::notes;
use super::text::width::{output_width, wrap};
use crate::report::model::compare::{
    legend as comparison_legend, p_header, CompareRow, Comparison,
};
use crate::report::model::format::{header, legend, row_cells, value, INTERVALS, WIDE_NOTE};
use crate::report::model::report::Report;
use crate::report::model::section::{Mark, Section};
use crate::stats::Decision;

/// Renders the whole report at the output width.
pub fn render(r: &Report, color: bool) -> String {
    render_width(r, color, output_width())
}

/// The headline's statement of the data sets' sizes, and the scale check (with a blank line
/// before it), each wrapped to `width`; empty when the run has none.
fn scale_text(r: &Report, width: usize) -> (String, String) {
    let size = crate::report::model::scales::size_line(&r.sizes, r.host.mem_total_bytes)
        .map(|s| wrap(&s, width, "", "  "))
        .unwrap_or_default();
    let check = r.scale_check.as_ref().map_or_else(String::new, |c| {
        let lines = crate::report::model::scales::check_lines(c);
        let wrapped: Vec<String> = lines.iter().map(|l| wrap(l, width, "", "  ")).collect();
        format!("\n{}", wrapped.concat())
    });
    (size, check)
}

/// One wrapped line per aged image: what aging did and the layout it left.
fn aging_text(r: &Report, width: usize) -> String {
    r.aging
        .iter()
        .map(|a| {
            let line = format!(
                "aging {}: {}",
                a.target,
                crate::provision::aging::summary(&a.aging)
            );
            wrap(&line, width, "", "  ")
        })
        .collect()
}

/// Renders the whole report for a terminal `width` columns wide.
pub fn render_width(r: &Report, color: bool, width: usize) -> String {
    let mut out = String::new();
    if let Some(why) = &r.incomplete {
        out.push_str(&wrap(&format!("INCOMPLETE: {why}"), width, "", "  "));
        out.push('\n');
    }
    let start = if r.condition == "fresh" {
        "fresh file system per repetition".to_string()
    } else {
        format!(
            "file systems {} (one aged image per target, a copy per repetition)",
            r.condition
        )
    };
    let mut intro = format!(
        "{start}; baseline {}; {INTERVALS}; {}",
        r.baseline,
        legend(r)
    );
    if let Some(sizes) = &r.file_systems {
        intro.push_str(&format!("; {sizes}"));
    }
    if let Some(cpus) = &r.cpus {
        intro.push_str(&format!("; {cpus}"));
    }
    if r.sections
        .iter()
        .any(|s| s.rows.iter().any(|r| r.reference))
    {
        intro.push_str("; (RAM) = memory file system, a reference, never ranked");
    }
    out.push_str(&wrap(&intro, width, "", ""));
    out.push_str(&aging_text(r, width));
    out.push_str(&scale_text(r, width).0);
    let mut hidden: Vec<String> = Vec::new();
    let mut wide = false;
    for s in &r.sections {
        out.push('\n');
        let (text, left_out, w) = section(s, &r.baseline, color, width);
        out.push_str(&text);
        wide |= w;
        for h in left_out {
            if !hidden.contains(&h) {
                hidden.push(h);
            }
        }
    }
    if !hidden.is_empty() || wide {
        out.push('\n');
    }
    if !hidden.is_empty() {
        out.push_str(&wrap(
            &format!(
                "left out to fit {width} columns: {} (widen the terminal or set COLUMNS; every \
                 metric is in --format csv or json)",
                hidden.join(", ")
            ),
            width,
            "",
            "  ",
        ));
    }
    if wide {
        out.push_str(&wrap(WIDE_NOTE, width, "", "  "));
    }
    out.push_str(&scale_text(r, width).1);
    out.push_str(&closing(r, width));
    out
}

/// What follows the tables: the warnings (a line each), the lines skipped, the host and
/// its steadiness, and the answer last, where the eye lands when the run ends: the ranking.
fn closing(r: &Report, width: usize) -> String {
    let mut out = notes::warnings(r, width);
    for (n, why) in &r.skipped_lines {
        out.push_str(&wrap(
            &format!("results.jsonl line {n} skipped: {why}"),
            width,
            "",
            "  ",
        ));
    }
    out.push('\n');
    out.push_str(&notes::host_line(r, width));
    for s in notes::machine_lines(r) {
        out.push_str(&wrap(&s, width, "", "  "));
    }
    out.push_str(&notes::ranking(r, width));
    out
}

/// The columns of a section, in display order, with the ones no row has a value for left
/// out (a workload that wrote nothing has no amplification to show). Secondary columns are
/// ranked to go rightmost first, the amplifications after the other extras, then CV and the
/// run counts. The answer never goes: target, key metric, the difference against the
/// baseline and the decision stay, and fold if they must (issue 60: at 100 columns 36 of a
/// file-management study's tables had kept their amplifications and lost "vs ext4").
fn columns(s: &Section, baseline: &str, color: bool) -> (Vec<Col>, bool) {
    let key = &s.key_metric;
    let cells: Vec<_> = s.rows.iter().map(|r| row_cells(r, key, baseline)).collect();
    let wide = cells.iter().any(|c| c.wide);
    let extras: Vec<&String> = s
        .columns
        .iter()
        .filter(|c| *c != key && s.rows.iter().any(|r| r.shown_value(c).is_some()))
        .collect();
    let n_extra = extras.len();
    let pick =
        |f: fn(&crate::report::model::format::RowCells) -> String| cells.iter().map(f).collect();
    let mut cols = vec![
        Col::new(
            "target",
            cells
                .iter()
                .map(|c| c.target.replace("(reference, RAM)", "(RAM)"))
                .collect(),
        ),
        Col::new("runs", pick(|c| c.runs.clone()))
            .numeric()
            .drop_rank(Some(n_extra + 1)),
        key_col(s, &cells, color),
        Col::new("CV", pick(|c| c.cv.clone()))
            .numeric()
            .drop_rank(Some(n_extra)),
        Col::new(format!("vs {baseline}"), pick(|c| c.pct.clone())).numeric(),
        decision_col(&cells),
    ];
    // A column of dashes says nothing (one run has no CV and no comparison).
    let vs = format!("vs {baseline}");
    cols.retain(|c| {
        (c.drop_rank.is_none() && c.header != vs)
            || c.cells
                .iter()
                .any(|x| !matches!(x.content().as_str(), "" | "—"))
    });
    cols.extend(extra_cols(s, &extras));
    (cols, wide)
}

/// The key metric's column, the best row in bold green and the worst in red when colour is
/// on; it never drops.
fn key_col(s: &Section, cells: &[crate::report::model::format::RowCells], color: bool) -> Col {
    let key_cells = s
        .rows
        .iter()
        .zip(cells)
        .map(|(row, c)| {
            let cell = Cell::new(format!("{}{}", c.key, c.mark));
            match row.mark {
                Some(Mark::Best) if color => cell.fg(Color::Green).add_attribute(Attribute::Bold),
                Some(Mark::Worst) if color => cell.fg(Color::Red),
                _ => cell,
            }
        })
        .collect();
    Col {
        header: header(&s.key_metric),
        cells: key_cells,
        drop_rank: None,
        numeric: true,
        shorter: Vec::new(),
    }
}

/// The secondary columns, each ranked to drop when the width runs out: the other extras
/// go first (rightmost first), then the amplifications.
fn extra_cols(s: &Section, extras: &[&String]) -> Vec<Col> {
    let n_extra = extras.len();
    let n_amp = extras
        .iter()
        .filter(|c| c.ends_with("amplification"))
        .count();
    let (mut other_rank, mut amp_rank) = (n_extra - n_amp, n_extra);
    let mut cols = Vec::new();
    for c in extras {
        let amplification = c.ends_with("amplification");
        let rank = if amplification {
            amp_rank -= 1;
            amp_rank
        } else {
            other_rank -= 1;
            other_rank
        };
        let values = s
            .rows
            .iter()
            .map(|r| {
                r.shown_value(c)
                    .map(|v| value(c, v))
                    .unwrap_or_else(|| "—".into())
            })
            .collect();
        cols.push(Col::new(header(c), values).numeric().drop_rank(Some(rank)));
    }
    cols
}

/// The decision column, with its shorter forms for a narrow terminal.
fn decision_col(cells: &[crate::report::model::format::RowCells]) -> Col {
    let form = |f: fn(&crate::report::model::format::RowCells) -> &String| {
        cells.iter().map(|c| f(c).clone()).collect()
    };
    Col::new("decision", form(|c| &c.decision))
        .or_shorter(form(|c| &c.decision_shorter[0]))
        .or_shorter(form(|c| &c.decision_shorter[1]))
}

/// A section: title, decision, the fitted table and the lines about its rows. Returns the
/// text, the headers it left out, and whether an interval was left out as meaningless.
fn section(s: &Section, baseline: &str, color: bool, width: usize) -> (String, Vec<String>, bool) {
    let (cols, wide) = columns(s, baseline, color);
    let (lines, left_out) = fit(&cols, color, width);
    let direction = if s.higher_is_better {
        "higher is better"
    } else {
        "lower is better"
    };
    let mut out = wrap(
        &format!(
            "{} — {} ({direction}): {}",
            s.title(),
            header(&s.key_metric),
            s.decision
        ),
        width,
        "",
        "  ",
    );
    for line in lines {
        out.push_str(&line);
        out.push('\n');
    }
    for why in s.rows.iter().filter_map(|r| r.why.as_ref()) {
        out.push_str(&wrap(&format!("why: {why}"), width, "  ", "    "));
    }
    if let Some(line) = s.in_turn_line(baseline) {
        out.push_str(&wrap(&line, width, "  ", "    "));
    }
    for row in &s.rows {
        if let Some(stop) = &row.budget_stop {
            let line = format!("{}: {}", row.target, stop.words);
            out.push_str(&wrap(&line, width, "  ", "    "));
        }
    }
    for row in &s.rows {
        for (rep, status, err) in &row.failed {
            let line = format!(
                "{} repetition {}: {}",
                row.target,
                rep + 1,
                status.with_error(err.as_deref())
            );
            out.push_str(&wrap(&line, width, "  ", "    "));
        }
    }
    (out, left_out, wide)
}

/// The comparison as a table fitted to `width` columns.
pub fn render_comparison(c: &Comparison, color: bool, width: usize) -> String {
    let col = |h: &str, f: &dyn Fn(&CompareRow) -> String| {
        Col::new(h, c.rows.iter().map(f).collect::<Vec<_>>())
    };
    // The thread count is part of the point when the runs had several: it cannot be left
    // out with a column then.
    let multi = c.rows.iter().any(|r| r.threads != c.rows[0].threads);
    let cols = vec![
        col("workload", &|r| {
            if multi {
                format!("{}, {} thr", r.point(), r.threads)
            } else {
                r.point()
            }
        }),
        col("threads", &|r| r.threads.to_string())
            .numeric()
            .drop_rank(Some(2)),
        col("target", &|r| r.target.clone()),
        col("metric", &|r| header(&r.metric)).drop_rank(Some(1)),
        col("A", &|r| r.a_text.clone()).numeric(),
        col("B", &|r| r.b_text.clone()).numeric(),
        col("B vs A", &|r| {
            r.pct_diff.map(|p| format!("{p:+.1} %")).unwrap_or_default()
        })
        .numeric(),
        col("decision", &|r| r.decision_text()),
        col(p_header(c), &|r| {
            r.p_adjusted.map(|p| format!("{p:.3}")).unwrap_or_default()
        })
        .numeric()
        .drop_rank(Some(0)),
    ];
    let (lines, left_out) = fit(&cols, color, width);
    let mut out = wrap(
        &format!("A = {} (kernel {}, {})", c.a, c.kernel_a, c.condition_a),
        width,
        "",
        "  ",
    );
    out.push_str(&wrap(
        &format!("B = {} (kernel {}, {})", c.b, c.kernel_b, c.condition_b),
        width,
        "",
        "  ",
    ));
    let mut legend = comparison_legend(c);
    if c.rows
        .iter()
        .any(|r| r.decision == Some(Decision::Undecided))
    {
        legend.push_str("; ~N more = runs per target that would likely decide it");
    }
    out.push_str(&wrap(&legend, width, "", ""));
    for n in c.host_notes() {
        out.push_str(&wrap(&format!("note: {n}"), width, "", "  "));
    }
    for l in lines {
        out.push_str(&l);
        out.push('\n');
    }
    out.push_str(&missing_lines(c, width));
    if !left_out.is_empty() {
        out.push_str(&wrap(
            &format!(
                "left out to fit {width} columns: {} (--format csv or json has them)",
                left_out.join(", ")
            ),
            width,
            "",
            "  ",
        ));
    }
    out
}

/// Below the table, the points A measured that B has no figure for, one wrapped line each.
fn missing_lines(c: &Comparison, width: usize) -> String {
    c.missing
        .iter()
        .map(|m| wrap(&format!("no figure in B: {}", m.line()), width, "", "  "))
        .collect()
}

/// `--format table`: the report on the terminal, which writes no file; on stdout it ends by
/// naming the HTML report beside the results.
pub struct Terminal;

impl Exporter for Terminal {
    fn name(&self) -> &'static str {
        "table"
    }

    fn help(&self) -> Option<&'static str> {
        Some("Tables fitted to the terminal width (COLUMNS, else the terminal's, else 100)")
    }

    fn serialize(&self, r: &Report, to: Destination) -> Result<String, ExportError> {
        Ok(match to {
            Destination::File => render(r, false),
            Destination::Stdout { color, dir } => format!(
                "{}\nreport: {}\n",
                render(r, color),
                dir.join(super::html::FILE).display()
            ),
        })
    }

    fn serialize_comparison(
        &self,
        c: &Comparison,
        color: bool,
    ) -> Option<Result<String, ExportError>> {
        Some(Ok(render_comparison(c, color, output_width())))
    }
}
