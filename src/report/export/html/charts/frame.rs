//! The frame every chart shares: the colours, the `viewBox` and its margins, nice axis
//! ticks labelled to the precision of their step, the y axis, the title and the legend. It
//! sits below the bar, line and forest charts, which all draw in it.

use std::fmt::Write;

use super::super::escape::esc;

/// The colours a target may take (Tableau 10, then the lighter or darker tones of Tableau
/// 20): enough for every catalogue target to keep one of its own in every report.
pub const PALETTE: [&str; 20] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac", "#a0cbe8", "#ffbe7d", "#8cd17d", "#b6992d", "#499894", "#86bcb6",
    "#d37295", "#fabfd2", "#79706e", "#d4a6c8",
];

pub fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// The step of "nice" ticks (1, 2, 5 × 10^k) that cut [lo, hi] into about `n` parts.
pub(super) fn tick_step(lo: f64, hi: f64, n: usize) -> f64 {
    let raw = (hi - lo) / n.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}

/// "Nice" tick values covering [lo, hi] (1, 2, 5 × 10^k steps).
pub fn ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite()) || hi <= lo {
        return vec![lo];
    }
    let step = tick_step(lo, hi, n);
    let first = (lo / step).floor();
    // Rounded to the step's decimals, so 3 × 0.1 is 0.3 and not 0.30000000000000004.
    let scale = 10f64.powi((-step.log10().floor()).max(0.0) as i32);
    let mut out = Vec::new();
    let mut i = 0.0;
    while (first + i) * step <= hi + step * 0.5 && out.len() < 50 {
        out.push(((first + i) * step * scale).round() / scale + 0.0);
        i += 1.0;
    }
    out
}

/// A tick label with as many decimals as its step needs ("0.25", "20k", "1.5M"), so the
/// labels of one axis read alike and none is longer than it must be.
pub fn tick_label(v: f64, step: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs().max(step.abs());
    let (div, suffix) = crate::report::model::format::si_prefix(a);
    let s = step.abs() / div;
    // Steps are 1, 2 or 5 × 10^k: 10^-k needs k decimals (the epsilon absorbs log10's error).
    let decimals = if s > 0.0 && s < 1.0 {
        ((-s.log10() - 1e-9).ceil() as usize).min(6)
    } else {
        0
    };
    format!("{:.decimals$}{suffix}", v / div)
}

/// Approximate width in pixels of `text` at `font_size` (system-ui averages ~0.6 em).
pub(super) fn text_width(text: &str, font_size: f64) -> f64 {
    text.chars().count() as f64 * font_size * 0.6
}

pub(super) const W: f64 = 600.0;
pub(super) const H: f64 = 320.0;
pub(super) const L: f64 = 64.0; // left margin (y labels)
pub(super) const R: f64 = 16.0;
pub(super) const T: f64 = 44.0; // top margin (title, and values written over the tallest bar)
pub(super) const B: f64 = 58.0; // bottom margin (x labels, turned when long)
/// Width kept on the right for a legend, when a chart has one.
pub(super) const LEGEND: f64 = 104.0;

/// A y axis: the value range and its ticks; `y` maps a value to a pixel row.
pub(super) struct YAxis {
    pub(super) lo: f64,
    pub(super) hi: f64,
    pub(super) ticks: Vec<f64>,
    pub(super) step: f64,
}

impl YAxis {
    /// From 0 (or below, when a value or interval is negative) to above the largest value.
    pub(super) fn covering(values: impl Iterator<Item = f64>) -> YAxis {
        let (mut lo, mut hi) = (0.0f64, 0.0f64);
        for v in values.filter(|v| v.is_finite()) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if hi <= lo {
            hi = lo + 1.0;
        }
        let ticks = ticks(lo, hi, 5);
        let step = tick_step(lo, hi, 5);
        YAxis {
            lo: ticks.first().copied().unwrap_or(lo).min(lo),
            hi: ticks.last().copied().unwrap_or(hi).max(hi),
            ticks,
            step,
        }
    }

    pub(super) fn y(&self, v: f64) -> f64 {
        T + (H - T - B) * (1.0 - (v - self.lo) / (self.hi - self.lo))
    }
}

/// The `<svg>` opening and its title, shrunk to fit the width when it is long.
pub(super) fn header(title: &str, kind: &str) -> String {
    let size = (14.0f64).min((W - 20.0) / (title.chars().count() as f64 * 0.6 + 1.0));
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart {kind}" viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img"><title>{t}</title><text class="title" x="{:.1}" y="18" font-size="{size:.1}" font-weight="bold" text-anchor="middle">{t}</text>"#,
        W / 2.0,
        t = esc(title)
    )
}

/// Grid lines, y tick labels, the axis lines (a darker zero line when the axis goes below
/// it) and the y label; `right` is where the plot area ends.
pub(super) fn axes(s: &mut String, ax: &YAxis, right: f64, y_label: &str) {
    for &v in &ax.ticks {
        let _ = write!(
            s,
            r##"<line x1="{L}" x2="{right:.1}" y1="{y:.1}" y2="{y:.1}" stroke="{}"/><text class="ytick" x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{}</text>"##,
            if v == 0.0 { "#333" } else { "#e4e4e4" },
            L - 6.0,
            ax.y(v) + 4.0,
            tick_label(v, ax.step),
            y = ax.y(v),
        );
    }
    let mid = (H - B + T) / 2.0;
    let _ = write!(
        s,
        r##"<line x1="{L}" x2="{L}" y1="{T}" y2="{:.1}" stroke="#333"/><text x="14" y="{mid:.1}" font-size="12" text-anchor="middle" transform="rotate(-90 14 {mid:.1})">{}</text>"##,
        H - B,
        esc(y_label)
    );
}

/// A legend at the top right: one swatch and name per series.
pub(super) fn legend(s: &mut String, entries: &[(String, usize)]) {
    for (i, (name, c)) in entries.iter().enumerate() {
        let ly = T + 16.0 * i as f64;
        let _ = write!(
            s,
            r#"<rect x="{:.1}" y="{ly:.1}" width="10" height="10" fill="{}"/><text class="legend" x="{:.1}" y="{:.1}" font-size="11">{}</text>"#,
            W - R - LEGEND + 8.0,
            color(*c),
            W - R - LEGEND + 22.0,
            ly + 9.0,
            esc(name)
        );
    }
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
        assert_eq!(ticks(0.0, 0.3, 3), vec![0.0, 0.1, 0.2, 0.3]);
        assert_eq!(ticks(-12.0, 40.0, 5), vec![-20.0, 0.0, 20.0, 40.0]);
    }

    /// Regression (issue 14): tick labels read "0.200", "0.400", … and overlapped.
    #[test]
    fn tick_labels_have_the_precision_of_their_step() {
        assert_eq!(tick_label(0.2, 0.2), "0.2");
        assert_eq!(tick_label(0.25, 0.05), "0.25");
        assert_eq!(tick_label(0.0, 0.5), "0");
        assert_eq!(tick_label(0.0, 10000.0), "0");
        assert_eq!(tick_label(20000.0, 10000.0), "20k");
        assert_eq!(tick_label(1_500_000.0, 500_000.0), "1.5M");
        assert_eq!(tick_label(40.0, 20.0), "40");
        assert_eq!(tick_label(-10.0, 10.0), "-10");
    }
}
