//! Bar charts: the mean as a bar with its value written over it, every repetition as a dot,
//! and the whole 95 % interval as an error bar. The axis starts at 0 and reaches below it
//! when an interval or a repetition does: cutting an interval at zero would draw it
//! narrower than it is. The axis follows the bars and their repetitions; an interval may
//! widen it by at most the bars' own span each way, and one that reaches further is drawn to
//! the edge with an open arrowhead (issue 60: the 2-run intervals of a fio sweep drew bars of
//! 11.8k–78.5k on an axis to 1.5M).

use std::fmt::Write;

use super::super::escape::esc;
use super::frame::{axes, color, header, legend, text_width, YAxis, B, H, L, LEGEND, R, W};
use crate::report::model::format::sig3;

/// One bar: label, mean, optional 95 % interval, the repetitions, colour index.
pub struct Bar {
    pub label: String,
    pub value: f64,
    pub ci: Option<(f64, f64)>,
    pub reps: Vec<f64>,
    pub color: usize,
}

/// Bars side by side under one label on the x axis (one bar per target).
pub struct BarGroup {
    pub label: String,
    pub bars: Vec<Bar>,
}

/// How values read and what is drawn besides the bars.
#[derive(Default)]
pub struct BarOpts<'a> {
    /// Appended to each value written over its bar (" %").
    pub suffix: &'a str,
    /// A dashed horizontal line at this value (100 % of the baseline).
    pub reference: Option<f64>,
    /// Legend entries (name, colour); shown when the groups hold several bars.
    pub legend: Vec<(String, usize)>,
}

/// One bar per label: a [`bar_chart`] of one-bar groups, labelled by their bars.
pub fn bars(title: &str, y_label: &str, data: Vec<Bar>, opts: &BarOpts) -> String {
    let groups: Vec<BarGroup> = data
        .into_iter()
        .map(|b| BarGroup {
            label: b.label.clone(),
            bars: vec![b],
        })
        .collect();
    bar_chart(title, y_label, &groups, opts)
}

/// A bar chart of groups of bars.
pub fn bar_chart(title: &str, y_label: &str, groups: &[BarGroup], opts: &BarOpts) -> String {
    let all = || groups.iter().flat_map(|g| g.bars.iter());
    let data = YAxis::covering(
        all()
            .flat_map(|b| std::iter::once(b.value).chain(b.reps.iter().copied()))
            .chain(opts.reference),
    );
    let span = data.hi - data.lo;
    let (floor, ceiling) = (data.lo - span, data.hi + span);
    let extent = all().flat_map(|b| {
        let (lo, hi) = b.ci.unwrap_or((b.value, b.value));
        [lo.max(floor), hi.min(ceiling)]
    });
    let ax = YAxis::covering(extent.chain([data.lo, data.hi]));
    let grouped = groups.iter().any(|g| g.bars.len() > 1);
    let right = if grouped { W - R - LEGEND } else { W - R };
    let mut s = header(title, "bars");
    axes(&mut s, &ax, right, y_label);
    if let Some(r) = opts.reference {
        let _ = write!(
            s,
            r##"<line class="reference" x1="{L}" x2="{right:.1}" y1="{y:.1}" y2="{y:.1}" stroke="#555" stroke-dasharray="4 3"/>"##,
            y = ax.y(r)
        );
    }
    let slot = (right - L) / groups.len().max(1) as f64;
    for (gi, g) in groups.iter().enumerate() {
        let gx = L + slot * gi as f64;
        let bw = slot * 0.75 / g.bars.len().max(1) as f64;
        for (bi, b) in g.bars.iter().enumerate() {
            let x0 = gx + slot * 0.125 + bw * bi as f64;
            draw_bar(&mut s, &ax, b, x0, bw, opts.suffix);
        }
        x_label(
            &mut s,
            &g.label,
            gx + slot / 2.0,
            slot,
            groups.iter().map(|g| g.label.as_str()),
        );
    }
    if grouped {
        legend(&mut s, &opts.legend);
    }
    s.push_str("</svg>");
    s
}

