//! Each section's one-sentence answer about its disk targets: who wins (better, after the
//! run's adjustment for its many comparisons), that the two leaders are equivalent, or that it
//! is undecided and how many runs would decide it. The verdicts it words are the run's own
//! ([`crate::stats::verdicts`]); this only says them. Its p is "adjusted p": the legend names
//! the procedure once ([`crate::report::model::format::legend`]), so the sentence stays short.

use super::section::{Row, Section};
use crate::stats::verdicts::RankedPair;
use crate::stats::{self, Comparison, Decision, Verdict};

/// A p-value as a reader wants it: "p = 0.016", or "p < 0.001" rather than "p = 0.000"
/// (and not "p = < 0.001").
/// Near α it keeps the digits that show which side of α it is on: a call at 0.0496 reads
/// "p = 0.0496", not "p = 0.050".
pub fn p_text(p: f64) -> String {
    if p < 0.001 {
        return "p < 0.001".into();
    }
    let alpha = stats::ALPHA;
    let mut digits = 3;
    while digits < 6 && ((round_to(p, digits) < alpha) != (p < alpha)) {
        digits += 1;
    }
    format!("p = {p:.digits$}")
}

fn round_to(x: f64, digits: usize) -> f64 {
    let f = 10f64.powi(digits as i32);
    (x * f).round() / f
}

/// An interval's level in percent: "90", "98.1".
fn level_text(level: f64) -> String {
    let pct = level * 100.0;
    match (pct - pct.round()).abs() < 0.05 {
        true => format!("{pct:.0}"),
        false => format!("{pct:.1}"),
    }
}

/// "about N more runs per target would decide it", or why no number is given.
pub fn runs_phrase(v: &Verdict) -> String {
    match v.runs_to_decide {
        Some(0) => "more runs would decide it".into(),
        Some(n) => format!("~{n} more run{} per target", if n == 1 { "" } else { "s" }),
        None => match v.runs_limit {
            Some(limit) => format!("not within this run's {limit} runs per target"),
            None => format!(
                "not within {} runs per target",
                stats::decision::MAX_RUNS_ESTIMATE
            ),
        },
    }
}

/// A percentage in a headline: whole numbers from 10 % up, one decimal below, so that a
/// small difference and an interval ending near zero read "3.4 %" and "-0.3 %", not "3 %"
/// and "-0 %". `signed` adds the sign.
fn pct(x: f64, signed: bool) -> String {
    match (x.abs() < 9.95, signed) {
        (true, true) => format!("{x:+.1}"),
        (true, false) => format!("{x:.1}"),
        (false, true) => format!("{x:+.0}"),
        (false, false) => format!("{x:.0}"),
    }
}

/// The section's one-sentence answer, naming disk targets only; `top` is its leader and
/// runner-up, decided.
pub fn headline(s: &Section, top: Option<&RankedPair>) -> String {
    let key = &s.key_metric;
    let measured: Vec<&Row> = s.rows.iter().filter(|r| r.mean(key).is_some()).collect();
    let disk: Vec<&&Row> = measured.iter().filter(|r| !r.reference).collect();
    match disk.len() {
        0 if measured.is_empty() => return "no successful measurement".into(),
        0 => return "no disk file system was measured (only the RAM reference)".into(),
        1 => return format!("only {} was measured", disk[0].target),
        _ => {}
    }
    let Some(pair) = top else {
        return "no comparison".into();
    };
    let (win, next) = (&s.rows[pair.win].target, &s.rows[pair.next].target);
    let Some((c, v)) = pair
        .cmp
        .as_ref()
        .and_then(|c| Some((c, c.verdict.as_ref()?)))
    else {
        return format!("{win} leads {next}, but there are too few runs to tell");
    };
    if pair.baseline_leads() {
        let row = s.rows[pair.next]
            .metric(key)
            .and_then(|m| m.vs_baseline.as_ref());
        if let Some((rc, rv)) = row.and_then(|c| Some((c, c.verdict.as_ref()?))) {
            return from_the_row(s, win, next, rc, rv);
        }
    }
    let by = pct(c.pct_diff.abs(), false);
    let dir = if c.pct_diff > 0.0 { "higher" } else { "lower" };
    match v.decision {
        // Ranked ahead by its runs, behind by the test (at equal CPU steal): say the test's.
        Decision::Worse => format!(
            "{next} wins: {win}'s {key} is {by} % {dir} than {next}'s (worse, adjusted {}), \
             although its runs ranked it ahead",
            p_text(v.p_adjusted)
        ),
        Decision::Better => {
            let ci = c
                .pct_ci95
                .map(|(lo, hi)| {
                    // A called difference shows its false-coverage-adjusted interval.
                    let level = v.ci_level.unwrap_or(0.95) * 100.0;
                    format!(
                        ", {level:.1} % CI {} % to {} %",
                        pct(lo, true),
                        pct(hi, true)
                    )
                })
                .unwrap_or_default();
            format!(
                "{win} wins: {key} {by} % {dir} than {next} (better, adjusted {}{ci})",
                p_text(v.p_adjusted)
            )
        }
        Decision::Equivalent => {
            // The interval the equivalence test rests on, at its level (a later look's
            // share of α makes it wider than 90 %).
            let ci = equivalence_ci(c, v);
            format!(
                "{win} and {next} are equivalent: {key} within ±{} %{ci}",
                v.margin_pct
            )
        }
        Decision::Undecided => {
            // The leader is the one the difference says leads: a rank test's estimate may
            // point the other way from the runs' centres.
            let behind = c.pct_diff != 0.0 && (c.pct_diff > 0.0) != s.higher_is_better;
            let (lead, trail) = if behind { (next, win) } else { (win, next) };
            format!(
                "{lead} leads {trail} by {by} %, undecided (adjusted {}): {}",
                p_text(v.p_adjusted),
                runs_phrase(v)
            )
        }
    }
}

