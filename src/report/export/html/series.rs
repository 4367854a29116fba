//! The monitor's time series: device throughput, page cache and dirty memory over the
//! measured phase of each workload point's first repetition, one line per target.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::charts::{self, Line, XAxis};
use super::escape::esc;
use crate::monitor::{Sample, FAST_INTERVAL, FAST_SPAN};
use crate::results::{Measurement, Status};

/// Fewer samples than this draw a line that says nothing (two points are a straight line):
/// such a phase gets a sentence instead of four empty-looking charts.
pub const MIN_POINTS: usize = 5;

/// At most this many points per line; longer series are thinned evenly.
const MAX_POINTS: usize = 120;

/// Rates between consecutive samples of a cumulative counter, downsampled. A counter is 0
/// at the start of the phase by definition, so a series recorded without its t = 0
/// baseline (older results) gets it back and its first rate is not lost.
fn rate(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut all = Vec::with_capacity(points.len() + 1);
    if points.first().is_some_and(|p| p.0 > 0.0) {
        all.push((0.0, 0.0));
    }
    all.extend_from_slice(points);
    let r: Vec<(f64, f64)> = all
        .windows(2)
        .filter(|w| w[1].0 > w[0].0)
        .map(|w| (w[1].0, (w[1].1 - w[0].1).max(0.0) / (w[1].0 - w[0].0)))
        .collect();
    downsample(r)
}

fn downsample(v: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    if v.len() <= MAX_POINTS {
        return v;
    }
    let step = v.len().div_ceil(MAX_POINTS);
    v.into_iter().step_by(step).collect()
}

/// What each chart plots: title suffix, y label, the value of a sample, whether it is a
/// cumulative counter (plotted as a rate).
type Quantity = (&'static str, &'static str, fn(&Sample) -> f64, bool);

const QUANTITIES: [Quantity; 4] = [
    (
        "device writes",
        "MB/s written",
        |s| s.device_write_bytes as f64 / 1e6,
        true,
    ),
    (
        "device reads",
        "MB/s read",
        |s| s.device_read_bytes as f64 / 1e6,
        true,
    ),
    (
        "page cache",
        "cached (MiB)",
        |s| s.cached_bytes as f64 / 1048576.0,
        false,
    ),
    (
        "dirty memory",
        "dirty (MiB)",
        |s| s.dirty_bytes as f64 / 1048576.0,
        false,
    ),
];

/// The repetition charted per target of each workload point: the measurements of one point,
/// by target.
type Chosen<'a> = BTreeMap<(String, String), BTreeMap<String, &'a Measurement>>;

/// The monitor time series section: per workload point, one chart per quantity with a line
/// per target; points whose phase was too short to chart, and the work set aside inside
/// the windows, are listed after the charts.
pub(super) fn render(h: &mut String, ms: &[Measurement], colors: &BTreeMap<String, usize>) {
    let chosen = choose(ms);
    if chosen.is_empty() {
        return;
    }
    let _ = write!(
        h,
        "<section id=\"series\"><h2>Monitor time series</h2><p>Device throughput of the \
         target's block device, page cache and dirty memory during the measured phase of the \
         first repetition, sampled every {}&nbsp;ms in the first {}&nbsp;s and more slowly \
         after.</p><div class=\"charts\">",
        FAST_INTERVAL.as_millis(),
        FAST_SPAN.as_secs()
    );
    let mut too_short = Vec::new();
    let mut set_aside = Vec::new();
    for ((w, v), targets) in chosen.iter().take(40) {
        let title = if v.is_empty() {
            w.clone()
        } else {
            format!("{w} [{v}]")
        };
        for (t, m) in targets {
            if let Some(line) = aside_line(&title, t, m) {
                set_aside.push(line);
            }
        }
        match too_short_line(&title, targets) {
            Some(line) => too_short.push(line),
            None => point_charts(h, &title, targets, colors),
        }
    }
    h.push_str("</div>");
    notes(h, &too_short, &set_aside);
    h.push_str("</section>");
}

/// The first ok repetition of each (workload, point, target) at the lowest thread count:
/// one phase per target is what a chart can show side by side.
fn choose(ms: &[Measurement]) -> Chosen<'_> {
    let mut chosen: Chosen = BTreeMap::new();
    for m in ms
        .iter()
        .filter(|m| m.status == Status::Ok && !m.series.is_empty())
    {
        let e = chosen
            .entry((
                m.workload.clone(),
                crate::report::model::section::point_label(m.dataset.as_deref(), &m.variant),
            ))
            .or_default();
        match e.get(&m.target) {
            Some(prev) if (prev.threads, prev.repetition) <= (m.threads, m.repetition) => {}
            _ => {
                e.insert(m.target.clone(), m);
            }
        }
    }
    chosen
}

