//! The files a tune leaves in its directory: `best.toml` (a plan `fsarena run` accepts:
//! the best configuration as a `[[target]]` beside the file system's defaults, on the
//! tune's own workloads and data set, so running it checks the gain), `answer.json` (the
//! answer model, as `--format json` prints it) and `search.html` (the race as a chart).

use std::fmt::Write;
use std::path::Path;

use super::answer::{Answer, Row};
use super::setup::{Setup, ANSWER, BEST, CHART};
use super::text::{gain_words, unsafe_lines};
use crate::plan::Plan;
use crate::report::charts::{bars, Bar, BarOpts};

/// The name of the best configuration's `[[target]]` (never a catalogue name).
pub fn tuned_name(setup: &Setup) -> String {
    format!("{}-tuned", setup.fs.name())
}

/// The plan keys that give `fsarena run` the tune's workloads and data set.
fn plan_keys(plan: &Plan) -> toml::Table {
    let mut t = toml::Table::new();
    let strings = |v: &[String]| toml::Value::Array(v.iter().cloned().map(Into::into).collect());
    t.insert("workloads".into(), strings(&plan.workloads));
    let scales: Vec<toml::Value> = std::iter::once(plan.dataset.scale)
        .chain(plan.extra_scales.iter().copied())
        .map(Into::into)
        .collect();
    t.insert(
        "scale".into(),
        if scales.len() == 1 {
            scales[0].clone()
        } else {
            toml::Value::Array(scales)
        },
    );
    let threads = plan.threads.iter().map(|&n| (n as i64).into()).collect();
    t.insert("threads".into(), toml::Value::Array(threads));
    t.insert("margin".into(), plan.margin_pct.into());
    if let Some(s) = plan.fs_size {
        t.insert("fs_size".into(), s.to_string().into());
    }
    if let Some(a) = plan.age_pct {
        t.insert("age".into(), a.into());
    }
    let mut dataset = toml::Table::new();
    let profiles: Vec<toml::Value> = std::iter::once(plan.dataset.profile)
        .chain(plan.extra_profiles.iter().copied())
        .map(|p| crate::dataset::profile_name(p).into())
        .collect();
    dataset.insert("profile".into(), toml::Value::Array(profiles));
    dataset.insert("seed".into(), (plan.dataset.seed as i64).into());
    if let Some(d) = &plan.dataset.source_dir {
        dataset.insert("dir".into(), d.display().to_string().into());
    }
    t.insert("dataset".into(), dataset.into());
    if !plan.workload_options.is_empty() {
        let w: toml::Table = plan
            .workload_options
            .iter()
            .map(|(k, v)| (k.clone(), v.clone().into()))
            .collect();
        t.insert("workload".into(), w.into());
    }
    t
}

/// `best.toml`: comments that say what it is and what it gives up, then the plan.
pub fn best_toml(setup: &Setup, a: &Answer) -> Option<String> {
    let b = a.best.as_ref()?;
    let name = tuned_name(setup);
    let mut head = format!(
        "# fsarena tune {} for {}: {} ({}), the best of {} candidates.\n",
        a.fs,
        a.workloads.join(", "),
        b.name,
        b.changes,
        a.candidates.len()
    );
    for g in &b.gain {
        let _ = writeln!(head, "# vs the defaults: {}", gain_words(g));
    }
    for l in unsafe_lines(b) {
        let _ = writeln!(head, "# {l}");
    }
    let _ = writeln!(
        head,
        "# `fsarena run best.toml` measures it beside the defaults ({}).",
        setup.fs.name()
    );
    let mut t = plan_keys(&setup.plan);
    let targets = vec![setup.fs.name().to_string(), name.clone()];
    t.insert(
        "targets".into(),
        toml::Value::Array(targets.into_iter().map(Into::into).collect()),
    );
    t.insert("baseline".into(), setup.fs.name().into());
    let mut target = toml::Table::new();
    target.insert("name".into(), name.into());
    target.insert("fs".into(), setup.fs.name().into());
    let list = |v: &[String]| toml::Value::Array(v.iter().cloned().map(Into::into).collect());
    target.insert("mkfs".into(), list(&b.mkfs_args));
    target.insert("mount".into(), list(&b.mount_options));
    let warning: Vec<String> = b
        .unsafe_values
        .iter()
        .map(|u| format!("UNSAFE {}: {}", u.value, u.gives_up))
        .collect();
    let description = format!("{} tuned by fsarena tune: {}", setup.fs.name(), b.changes);
    target.insert(
        "description".into(),
        if warning.is_empty() {
            description
        } else {
            format!("{description}; {}", warning.join("; "))
        }
        .into(),
    );
    t.insert("target".into(), toml::Value::Array(vec![target.into()]));
    Some(format!("{head}\n{}", toml::to_string(&t).ok()?))
}

/// One bar per candidate: its key metric at the first point against the best's mean, in
/// %, each run a dot; labelled with its runs and fate.
fn chart(a: &Answer, runs: &dyn Fn(&Row) -> Vec<f64>) -> String {
    let data: Vec<Bar> = a
        .candidates
        .iter()
        .enumerate()
        .map(|(i, r)| Bar {
            label: format!("{} · {} runs · {}", r.name, r.runs, r.fate.as_str()),
            value: r.vs_best_pct.map_or(0.0, |p| 100.0 + p),
            ci: None,
            reps: runs(r),
            color: i,
        })
        .collect();
    let opts = BarOpts {
        suffix: " %",
        reference: Some(100.0),
        legend: Vec::new(),
    };
    bars(
        &format!("fsarena tune {}: the race", a.fs),
        "key metric, % of the best",
        data,
        &opts,
    )
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// `search.html`: the chart and the answer's text, self-contained.
pub fn chart_page(a: &Answer, text: &str, runs: &dyn Fn(&Row) -> Vec<f64>) -> String {
    format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>fsarena tune {}</title>\
         <style>body{{font-family:sans-serif;max-width:70em;margin:2em auto}}svg{{width:100%;height:auto}}\
         pre{{font-size:0.85em}}</style></head><body>\n<h1>fsarena tune {} for {}</h1>\n{}\n<pre>{}</pre>\n</body></html>\n",
        esc(&a.fs),
        esc(&a.fs),
        esc(&a.workloads.join(", ")),
        chart(a, runs),
        esc(text)
    )
}

/// Writes `best.toml`, `answer.json` and `search.html` into `dir`.
pub fn write_all(
    dir: &Path,
    setup: &Setup,
    a: &Answer,
    text: &str,
    runs: &dyn Fn(&Row) -> Vec<f64>,
) -> std::io::Result<()> {
    if let Some(best) = best_toml(setup, a) {
        std::fs::write(dir.join(BEST), best)?;
    }
    let json = serde_json::to_string_pretty(a).map_err(std::io::Error::other)?;
    std::fs::write(dir.join(ANSWER), json + "\n")?;
    std::fs::write(dir.join(CHART), chart_page(a, text, runs))
}
