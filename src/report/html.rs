//! `report.html`: one self-contained page (inline CSS and SVG, no network fetches) with the
//! decision summary first, then the charts and the full provenance.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::charts::{self, Bar, Line};
use super::format::{header, legend, row_cells, value};
use super::model::{Mark, Report};
use crate::results::{Measurement, Status};

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Colour index per target, in order of first appearance, so a target keeps its colour.
fn target_colors(r: &Report) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for s in &r.sections {
        for row in &s.rows {
            let n = m.len();
            m.entry(row.target.clone()).or_insert(n);
        }
    }
    m
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}\
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}\
table{border-collapse:collapse;margin:.5em 0 1em;font-size:.9em}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}\
td:first-child,th:first-child{text-align:left}.best{color:#1a7f37;font-weight:bold}.worst{color:#b42318}\
.incomplete{background:#fff3cd;border:1px solid #e0b000;padding:.6em 1em}.charts{display:flex;flex-wrap:wrap;gap:12px}\
.warn{color:#8a5300;font-size:.85em}code{background:#f4f4f4;padding:0 3px}svg{background:#fff;border:1px solid #eee}";

/// Renders the page.
pub fn render(r: &Report) -> String {
    let colors = target_colors(r);
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>fsarena report</title><style>{STYLE}</style></head><body>"
    );
    let _ = write!(h, "<h1>fsarena report</h1><p>Kernel {} · {} CPUs ({}) · {} memory · fsarena {} · baseline <b>{}</b> · a fresh file system for every repetition · 95&nbsp;% intervals · {}</p>",
        esc(&r.host.kernel), r.host.cpus, esc(&r.host.cpu_model), value("x_bytes", r.host.mem_total_bytes as f64), esc(&r.host.fsarena_version), esc(&r.baseline), esc(&legend(r.margin_pct)));
    if let Some(why) = &r.incomplete {
        let _ = write!(
            h,
            "<p class=\"incomplete\" id=\"incomplete\"><b>Incomplete:</b> {}</p>",
            esc(why)
        );
    }
    summary(&mut h, r);
    bar_charts(&mut h, r, &colors);
    scaling(&mut h, r, &colors);
    super::curves::render(&mut h, &r.measurements, &colors);
    series(&mut h, &r.measurements, &colors);
    amplification(&mut h, r);
    provenance(&mut h, r);
    // A self-check a browser test can read: how many charts were drawn, and any script error.
    // `report.html?only=ID` shows one section (for sharing it, and for the browser test's
    // per-section screenshots); the data attributes are a self-check a test can read.
    h.push_str("<script>window.addEventListener('error',function(e){document.body.dataset.error=String(e.message)});\
var only=new URLSearchParams(location.search).get('only');\
if(only){document.querySelectorAll('body>section,body>p,body>h1').forEach(function(s){if(s.id!==only)s.style.display='none'})}\
document.body.dataset.charts=document.querySelectorAll('svg').length;\
document.body.dataset.marks=document.querySelectorAll('svg .bar, svg .line').length;</script>");
    h.push_str("</body></html>\n");
    h
}

fn summary(h: &mut String, r: &Report) {
    h.push_str("<section id=\"summary\"><h2>Decision summary</h2><ul>");
    for s in &r.sections {
        let _ = write!(
            h,
            "<li><b>{}</b>: {}</li>",
            esc(&s.title()),
            esc(&s.decision)
        );
    }
    h.push_str("</ul>");
    for s in &r.sections {
        let key = &s.key_metric;
        let cols: Vec<&String> = s.columns.iter().filter(|c| *c != key).collect();
        let _ = write!(h, "<h3>{}</h3><table><tr><th>target</th><th>runs</th><th>{} ({})</th><th>CV</th><th>vs {}</th>",
            esc(&s.title()), esc(&header(key)), if s.higher_is_better { "higher is better" } else { "lower is better" }, esc(&r.baseline));
        for c in &cols {
            let _ = write!(h, "<th>{}</th>", esc(&header(c)));
        }
        h.push_str("</tr>");
        for row in &s.rows {
            let c = row_cells(row, key, &r.baseline);
            let cls = match row.mark {
                Some(Mark::Best) => "best",
                Some(Mark::Worst) => "worst",
                None => "",
            };
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td><td class=\"{cls}\">{}{}</td><td>{}</td><td>{}</td>",
                esc(&c.target),
                c.runs,
                esc(&c.key),
                c.mark,
                c.cv,
                esc(&c.vs)
            );
            for c in &cols {
                let _ = write!(
                    h,
                    "<td>{}</td>",
                    esc(&row
                        .mean(c)
                        .map(|v| value(c, v))
                        .unwrap_or_else(|| "—".into()))
                );
            }
            h.push_str("</tr>");
        }
        h.push_str("</table>");
        for why in s.rows.iter().filter_map(|r| r.why.as_ref()) {
            let _ = write!(h, "<p class=\"why\">why: {}</p>", esc(why));
        }
        for row in &s.rows {
            for (rep, st, err) in &row.failed {
                let _ = write!(
                    h,
                    "<p class=\"warn\">{} repetition {}: {}{}</p>",
                    esc(&row.target),
                    rep + 1,
                    st.as_str(),
                    esc(&err.as_ref().map(|e| format!(" ({e})")).unwrap_or_default())
                );
            }
            for w in &row.warnings {
                let _ = write!(
                    h,
                    "<p class=\"warn\">{}: {}</p>",
                    esc(&row.target),
                    esc(&w.to_string())
                );
            }
        }
    }
    h.push_str("</section>");
}

fn bar_charts(h: &mut String, r: &Report, colors: &BTreeMap<String, usize>) {
    h.push_str("<section id=\"bars\"><h2>Per workload</h2><p>Mean of the repetitions; error bars are 95&nbsp;% confidence intervals.</p><div class=\"charts\">");
    for s in &r.sections {
        let bars: Vec<Bar> = s
            .rows
            .iter()
            .filter_map(|row| {
                let m = row.metric(&s.key_metric)?;
                Some(Bar {
                    label: row.target.clone(),
                    value: m.summary.mean,
                    ci: m.summary.ci95,
                    color: colors.get(&row.target).copied().unwrap_or(0),
                })
            })
            .collect();
        if !bars.is_empty() {
            let unit = format!(
                "{} ({})",
                header(&s.key_metric),
                if s.higher_is_better {
                    "higher is better"
                } else {
                    "lower is better"
                }
            );
            h.push_str(&charts::bars(&s.title(), &unit, &bars));
        }
    }
    h.push_str("</div></section>");
}

fn scaling(h: &mut String, r: &Report, colors: &BTreeMap<String, usize>) {
    let mut by: BTreeMap<(String, String), Vec<&super::model::Section>> = BTreeMap::new();
    for s in &r.sections {
        by.entry((s.workload.clone(), s.variant.clone()))
            .or_default()
            .push(s);
    }
    let multi: Vec<_> = by.into_iter().filter(|(_, v)| v.len() > 1).collect();
    if multi.is_empty() {
        return;
    }
    h.push_str("<section id=\"scaling\"><h2>Thread scaling</h2><div class=\"charts\">");
    for ((w, v), secs) in multi {
        let key = secs[0].key_metric.clone();
        let mut lines: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        for s in &secs {
            for row in &s.rows {
                if let Some(m) = row.mean(&key) {
                    lines
                        .entry(row.target.clone())
                        .or_default()
                        .push((s.threads as f64, m));
                }
            }
        }
        let data: Vec<Line> = lines
            .into_iter()
            .map(|(t, mut p)| {
                p.sort_by(|a, b| a.0.total_cmp(&b.0));
                Line {
                    color: colors.get(&t).copied().unwrap_or(0),
                    name: t,
                    points: p,
                }
            })
            .collect();
        let title = if v.is_empty() {
            w
        } else {
            format!("{w} [{v}]")
        };
        h.push_str(&charts::lines(
            &title,
            "threads",
            &header(&key),
            true,
            &data,
        ));
    }
    h.push_str("</div></section>");
}

/// Rates between consecutive samples of a cumulative counter, downsampled.
fn rate(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let r: Vec<(f64, f64)> = points
        .windows(2)
        .filter(|w| w[1].0 > w[0].0)
        .map(|w| (w[1].0, (w[1].1 - w[0].1).max(0.0) / (w[1].0 - w[0].0)))
        .collect();
    downsample(r)
}

fn downsample(v: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    const MAX: usize = 120;
    if v.len() <= MAX {
        return v;
    }
    let step = v.len().div_ceil(MAX);
    v.into_iter().step_by(step).collect()
}

fn series(h: &mut String, ms: &[Measurement], colors: &BTreeMap<String, usize>) {
    // The first ok repetition of each (workload, variant, target) at the lowest thread count.
    let mut chosen: BTreeMap<(String, String), BTreeMap<String, &Measurement>> = BTreeMap::new();
    for m in ms
        .iter()
        .filter(|m| m.status == Status::Ok && m.series.len() >= 2)
    {
        let e = chosen
            .entry((m.workload.clone(), m.variant.clone()))
            .or_default();
        match e.get(&m.target) {
            Some(prev) if (prev.threads, prev.repetition) <= (m.threads, m.repetition) => {}
            _ => {
                e.insert(m.target.clone(), m);
            }
        }
    }
    if chosen.is_empty() {
        return;
    }
    h.push_str("<section id=\"series\"><h2>Monitor time series</h2><p>Device throughput of the target's block device, page cache and dirty memory, sampled every 200&nbsp;ms during the measured phase (first repetition).</p><div class=\"charts\">");
    for ((w, v), targets) in chosen.iter().take(40) {
        let title = if v.is_empty() {
            w.clone()
        } else {
            format!("{w} [{v}]")
        };
        let line = |f: &dyn Fn(&crate::monitor::Sample) -> f64, is_rate: bool| -> Vec<Line> {
            targets
                .iter()
                .map(|(t, m)| {
                    let pts: Vec<(f64, f64)> = m.series.iter().map(|s| (s.t, f(s))).collect();
                    Line {
                        name: t.clone(),
                        color: colors.get(t).copied().unwrap_or(0),
                        points: if is_rate { rate(&pts) } else { downsample(pts) },
                    }
                })
                .collect()
        };
        h.push_str(&charts::lines(
            &format!("{title}: device writes"),
            "seconds",
            "MB/s written",
            false,
            &line(&|s| s.device_write_bytes as f64 / 1e6, true),
        ));
        h.push_str(&charts::lines(
            &format!("{title}: device reads"),
            "seconds",
            "MB/s read",
            false,
            &line(&|s| s.device_read_bytes as f64 / 1e6, true),
        ));
        h.push_str(&charts::lines(
            &format!("{title}: page cache"),
            "seconds",
            "cached (MiB)",
            false,
            &line(&|s| s.cached_bytes as f64 / 1048576.0, false),
        ));
        h.push_str(&charts::lines(
            &format!("{title}: dirty memory"),
            "seconds",
            "dirty (MiB)",
            false,
            &line(&|s| s.dirty_bytes as f64 / 1048576.0, false),
        ));
    }
    h.push_str("</div></section>");
}

fn amplification(h: &mut String, r: &Report) {
    h.push_str("<section id=\"amplification\"><h2>Amplification and memory</h2><p>Write amplification = bytes the device wrote ÷ bytes the workload wrote (the phase ends with syncfs). Space amplification = growth of used space ÷ bytes written.</p><table><tr><th>workload</th><th>target</th><th>logical written</th><th>device written</th><th>write amp</th><th>space amp</th><th>peak cache</th><th>peak dirty</th></tr>");
    for s in &r.sections {
        for row in &s.rows {
            let f = |k: &str| {
                row.mean(k)
                    .map(|v| value(k, v))
                    .unwrap_or_else(|| "—".into())
            };
            let _ = write!(h, "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&s.title()), esc(&row.target), f("logical_write_bytes"), f("device_write_bytes"), f("write_amplification"), f("space_amplification"), f("peak_cached_bytes"), f("peak_dirty_bytes"));
        }
    }
    h.push_str("</table></section>");
}

fn provenance(h: &mut String, r: &Report) {
    h.push_str("<section id=\"provenance\"><h2>Provenance</h2><table>");
    let hf = &r.host;
    for (k, v) in [
        ("command line", hf.command_line.join(" ")),
        ("fsarena", hf.fsarena_version.clone()),
        ("kernel", hf.kernel.clone()),
        ("CPU", format!("{} × {}", hf.cpus, hf.cpu_model)),
        ("memory", value("x_bytes", hf.mem_total_bytes as f64)),
        ("work device", hf.work_device.clone().unwrap_or_default()),
    ] {
        let _ = write!(
            h,
            "<tr><th>{k}</th><td style=\"text-align:left\"><code>{}</code></td></tr>",
            esc(&v)
        );
    }
    h.push_str("</table>");
    for (t, why) in &hf.skipped_targets {
        let _ = write!(
            h,
            "<p class=\"warn\">target {} skipped: {}</p>",
            esc(t),
            esc(why)
        );
    }
    h.push_str("<table><tr><th>target</th><th>fs type</th><th>mkfs</th><th>mkfs version</th><th>mount options in effect</th><th>image</th><th>loop direct I/O</th><th>health checks</th></tr>");
    let mut seen: Vec<&str> = Vec::new();
    for m in &r.measurements {
        if seen.contains(&m.target.as_str()) || m.provenance.location.is_empty() {
            continue;
        }
        seen.push(&m.target);
        let p = &m.provenance;
        let checks: Vec<&Measurement> = r
            .measurements
            .iter()
            .filter(|x| x.target == m.target && x.health.is_some())
            .collect();
        let passed = checks
            .iter()
            .filter(|x| x.health.as_ref().is_some_and(|h| h.passed))
            .count();
        let _ = write!(h, "<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{} of {} passed</td></tr>",
            esc(&m.target), esc(&p.fs_type),
            esc(&p.mkfs_command.as_ref().map(|c| c.join(" ")).unwrap_or_else(|| "—".into())),
            esc(p.mkfs_version.as_deref().unwrap_or("—")),
            esc(p.mount_options.as_deref().unwrap_or("—")),
            p.image_bytes.map(|b| value("x_bytes", b as f64)).unwrap_or_else(|| "—".into()),
            p.loop_direct_io.map_or("—", |d| if d { "granted" } else { "refused" }),
            passed, checks.len());
    }
    h.push_str("</table></section>");
}
