//! The forest plot: every comparison of the decision matrix as its difference against the
//! baseline with its 95 % interval, on one shared log-ratio axis, grouped by workload, the
//! memory references in a group of their own at the bottom. A log axis because the
//! differences are ratios: −50 % and +100 % are the same distance from 0, and a target 20×
//! faster does not squeeze every other comparison into a line.
//!
//! The axis covers the disk targets' differences and intervals (at least −20 % to +25 %,
//! at most 1/100× to 100×); whatever lies beyond it — a reference far off, an interval
//! reaching below −100 % on the difference scale — ends in an arrowhead at the edge, and
//! every line's own figure is written beside it. An interval that says nothing (`±?`) is a
//! dashed line across the whole axis.

use std::fmt::Write;

use super::super::escape::esc;
use super::frame::text_width;
use crate::report::export::html::matrix::{Interval, Matrix, Role, State};
use crate::stats::Decision;

const W: f64 = 600.0;
/// Where the plot area starts and ends; target labels left of it, figures right of it.
const PL: f64 = 176.0;
const PR: f64 = 506.0;
const TOP: f64 = 30.0;
const ROW: f64 = 18.0;
const GROUP: f64 = 20.0;
const FONT: f64 = 11.0;
/// The smallest a one-line label is shrunk to: a longer one ("copy [from-outside], 4
/// threads · btrfs-nodatasum") wraps onto more lines in a taller row instead of shrinking to
/// an unreadable 6 px.
const MIN_FONT: f64 = 9.0;
/// The width the labels have, left of the plot area.
const LABEL_W: f64 = PL - 14.0;
/// What each line of a wrapped label adds to its row's height.
const WRAP: f64 = 10.0;
/// The widest the axis goes, as ln of the ratio: 1/100× to 100×.
const LIMIT: f64 = 4.605_170_185_988_091;

/// The decision colours (Okabe–Ito, readable with every common colour-vision deficiency):
/// blue and orange for better and worse, greys for the rest, none of them a target's.
pub fn decision_color(state: State) -> &'static str {
    match state {
        State::Decided(Decision::Better) => "#0072b2",
        State::Decided(Decision::Worse) => "#d55e00",
        State::Decided(Decision::Equivalent) => "#555555",
        _ => "#999999",
    }
}

/// One line of the plot.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub label: String,
    pub pct: f64,
    pub interval: Interval,
    pub state: State,
    pub text: String,
    pub title: String,
}

/// The entries of a matrix in groups: one per workload (disk targets), then one of every
/// reference's comparisons.
pub fn groups(m: &Matrix) -> Vec<(String, Vec<Entry>)> {
    let mut out: Vec<(String, Vec<Entry>)> = Vec::new();
    let mut refs: Vec<Entry> = Vec::new();
    for row in &m.rows {
        for (col, cell) in m.columns.iter().zip(&row.cells) {
            let Some(pct) = cell.pct.filter(|p| p.is_finite()) else {
                continue;
            };
            let point = row.point_text();
            let mut e = Entry {
                label: if point.is_empty() {
                    col.target.clone()
                } else {
                    format!("{point} · {}", col.target)
                },
                pct,
                interval: cell.interval,
                state: cell.state,
                text: cell.text.clone(),
                title: cell.title.clone(),
            };
            if col.role == Role::Reference {
                e.label = format!("{} · {}", row.label(), col.target);
                refs.push(e);
                continue;
            }
            match out.iter_mut().find(|(w, _)| *w == row.workload) {
                Some((_, v)) => v.push(e),
                None => out.push((row.workload.clone(), vec![e])),
            }
        }
    }
    if !refs.is_empty() {
        out.push(("reference (RAM): not ranked".into(), refs));
    }
    out
}

/// ln(1 + pct/100), when the ratio is positive.
fn ln_ratio(pct: f64) -> Option<f64> {
    let r = 1.0 + pct / 100.0;
    (r > 0.0 && r.is_finite()).then(|| r.ln())
}

/// The shared axis, as ln of the ratio to the baseline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Axis {
    pub lo: f64,
    pub hi: f64,
}

impl Axis {
    /// Covers the disk targets' differences and bounded intervals, and 0.
    pub fn covering(groups: &[(String, Vec<Entry>)], references: usize) -> Axis {
        let disk = &groups[..groups.len().saturating_sub(references)];
        let (mut lo, mut hi) = (0.8f64.ln(), 1.25f64.ln());
        for e in disk.iter().flat_map(|(_, v)| v) {
            let mut ends = vec![e.pct];
            if let Interval::Bounded(a, b) = e.interval {
                ends.extend([a, b]);
            }
            for l in ends.into_iter().filter_map(ln_ratio) {
                lo = lo.min(l);
                hi = hi.max(l);
            }
        }
        let (lo, hi) = (lo.max(-LIMIT), hi.min(LIMIT));
        let pad = (hi - lo) * 0.04;
        Axis {
            lo: lo - pad,
            hi: hi + pad,
        }
    }

