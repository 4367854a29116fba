//! The "Across scales" section of a run over several data-set sizes: the scale check, flips
//! first, and the key metric against the data set's file count, one chart per workload
//! point (variant, threads), a line per target — where a line crosses another, the verdict
//! flips.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::charts::{self, XAxis};
use super::escape::esc;
use crate::report::model::format::header;
use crate::report::model::report::Report;
use crate::report::model::scales::{check_lines, files_of};

/// The section, when the run checked its verdicts across scales.
pub(super) fn render(h: &mut String, r: &Report, colors: &BTreeMap<String, usize>) {
    let Some(c) = &r.scale_check else { return };
    h.push_str("<section id=\"scales\"><h2>Across scales</h2><ul>");
    for line in check_lines(c) {
        let _ = write!(h, "<li>{}</li>", esc(&line));
    }
    h.push_str("</ul><div class=\"charts\">");
    // (workload, variant, threads) → target → (files, mean of the key metric)
    type Lines = BTreeMap<String, Vec<(f64, f64)>>;
    let mut charts: BTreeMap<(String, String, u32), (String, Lines)> = BTreeMap::new();
    for s in &r.sections {
        let Some(files) = files_of(&r.sizes, s.dataset.as_deref()) else {
            continue;
        };
        let key = (s.workload.clone(), s.variant.clone(), s.worker_threads());
        let (_, lines) = charts
            .entry(key)
            .or_insert_with(|| (s.key_metric.clone(), BTreeMap::new()));
        for row in &s.rows {
            if let Some(m) = row.shown_value(&s.key_metric) {
                lines
                    .entry(row.target.clone())
                    .or_default()
                    .push((files as f64, m));
            }
        }
    }
    for ((w, v, threads), (key, lines)) in charts {
        let measured = lines.into_iter().filter(|(_, p)| p.len() > 1).collect();
        let data = super::figures::target_lines(measured, colors);
        let variant = if v.is_empty() { v } else { format!(" [{v}]") };
        let title = format!(
            "{w}{variant}, {threads} thread{}",
            if threads == 1 { "" } else { "s" }
        );
        let _ = write!(
            h,
            "<div>{}</div>",
            charts::lines(
                &title,
                "files in the data set",
                &header(&key),
                XAxis::Log2,
                &data
            )
        );
    }
    h.push_str("</div></section>");
}