/// The interval an equivalence rests on, at its level (a later look's share of α makes it
/// wider than 90 %): ", 90 % CI -1.2 % to +3.4 %", or nothing without one.
fn equivalence_ci(c: &Comparison, v: &Verdict) -> String {
    match v.equivalence {
        Some(e) => Some((e.pct_ci, e.ci_level)),
        None => c.pct_ci90.map(|ci| (ci, 0.90)),
    }
    .map(|((lo, hi), level)| format!(", {} % CI {lo:+.1} % to {hi:+.1} %", level_text(level)))
    .unwrap_or_default()
}

/// The headline where the baseline (`base`) leads the runner-up (`other`): worded from
/// `other`'s row (its comparison `c` with the baseline, and that row's verdict `v`), so the
/// one comparison reads one figure and one direction in the headline and the row: "ext4
/// leads xfs by 20.5 %" above xfs's "-20.5 %", where the pair read from the other side gave
/// "26 %" (ext4 against xfs).
fn from_the_row(s: &Section, base: &str, other: &str, c: &Comparison, v: &Verdict) -> String {
    let key = &s.key_metric;
    let by = pct(c.pct_diff.abs(), false);
    let dir = if c.pct_diff > 0.0 { "higher" } else { "lower" };
    let ci = |level: f64| {
        c.pct_ci95
            .map(|(lo, hi)| {
                let level = level * 100.0;
                format!(
                    ", {level:.1} % CI {} % to {} %",
                    pct(lo, true),
                    pct(hi, true)
                )
            })
            .unwrap_or_default()
    };
    let p = p_text(v.p_adjusted);
    match v.decision {
        Decision::Worse => format!(
            "{base} wins: {other}'s {key} is {by} % {dir} than {base}'s (worse, adjusted {p}{})",
            ci(v.ci_level.unwrap_or(0.95))
        ),
        Decision::Better => format!(
            "{other} wins: {key} {by} % {dir} than {base} (better, adjusted {p}{}), \
             although its runs ranked {base} ahead",
            ci(v.ci_level.unwrap_or(0.95))
        ),
        Decision::Equivalent => {
            let ci = equivalence_ci(c, v);
            format!(
                "{base} and {other} are equivalent: {key} within ±{} %{ci}",
                v.margin_pct
            )
        }
        Decision::Undecided => {
            let other_ahead = c.pct_diff != 0.0 && (c.pct_diff > 0.0) == s.higher_is_better;
            let (lead, trail) = if other_ahead {
                (other, base)
            } else {
                (base, other)
            };
            format!(
                "{lead} leads {trail} by {by} %, undecided (adjusted {p}): {}",
                runs_phrase(v)
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::pct;

    #[test]
    fn a_small_p_reads_p_below_not_p_equals_below() {
        assert_eq!(super::p_text(0.0004), "p < 0.001");
        assert_eq!(super::p_text(0.016), "p = 0.016");
    }

    /// Defect: a headline printed "adjusted p = 0.050" for a call at 0.0496, which reads as
    /// not below α = 0.05.
    #[test]
    fn a_p_just_below_alpha_keeps_the_digits_that_show_it() {
        assert_eq!(super::p_text(0.0496), "p = 0.0496");
        assert_eq!(super::p_text(0.04999), "p = 0.04999");
        assert_eq!(super::p_text(0.0504), "p = 0.050");
        assert_eq!(super::p_text(0.0494), "p = 0.049");
    }

    #[test]
    fn headline_percentages_keep_a_decimal_below_ten_and_never_read_minus_zero() {
        assert_eq!(pct(-0.3, true), "-0.3");
        assert_eq!(pct(3.44, false), "3.4");
        assert_eq!(pct(26.04, false), "26");
        assert_eq!(pct(-29.4, true), "-29");
        assert_eq!(pct(9.97, true), "+10");
    }

    /// The default run (`--runs auto`, at most a few runs) said "not within 1000 runs per
    /// target" of a comparison its own last look could not decide: the limit is the run's.
    #[test]
    fn an_undecided_budgeted_comparison_names_the_runs_own_limit() {
        use crate::stats::{Decision, Verdict};
        let mut v = Verdict {
            decision: Decision::Undecided,
            p_adjusted: 1.0,
            adjustment: crate::stats::Adjustment::TwoStage,
            margin_pct: 5.0,
            runs_to_decide: None,
            p_sequential: None,
            look_runs: None,
            ci_level: None,
            runs_limit: Some(10),
            within_pct: None,
            within_level: None,
            equivalence: None,
            steal: None,
        };
        assert_eq!(
            super::runs_phrase(&v),
            "not within this run's 10 runs per target"
        );
        v.runs_limit = None;
        assert_eq!(super::runs_phrase(&v), "not within 1000 runs per target");
        v.runs_to_decide = Some(4);
        assert_eq!(super::runs_phrase(&v), "~4 more runs per target");
    }
}
