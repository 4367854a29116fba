//! `fsarena compare A B`: the same plan run twice (another kernel, machine or option), side
//! by side, matched by target, workload, variant and threads. Every matched key metric is
//! decided as B against A: better / worse (plain Benjamini–Hochberg over all matched rows, not
//! the two-stage step-up of a run's report: why at [`decide_rows`]),
//! equivalent (90 % interval within ±margin) or undecided. One model ([`Comparison`]),
//! rendered by every exporter that prints on stdout (`report::export`); [`worse_than`] is the `--fail-if-worse` gate,
//! and [`Comparison::missing`] the points A measured that B cannot answer for, which fail the
//! gate too (a B whose workload failed outright must not pass it).

use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use super::format::{decision_words, mean_ci, pct_words};
use super::report::{self, Report, STOLEN_NOTED_PCT};
use super::section::{point_name, threads_phrase, threads_told, Row};
use super::shown::Statistic;
use crate::results::store;
use crate::stats::decision::MAX_RUNS_ESTIMATE;
use crate::stats::steadiness::Steadiness;
use crate::stats::verdicts::fixed::decided_interval;
use crate::stats::verdicts::{verdict, Family};
use crate::stats::{self, runs_to_decide, Adjustment, Decision, ALPHA};

/// Two results directories compared.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub a: String,
    pub b: String,
    pub kernel_a: String,
    pub kernel_b: String,
    /// How each side's file systems started: "fresh" or "aged to N %" (`--age`), so a
    /// fresh run and an aged run of one plan read as what they are.
    pub condition_a: String,
    pub condition_b: String,
    pub margin_pct: f64,
    /// The procedure that adjusted the rows' `p_adjusted` ([`decide_rows`]).
    pub adjustment: Adjustment,
    /// How steady each side's host was (`None` for results without probes).
    pub steadiness_a: Option<Steadiness>,
    pub steadiness_b: Option<Steadiness>,
    pub rows: Vec<CompareRow>,
    /// Key metrics A has an `ok` figure for and B has none: the point is missing from B, or
    /// none of B's repetitions there ended `ok`. Never in `rows`: there is nothing to decide.
    pub missing: Vec<MissingPoint>,
}

/// A point (workload, variant, threads, target) A measured that B has no figure for.
#[derive(Debug, Clone, Serialize)]
pub struct MissingPoint {
    pub workload: String,
    pub variant: String,
    pub threads: u32,
    pub target: String,
    /// Whether B recorded the point at all: true when B ran it and no repetition ended `ok`.
    pub recorded_in_b: bool,
    /// Why B has no figure, in words: "missing in B" or "no ok run in B (3 error: …)".
    pub why: String,
}

impl MissingPoint {
    /// The point and why, as the gate names it on stderr.
    pub fn line(&self) -> String {
        format!(
            "{}{}, {}: {}",
            point_name(&self.workload, &self.variant),
            threads_phrase(threads_told(&self.workload, self.threads)),
            self.target,
            self.why
        )
    }
}

/// From this shift between the two runs' host probes (medians) on, the comparison says
/// that the machine itself ran at another speed.
pub const HOST_SHIFT_PCT: f64 = 5.0;

impl Comparison {
    /// B's host probe median against A's, in % (positive: B's machine was slower), when
    /// both runs have probes.
    pub fn host_shift_pct(&self) -> Option<f64> {
        let (a, b) = (self.steadiness_a.as_ref()?, self.steadiness_b.as_ref()?);
        Some((b.median_ms / a.median_ms - 1.0) * 100.0)
    }

    /// What a reader must know about the machines before trusting the verdicts: B's host
    /// ran the same work at another speed than A's (every B figure moves with it, however
    /// many runs: a "worse" could be the machine), or a side's host was unsteady.
    pub fn host_notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if let (Some(shift), Some(a), Some(b)) = (
            self.host_shift_pct(),
            self.steadiness_a.as_ref(),
            self.steadiness_b.as_ref(),
        ) {
            if shift.abs() >= HOST_SHIFT_PCT {
                notes.push(format!(
                    "B's host ran the same memory walk {:.0} % {} than A's (median {:.2} vs \
                     {:.2} ms): differences between the runs up to about that size may be the \
                     machine's, not the file systems'",
                    shift.abs(),
                    if shift > 0.0 { "slower" } else { "faster" },
                    b.median_ms,
                    a.median_ms
                ));
            }
        }
        for (side, s) in [("A", &self.steadiness_a), ("B", &self.steadiness_b)] {
            if let Some(s) = s.as_ref().filter(|s| s.unsteady) {
                notes.push(format!(
                    "{side}'s host was unsteady: the walk varied {:.1} % (robust CV) over its \
                     {} phases",
                    s.cv * 100.0,
                    s.probes
                ));
            }
            let stolen = s.as_ref().and_then(|s| s.stolen_median_pct);
            if let Some(pct) = stolen.filter(|p| *p >= STOLEN_NOTED_PCT) {
                notes.push(format!(
                    "{side}'s hypervisor kept {pct:.0} % of the CPU time a phase asked for (CPU \
                     steal, median): that run's figures are slower by up to about that much"
                ));
            }
        }
        notes
    }
}

