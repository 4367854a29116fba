//! `fsarena history check`: the newest run of each plan on each host against its history.
//! Exit 0 when nothing got worse, 1 naming each regression, 125 when a newest run measured
//! nothing (so `git bisect run` skips that commit).

use anyhow::Result;
use clap::Args;

use super::super::exit::{EXIT_FAILED, EXIT_OK};
use super::super::output::emit;
use super::filter::FilterArgs;
use super::place::{parse_label, Place};
use crate::history::check::{check, groups, CheckOptions, Outcome};
use crate::history::trend::date;

/// `git bisect run`'s "cannot test this commit".
pub const EXIT_SKIP: i32 = 125;

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The baseline: the runs carrying this label (default: the last --last runs before
    /// the newest).
    #[arg(long, value_name = "KEY=VALUE", value_parser = parse_label)]
    pub against: Option<(String, String)>,
    /// How many runs before the newest make the baseline, without --against.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub last: u32,
    /// Only a loss larger than PCT % of the key metric counts (default: any significant
    /// loss).
    #[arg(long, value_name = "PCT", value_parser = super::super::pct::parse_pct)]
    pub fail_if_worse: Option<f64>,
    /// Print the answer as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub filter: FilterArgs,
    #[command(flatten)]
    pub place: Place,
}

pub fn run(a: &CheckArgs) -> Result<i32> {
    let mut store = a.place.open()?;
    let runs = a.filter.runs(store.as_mut())?;
    if runs.is_empty() {
        anyhow::bail!(
            "the history holds no run that matches ({})",
            store.location()
        );
    }
    let o = CheckOptions {
        against: a.against.clone(),
        last: a.last as usize,
        fail_if_worse_pct: a.fail_if_worse.unwrap_or(0.0),
        ..CheckOptions::default()
    };
    let gs = groups(&runs, &o);
    let ids: Vec<String> = gs
        .iter()
        .flat_map(|g| g.runs.iter().map(|r| r.id.clone()))
        .collect();
    let mut values = store.values(&ids)?;
    if let Some(t) = &a.filter.target {
        values.retain(|v| &v.target == t);
    }
    if let Some((k, v)) = &o.against {
        for g in gs.iter().filter(|g| g.baseline.is_empty()) {
            eprintln!(
                "fsarena: no run labelled {k}={v} before the newest of {} on {}: only the change-point check applies",
                g.newest().plan_name,
                g.newest().host
            );
        }
    }
    let out = check(&gs, &values, &o);
    if a.json {
        emit(&(serde_json::to_string_pretty(&out)? + "\n"))?;
    } else {
        emit(&text(&out, gs.len()))?;
    }
    Ok(if !out.unmeasured.is_empty() {
        EXIT_SKIP
    } else if !out.regressions.is_empty() {
        EXIT_FAILED
    } else {
        EXIT_OK
    })
}

/// The answer in lines: each regression, then what could not be checked.
fn text(out: &Outcome, groups: usize) -> String {
    let mut s = String::new();
    for r in &out.regressions {
        let how: Vec<String> = [
            r.test_p
                .map(|p| format!("against the baseline, adjusted p = {p:.3}")),
            r.change_p
                .map(|p| format!("change point, adjusted p = {p:.3}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        let ci = r
            .ci95
            .map(|(l, h)| format!(" (95 % CI {l:+.1} % to {h:+.1} %)"))
            .unwrap_or_default();
        s.push_str(&format!(
            "regression: {} on {}, {}: {} {:+.1} %{ci}; began in run {} ({}{}); {}\n    plan: {}; host: {}\n",
            r.key.point_words(),
            r.key.target,
            r.key.metric,
            if r.pct < 0.0 { "down" } else { "up" },
            r.pct,
            r.began.id,
            date(r.began.started_unix),
            if r.began.labels.is_empty() {
                String::new()
            } else {
                format!(
                    ", {}",
                    r.began
                        .labels
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join(" ")
                )
            },
            how.join("; "),
            r.plan_name,
            r.host,
        ));
    }
    for (id, path) in &out.unmeasured {
        s.push_str(&format!(
            "could not measure: the newest run {id} ({path}) has no ok measurement\n"
        ));
    }
    for a in &out.alone {
        s.push_str(&format!("nothing to compare with yet: {a} has one run\n"));
    }
    s.push_str(&format!(
        "{} series of {groups} plan × host checked: {} regressions\n",
        out.series,
        out.regressions.len()
    ));
    s
}
