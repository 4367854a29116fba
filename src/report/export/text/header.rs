//! What a report says before its tables, in every file that a reader may open first
//! (`summary.md`, `study.md`, the page's first line): what was compared — targets with the
//! references marked, workloads, runs, data set, file systems, host, kernel, date and the
//! command line — so no output looks more solid, or less explained, than the terminal.

use std::time::{Duration, UNIX_EPOCH};

use crate::report::model::report::Report;

/// "2026-11-27 01:37 UTC", when the run's start is known.
pub fn date(unix: f64) -> Option<String> {
    if !(unix.is_finite() && unix > 0.0) {
        return None;
    }
    let t = humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_secs_f64(unix));
    let s = t.to_string();
    Some(format!("{} UTC", s.get(..16)?.replace('T', " ")))
}

/// The runs per target: "3 runs each", "2–5 runs".
pub fn runs(r: &Report) -> Option<String> {
    let ok = r
        .sections
        .iter()
        .flat_map(|s| s.rows.iter().map(|row| row.ok));
    let (lo, hi) = ok.fold((usize::MAX, 0), |(lo, hi), n| (lo.min(n), hi.max(n)));
    match (lo, hi) {
        (_, 0) => None,
        (1, 1) => Some("1 run each".into()),
        (lo, hi) if lo == hi => Some(format!("{hi} runs each")),
        (lo, hi) => Some(format!("{lo}–{hi} runs")),
    }
}

/// The targets in report order: the baseline first, then the disk targets, then the memory
/// references, marked "(reference, RAM)".
pub fn targets(r: &Report) -> String {
    let mut disks: Vec<&str> = Vec::new();
    let mut refs: Vec<&str> = Vec::new();
    for row in r.sections.iter().flat_map(|s| &s.rows) {
        let list = if row.reference { &mut refs } else { &mut disks };
        if row.target != r.baseline && !list.contains(&row.target.as_str()) {
            list.push(&row.target);
        }
    }
    let mut out = format!("{} (baseline)", r.baseline);
    for t in disks {
        out.push_str(&format!(", {t}"));
    }
    for t in refs {
        out.push_str(&format!(", {t} (reference, RAM)"));
    }
    out
}

/// What was compared, one "label: text" line each, for a Markdown list.
pub fn compared_lines(r: &Report) -> Vec<String> {
    let mut workloads: Vec<&str> = Vec::new();
    for s in &r.sections {
        if !workloads.contains(&s.workload.as_str()) {
            workloads.push(&s.workload);
        }
    }
    let mut lines = vec![format!("Compared: {}", targets(r))];
    let mut on = format!("Workloads: {}", workloads.join(", "));
    if let Some(n) = runs(r) {
        on.push_str(&format!(" ({n})"));
    }
    lines.push(on);
    if let Some(size) = crate::report::model::scales::size_line(&r.sizes, r.host.mem_total_bytes) {
        lines.push(format!("Data set: {size}"));
    }
    lines.push(match &r.file_systems {
        Some(sizes) => format!("{}; {}", sizes.replacen("file", "File", 1), r.condition),
        None => format!("File systems: {}", r.condition),
    });
    lines.extend(r.cpus.clone());
    lines.push(format!(
        "Host: {}",
        super::notes::host_line(r, 100_000)
            .trim_end()
            .trim_start_matches("host: ")
    ));
    if let Some(d) = date(r.host.started_unix) {
        lines.push(format!("Date: {d}"));
    }
    if !r.host.command_line.is_empty() {
        lines.push(format!("Command: `{}`", command(&r.host.command_line)));
    }
    lines
}

/// The command line as typed: the program's file name, not the path it ran from.
fn command(args: &[String]) -> String {
    let mut out: Vec<String> = args.to_vec();
    if let Some(first) = out.first_mut() {
        if let Some(name) = std::path::Path::new(first.as_str()).file_name() {
            *first = name.to_string_lossy().into_owned();
        }
    }
    out.join(" ")
}

/// The opening every Markdown report shares: what was compared, the overall ranking (the
/// terminal's closing `overall:`), and the warnings, grouped, a line each.
pub fn markdown(r: &Report) -> String {
    let mut out = String::new();
    for line in compared_lines(r) {
        out.push_str(&format!("- {line}\n"));
    }
    let ranking = super::notes::ranking(r, 100_000);
    if !ranking.trim().is_empty() {
        out.push_str(&format!("\n## Ranking\n\n```\n{}\n```\n", ranking.trim()));
    }
    let groups = super::notes::warning_groups(r);
    let machine = super::notes::machine_lines(r);
    if !groups.is_empty() || !machine.is_empty() {
        out.push_str("\n## Warnings\n\n");
        for line in machine {
            out.push_str(&format!("- {line}\n"));
        }
        for g in groups {
            if g.planned {
                out.push_str(&format!("- {} ({})\n", g.text, g.reach()));
            } else {
                let places = g.places.join("; ");
                out.push_str(&format!("- {} ({}: {places})\n", g.text, g.reach()));
            }
        }
    }
    out
}
