//! The curves workloads declare ([`Chart::Curve`]): a metric against one numeric point
//! parameter, one line per target. The report knows no workload, parameter or metric by
//! name; it draws what each workload's [`WorkloadSpec::charts`](crate::workload::WorkloadSpec::charts)
//! asks for, so a new sweep gets its figure without touching the report.
//!
//! A workload's points differ in several parameters at once. For each curve the ok
//! measurements are split by every parameter *but* `x` into one chart each, so a line only
//! ever joins points that differ in `x`. Two kinds of parameter do not split:
//!
//! * those that take several values within one point (one non-empty `variant`): they are
//!   what a target made of the point (a file size fitted to its free space), not what was
//!   asked;
//! * labels of `x`, whose values map one to one onto `x`'s: they say the same thing again.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use serde_json::Value;

use super::charts::{self, Bar, BarGroup, BarOpts, Line, XAxis};
use crate::plan::size::human_bytes;
use crate::report::model::format::header;
use crate::results::{Measurement, Status};
use crate::workload::{self, Chart};

/// One declared curve, borrowed from [`Chart::Curve`].
struct Curve {
    x: &'static str,
    x_label: &'static str,
    metric: &'static str,
    y_label: &'static str,
    log_x: bool,
    /// `metric` is the workload's key metric: it shows the tables' centre (geometric
    /// mean), any other metric their median ([`crate::report::model::shown`]).
    key: bool,
}

/// The other parameters that name one chart: (name, shown value), sorted by name.
type GroupKey = Vec<(String, String)>;

/// Per target: x → the values measured there (every repetition).
type Samples = BTreeMap<String, Vec<(f64, Vec<f64>)>>;

/// Appends the curves section (nothing when no workload declares a curve with data).
pub fn render(h: &mut String, ms: &[Measurement], colors: &BTreeMap<String, usize>) {
    let mut by_workload: BTreeMap<&str, Vec<&Measurement>> = BTreeMap::new();
    for m in ms.iter().filter(|m| m.status == Status::Ok) {
        by_workload.entry(&m.workload).or_default().push(m);
    }
    let mut body = String::new();
    for (name, ms) in by_workload {
        let Some(w) = workload::by_name(name) else {
            continue;
        };
        let key = w.spec().key_metric.0;
        let curves: Vec<Curve> = w.spec().charts.iter().map(|c| curve_of(c, key)).collect();
        let mut xs: Vec<&str> = Vec::new();
        for c in &curves {
            if !xs.contains(&c.x) {
                xs.push(c.x);
            }
        }
        for x in xs {
            let on_x: Vec<&Curve> = curves.iter().filter(|c| c.x == x).collect();
            workload_charts(&mut body, name, &ms, x, &on_x, colors);
        }
    }
    if body.is_empty() {
        return;
    }
    let _ = write!(
        h,
        "<section id=\"curves\"><h2>Curves</h2><p>What each workload plots against its own \
         parameters: one line per target, at each point the figure the tables print: the \
         geometric mean of the repetitions for the workload's key metric, their median for \
         any other metric. Where a workload measured a single value of the parameter, bars \
         show each point there instead (dots: the repetitions, error bars: the 95&nbsp;% \
         interval of a geometric mean; a median has none).</p>{body}</section>"
    );
}

/// One workload's charts against `x`: a line chart per group and curve where some line has
/// two points (the curve's charts of a group side by side), and for the groups measured at
/// a single `x`, one grouped bar chart per curve.
fn workload_charts(
    body: &mut String,
    name: &str,
    ms: &[&Measurement],
    x: &str,
    curves: &[&Curve],
    colors: &BTreeMap<String, usize>,
) {
    let groups = groups(ms, x, curves);
    let (fixed, varying) = split_keys(&groups);
    let lines = line_charts(name, curves, &groups, &varying, colors);
    let bars_html = bar_charts(name, x, curves, &lines.single, &varying, colors);
    let (lines_html, more_html, more) = (lines.key_html, lines.more_html, lines.more);
    if lines_html.is_empty() && bars_html.is_empty() && more_html.is_empty() {
        return;
    }
    let _ = write!(body, "<h3>{}</h3>", esc(name));
    if !fixed.is_empty() {
        let _ = write!(
            body,
            "<p>Every chart: {}.</p>",
            esc(&title("", &fixed).trim_start().replace(' ', ", "))
        );
    }
    let _ = write!(body, "<div class=\"charts\">{lines_html}{bars_html}</div>");
    if !more_html.is_empty() {
        let others: Vec<String> = curves
            .iter()
            .filter(|c| !c.key)
            .map(|c| header(c.metric))
            .collect();
        let _ = write!(
            body,
            "<details><summary>{} against {}: {more} more chart{}</summary><div class=\"charts\">{more_html}</div></details>",
            esc(&others.join(", ")),
            esc(curves.first().map_or(x, |c| c.x_label)),
            if more == 1 { "" } else { "s" }
        );
    }
}

