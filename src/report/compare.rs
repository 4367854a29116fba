//! `fsarena compare A B`: the same plan run twice (another kernel, machine or option), side
//! by side, matched by target, workload, variant and threads.

use std::path::Path;

use anyhow::Result;
use comfy_table::presets::ASCII_MARKDOWN;
use comfy_table::Table;

use super::format::{header, mean_ci};
use super::model::{self, ALPHA};
use crate::results::store;
use crate::stats;

pub fn render(a: &Path, b: &Path) -> Result<String> {
    let (la, lb) = (store::load(a)?, store::load(b)?);
    let (ra, rb) = (model::build(&la), model::build(&lb));
    let mut t = Table::new();
    t.load_preset(ASCII_MARKDOWN);
    t.set_header([
        "workload", "threads", "target", "metric", "A", "B", "change", "p",
    ]);
    let mut matched = 0;
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
            matched += 1;
            let (change, p) = match stats::compare(&ma.raw, &mb.raw, ALPHA) {
                Some(c) if c.significant => {
                    (format!("{:+.1} %", c.pct_diff), format!("{:.3}", c.p_value))
                }
                Some(c) => ("≈".to_string(), format!("{:.3}", c.p_value)),
                None => ("too few runs".to_string(), String::new()),
            };
            let mut w = sa.workload.clone();
            if !sa.variant.is_empty() {
                w.push_str(&format!(" [{}]", sa.variant));
            }
            t.add_row([
                w,
                sa.threads.to_string(),
                row_a.target.clone(),
                header(key),
                mean_ci(key, ma),
                mean_ci(key, mb),
                change,
                p,
            ]);
        }
    }
    if matched == 0 {
        anyhow::bail!(
            "{} and {} share no target and workload: compare runs of the same plan",
            a.display(),
            b.display()
        );
    }
    Ok(format!(
        "A = {} (kernel {})\nB = {} (kernel {})\n\"≈\" = no significant change (p ≥ {ALPHA})\n{t}\n",
        a.display(),
        la.host.kernel,
        b.display(),
        lb.host.kernel
    ))
}