    /// The pixel column of a difference, unclamped; `None` below −100 %.
    pub fn x(&self, pct: f64) -> Option<f64> {
        ln_ratio(pct).map(|l| PL + (PR - PL) * (l - self.lo) / (self.hi - self.lo))
    }
}

/// A tick's label: "0", "-50 %", "+100 %".
pub fn tick_label(pct: f64) -> String {
    let p = if (pct - pct.round()).abs() < 0.05 {
        format!("{:+.0}", pct.round())
    } else {
        format!("{pct:+.1}")
    };
    if p == "+0" || p == "-0" {
        "0".into()
    } else {
        format!("{p} %")
    }
}

/// Ticks in % of the baseline, the roundest first, each kept when it is on the axis and its
/// label does not run into one already kept.
pub fn ticks(axis: &Axis) -> Vec<f64> {
    const RATIOS: [f64; 21] = [
        1.0, 0.5, 2.0, 0.1, 10.0, 0.01, 100.0, 0.2, 5.0, 0.02, 50.0, 0.05, 20.0, 0.75, 1.5, 0.8,
        1.25, 0.9, 1.1, 0.95, 1.05,
    ];
    let mut kept: Vec<(f64, f64, f64)> = Vec::new();
    for r in RATIOS {
        let pct = (r - 1.0) * 100.0;
        let Some(x) = axis.x(pct).filter(|x| (PL..=PR).contains(x)) else {
            continue;
        };
        let half = text_width(&tick_label(pct), FONT) / 2.0 + 5.0;
        if kept.iter().all(|&(_, a, b)| x + half < a || x - half > b) {
            kept.push((pct, x - half, x + half));
        }
    }
    let mut out: Vec<f64> = kept.into_iter().map(|k| k.0).collect();
    out.sort_by(f64::total_cmp);
    out
}

/// A small triangle at `x` pointing left (`dir` −1) or right (+1): the line goes on.
fn arrow(s: &mut String, x: f64, y: f64, dir: f64, color: &str) {
    let _ = write!(
        s,
        r#"<path class="open" d="M{x:.1},{y:.1}l{:.1},-4v8z" fill="{color}"/>"#,
        -dir * 7.0
    );
}

/// One entry's interval and point on row `y`.
fn entry(s: &mut String, axis: &Axis, e: &Entry, y: f64) {
    let color = decision_color(e.state);
    let clamp = |x: f64| x.clamp(PL, PR);
    match e.interval {
        Interval::Wide => {
            let _ = write!(
                s,
                r#"<line class="wide" x1="{PL}" x2="{PR}" y1="{y:.1}" y2="{y:.1}" stroke="{color}" stroke-width="1.5" stroke-dasharray="3 3"/>"#
            );
        }
        Interval::Bounded(lo, hi) => {
            let (a, b) = (axis.x(lo).unwrap_or(f64::NEG_INFINITY), axis.x(hi));
            let b = b.unwrap_or(f64::NEG_INFINITY);
            let _ = write!(
                s,
                r#"<line class="ci" x1="{:.1}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" stroke="{color}" stroke-width="2"/>"#,
                clamp(a),
                clamp(b)
            );
            for x in [a, b] {
                if !(PL..=PR).contains(&x) {
                    arrow(s, clamp(x), y, if x < PL { -1.0 } else { 1.0 }, color);
                } else {
                    let _ = write!(
                        s,
                        r#"<line class="cap" x1="{x:.1}" x2="{x:.1}" y1="{:.1}" y2="{:.1}" stroke="{color}" stroke-width="1.5"/>"#,
                        y - 4.0,
                        y + 4.0
                    );
                }
            }
        }
        Interval::None => {}
    }
    let x = axis.x(e.pct).unwrap_or(f64::NEG_INFINITY);
    if !(PL..=PR).contains(&x) {
        arrow(s, clamp(x), y, if x < PL { -1.0 } else { 1.0 }, color);
    } else {
        let filled = matches!(e.state, State::Decided(d) if d != Decision::Undecided);
        let _ = write!(
            s,
            r##"<circle class="point" cx="{x:.1}" cy="{y:.1}" r="4" fill="{}" stroke="{color}" stroke-width="1.5"/>"##,
            if filled { color } else { "#fff" }
        );
    }
}

