//! Line charts: one line per target, with a legend. The x axis is linear from the data's
//! first point, linear from 0 (time series: a phase starts at 0 s), or log2-spaced (queue
//! depths, thread counts). Tick labels are thinned so none overlaps its neighbour.

use std::fmt::Write;

use super::super::escape::esc;
use super::frame::{
    axes, color, header, legend, text_width, tick_label, tick_step, ticks, YAxis, B, H, L, LEGEND,
    R, W,
};

/// One line: name, colour index, points (x, y).
pub struct Line {
    pub name: String,
    pub color: usize,
    pub points: Vec<(f64, f64)>,
}

/// How x values are placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XAxis {
    /// From the smallest x to the largest.
    Linear,
    /// From 0 to the largest x (seconds into a phase).
    FromZero,
    /// log2-spaced, labelled at the measured x values (powers of two read as such).
    Log2,
}

/// A line chart; empty when no line has a point.
pub fn lines(title: &str, x_label: &str, y_label: &str, xa: XAxis, data: &[Line]) -> String {
    let log = xa == XAxis::Log2;
    let pos = |x: f64| if log { x.max(1e-9).log2() } else { x };
    let (mut xmin, mut xmax) = (f64::INFINITY, f64::NEG_INFINITY);
    for &(x, _) in data.iter().flat_map(|l| l.points.iter()) {
        xmin = xmin.min(pos(x));
        xmax = xmax.max(pos(x));
    }
    if !xmin.is_finite() {
        return String::new();
    }
    if xa == XAxis::FromZero {
        xmin = xmin.min(0.0);
    }
    if xmax <= xmin {
        xmax = xmin + 1.0;
    }
    let ax = YAxis::covering(data.iter().flat_map(|l| l.points.iter().map(|p| p.1)));
    let right = W - R - LEGEND;
    let x = |v: f64| L + (right - L) * (pos(v) - xmin) / (xmax - xmin);
    let mut s = header(title, "lines");
    axes(&mut s, &ax, right, y_label);
    let _ = write!(
        s,
        r##"<line x1="{L}" x2="{right:.1}" y1="{y:.1}" y2="{y:.1}" stroke="#333"/>"##,
        y = H - B
    );
    for (v, text) in x_ticks(data, xa, xmin, xmax, x) {
        let _ = write!(
            s,
            r#"<text class="xtick" x="{:.1}" y="{:.1}" font-size="11" text-anchor="middle">{text}</text>"#,
            x(v),
            H - B + 16.0,
        );
    }
    let _ = write!(
        s,
        r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle">{}</text>"#,
        (L + right) / 2.0,
        H - B + 40.0,
        esc(x_label)
    );
    for l in data {
        let mut d = String::new();
        for (j, &(px, py)) in l.points.iter().enumerate() {
            let _ = write!(
                d,
                "{}{:.1},{:.1}",
                if j == 0 { "M" } else { "L" },
                x(px),
                ax.y(py)
            );
        }
        let _ = write!(
            s,
            r#"<path class="line" d="{d}" stroke="{}" stroke-width="2" fill="none"><title>{}</title></path>"#,
            color(l.color),
            esc(&l.name)
        );
        // Dots only where they stay apart: on a dense series they would hide the line.
        if l.points.len() <= 40 {
            for &(px, py) in &l.points {
                let _ = write!(
                    s,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{}"/>"#,
                    x(px),
                    ax.y(py),
                    color(l.color)
                );
            }
        }
    }
    let entries: Vec<(String, usize)> = data.iter().map(|l| (l.name.clone(), l.color)).collect();
    legend(&mut s, &entries);
    s.push_str("</svg>");
    s
}

/// The x ticks and their labels. On a log2 axis, the measured values (queue depths) with
/// any that would crowd their left neighbour left out; on a linear axis, nice round ticks
/// (about five), labelled to the precision of their step.
fn x_ticks(
    data: &[Line],
    xa: XAxis,
    xmin: f64,
    xmax: f64,
    x: impl Fn(f64) -> f64,
) -> Vec<(f64, String)> {
    let candidates: Vec<(f64, String)> = if xa == XAxis::Log2 {
        let mut xs: Vec<f64> = data
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.0))
            .collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        xs.into_iter()
            .map(|v| {
                let whole = v.fract() == 0.0 && v.abs() < 1e4;
                (
                    v,
                    if whole {
                        format!("{v:.0}")
                    } else {
                        crate::report::model::format::sig3(v)
                    },
                )
            })
            .collect()
    } else {
        let step = tick_step(xmin, xmax, 5);
        ticks(xmin, xmax, 5)
            .into_iter()
            .filter(|v| *v >= xmin - step * 1e-6 && *v <= xmax + step * 1e-6)
            .map(|v| (v, tick_label(v, step)))
            .collect()
    };
    let mut out: Vec<(f64, String)> = Vec::new();
    let mut last_right = f64::NEG_INFINITY;
    for (v, t) in candidates {
        let half = text_width(&t, 11.0) / 2.0;
        if x(v) - half >= last_right + 4.0 {
            last_right = x(v) + half;
            out.push((v, t));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(points: Vec<(f64, f64)>) -> Line {
        Line {
            name: "xfs".into(),
            color: 2,
            points,
        }
    }

    fn xtick_labels(svg: &str) -> Vec<String> {
        svg.split("class=\"xtick\"")
            .skip(1)
            .map(|p| {
                p.split('>')
                    .nth(1)
                    .unwrap()
                    .split('<')
                    .next()
                    .unwrap()
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn a_line_per_series_in_its_colour() {
        let l = lines(
            "t",
            "queue depth",
            "IOPS",
            XAxis::Log2,
            &[line(vec![(1.0, 5.0), (32.0, 50.0)])],
        );
        assert_eq!(l.matches("class=\"line\"").count(), 1);
        assert!(l.contains(super::super::frame::PALETTE[2]));
        assert_eq!(xtick_labels(&l), ["1", "32"]);
    }

    /// Regression (issue 14): a series sampled every 0.2 s was labelled at every sample
    /// ("0.200 0.400 …", overlapping) and its axis began at the first sample, not at 0.
    #[test]
    fn a_time_axis_starts_at_zero_with_few_round_labels() {
        let pts: Vec<(f64, f64)> = (1..=11).map(|i| (i as f64 * 0.2, 1.0)).collect();
        let l = lines("t", "seconds", "MB/s", XAxis::FromZero, &[line(pts)]);
        assert_eq!(xtick_labels(&l), ["0", "0.5", "1.0", "1.5", "2.0"]);
    }

    #[test]
    fn crowded_log_labels_are_thinned() {
        let pts: Vec<(f64, f64)> = (0..40).map(|i| (1000.0 + i as f64, 1.0)).collect();
        let l = lines("t", "x", "y", XAxis::Log2, &[line(pts)]);
        let labels = xtick_labels(&l);
        assert!(labels.len() < 40 && labels.len() >= 2, "{labels:?}");
    }
}
