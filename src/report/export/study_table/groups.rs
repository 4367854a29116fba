//! study.md's grouped tables: where a workload says what its points group by
//! ([`WorkloadSpec::study_group`](crate::workload::WorkloadSpec::study_group)), one table per group
//! with a row per point, instead of a section per point. A sweep of a hundred points then
//! reads like the seeds' one chart per block size; every point's own decision stays in
//! summary.md and the terminal.

use std::fmt::Write;

use super::cell::cell;
use crate::report::model::format::header;
use crate::report::model::report::Report;
use crate::report::model::section::Section;
use crate::workload;

/// What puts a section in a group: workload, data set, threads and the workload's group.
type Key = (String, Option<String>, u32, String);

fn key(s: &Section) -> Option<Key> {
    let g = (workload::by_name(&s.workload)?.spec().study_group)(&s.variant)?;
    Some((s.workload.clone(), s.dataset.clone(), s.threads, g))
}

/// Whether section `i` belongs to a group; when it is its group's first section, the
/// group's table is appended to `out` (the other members then add nothing).
pub(super) fn render_at(out: &mut String, r: &Report, i: usize) -> bool {
    let Some(k) = key(&r.sections[i]) else {
        return false;
    };
    let members: Vec<&Section> = r
        .sections
        .iter()
        .filter(|s| key(s).as_ref() == Some(&k))
        .collect();
    if !std::ptr::eq(members[0], &r.sections[i]) {
        return true;
    }
    table(out, r, &k, &members);
    true
}

fn table(out: &mut String, r: &Report, k: &Key, members: &[&Section]) {
    let first = members[0];
    // The key metric and the workload's first side column (IOPS and MB/s for a sweep).
    let side = first.columns.first().filter(|c| **c != first.key_metric);
    let mut title = format!("{} [{}", k.0, k.3);
    if let Some(d) = &k.1 {
        let _ = write!(title, " · {d}");
    }
    let _ = write!(
        out,
        "\n## {title}]\n\n{} points; each cell {}{} (in brackets against {}; ≈: not significant).\n\n| point |",
        members.len(),
        header(&first.key_metric),
        side.map(|c| format!(" · {}", header(c))).unwrap_or_default(),
        r.baseline
    );
    let targets: Vec<&str> = first.rows.iter().map(|row| row.target.as_str()).collect();
    for t in &targets {
        let _ = write!(out, " {t} |");
    }
    out.push_str("\n|---|");
    out.push_str(&"---|".repeat(targets.len()));
    out.push('\n');
    for s in members {
        let _ = write!(out, "| {} |", s.point_label());
        for t in &targets {
            let c = match s.rows.iter().position(|row| row.target == *t) {
                None => "—".to_string(),
                Some(ti) => {
                    let mut c = cell(s, &s.key_metric, ti, &r.baseline);
                    if let Some(m) = side {
                        let _ = write!(c, " · {}", cell(s, m, ti, &r.baseline));
                    }
                    c
                }
            };
            let _ = write!(out, " {c} |");
        }
        out.push('\n');
    }
}