/// One key metric of one target at one workload point, B against A.
#[derive(Debug, Clone, Serialize)]
pub struct CompareRow {
    pub workload: String,
    pub variant: String,
    pub threads: u32,
    pub target: String,
    pub metric: String,
    pub higher_is_better: bool,
    /// Each side's figure, the statistic the run's tables show for a key metric
    /// ([`super::shown::centre_on`]): the geometric mean of the runs on the ratio scale,
    /// which `pct_diff` is the ratio of (the arithmetic mean when a run is at or below 0).
    pub value_a: f64,
    pub value_b: f64,
    /// Which statistic `value_a`, `value_b` and the texts are.
    pub statistic: Statistic,
    /// "value ± half-width of its 95 % interval", as the table shows it.
    pub a_text: String,
    pub b_text: String,
    /// (B − A) / A in %, when both sides have runs enough to compare.
    pub pct_diff: Option<f64>,
    /// The interval of `pct_diff` the decision rests on, at `ci_level`
    /// ([`crate::stats::verdicts::fixed::decided_interval`]): a called row's
    /// false-coverage-adjusted interval, an equivalent row's 90 % one, an undecided row's
    /// range at the level a call would need now ("undecided: within A to B").
    pub pct_ci: Option<(f64, f64)>,
    pub ci_level: Option<f64>,
    /// better / worse / equivalent / undecided; `None` with too few runs.
    pub decision: Option<Decision>,
    /// The p-value adjusted over the matched rows by [`Comparison::adjustment`].
    pub p_adjusted: Option<f64>,
    /// More runs per side that would likely decide an undecided comparison ("~N more" in
    /// the tables; more than the estimate's limit when absent).
    pub runs_to_decide: Option<usize>,
}

impl CompareRow {
    /// The workload point: its name, and its variant in brackets.
    pub fn point(&self) -> String {
        point_name(&self.workload, &self.variant)
    }

    /// How much worse B is than A, in % (positive: worse), whatever the metric's direction.
    pub fn worse_by(&self) -> Option<f64> {
        self.pct_diff
            .map(|p| if self.higher_is_better { -p } else { p })
    }

    /// The decision as the tables write it: an undecided row with the range it still
    /// allows (as a run's report writes it) and the runs that would likely decide it.
    pub fn decision_text(&self) -> String {
        match self.decision {
            None => "too few runs".into(),
            Some(Decision::Undecided) => {
                let mut out = "undecided".to_string();
                if let Some((lo, hi)) = self.pct_ci {
                    out.push_str(&format!(
                        ": within {} to {} %",
                        pct_words(lo),
                        pct_words(hi)
                    ));
                }
                match self.runs_to_decide {
                    Some(n) if n > 0 => out.push_str(&format!(", ~{n} more")),
                    Some(_) => {}
                    None => out.push_str(&format!(", > {MAX_RUNS_ESTIMATE} more")),
                }
                out
            }
            Some(d) => d.as_str().into(),
        }
    }
}

/// Matches and decides every key metric the two directories share.
pub fn build(a: &Path, b: &Path, margin_pct: Option<f64>) -> Result<Comparison> {
    build_leaving_out(a, b, margin_pct, &[])
}

/// [`build`] without the points of the workloads `left_out` (ones the two plans ran with
/// other options, `compare --allow-different-plans`), before any row is decided: they are
/// no part of the family the p-values are adjusted over.
pub fn build_leaving_out(
    a: &Path,
    b: &Path,
    margin_pct: Option<f64>,
    left_out: &[String],
) -> Result<Comparison> {
    let (la, lb) = (store::load(a)?, store::load(b)?);
    let (ra, rb) = (
        report::build(&la, margin_pct),
        report::build(&lb, margin_pct),
    );
    let margin = ra.margin_pct;
    let (rows, raws, mut missing) = matched(&ra, &rb);
    let kept = |w: &String| !left_out.contains(w);
    let (mut rows, raws): (Vec<CompareRow>, Vec<Samples>) = (rows.into_iter().zip(raws))
        .filter(|(r, _)| kept(&r.workload))
        .unzip();
    missing.retain(|m| kept(&m.workload));
    // A B that ran the plan and failed every point still compares (and fails the gate);
    // one that shares nothing with A is another plan.
    if rows.is_empty() && !missing.iter().any(|m| m.recorded_in_b) {
        anyhow::bail!(
            "{} and {} share no target and workload: compare runs of the same plan",
            a.display(),
            b.display()
        );
    }
    let adjustment = decide_rows(&mut rows, &raws, margin);
    Ok(Comparison {
        adjustment,
        a: a.display().to_string(),
        b: b.display().to_string(),
        kernel_a: la.host.kernel.clone(),
        kernel_b: lb.host.kernel.clone(),
        condition_a: ra.condition.clone(),
        condition_b: rb.condition.clone(),
        margin_pct: margin,
        steadiness_a: ra.steadiness.clone(),
        steadiness_b: rb.steadiness.clone(),
        rows,
        missing,
    })
}

