//! The page's first screen: one line saying what was compared, then the answer — the
//! decision matrix ([`super::matrix`]) beside the forest plot of the same
//! comparisons — before any legend or warning.

use std::fmt::Write;

use super::charts::forest::forest;
use super::escape::esc;
use super::matrix::{self, Matrix, Role};
use crate::report::export::text::header::{date, runs};
use crate::report::model::report::Report;

/// What was compared, in one line: targets, workloads, runs, data set, file systems, host
/// and date.
pub fn compared(r: &Report, m: &Matrix) -> String {
    let named = |role: Role| -> Vec<String> {
        m.columns
            .iter()
            .filter(|c| c.role == role)
            .map(|c| c.target.clone())
            .collect()
    };
    let mut targets = format!("{} (baseline)", r.baseline);
    for t in named(Role::Candidate) {
        let _ = write!(targets, ", {t}");
    }
    let refs = named(Role::Reference);
    if !refs.is_empty() {
        let _ = write!(targets, "; {} (reference, RAM)", refs.join(", "));
    }
    let mut workloads: Vec<&str> = Vec::new();
    for s in &r.sections {
        if !workloads.contains(&s.workload.as_str()) {
            workloads.push(&s.workload);
        }
    }
    let mut parts = vec![
        format!("Compared {targets}"),
        format!("on {}", workloads.join(", ")),
    ];
    parts.extend(runs(r));
    if let Some(size) = crate::report::model::scales::size_line(&r.sizes, r.host.mem_total_bytes) {
        parts.push(format!("data set {size}"));
    }
    parts.extend(r.file_systems.clone());
    parts.extend(r.cpus.clone());
    parts.push(
        crate::report::export::text::notes::host_line(r, 100_000)
            .trim_end()
            .to_string(),
    );
    parts.extend(date(r.host.started_unix));
    parts.join(" · ")
}

/// The legend under the matrix: the marks, colours and arrows.
fn matrix_legend(h: &mut String, r: &Report) {
    let _ = write!(
        h,
        "<p class=\"key\">Each cell: the key metric against {b} (its geometric mean for {b} itself). \
         <span class=\"better\">✓ better</span> <span class=\"worse\">✗ worse</span> \
         <span class=\"equivalent\">= equivalent (within ±{m} %)</span> \
         <span class=\"undecided\">undecided: neither yet</span> · ↑ higher is better, ↓ lower \
         is better.</p>",
        b = esc(&r.baseline),
        m = r.margin_pct
    );
}

fn table(h: &mut String, m: &Matrix) {
    h.push_str("<table class=\"matrix\"><thead><tr><th>workload</th><th>key metric</th>");
    let mut first_ref = true;
    let col_class: Vec<&str> = m
        .columns
        .iter()
        .map(|c| match c.role {
            Role::Reference if std::mem::take(&mut first_ref) => "ref ref1",
            Role::Reference => "ref",
            _ => "",
        })
        .collect();
    for (c, cls) in m.columns.iter().zip(&col_class) {
        let role = match c.role {
            Role::Baseline => "baseline",
            Role::Reference => "reference (RAM)",
            Role::Candidate => "",
        };
        let _ = write!(h, "<th class=\"{cls}\">{}", esc(&c.target));
        if !role.is_empty() {
            let _ = write!(h, "<br><small>{role}</small>");
        }
        h.push_str("</th>");
    }
    h.push_str("</tr></thead><tbody>");
    for row in &m.rows {
        let _ = write!(
            h,
            "<tr><th>{}</th><td class=\"metric\">{}</td>",
            esc(&row.label()),
            esc(&row.metric)
        );
        for (cell, cls) in row.cells.iter().zip(&col_class) {
            let _ = write!(
                h,
                "<td class=\"cell {} {cls}\" title=\"{}\">{}</td>",
                cell.class(),
                esc(&cell.title),
                esc(&cell.text)
            );
        }
        h.push_str("</tr>");
    }
    h.push_str("</tbody></table>");
}

/// Matrices with more rows than this fold their forest plot.
const FOLD_FOREST_ROWS: usize = 40;

/// The first screen: the compared line, the matrix and the forest plot.
pub(super) fn render(h: &mut String, r: &Report) {
    let m = matrix::build(r);
    let _ = write!(h, "<p id=\"compared\">{}.</p>", esc(&compared(r, &m)));
    if m.rows.is_empty() {
        return;
    }
    h.push_str("<section id=\"answer\"><div class=\"answer\"><div class=\"matrix-box scroll\">");
    table(h, &m);
    h.push_str("</div>");
    let svg = forest(&m);
    match &svg {
        // A study's forest (a line per comparison: 576 in a five-target fio sweep) is
        // twenty thousand pixels tall; the matrix beside it says the same per cell.
        Some(svg) if m.rows.len() > FOLD_FOREST_ROWS => {
            let _ = write!(
                h,
                "<div class=\"forest-box\"><details><summary>Show the forest plot of the {} points \
                 (every difference with its interval)</summary>{svg}</details></div>",
                m.rows.len()
            );
        }
        Some(svg) => {
            let _ = write!(h, "<div class=\"forest-box\">{svg}</div>");
        }
        None => {}
    }
    h.push_str("</div>");
    matrix_legend(h, r);
    if svg.is_some() {
        let _ = write!(
            h,
            "<p class=\"key\">In the plot, a dot is the difference and its line the 95 % \
             interval (adjusted for the run's other calls when called); a hollow dot is undecided \
             or untested. An arrowhead at an edge: the interval or the value goes on beyond the axis \
             (unbounded below −100 %, or off scale: the figure at the right says where). Dashed \
             across the axis: ±?, an interval that says nothing (2 runs, or wider than ±100 %). \
             The references (RAM) are set apart and never ranked.</p>"
        );
    }
    h.push_str("</section>");
}

#[cfg(test)]
mod tests {
    use super::date;

    #[test]
    fn the_date_reads_in_minutes_utc() {
        assert_eq!(
            date(1_800_000_000.0).as_deref(),
            Some("2027-01-15 08:00 UTC")
        );
        assert_eq!(date(0.0), None);
    }
}