/// One workload's line charts against `x`, and the groups left for bars.
struct LineCharts<'g> {
    /// The key metric's charts: the answer (the seed's own figure: IOPS against queue depth).
    key_html: String,
    /// The other metrics' charts, folded under them, and how many.
    more_html: String,
    more: usize,
    /// The groups measured at a single `x`, drawn as bars instead.
    single: Vec<(&'g GroupKey, &'g Vec<Samples>)>,
}

/// A line chart per group and curve where some line has two points.
fn line_charts<'g>(
    name: &str,
    curves: &[&Curve],
    groups: &'g BTreeMap<GroupKey, Vec<Samples>>,
    varying: &BTreeSet<String>,
    colors: &BTreeMap<String, usize>,
) -> LineCharts<'g> {
    let mut out = LineCharts {
        key_html: String::new(),
        more_html: String::new(),
        more: 0,
        single: Vec::new(),
    };
    for (key, per_curve) in groups {
        let drawn = per_curve
            .iter()
            .any(|samples| samples.values().any(|p| p.len() > 1));
        if !drawn {
            out.single.push((key, per_curve));
            continue;
        }
        let title = title(name, &only(key, varying));
        for (c, samples) in curves.iter().zip(per_curve) {
            let mut drawn = lines(samples, c.key, colors);
            let y_label = in_ms(c.y_label, &mut drawn);
            let into = if c.key {
                &mut out.key_html
            } else {
                out.more += 1;
                &mut out.more_html
            };
            let _ = write!(
                into,
                "<div>{}</div>",
                charts::lines(
                    &format!("{title}: {}", header(c.metric)),
                    c.x_label,
                    &y_label,
                    if c.log_x { XAxis::Log2 } else { XAxis::Linear },
                    &drawn,
                )
            );
        }
    }
    out
}

/// For the groups measured at a single `x`, one grouped bar chart per curve.
fn bar_charts(
    name: &str,
    x: &str,
    curves: &[&Curve],
    single: &[(&GroupKey, &Vec<Samples>)],
    varying: &BTreeSet<String>,
    colors: &BTreeMap<String, usize>,
) -> String {
    let mut bars_html = String::new();
    if single.is_empty() {
        return bars_html;
    }
    let legend: Vec<(String, usize)> = targets(single)
        .into_iter()
        .map(|t| {
            let c = colors.get(&t).copied().unwrap_or(0);
            (t, c)
        })
        .collect();
    for (ci, c) in curves.iter().enumerate() {
        let groups: Vec<BarGroup> = single
            .iter()
            .map(|(key, per_curve)| point_bars(key, varying, (&per_curve[ci], c.key), x, &legend))
            .collect();
        let opts = BarOpts {
            legend: legend.clone(),
            ..BarOpts::default()
        };
        let _ = write!(
            bars_html,
            "<div>{}</div>",
            charts::bar_chart(
                &format!("{name}: {} at the {} measured", header(c.metric), c.x_label),
                c.y_label,
                &groups,
                &opts
            )
        );
    }
    bars_html
}

