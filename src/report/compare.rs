//! `fsarena compare A B`: the same plan run twice (another kernel, machine or option), side
//! by side, matched by target, workload, variant and threads. Every matched key metric is
//! decided as B against A: better / worse (Benjamini–Hochberg-controlled over all matched rows),
//! equivalent (90 % interval within ±margin) or undecided.

use std::path::Path;

use anyhow::Result;
use comfy_table::presets::ASCII_MARKDOWN;
use comfy_table::Table;

use super::format::{header, legend, mean_ci};
use super::model::{self, ALPHA};
use super::verdicts::runs_phrase;
use crate::results::store;
use crate::stats::{
    self, benjamini_hochberg, decide, next_level, runs_to_decide, Decision, Verdict,
};

pub fn render(a: &Path, b: &Path, margin_pct: Option<f64>) -> Result<String> {
    let (la, lb) = (store::load(a)?, store::load(b)?);
    let (ra, rb) = (model::build(&la, margin_pct), model::build(&lb, margin_pct));
    let margin = ra.margin_pct;
    // (label, threads, target, metric, A, B, A raw, B raw, higher is better)
    let mut rows = Vec::new();
    for sa in &ra.sections {
        let Some(sb) = rb.sections.iter().find(|s| {
            s.workload == sa.workload && s.variant == sa.variant && s.threads == sa.threads
        }) else {
            continue;
        };
        let key = &sa.key_metric;
        for row_a in &sa.rows {
            let Some(row_b) = sb.rows.iter().find(|r| r.target == row_a.target) else {
                continue;
            };
            let (Some(ma), Some(mb)) = (row_a.metric(key), row_b.metric(key)) else {
                continue;
            };
            let mut w = sa.workload.clone();
            if !sa.variant.is_empty() {
                w.push_str(&format!(" [{}]", sa.variant));
            }
            rows.push((
                w,
                sa.threads.to_string(),
                row_a.target.clone(),
                header(key),
                mean_ci(key, ma),
                mean_ci(key, mb),
                ma.raw.clone(),
                mb.raw.clone(),
                sa.higher_is_better,
            ));
        }
    }
    if rows.is_empty() {
        anyhow::bail!(
            "{} and {} share no target and workload: compare runs of the same plan",
            a.display(),
            b.display()
        );
    }
    let cmps: Vec<_> = rows
        .iter()
        .map(|r| stats::compare(&r.6, &r.7, ALPHA))
        .collect();
    let p: Vec<f64> = cmps.iter().flatten().map(|c| c.p_value).collect();
    let adjusted = benjamini_hochberg(&p);
    let called = adjusted.iter().filter(|&&x| x < ALPHA).count();
    let level = next_level(ALPHA, called, p.len());
    let mut next_p = adjusted.iter();
    let mut t = Table::new();
    t.load_preset(ASCII_MARKDOWN);
    t.set_header([
        "workload", "threads", "target", "metric", "A", "B", "B vs A", "decision", "BH p",
    ]);
    for (r, c) in rows.into_iter().zip(cmps) {
        // Only answered comparisons entered the family, so only they take the next p.
        let (change, word, p) = match c.map(|c| (next_p.next().copied(), c)) {
            Some((Some(ph), c)) => {
                let decision = decide(c.pct_diff, c.pct_ci90, ph, ALPHA, margin, r.8);
                let word = if decision == Decision::Undecided {
                    let v = Verdict {
                        decision,
                        p_adjusted: ph,
                        margin_pct: margin,
                        runs_to_decide: runs_to_decide(&r.6, &r.7, margin, level),
                    };
                    format!("undecided, {}", runs_phrase(&v))
                } else {
                    decision.as_str().to_string()
                };
                (format!("{:+.1} %", c.pct_diff), word, format!("{ph:.3}"))
            }
            _ => (String::new(), "too few runs".to_string(), String::new()),
        };
        t.add_row([r.0, r.1, r.2, r.3, r.4, r.5, change, word, p]);
    }
    Ok(format!(
        "A = {} (kernel {})\nB = {} (kernel {})\n{}\n{t}\n",
        a.display(),
        la.host.kernel,
        b.display(),
        lb.host.kernel,
        legend(margin)
    ))
}
