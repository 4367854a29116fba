//! `summary.md`: the terminal tables as Markdown, for pasting into an issue or a wiki.

use super::format::{header, mean_ci, value, vs_baseline};
use super::model::{Mark, Report};

pub fn render(r: &Report) -> String {
    let mut out = String::from("# fsarena results\n\n");
    if let Some(why) = &r.incomplete {
        out.push_str(&format!("> **Incomplete:** {why}\n\n"));
    }
    out.push_str(&format!(
        "Kernel {}, {} × {}, fsarena {}. Fresh file system per repetition; baseline **{}**; \
         95 % intervals; ≈ = not significant (p ≥ 0.05).\n",
        r.host.kernel, r.host.cpus, r.host.cpu_model, r.host.fsarena_version, r.baseline
    ));
    for s in &r.sections {
        let key = &s.key_metric;
        out.push_str(&format!("\n## {}\n\n{}\n\n", s.title(), s.decision));
        let cols: Vec<&String> = s.columns.iter().filter(|c| *c != key).collect();
        out.push_str(&format!(
            "| target | runs | {} | CV | vs {} |{}\n",
            header(key),
            r.baseline,
            cols.iter()
                .map(|c| format!(" {} |", header(c)))
                .collect::<String>()
        ));
        out.push_str(&format!(
            "|---|---|---|---|---|{}\n",
            "---|".repeat(cols.len())
        ));
        for row in &s.rows {
            let mark = match row.mark {
                Some(Mark::Best) => " ✓",
                Some(Mark::Worst) => " ✗",
                None => "",
            };
            let (k, cv, vs) = match row.metric(key) {
                Some(m) => (
                    mean_ci(key, m),
                    format!("{:.1} %", m.summary.cv * 100.0),
                    if row.target == r.baseline {
                        "baseline".into()
                    } else {
                        vs_baseline(m.vs_baseline.as_ref())
                    },
                ),
                None => ("—".into(), String::new(), String::new()),
            };
            let fails = if row.failed.is_empty() && row.invalid == 0 {
                String::new()
            } else {
                format!(" ({} failed, {} invalid)", row.failed.len(), row.invalid)
            };
            out.push_str(&format!(
                "| {} | {}{} | {}{} | {} | {} |{}\n",
                row.target,
                row.ok,
                fails,
                k,
                mark,
                cv,
                vs,
                cols.iter()
                    .map(|c| format!(
                        " {} |",
                        row.mean(c)
                            .map(|v| value(c, v))
                            .unwrap_or_else(|| "—".into())
                    ))
                    .collect::<String>()
            ));
        }
    }
    out
}
