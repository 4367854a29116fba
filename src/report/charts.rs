//! Inline SVG charts for the HTML report: bars with 95 % error bars and line charts. Written
//! by hand (a few hundred lines) rather than through a plotting crate so the page stays
//! small, self-contained and styled like the rest of the report.

use std::fmt::Write;

/// The same colour for the same target everywhere (Tableau 10).
pub const PALETTE: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];

pub fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// "Nice" tick values covering [lo, hi] (1, 2, 5 × 10^k steps).
pub fn ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite()) || hi <= lo {
        return vec![lo];
    }
    let raw = (hi - lo) / n.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let start = (lo / step).floor() * step;
    let mut out = Vec::new();
    let mut v = start;
    while v <= hi + step * 0.5 && out.len() < 50 {
        out.push(v);
        v += step;
    }
    out
}

fn label(v: f64) -> String {
    super::format::sig3(v)
}

const W: f64 = 640.0;
const H: f64 = 300.0;
const L: f64 = 70.0; // left margin (y labels)
const R: f64 = 20.0;
const T: f64 = 30.0;
const B: f64 = 60.0; // bottom margin (x labels)

/// One bar: label, value, optional 95 % interval, colour index.
pub struct Bar {
    pub label: String,
    pub value: f64,
    pub ci: Option<(f64, f64)>,
    pub color: usize,
}

/// A vertical bar chart with error bars.
pub fn bars(title: &str, y_label: &str, data: &[Bar]) -> String {
    let top = data
        .iter()
        .map(|b| b.ci.map_or(b.value, |c| c.1.max(b.value)))
        .fold(0.0f64, f64::max);
    let yt = ticks(0.0, if top > 0.0 { top } else { 1.0 }, 5);
    let ymax = yt.last().copied().unwrap_or(1.0).max(top);
    let y = |v: f64| T + (H - T - B) * (1.0 - v / ymax);
    let mut s = header(title);
    axes(&mut s, &yt, y, y_label);
    let slot = (W - L - R) / data.len().max(1) as f64;
    for (i, b) in data.iter().enumerate() {
        let x0 = L + slot * i as f64 + slot * 0.15;
        let bw = slot * 0.7;
        let _ = write!(
            s,
            r#"<rect class="bar" x="{x0:.1}" y="{:.1}" width="{bw:.1}" height="{:.1}" fill="{}"><title>{}: {}</title></rect>"#,
            y(b.value.max(0.0)),
            (y(0.0) - y(b.value.max(0.0))).max(0.0),
            color(b.color),
            esc(&b.label),
            label(b.value)
        );
        if let Some((lo, hi)) = b.ci {
            let cx = x0 + bw / 2.0;
            let _ = write!(
                s,
                r##"<path class="errbar" d="M{cx:.1},{:.1}V{:.1}M{:.1},{:.1}H{:.1}M{:.1},{:.1}H{:.1}" stroke="#222" stroke-width="1.5" fill="none"/>"##,
                y(lo.max(0.0)),
                y(hi),
                cx - 6.0,
                y(hi),
                cx + 6.0,
                cx - 6.0,
                y(lo.max(0.0)),
                cx + 6.0
            );
        }
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end" transform="rotate(-30 {:.1} {:.1})">{}</text>"#,
            x0 + bw / 2.0,
            H - B + 14.0,
            x0 + bw / 2.0,
            H - B + 14.0,
            esc(&b.label)
        );
    }
    s.push_str("</svg>");
    s
}

/// One line: name, colour index, points (x, y).
pub struct Line {
    pub name: String,
    pub color: usize,
    pub points: Vec<(f64, f64)>,
}