/// A's and B's values of one matched key metric.
type Samples = (Vec<f64>, Vec<f64>);

/// Every key metric of a target at a workload point that both reports measured, B beside
/// A, not yet decided, with both sides' values; and the points A has a figure for that B
/// lacks.
fn matched(ra: &Report, rb: &Report) -> (Vec<CompareRow>, Vec<Samples>, Vec<MissingPoint>) {
    let mut rows = Vec::new();
    let mut raws = Vec::new();
    let mut missing = Vec::new();
    for sa in &ra.sections {
        let sb = rb.sections.iter().find(|s| {
            s.workload == sa.workload
                && s.dataset == sa.dataset
                && s.variant == sa.variant
                && s.threads == sa.threads
        });
        let key = &sa.key_metric;
        for row_a in &sa.rows {
            // A point A has no figure for is no regression of B's.
            let Some(ma) = row_a.metric(key) else {
                continue;
            };
            let row_b = sb.and_then(|s| s.rows.iter().find(|r| r.target == row_a.target));
            let Some(mb) = row_b.and_then(|r| r.metric(key)) else {
                missing.push(MissingPoint {
                    workload: sa.workload.clone(),
                    variant: sa.point_label(),
                    threads: sa.worker_threads(),
                    target: row_a.target.clone(),
                    recorded_in_b: row_b.is_some(),
                    why: row_b.map_or_else(|| "missing in B".into(), no_ok_run),
                });
                continue;
            };
            // B against A is on the ratio scale when every run of both is positive: both
            // sides then show the geometric mean that `pct_diff` is the ratio of.
            let difference =
                stats::log_values(&ma.raw).is_none() || stats::log_values(&mb.raw).is_none();
            let (shown_a, shown_b) = (
                super::shown::centre_on(ma, difference),
                super::shown::centre_on(mb, difference),
            );
            rows.push(CompareRow {
                workload: sa.workload.clone(),
                // The data set, when the runs had several, is part of the point's name.
                variant: sa.point_label(),
                threads: sa.worker_threads(),
                target: row_a.target.clone(),
                metric: key.clone(),
                higher_is_better: sa.higher_is_better,
                value_a: shown_a.value,
                value_b: shown_b.value,
                statistic: shown_a.statistic,
                a_text: mean_ci(key, &shown_a),
                b_text: mean_ci(key, &shown_b),
                pct_diff: None,
                pct_ci: None,
                ci_level: None,
                decision: None,
                p_adjusted: None,
                runs_to_decide: None,
            });
            raws.push((ma.raw.clone(), mb.raw.clone()));
        }
    }
    (rows, raws, missing)
}

/// "no ok run in B", with how B's repetitions of the point ended and the first error.
fn no_ok_run(row: &Row) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for (_, status, _) in &row.failed {
        match counts.iter_mut().find(|(s, _)| *s == status.as_str()) {
            Some((_, n)) => *n += 1,
            None => counts.push((status.as_str(), 1)),
        }
    }
    if row.invalid > 0 {
        counts.push(("invalid", row.invalid));
    }
    let mut why = String::from("no ok run in B");
    if !counts.is_empty() {
        let said: Vec<String> = counts.iter().map(|(s, n)| format!("{n} {s}")).collect();
        why.push_str(&format!(" ({}", said.join(", ")));
        if let Some(e) = row.failed.iter().find_map(|(_, _, e)| e.as_deref()) {
            why.push_str(&format!(": {}", e.lines().next().unwrap_or(e)));
        }
        why.push(')');
    }
    why
}

