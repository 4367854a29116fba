//! What the terminal says once, after the tables: each warning with the tables it concerns
//! (not repeated under every table), the overall ranking, and the host in one line.

use std::fmt::Write;

use super::width::{wrap, wrap_lines};
use crate::plan::size::human_bytes;
use crate::report::model::format::value;
use crate::report::model::report::{Report, STOLEN_NOTED_PCT};
use crate::stats::steadiness::UNSTEADY_CV;
use crate::stats::warnings::{
    FSYNCS_UNFLUSHED, READS_FROM_MEMORY, REPLAY_TIME_GAP, REPLAY_TIME_GAP_PCT, WIDE_SPREAD_CV,
    WRITES_ABSORBED,
};
use crate::stats::Warning;

/// The most places a warning lists before it says "and N more".
const MAX_PLACES: usize = 6;

/// A warning's text without the figures that differ between tables, and the figure of one
/// table, so the same caution is said once with where it applies.
fn generic(w: &Warning) -> (String, Option<String>) {
    match w {
        Warning::WideSpread { metric, cv } if cv.is_finite() => (
            format!(
                "{metric} varies more than {:.0} % between runs (CV) — small differences take \
                 many runs to decide; make sure nothing else uses the disk or CPU",
                WIDE_SPREAD_CV * 100.0
            ),
            Some(format!("{:.0} %", cv * 100.0)),
        ),
        Warning::ShortPhase { count, seconds } => (
            "measured phases under the phase floor — timer and scheduler noise weigh on the \
             figure; a larger --scale lengthens the phase"
                .to_string(),
            Some(format!("{count}× {}", value("seconds", *seconds))),
        ),
        Warning::Outliers { metric, count } => (
            format!(
                "{metric}: runs far from the others (robust outliers) — something else may \
                 have run at the same time; kept in the statistics, check the raw values"
            ),
            Some(format!("{count}")),
        ),
        Warning::ReadsFromMemory { count } => {
            (READS_FROM_MEMORY.to_string(), Some(format!("{count}×")))
        }
        Warning::WritesAbsorbed { count } => {
            (WRITES_ABSORBED.to_string(), Some(format!("{count}×")))
        }
        Warning::FsyncsUnflushed { count } => {
            (FSYNCS_UNFLUSHED.to_string(), Some(format!("{count}×")))
        }
        Warning::ReplayTimeGap { count, pct } => (
            REPLAY_TIME_GAP.to_string(),
            Some(format!(
                "{count}× {pct:+.0} % (beyond ±{REPLAY_TIME_GAP_PCT:.0} %)"
            )),
        ),
        other => (other.to_string(), None),
    }
}

/// One kind of caution and every place it concerns ("ext4 in create, 1 thread (72 %)").
#[derive(Debug, Clone, PartialEq)]
pub struct WarningGroup {
    pub text: String,
    pub places: Vec<String>,
    /// Every point of the report ran the same too few runs: the plan chose them, so the
    /// caution is said once and no place is worth listing (issue 60: one item listed all 720
    /// cells of a study whose plan ran 2).
    pub planned: bool,
}

impl WarningGroup {
    /// Where it applies, in words: "12 places", or that the plan ran this many everywhere.
    pub fn reach(&self) -> String {
        match (self.planned, self.places.len()) {
            (true, _) => "every point: the plan ran this many".to_string(),
            (false, 1) => "1 place".to_string(),
            (false, n) => format!("{n} places"),
        }
    }
}

/// Every warning of the report once, grouped by kind with every place it concerns, in the
/// order first met: what the terminal, summary.md and the HTML page list.
pub fn warning_groups(r: &Report) -> Vec<WarningGroup> {
    let planned = planned_runs(r);
    let mut groups: Vec<WarningGroup> = Vec::new();
    for s in &r.sections {
        for row in &s.rows {
            for w in &row.warnings {
                let (text, detail) = generic(w);
                let place = match detail {
                    Some(d) => format!("{} in {} ({d})", row.target, s.title()),
                    None => format!("{} in {}", row.target, s.title()),
                };
                add_place(&mut groups, text, place);
            }
        }
    }
    for g in &mut groups {
        g.planned = planned.as_deref().is_some_and(|p| g.text.starts_with(p));
    }
    groups
}

/// Adds `place` to the group of `text`, or starts one.
pub fn add_place(groups: &mut Vec<WarningGroup>, text: String, place: String) {
    match groups.iter_mut().find(|g| g.text == text) {
        Some(g) => g.places.push(place),
        None => groups.push(WarningGroup {
            text,
            places: vec![place],
            planned: false,
        }),
    }
}

/// The start of the too-few-runs caution ("only 2 successful runs") when every row of the
/// report ran that many: then the plan chose it, and no place is worth listing.
fn planned_runs(r: &Report) -> Option<String> {
    let mut oks = r
        .sections
        .iter()
        .flat_map(|s| s.rows.iter().map(|row| row.ok));
    let n = oks.next()?;
    let every = oks.all(|k| k == n) && n > 0 && n < crate::stats::warnings::MIN_USEFUL_RUNS;
    every.then(|| {
        Warning::TooFewRuns { n }
            .to_string()
            .split(" — ")
            .next()
            .unwrap_or_default()
            .to_string()
    })
}