/// The group keys' parameters split into those with one value in every group (said once)
/// and those that tell groups apart (in each title).
fn split_keys(groups: &BTreeMap<GroupKey, Vec<Samples>>) -> (GroupKey, BTreeSet<String>) {
    let mut values: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for key in groups.keys() {
        for (k, v) in key {
            values.entry(k).or_default().insert(v);
        }
    }
    let mut fixed = GroupKey::new();
    let mut varying = BTreeSet::new();
    for (k, vs) in values {
        if vs.len() == 1 {
            fixed.push((
                k.to_string(),
                vs.into_iter().next().unwrap_or_default().to_string(),
            ));
        } else {
            varying.insert(k.to_string());
        }
    }
    (fixed, varying)
}

/// The parameters of `key` that are in `names`.
fn only(key: &GroupKey, names: &BTreeSet<String>) -> GroupKey {
    key.iter()
        .filter(|(k, _)| names.contains(k))
        .cloned()
        .collect()
}

/// Every target with a value in any of the groups, sorted.
fn targets(single: &[(&GroupKey, &Vec<Samples>)]) -> Vec<String> {
    let set: BTreeSet<String> = single
        .iter()
        .flat_map(|(_, per_curve)| per_curve.iter().flat_map(|s| s.keys().cloned()))
        .collect();
    set.into_iter().collect()
}

/// One group measured at a single x: a bar per target (the tables' figure, its 95 %
/// interval when it has one, the repetitions), labelled by the parameters that vary between
/// groups and the x it was measured at; `is_key` says whether the curve's metric is the key.
fn point_bars(
    key: &GroupKey,
    varying: &BTreeSet<String>,
    (samples, is_key): (&Samples, bool),
    x: &str,
    legend: &[(String, usize)],
) -> BarGroup {
    // Words bare ("randread"), numbers with their name ("bs=4096").
    let mut label: Vec<String> = only(key, varying)
        .into_iter()
        .map(|(k, v)| {
            if v.parse::<f64>().is_ok() {
                format!("{k}={v}")
            } else {
                v
            }
        })
        .collect();
    let mut bars = Vec::new();
    for (t, color) in legend {
        let Some(points) = samples.get(t) else {
            continue;
        };
        for (xv, ys) in points {
            let xs = if xv.fract() == 0.0 {
                format!("{x}={xv:.0}")
            } else {
                format!("{x}={}", crate::report::model::format::sig3(*xv))
            };
            if !label.contains(&xs) {
                label.push(xs);
            }
            let Some(s) = crate::report::model::shown::of_runs(is_key, ys) else {
                continue;
            };
            bars.push(Bar {
                label: t.clone(),
                value: s.value,
                ci: s.ci95,
                reps: ys.clone(),
                color: *color,
            });
        }
    }
    BarGroup {
        label: label.join(" "),
        bars,
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn curve_of(c: &Chart, key: &str) -> Curve {
    match *c {
        Chart::Curve {
            x,
            x_label,
            metric,
            y_label,
            log_x,
        } => Curve {
            x,
            x_label,
            metric,
            y_label,
            log_x,
            key: metric == key,
        },
    }
}

/// The workload's measurements with a numeric `x`, split into charts: for each group, one
/// [`Samples`] per curve (in the order of `curves`).
fn groups(ms: &[&Measurement], x: &str, curves: &[&Curve]) -> BTreeMap<GroupKey, Vec<Samples>> {
    let skip = not_splitting(ms, x);
    let mut out: BTreeMap<GroupKey, Vec<Samples>> = BTreeMap::new();
    for m in ms {
        let Some(xv) = m.params.get(x).and_then(Value::as_f64) else {
            continue;
        };
        let key: GroupKey = m
            .params
            .iter()
            .filter(|(k, _)| k.as_str() != x && !skip.contains(k.as_str()))
            .map(|(k, v)| (k.clone(), shown(k, v)))
            .collect();
        let per_curve = out
            .entry(key)
            .or_insert_with(|| vec![Samples::new(); curves.len()]);
        for (c, samples) in curves.iter().zip(per_curve.iter_mut()) {
            let Some(&y) = m.metrics.get(c.metric) else {
                continue;
            };
            let points = samples.entry(m.target.clone()).or_default();
            match points.iter_mut().find(|(px, _)| *px == xv) {
                Some((_, ys)) => ys.push(y),
                None => points.push((xv, vec![y])),
            }
        }
    }
    out
}

/// Parameters that do not name a chart: those varying within one variant, and labels of `x`.
fn not_splitting<'a>(ms: &[&'a Measurement], x: &str) -> BTreeSet<&'a str> {
    let mut within: BTreeMap<(&str, &str), BTreeSet<String>> = BTreeMap::new();
    // An empty variant names no point, so it says nothing about what a point asked for.
    for m in ms.iter().filter(|m| !m.variant.is_empty()) {
        for (k, v) in &m.params {
            within
                .entry((m.variant.as_str(), k.as_str()))
                .or_default()
                .insert(v.to_string());
        }
    }
    let mut skip: BTreeSet<&str> = within
        .iter()
        .filter(|(_, values)| values.len() > 1)
        .map(|((_, k), _)| *k)
        .collect();
    let names: BTreeSet<&'a str> = ms
        .iter()
        .flat_map(|m| m.params.keys().map(String::as_str))
        .collect();
    skip.extend(names.into_iter().filter(|&k| k != x && labels(ms, k, x)));
    skip
}