/// An entry's label as its lines and their font size: one line at [`FONT`], shrunk to fit
/// down to [`MIN_FONT`]; below that, wrapped after its separators (" · " before the target,
/// ", " before the thread count) into as few lines as fit at [`MIN_FONT`], each as large as
/// [`FONT`] allows.
fn label_lines(label: &str) -> (Vec<String>, f64) {
    let fit = |lines: &[String]| {
        let widest = lines.iter().map(|l| text_width(l, 1.0)).fold(0.1, f64::max);
        FONT.min(LABEL_W / widest)
    };
    let one = vec![label.to_string()];
    if fit(&one) >= MIN_FONT {
        let size = fit(&one);
        return (one, size);
    }
    let mut lines: Vec<String> = Vec::new();
    for piece in pieces(label) {
        match lines.last_mut() {
            Some(l) if text_width(&format!("{l} {piece}"), MIN_FONT) <= LABEL_W => {
                l.push(' ');
                l.push_str(piece);
            }
            _ => lines.push(piece.to_string()),
        }
    }
    let size = fit(&lines);
    (lines, size)
}

/// `label` cut after each separator (" · ", ", "), the separator kept at the piece's end.
fn pieces(label: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = label;
    while let Some(at) = [" · ", ", "]
        .iter()
        .filter_map(|sep| rest.find(sep).map(|i| (i, sep.trim_end().len())))
        .min()
    {
        out.push(&rest[..at.0 + at.1]);
        rest = &rest[at.0 + at.1 + 1..];
    }
    out.push(rest);
    out
}

/// A label's `<text>` right-aligned at `x`, one `<tspan>` per line centred on row `cy`.
fn label_text(s: &mut String, lines: &[String], size: f64, x: f64, cy: f64) {
    let _ = write!(
        s,
        r#"<text class="label" x="{x:.1}" font-size="{size:.1}" text-anchor="end">"#
    );
    let first = cy + 4.0 - (lines.len() as f64 - 1.0) * size * 0.6;
    for (i, line) in lines.iter().enumerate() {
        let _ = write!(
            s,
            r#"<tspan x="{x:.1}" y="{:.1}">{}</tspan>"#,
            first + i as f64 * size * 1.2,
            esc(line)
        );
    }
    s.push_str("</text>");
}

/// The plot of a matrix; `None` when nothing was compared.
pub fn forest(m: &Matrix) -> Option<String> {
    let groups = groups(m);
    if groups.is_empty() {
        return None;
    }
    let references = usize::from(groups.last().is_some_and(|g| g.0.starts_with("reference")));
    let axis = Axis::covering(&groups, references);
    let labels: Vec<Vec<(Vec<String>, f64)>> = groups
        .iter()
        .map(|g| g.1.iter().map(|e| label_lines(&e.label)).collect())
        .collect();
    let row_h = |l: &(Vec<String>, f64)| ROW + WRAP * (l.0.len() as f64 - 1.0);
    let rows: f64 = labels.iter().flatten().map(row_h).sum();
    let bottom = TOP + GROUP * groups.len() as f64 + rows + 4.0;
    let h = bottom + 42.0;
    let title = format!(
        "Difference against {} (95 % interval, log scale)",
        m.baseline
    );
    let mut s = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart forest" viewBox="0 0 {W} {h:.0}" width="{W}" height="{h:.0}" role="img"><title>{t}</title><text class="title" x="{:.1}" y="18" font-size="13" font-weight="bold" text-anchor="middle">{t}</text>"#,
        W / 2.0,
        t = esc(&title)
    );
    for t in ticks(&axis) {
        let x = axis.x(t).unwrap_or(PL);
        let _ = write!(
            s,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{TOP}" y2="{bottom:.1}" stroke="{}"/><text class="xtick" x="{x:.1}" y="{:.1}" font-size="{FONT}" text-anchor="middle">{}</text>"##,
            if t == 0.0 { "#333" } else { "#e4e4e4" },
            bottom + 14.0,
            tick_label(t)
        );
    }
    let _ = write!(
        s,
        r#"<text class="axis" x="{:.1}" y="{:.1}" font-size="{FONT}" text-anchor="middle">key metric against {}: left lower, right higher</text>"#,
        (PL + PR) / 2.0,
        bottom + 32.0,
        esc(&m.baseline)
    );
    let mut y = TOP;
    for ((name, entries), group_labels) in groups.iter().zip(&labels) {
        let _ = write!(
            s,
            r#"<text class="group" x="6" y="{:.1}" font-size="{FONT}" font-weight="bold">{}</text>"#,
            y + 14.0,
            esc(name)
        );
        y += GROUP;
        for (e, label) in entries.iter().zip(group_labels) {
            let cy = y + row_h(label) / 2.0;
            let _ = write!(
                s,
                r#"<g class="entry {}"><title>{}</title>"#,
                crate::report::export::html::matrix::state_class(e.state),
                esc(&e.title),
            );
            label_text(&mut s, &label.0, label.1, PL - 8.0, cy);
            entry(&mut s, &axis, e, cy);
            let _ = write!(
                s,
                r#"<text class="val" x="{:.1}" y="{:.1}" font-size="{FONT}">{}</text></g>"#,
                PR + 8.0,
                cy + 4.0,
                esc(&e.text)
            );
            y += row_h(label);
        }
    }
    s.push_str("</svg>");
    Some(s)
}

#[cfg(test)]
mod tests;