/// One bar in a slot `bw` wide: the bar, its interval, its repetitions, its value above.
fn draw_bar(s: &mut String, ax: &YAxis, b: &Bar, x0: f64, bw: f64, suffix: &str) {
    let (top, bottom) = (ax.y(b.value.max(0.0)), ax.y(b.value.min(0.0)));
    let w = bw * 0.9;
    let cx = x0 + w / 2.0;
    let _ = write!(
        s,
        r#"<rect class="bar" x="{x0:.1}" y="{top:.1}" width="{w:.1}" height="{:.1}" fill="{}"><title>{}: {}{suffix}</title></rect>"#,
        (bottom - top).max(0.5),
        color(b.color),
        esc(&b.label),
        sig3(b.value)
    );
    let mut highest = b.value;
    if let Some((lo, hi)) = b.ci {
        let cap = (w * 0.3).min(6.0);
        let (vlo, vhi) = (lo.max(ax.lo), hi.min(ax.hi));
        let (ylo, yhi) = (ax.y(vlo), ax.y(vhi));
        // A cap where the interval ends on the chart; an open arrowhead where it goes on.
        let end = |y: f64, clipped: bool, dir: f64| {
            if clipped {
                format!(
                    "M{:.1},{:.1}L{cx:.1},{y:.1}L{:.1},{:.1}",
                    cx - cap,
                    y + dir * cap,
                    cx + cap,
                    y + dir * cap
                )
            } else {
                format!("M{:.1},{y:.1}H{:.1}", cx - cap, cx + cap)
            }
        };
        let _ = write!(
            s,
            r##"<path class="errbar" d="M{cx:.1},{ylo:.1}V{yhi:.1}{}{}" stroke="#222" stroke-width="1.5" fill="none"><title>95 % interval {} to {}{}</title></path>"##,
            end(yhi, hi > vhi, 1.0),
            end(ylo, lo < vlo, -1.0),
            sig3(lo),
            sig3(hi),
            if hi > vhi || lo < vlo {
                " (beyond the axis: drawn to its edge)"
            } else {
                ""
            },
        );
        highest = highest.max(vhi);
    }
    // Repetitions spread sideways a little so equal values stay distinguishable.
    let n = b.reps.len();
    let spread = (w * 0.5 / n.max(1) as f64).min(5.0);
    for (i, &v) in b.reps.iter().enumerate() {
        let dx = (i as f64 - (n as f64 - 1.0) / 2.0) * spread;
        let _ = write!(
            s,
            r##"<circle class="rep" cx="{:.1}" cy="{:.1}" r="2.6" fill="#fff" stroke="#111" stroke-width="1.2"><title>repetition {}: {}</title></circle>"##,
            cx + dx,
            ax.y(v),
            i + 1,
            sig3(v)
        );
        highest = highest.max(v);
    }
    let text = format!("{}{suffix}", sig3(b.value));
    // Smaller on narrow bars, so a value never runs into its neighbour's.
    let size = 11.0f64
        .min((bw - 3.0) / (text.chars().count() as f64 * 0.62))
        .max(5.0);
    let _ = write!(
        s,
        r#"<text class="val" x="{cx:.1}" y="{:.1}" font-size="{size:.1}" text-anchor="middle">{}</text>"#,
        ax.y(highest) - 5.0,
        esc(&text)
    );
}

/// A label under its slot: level, broken at spaces into up to three lines that fit the
/// slot; turned 30° only when that cannot fit (a long single word, or more lines).
fn x_label<'a>(
    s: &mut String,
    label: &str,
    cx: f64,
    slot: f64,
    all: impl Iterator<Item = &'a str>,
) {
    let fits = |l: &str| {
        wrap(l, slot - 6.0)
            .iter()
            .all(|w| text_width(w, 11.0) < slot - 6.0)
    };
    let level = all
        .into_iter()
        .all(|l| fits(l) && wrap(l, slot - 6.0).len() <= 3);
    let y = H - B + 16.0;
    if level {
        let _ = write!(
            s,
            r#"<text class="xtick" x="{cx:.1}" y="{y:.1}" font-size="11" text-anchor="middle">"#
        );
        for (i, line) in wrap(label, slot - 6.0).iter().enumerate() {
            let _ = write!(
                s,
                r#"<tspan x="{cx:.1}" dy="{}">{}</tspan>"#,
                if i == 0 { "0" } else { "1.15em" },
                esc(line)
            );
        }
        s.push_str("</text>");
    } else {
        let _ = write!(
            s,
            r#"<text class="xtick" x="{cx:.1}" y="{y:.1}" font-size="11" text-anchor="end" transform="rotate(-30 {cx:.1} {y:.1})">{}</text>"#,
            esc(label)
        );
    }
}