/// Whether `k`'s values map one to one onto `x`'s (and `x` takes more than one value).
fn labels(ms: &[&Measurement], k: &str, x: &str) -> bool {
    let mut k_to_x: BTreeMap<String, String> = BTreeMap::new();
    let mut x_to_k: BTreeMap<String, String> = BTreeMap::new();
    for m in ms {
        let (Some(kv), Some(xv)) = (m.params.get(k), m.params.get(x)) else {
            continue;
        };
        let (kv, xv) = (kv.to_string(), xv.to_string());
        if *k_to_x.entry(kv.clone()).or_insert_with(|| xv.clone()) != xv
            || *x_to_k.entry(xv).or_insert(kv.clone()) != kv
        {
            return false;
        }
    }
    x_to_k.len() > 1
}

/// A parameter's value as a chart title shows it: strings bare, byte counts readable, a
/// block size as fio writes it (`512k`, not `524288`).
fn shown(name: &str, v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) if name == "bs" => {
            n.as_u64().map(fio_size).unwrap_or_else(|| n.to_string())
        }
        Value::Number(n) if name.ends_with("_bytes") => {
            n.as_u64().map(human_bytes).unwrap_or_else(|| n.to_string())
        }
        other => other.to_string(),
    }
}

/// A byte count as fio's options write it: the largest binary unit it is a whole multiple
/// of (`4k`, `512k`, `1m`), else the bytes.
fn fio_size(n: u64) -> String {
    for (shift, unit) in [(30, "g"), (20, "m"), (10, "k")] {
        if n > 0 && n % (1 << shift) == 0 {
            return format!("{}{unit}", n >> shift);
        }
    }
    n.to_string()
}

/// A latency axis in milliseconds once its values pass 10,000 µs (issue 60: p99 read
/// `80,000` µs): the label's unit and the values both change.
fn in_ms(y_label: &str, lines: &mut [Line]) -> String {
    let top = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .fold(0.0f64, f64::max);
    if !y_label.contains("(µs)") || top <= 10_000.0 {
        return y_label.to_string();
    }
    for l in lines.iter_mut() {
        for p in &mut l.points {
            p.1 /= 1000.0;
        }
    }
    y_label.replace("(µs)", "(ms)")
}

/// "workload k=v k=v": the workload and the parameters its chart holds fixed.
fn title(workload: &str, key: &GroupKey) -> String {
    let mut t = workload.to_string();
    for (k, v) in key {
        let _ = write!(t, " {k}={v}");
    }
    t
}

/// One line per target, at each x the figure the tables print for the repetitions there
/// ([`crate::report::model::shown::of_runs`]: the geometric mean for the `key` metric, else the median),
/// in x order.
fn lines(samples: &Samples, key: bool, colors: &BTreeMap<String, usize>) -> Vec<Line> {
    samples
        .iter()
        .map(|(t, pts)| {
            let mut points: Vec<(f64, f64)> = pts
                .iter()
                .filter_map(|(x, ys)| {
                    Some((*x, crate::report::model::shown::of_runs(key, ys)?.value))
                })
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            Line {
                name: t.clone(),
                color: colors.get(t).copied().unwrap_or(0),
                points,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
