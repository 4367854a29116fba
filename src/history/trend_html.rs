//! `history.html`: the trend report as one self-contained page in the run report's style
//! (its stylesheet and charts): a table of contents, then per plan one row of small
//! multiples per workload point, one column per host, so the same plan on several hosts
//! reads side by side. Each chart groups the runs by the axis's step, a bar per target:
//! the geometric mean, every repetition as a dot, the 95 % interval as an error bar.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::trend::{PlanTrend, PointTrend, Trend};
use crate::report::charts::{bar_chart, Bar, BarGroup, BarOpts};
use crate::report::export::html::escape::esc;
use crate::report::export::html::STYLE;
use crate::report::header;

/// What the page adds to the run report's stylesheet: the host columns.
const HOSTS_STYLE: &str = ".hosts{display:grid;gap:14px;margin-top:.6em}.hosts>div{min-width:0}.hosts svg{width:100%;height:auto;display:block}.hosts .none{color:#777;font-size:.9em;padding:1em}nav ol{margin:.2em 0}";

/// The page.
pub fn page(t: &Trend) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>fsarena history</title><style>{STYLE}{HOSTS_STYLE}</style></head><body><h1>fsarena history</h1>"
    );
    let _ = write!(
        h,
        "<p>Each workload point's key metric by {}: per step, the geometric mean of its repetitions (bar), every repetition (dot) and the 95&nbsp;% interval; runs that share a step are pooled. One column per host.</p>",
        esc(&t.by)
    );
    if t.plans.is_empty() {
        h.push_str("<p>The history holds no run that matches.</p>");
    }
    contents(&mut h, t);
    for (i, p) in t.plans.iter().enumerate() {
        plan(&mut h, i, p);
    }
    h.push_str("</body></html>\n");
    h
}

/// The table of contents: plans, and their workload points.
fn contents(h: &mut String, t: &Trend) {
    h.push_str("<nav id=\"contents\"><ol>");
    for (i, p) in t.plans.iter().enumerate() {
        let _ = write!(
            h,
            "<li><a href=\"#plan-{i}\">{}</a> ({} runs, {} hosts)<ol>",
            esc(&p.plan_name),
            p.runs,
            p.hosts.len()
        );
        for (j, pt) in p.points.iter().enumerate() {
            let _ = write!(
                h,
                "<li><a href=\"#plan-{i}-{j}\">{}</a></li>",
                esc(&pt.point)
            );
        }
        h.push_str("</ol></li>");
    }
    h.push_str("</ol></nav>");
}

fn plan(h: &mut String, i: usize, p: &PlanTrend) {
    let _ = write!(
        h,
        "<section id=\"plan-{i}\"><h2>{}</h2><p>Plan {} · {} runs{}</p><ol class=\"host-list\">",
        esc(&p.plan_name),
        esc(&p.plan_digest),
        p.runs,
        if p.dataset.is_empty() {
            String::new()
        } else {
            format!(" · data set {}", esc(&p.dataset))
        }
    );
    for (key, words) in &p.hosts {
        let _ = write!(h, "<li>{} <code>{}</code></li>", esc(words), esc(key));
    }
    h.push_str("</ol>");
    // A target keeps its colour across the plan's charts.
    let mut colors: BTreeMap<&str, usize> = BTreeMap::new();
    for t in p
        .points
        .iter()
        .flat_map(|pt| pt.hosts.iter().flat_map(|c| &c.targets))
    {
        let n = colors.len();
        colors.entry(t.target.as_str()).or_insert(n);
    }
    for (j, pt) in p.points.iter().enumerate() {
        point(h, (i, j), p, pt, &colors);
    }
    h.push_str("</section>");
}

/// A workload point's row: one chart per host of the plan.
fn point(
    h: &mut String,
    (i, j): (usize, usize),
    p: &PlanTrend,
    pt: &PointTrend,
    colors: &BTreeMap<&str, usize>,
) {
    let better = if pt.higher_is_better {
        "higher"
    } else {
        "lower"
    };
    let _ = write!(
        h,
        "<h3 id=\"plan-{i}-{j}\">{} <small>({}, {better} is better)</small></h3><div class=\"hosts\" style=\"grid-template-columns:repeat({},minmax(0,1fr))\">",
        esc(&pt.point),
        esc(&header(&pt.metric)),
        p.hosts.len().max(1)
    );
    for (key, words) in &p.hosts {
        let Some(cell) = pt.hosts.iter().find(|c| &c.host_key == key) else {
            let _ = write!(h, "<div class=\"none\">Not run on {}.</div>", esc(words));
            continue;
        };
        let mut steps: Vec<&str> = Vec::new();
        for s in cell.targets.iter().flat_map(|t| &t.steps) {
            if !steps.contains(&s.x.as_str()) {
                steps.push(&s.x);
            }
        }
        let groups: Vec<BarGroup> = steps
            .iter()
            .map(|x| BarGroup {
                label: x.to_string(),
                bars: cell
                    .targets
                    .iter()
                    .filter_map(|t| {
                        let s = t.steps.iter().find(|s| s.x == *x)?;
                        Some(Bar {
                            label: t.target.clone(),
                            value: s.center?,
                            ci: s.ci95,
                            reps: s.values.clone(),
                            color: colors.get(t.target.as_str()).copied().unwrap_or(0),
                        })
                    })
                    .collect(),
            })
            .collect();
        let legend = cell
            .targets
            .iter()
            .map(|t| {
                (
                    t.target.clone(),
                    colors.get(t.target.as_str()).copied().unwrap_or(0),
                )
            })
            .collect();
        let opts = BarOpts {
            legend,
            ..BarOpts::default()
        };
        let title = format!("{} · {}", pt.point, words);
        let _ = write!(
            h,
            "<div>{}</div>",
            bar_chart(&title, &header(&pt.metric), &groups, &opts)
        );
    }
    h.push_str("</div>");
}