/// Words of `label` gathered greedily into lines at most `width` pixels wide.
fn wrap(label: &str, width: f64) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in label.split(' ') {
        match lines.last_mut() {
            Some(line) if text_width(&format!("{line} {word}"), 11.0) < width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar(label: &str, value: f64, ci: Option<(f64, f64)>, reps: &[f64]) -> Bar {
        Bar {
            label: label.into(),
            value,
            ci,
            reps: reps.to_vec(),
            color: 0,
        }
    }

    #[test]
    fn every_bar_has_its_value_its_repetitions_and_its_interval() {
        let b = bars(
            "t",
            "files/s",
            vec![
                bar("ext4", 10.0, Some((8.0, 12.0)), &[9.0, 10.0, 11.0]),
                bar("x<y", 5.0, None, &[5.0]),
            ],
            &BarOpts::default(),
        );
        assert_eq!(b.matches("class=\"bar\"").count(), 2);
        assert_eq!(b.matches("class=\"errbar\"").count(), 1);
        assert_eq!(b.matches("class=\"rep\"").count(), 4);
        assert_eq!(b.matches("class=\"val\"").count(), 2);
        assert!(b.contains(">10.0</text>"), "{b}");
        assert!(b.contains("x&lt;y"));
    }

    /// Regression (issue 14): long group labels were turned and ran off the chart's edge.
    #[test]
    fn long_labels_wrap_onto_lines_under_their_slot() {
        assert_eq!(
            wrap("randwrite iodepth=32", 80.0),
            ["randwrite", "iodepth=32"]
        );
        assert_eq!(wrap("ext4", 80.0), ["ext4"]);
        let groups: Vec<BarGroup> = [
            "randread iodepth=32",
            "randwrite iodepth=32",
            "read iodepth=8",
            "write iodepth=8",
        ]
        .iter()
        .map(|l| BarGroup {
            label: l.to_string(),
            bars: vec![bar("a", 1.0, None, &[]), bar("b", 2.0, None, &[])],
        })
        .collect();
        let c = bar_chart("t", "IOPS", &groups, &BarOpts::default());
        assert!(!c.contains("rotate(-30"), "{c}");
        assert_eq!(c.matches("<tspan").count(), 7, "{c}");
    }

    /// Regression (issue 60): a 2-run interval set the axis, dwarfing the bars; it now
    /// stops at the edge of an axis the bars set, with an arrowhead.
    #[test]
    fn an_interval_far_beyond_the_bars_is_clipped_with_a_mark() {
        let b = bars(
            "t",
            "IOPS",
            vec![
                bar(
                    "a",
                    11_800.0,
                    Some((0.0, 1_500_000.0)),
                    &[11_000.0, 12_600.0],
                ),
                bar(
                    "b",
                    78_500.0,
                    Some((70_000.0, 87_000.0)),
                    &[77_000.0, 80_000.0],
                ),
            ],
            &BarOpts::default(),
        );
        // The axis reaches twice the tallest bar's neighbourhood, not the interval's 1.5M.
        assert!(!b.contains("M</text>"), "{b}");
        assert!(b.contains("beyond the axis"), "{b}");
        assert_eq!(b.matches("beyond the axis").count(), 1, "{b}");
    }

    /// Regression (issue 14): an interval reaching below zero was cut at the axis.
    #[test]
    fn an_interval_below_zero_is_drawn_whole_on_an_axis_that_reaches_it() {
        let b = bars(
            "t",
            "MB/s",
            vec![bar("a", 2.0, Some((-3.0, 7.0)), &[0.5, 3.5])],
            &BarOpts::default(),
        );
        let ax = YAxis::covering([2.0, -3.0, 7.0, 0.5, 3.5].into_iter());
        assert!(ax.lo <= -3.0 && ax.hi >= 7.0);
        let at = b.find("class=\"errbar\" d=\"M").unwrap() + 22;
        let d: Vec<&str> = b[at..].split(['M', 'V', 'H', ',', '"']).collect();
        assert_eq!(d[1], format!("{:.1}", ax.y(-3.0)), "{b}");
        assert_eq!(d[2], format!("{:.1}", ax.y(7.0)), "{b}");
        assert!(
            b.contains(">-4</text>"),
            "the axis is labelled below zero: {b}"
        );
    }
}