/// A line chart. With `log2_x`, x positions are log2-spaced (queue depths, thread counts).
pub fn lines(title: &str, x_label: &str, y_label: &str, log2_x: bool, data: &[Line]) -> String {
    let pts = data.iter().flat_map(|l| l.points.iter());
    let (mut xmin, mut xmax, mut ymax) = (f64::INFINITY, f64::NEG_INFINITY, 0.0f64);
    for &(x, yv) in pts {
        let x = if log2_x { x.max(1e-9).log2() } else { x };
        xmin = xmin.min(x);
        xmax = xmax.max(x);
        ymax = ymax.max(yv);
    }
    if !xmin.is_finite() {
        return String::new();
    }
    if xmax <= xmin {
        xmax = xmin + 1.0;
    }
    let yt = ticks(0.0, if ymax > 0.0 { ymax } else { 1.0 }, 5);
    let ytop = yt.last().copied().unwrap_or(1.0).max(ymax);
    let y = |v: f64| T + (H - T - B) * (1.0 - v / ytop);
    let x = |v: f64| {
        let v = if log2_x { v.max(1e-9).log2() } else { v };
        L + (W - L - R - 110.0) * (v - xmin) / (xmax - xmin)
    };
    let mut s = header(title);
    axes(&mut s, &yt, y, y_label);
    // x ticks: the distinct x values when few (log2 axes), else nice ticks.
    let mut xs: Vec<f64> = data
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.0))
        .collect();
    xs.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    xs.dedup();
    if xs.len() > 12 {
        let (lo, hi) = (xs[0], xs[xs.len() - 1]);
        xs = ticks(lo, hi, 6)
            .into_iter()
            .filter(|v| *v >= lo && *v <= hi)
            .collect();
    }
    for v in xs {
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="middle">{}</text>"#,
            x(v),
            H - B + 16.0,
            label(v)
        );
    }
    let _ = write!(
        s,
        r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle">{}</text>"#,
        L + (W - L - R - 110.0) / 2.0,
        H - B + 40.0,
        esc(x_label)
    );
    for (i, l) in data.iter().enumerate() {
        let mut d = String::new();
        for (j, &(px, py)) in l.points.iter().enumerate() {
            let _ = write!(
                d,
                "{}{:.1},{:.1}",
                if j == 0 { "M" } else { "L" },
                x(px),
                y(py)
            );
        }
        let _ = write!(
            s,
            r#"<path class="line" d="{d}" stroke="{}" stroke-width="2" fill="none"><title>{}</title></path>"#,
            color(l.color),
            esc(&l.name)
        );
        for &(px, py) in &l.points {
            let _ = write!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{}"/>"#,
                x(px),
                y(py),
                color(l.color)
            );
        }
        // Legend.
        let ly = T + 16.0 * i as f64;
        let _ = write!(
            s,
            r#"<rect x="{:.1}" y="{:.1}" width="10" height="10" fill="{}"/><text x="{:.1}" y="{:.1}" font-size="11">{}</text>"#,
            W - R - 100.0,
            ly,
            color(l.color),
            W - R - 86.0,
            ly + 9.0,
            esc(&l.name)
        );
    }
    s.push_str("</svg>");
    s
}

fn header(title: &str) -> String {
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img"><title>{t}</title><text x="{:.1}" y="18" font-size="14" font-weight="bold" text-anchor="middle">{t}</text>"#,
        W / 2.0,
        t = esc(title)
    )
}

fn axes(s: &mut String, yt: &[f64], y: impl Fn(f64) -> f64, y_label: &str) {
    for &v in yt {
        let _ = write!(
            s,
            r##"<line x1="{L}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{}</text>"##,
            W - R,
            y(v),
            y(v),
            L - 6.0,
            y(v) + 4.0,
            label(v)
        );
    }
    let _ = write!(
        s,
        r##"<line x1="{L}" x2="{L}" y1="{T}" y2="{:.1}" stroke="#333"/><line x1="{L}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="#333"/><text x="14" y="{:.1}" font-size="12" text-anchor="middle" transform="rotate(-90 14 {:.1})">{}</text>"##,
        H - B,
        W - R,
        H - B,
        H - B,
        (H - B + T) / 2.0,
        (H - B + T) / 2.0,
        esc(y_label)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_nice_and_cover() {
        assert_eq!(
            ticks(0.0, 97.0, 5),
            vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]
        );
        let t = ticks(0.0, 0.37, 4);
        assert!(t.last().copied().unwrap() >= 0.37);
    }

    #[test]
    fn charts_draw_every_datum() {
        let b = bars(
            "t",
            "files/s",
            &[
                Bar {
                    label: "ext4".into(),
                    value: 10.0,
                    ci: Some((8.0, 12.0)),
                    color: 0,
                },
                Bar {
                    label: "x<y".into(),
                    value: 5.0,
                    ci: None,
                    color: 1,
                },
            ],
        );
        assert_eq!(b.matches("class=\"bar\"").count(), 2);
        assert_eq!(b.matches("class=\"errbar\"").count(), 1);
        assert!(b.contains("x&lt;y"));
        let l = lines(
            "t",
            "queue depth",
            "IOPS",
            true,
            &[Line {
                name: "xfs".into(),
                color: 2,
                points: vec![(1.0, 5.0), (32.0, 50.0)],
            }],
        );
        assert_eq!(l.matches("class=\"line\"").count(), 1);
        assert!(l.contains(PALETTE[2]));
    }
}