/// The line saying a point's phase was too short to chart (fewer than [`MIN_POINTS`]
/// samples on some target), if it was: a line through two dots says nothing.
fn too_short_line(title: &str, targets: &BTreeMap<String, &Measurement>) -> Option<String> {
    let fewest = targets.values().map(|m| m.series.len()).min().unwrap_or(0);
    if fewest >= MIN_POINTS {
        return None;
    }
    let longest = targets
        .values()
        .filter_map(|m| m.series.last().map(|s| s.t))
        .fold(0.0f64, f64::max);
    Some(format!(
        "<li>{}: phase too short to chart ({fewest} sample{} in {:.2}&nbsp;s)</li>",
        esc(title),
        if fewest == 1 { "" } else { "s" },
        longest
    ))
}

/// One chart per monitored quantity for a point, a line per target.
fn point_charts(
    h: &mut String,
    title: &str,
    targets: &BTreeMap<String, &Measurement>,
    colors: &BTreeMap<String, usize>,
) {
    for (what, y_label, f, is_rate) in QUANTITIES {
        let data: Vec<Line> = targets
            .iter()
            .map(|(t, m)| {
                let pts: Vec<(f64, f64)> = m.series.iter().map(|s| (s.t, f(s))).collect();
                Line {
                    name: t.clone(),
                    color: colors.get(t).copied().unwrap_or(0),
                    points: if is_rate { rate(&pts) } else { downsample(pts) },
                }
            })
            .collect();
        let _ = write!(
            h,
            "<div>{}</div>",
            charts::lines(
                &format!("{title}: {what}"),
                "seconds",
                y_label,
                XAxis::FromZero,
                &data
            )
        );
    }
}

/// What follows the charts: the points too short to chart, and the work set aside inside
/// the charted windows (so a spike in a line is not read as the phase's own).
fn notes(h: &mut String, too_short: &[String], set_aside: &[String]) {
    if !too_short.is_empty() {
        let _ = write!(h, "<ul class=\"short\">{}</ul>", too_short.concat());
    }
    if !set_aside.is_empty() {
        let _ = write!(
            h,
            "<p>Set aside inside these windows: work that is not the phase's own (the cache \
             drop between two cold passes, the check of a pass's result) ran inside the \
             monitor's window. The lines show it; the phase's figures (its seconds, device \
             counters and CPU) leave it out.</p><ul class=\"short\">{}</ul>",
            set_aside.concat()
        );
    }
}

/// The line naming what a charted phase set aside ([`crate::monitor::Aside`]), if anything:
/// its series runs past the phase's own seconds by that much.
fn aside_line(title: &str, target: &str, m: &Measurement) -> Option<String> {
    let aside = m
        .metrics
        .get("monitor_aside_seconds")
        .copied()
        .filter(|&s| s > 0.0)?;
    let window = m.series.last().map_or(0.0, |s| s.t);
    Some(format!(
        "<li>{} on {}: {aside:.2}&nbsp;s of its {window:.2}&nbsp;s window set aside</li>",
        esc(title),
        esc(target)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_series_without_its_baseline_still_rates_from_zero() {
        assert_eq!(
            rate(&[(0.5, 10.0), (1.0, 30.0)]),
            [(0.5, 20.0), (1.0, 40.0)]
        );
        assert_eq!(rate(&[(0.0, 0.0), (0.5, 10.0)]), [(0.5, 20.0)]);
    }

    fn measurement(target: &str, samples: usize) -> Measurement {
        Measurement {
            target: target.into(),
            workload: "w".into(),
            status: Status::Ok,
            series: (0..samples)
                .map(|i| Sample {
                    t: i as f64 * 0.05,
                    device_write_bytes: i as u64 * 1_000_000,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    /// The monitor's series keeps the spans set aside, which its figures leave out: the
    /// report says so under the charts, per phase that had any, and says nothing otherwise.
    #[test]
    fn a_charted_phase_that_set_work_aside_says_how_much() {
        let mut m = measurement("ext4", MIN_POINTS + 1);
        m.workload = "scan".into();
        let mut h = String::new();
        render(&mut h, std::slice::from_ref(&m), &BTreeMap::new());
        assert!(!h.contains("set aside"), "{h}");
        m.metrics.insert("monitor_aside_seconds".into(), 0.2);
        let mut h = String::new();
        render(&mut h, &[m], &BTreeMap::new());
        assert!(
            h.contains("scan on ext4: 0.20&nbsp;s of its 0.25&nbsp;s window set aside"),
            "{h}"
        );
    }

    /// Regression (issue 14): a 0.2 s phase drew four charts of one or two points each.
    #[test]
    fn a_phase_with_too_few_samples_gets_a_sentence_not_charts() {
        let mut h = String::new();
        render(&mut h, &[measurement("a", 2)], &BTreeMap::new());
        assert!(h.contains("phase too short to chart (2 samples"), "{h}");
        assert!(!h.contains("<svg"), "{h}");
        let mut h = String::new();
        render(&mut h, &[measurement("a", MIN_POINTS)], &BTreeMap::new());
        assert_eq!(h.matches("<svg").count(), 4, "{h}");
        assert!(!h.contains("too short"), "{h}");
    }
}