/// Decides every matched row as B against A with the run's own tests and decision words
/// ([`crate::stats::verdicts`]), the rows one family under **plain** Benjamini–Hochberg
/// ([`Family::new`]), and returns that procedure for the outputs to name. Not the adaptive
/// two-stage step-up a run's report uses: that one earns its extra calls when most of a
/// family's differences are real (file systems do differ), while compare's rows are one
/// plan run twice, most of them expected to be unchanged, and they feed a regression gate
/// (`--fail-if-worse`) where a false alarm stops someone's CI; with few real differences the
/// two procedures call about the same, and plain BH is the one with the simpler guarantee.
fn decide_rows(rows: &mut [CompareRow], raws: &[Samples], margin: f64) -> Adjustment {
    let cmps: Vec<_> = raws
        .iter()
        .map(|(x, y)| stats::compare(x, y, ALPHA))
        .collect();
    let p: Vec<f64> = cmps.iter().flatten().map(|c| c.p_value).collect();
    let family = Family::new(&p);
    // Only answered comparisons entered the family, so only they take the next p.
    let mut next_p = family.adjusted.iter();
    for ((r, c), (ra_raw, rb_raw)) in rows.iter_mut().zip(cmps).zip(raws) {
        let Some(c) = c else { continue };
        let Some(&ph) = next_p.next() else { continue };
        let v = verdict(
            &c,
            (ph, family.adjustment),
            r.higher_is_better,
            margin,
            || runs_to_decide(ra_raw, rb_raw, margin, family.level),
        );
        r.pct_diff = Some(c.pct_diff);
        (r.pct_ci, r.ci_level) = decided_interval(ra_raw, rb_raw, &c, v.decision, &family).unzip();
        r.decision = Some(v.decision);
        r.p_adjusted = Some(v.p_adjusted);
        r.runs_to_decide = v.runs_to_decide;
    }
    family.adjustment
}

/// The rows significantly worse in B than in A by more than `pct` %: decided `worse`
/// (adjusted over the comparison, [`decide_rows`]) and the point estimate beyond `pct`.
pub fn worse_than(c: &Comparison, pct: f64) -> Vec<&CompareRow> {
    c.rows
        .iter()
        .filter(|r| r.decision == Some(Decision::Worse) && r.worse_by().is_some_and(|w| w > pct))
        .collect()
}

/// The p column's header: the procedure's short name.
pub fn p_header(c: &Comparison) -> &'static str {
    match c.adjustment {
        Adjustment::BenjaminiHochberg => "BH p",
        Adjustment::TwoStage => "adj. p",
    }
}

/// The levels of the rows' intervals of B vs A, each named beside what it is the interval
/// of: "; intervals of B vs A: an undecided row's range at 97.5 % (the level a call would
/// need now), …". Every row of one
/// decision shares its level (one family, one look), so the legend can say it once.
fn interval_levels(c: &Comparison) -> String {
    let level_of = |want: fn(Decision) -> bool| {
        c.rows
            .iter()
            .filter(|r| r.decision.is_some_and(want))
            .find_map(|r| r.ci_level)
    };
    let mut parts = Vec::new();
    let words = [
        (
            level_of(|d| d == Decision::Undecided),
            (
                "an undecided row's range",
                " (the level a call would need now)",
            ),
        ),
        (
            level_of(|d| matches!(d, Decision::Better | Decision::Worse)),
            ("a called row's", " (false-coverage adjusted)"),
        ),
        (
            level_of(|d| d == Decision::Equivalent),
            ("an equivalent row's", ""),
        ),
    ];
    for (level, (what, why)) in words {
        if let Some(l) = level {
            parts.push(format!("{what} at {}{why}", level_words(l)));
        }
    }
    if parts.is_empty() {
        return String::new();
    }
    format!("; intervals of B vs A: {} (ci_level)", parts.join(", "))
}

/// A confidence level in percent with the digits that tell it from its neighbours: "95 %",
/// "97.5 %", "98.75 %".
fn level_words(level: f64) -> String {
    let pct = format!("{:.2}", level * 100.0);
    let pct = pct.trim_end_matches('0').trim_end_matches('.');
    format!("{pct} %")
}

/// The comparison's legend: the decision words named for the procedure that adjusted its
/// rows (and that it is not the one a run's report uses, when it is not), and which
/// statistic A and B show.
pub fn legend(c: &Comparison) -> String {
    let mut out = decision_words(c.margin_pct, c.adjustment, "the matched rows");
    out.push_str(&format!("; {} = that adjusted p", p_header(c)));
    if c.adjustment != crate::stats::verdicts::ADJUSTMENT {
        out.push_str(" (compare keeps plain BH, not the two-stage step-up of a run's report)");
    }
    out.push_str(&interval_levels(c));
    let geometric = c
        .rows
        .iter()
        .all(|r| r.statistic == Statistic::GeometricMean);
    out.push_str(if geometric {
        "; A, B: geometric mean of the runs ± its 95 % interval, B vs A their ratio"
    } else {
        "; A, B: geometric mean of the runs ± its 95 % interval (the mean where a run is ≤ 0), \
         B vs A their ratio (the difference of the means)"
    });
    out
}