/// Every warning of the report once, folded to one line each: the caution, how many places
/// it concerns and the first of them, cut with "…" at the terminal's width (summary.md and
/// report.html list every place in full), so the warnings never push the answer off the
/// screen; a caution about what the plan itself chose names no place.
pub fn warnings(r: &Report, width: usize) -> String {
    let groups = warning_groups(r);
    if groups.is_empty() {
        return String::new();
    }
    let mut out = String::from("\nwarnings (each in full in summary.md):\n");
    for g in groups {
        // The caution's first clause (what, not its advice), so the places fit the line.
        let text = g.text.split(" — ").next().unwrap_or(&g.text);
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let line = if g.planned || g.places.len() == 1 {
            let only = if g.planned { "" } else { g.places[0].as_str() };
            match only {
                "" => format!("- {text} ({})", g.reach()),
                place => format!("- {text} ({place})"),
            }
        } else {
            let mut where_ = list_places(&g.places, MAX_PLACES);
            where_.insert_str(0, &format!("{}: ", g.reach()));
            format!("- {text} ({where_})")
        };
        out.push_str(&fold(&line, width));
        out.push('\n');
    }
    out
}

/// The first `most` of `places`, "; and N more" after them.
fn list_places(places: &[String], most: usize) -> String {
    let mut out = places
        .iter()
        .take(most)
        .cloned()
        .collect::<Vec<_>>()
        .join("; ");
    if places.len() > most {
        let _ = write!(out, "; and {} more", places.len() - most);
    }
    out
}

/// `line` cut to `width` characters, the last one "…" when anything was cut.
fn fold(line: &str, width: usize) -> String {
    if super::width::display_width(line) <= width {
        return line.to_string();
    }
    let mut cut: String = line.chars().take(width.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// The overall ranking: geometric mean of ratios to the baseline with its interval.
pub fn ranking(r: &Report, width: usize) -> String {
    let ranked = r.ranking.iter().filter(|s| !s.reference).count();
    if ranked < 2 {
        return String::new();
    }
    let most = r.ranking.iter().map(|s| s.sections).max().unwrap_or(0);
    let mut out = String::from("\n");
    out.push_str(&wrap(
        &format!(
            "overall: geometric mean of the key-metric ratios to {} over {most} result{} \
             (above 1× = better; approximate 95 % interval):",
            r.baseline,
            if most == 1 { "" } else { "s" }
        ),
        width,
        "",
        "  ",
    ));
    let name_w = r
        .ranking
        .iter()
        .map(|s| s.target.chars().count())
        .max()
        .unwrap_or(0);
    for s in &r.ranking {
        let place = match s.rank {
            Some(n) => format!("{n:>2}."),
            None => "  -".into(),
        };
        let ci = match (s.ci95, s.target == r.baseline) {
            (_, true) => " (baseline)".to_string(),
            (Some((lo, hi)), _) => format!(" ({lo:.2}–{hi:.2})"),
            (None, _) => " (no interval: single runs)".to_string(),
        };
        let mut extra = String::new();
        if s.sections < most {
            let _ = write!(extra, ", {} results", s.sections);
        }
        if s.from_memory > 0 {
            let _ = write!(extra, "; {} left out: read from memory", s.from_memory);
        }
        if s.writes_absorbed > 0 {
            let _ = write!(
                extra,
                "; {} left out: writes absorbed by a cache beneath the file system",
                s.writes_absorbed
            );
        }
        if s.reference {
            extra.push_str(", memory reference: not ranked");
        }
        let line = format!(
            "{place} {:<name_w$}  {:.2}×{ci}{extra}",
            s.target, s.geomean
        );
        out.push_str(&wrap_lines(&line, width, 4));
    }
    out
}

/// How steady the host was over the run, when the records carry probes: one sentence, a
/// warning when the machine itself varied more than [`UNSTEADY_CV`], and what the
/// hypervisor took when it took enough to matter.
pub fn steadiness_text(r: &Report) -> Option<String> {
    let s = r.steadiness.as_ref()?;
    let mut figures = format!(
        "the same 8 MiB memory walk, timed before each of {} phases, took {:.2} ms and \
         varied {:.1} % (robust CV; {:.2}–{:.2} ms)",
        s.probes,
        s.median_ms,
        s.cv * 100.0,
        s.min_ms,
        s.max_ms
    );
    if let (Some(med), Some(max)) = (s.stolen_median_pct, s.stolen_max_pct) {
        if med >= STOLEN_NOTED_PCT {
            let _ = write!(
                figures,
                "; the hypervisor kept {med:.0} % of the CPU time a phase asked for (CPU \
                 steal, median; up to {max:.0} % in one phase)"
            );
        }
    }
    Some(if s.unsteady {
        format!(
            "host unsteady: {figures}. Above {:.0} %, part of the spread between runs is the \
             machine's, not the file systems': close comparisons need more runs, or a \
             quieter machine",
            UNSTEADY_CV * 100.0
        )
    } else {
        format!("host steady: {figures}")
    })
}

/// What the machine did to the run: its steadiness, and the measurements set aside as
/// disturbed ([`crate::report::model::set_aside`]), each a sentence, when there is something to say.
pub fn machine_lines(r: &Report) -> Vec<String> {
    let set_aside = r
        .set_aside
        .as_ref()
        .map(crate::report::model::set_aside::line);
    steadiness_text(r).into_iter().chain(set_aside).collect()
}

/// The host in one line.
pub fn host_line(r: &Report, width: usize) -> String {
    let h = &r.host;
    let mut line = format!(
        "host: Linux {}, {} × {}, {} RAM",
        h.kernel,
        h.cpus,
        h.cpu_model.split_whitespace().collect::<Vec<_>>().join(" "),
        human_bytes(h.mem_total_bytes)
    );
    if let Some(d) = &h.work_device {
        let _ = write!(line, ", work device {d}");
    }
    let _ = write!(line, ", fsarena {}", h.fsarena_version);
    if let Some(z) = h.dataset_zstd_ratio {
        let _ = write!(line, "; data set compresses {z:.1}× with zstd -3");
    }
    wrap(&line, width, "", "  ")
}
