//! How numbers read in every report: units from the metric's name, three significant digits,
//! and the decision word (better / worse / equivalent / undecided) beside every difference.

use super::section::StopShown;
use super::shown::Shown;
use crate::plan::size::human_bytes;
use crate::stats::{Adjustment, Comparison, Decision, MetricStats};

/// A readable value with its unit, chosen from the metric's snake_case name.
pub fn value(metric: &str, v: f64) -> String {
    if !v.is_finite() {
        return "—".into();
    }
    if metric.ends_with("_bytes") || metric.ends_with("_bytes_written") {
        return human_bytes(v.max(0.0) as u64);
    }
    if metric.ends_with("_pct") {
        return format!("{v:.1} %");
    }
    // Every latency in milliseconds, whatever unit its metric was recorded in, so a p99
    // from fio (µs) and the device's latency (ms) read side by side.
    if metric.ends_with("_us") {
        return format!("{} ms", sig3(v / 1000.0));
    }
    if metric.ends_with("_ms") {
        return format!("{} ms", sig3(v));
    }
    if metric == "seconds" || metric.ends_with("_seconds") || metric == "seconds_per_pass" {
        return format!("{} s", sig3(v));
    }
    if metric.ends_with("amplification") {
        return format!("{v:.2}×");
    }
    if metric == "mb_per_s" {
        return format!("{} MB/s", sig3(v));
    }
    sig3(v)
}

/// Three significant digits with k/M/G suffixes for large numbers.
pub fn sig3(v: f64) -> String {
    let a = v.abs();
    let (x, suffix) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e4 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let ax = x.abs();
    let digits = if ax >= 100.0 {
        0
    } else if ax >= 10.0 {
        1
    } else if ax >= 1.0 {
        2
    } else if ax == 0.0 {
        0
    } else {
        3
    };
    format!("{x:.digits$}{suffix}")
}

/// A value and an amount beside it (the half-width of an interval) in the same unit and
/// scale: "11.7k ± 7.7k", "1.20 ms ± 0.05 ms", never "11.7k ± 7673".
pub fn value_pm(metric: &str, mean: f64, half: f64) -> String {
    if !mean.is_finite() || !half.is_finite() {
        return format!("{} ± {}", value(metric, mean), value(metric, half));
    }
    let shown = value(metric, mean);
    // Metrics printed by sig3 (bare or with a unit after it) share the mean's suffix.
    let scaled = metric.ends_with("_us")
        || metric.ends_with("_ms")
        || metric == "seconds"
        || metric.ends_with("_seconds")
        || metric == "mb_per_s"
        || !(metric.ends_with("_bytes")
            || metric.ends_with("_bytes_written")
            || metric.ends_with("_pct")
            || metric.ends_with("amplification"));
    if !scaled {
        return format!("{shown} ± {}", value(metric, half));
    }
    let m = if metric.ends_with("_us") {
        mean / 1000.0
    } else {
        mean
    };
    let h = if metric.ends_with("_us") {
        half / 1000.0
    } else {
        half
    };
    let a = m.abs();
    let (div, suffix) = si_prefix(a);
    let x = h.abs() / div;
    // Two significant digits of the half-width, at least the mean's own decimals.
    let digits = if x == 0.0 || x >= 10.0 {
        0
    } else {
        ((1.0 - x.log10().floor()) as usize).min(3)
    };
    let mean_digits = shown
        .split(|c: char| !c.is_ascii_digit() && c != '.')
        .find(|p| !p.is_empty())
        .and_then(|num| num.split_once('.').map(|(_, d)| d.len()))
        .unwrap_or(0);
    let digits = digits.max(mean_digits.min(3));
    let unit = shown
        .find(' ')
        .map(|i| shown[i..].to_string())
        .unwrap_or_default();
    format!("{shown} ± {x:.digits$}{suffix}{unit}")
}

/// The divisor and suffix a magnitude is shown with: k from 10,000 (so four-digit figures
/// stay whole), M, G. Tables and chart axes share it so both read alike.
pub fn si_prefix(magnitude: f64) -> (f64, &'static str) {
    if magnitude >= 1e9 {
        (1e9, "G")
    } else if magnitude >= 1e6 {
        (1e6, "M")
    } else if magnitude >= 1e4 {
        (1e3, "k")
    } else {
        (1.0, "")
    }
}

/// Why an interval is not printed: too few runs for it to mean anything.
pub const WIDE_MARK: &str = "±?";

/// The footnote that explains [`WIDE_MARK`].
pub const WIDE_NOTE: &str = "±?: the 95 % interval is not shown: with 2 runs (t = 12.7), or \
     whenever it is wider than the value itself (a difference's: wider than ±100 %), it says \
     nothing; run more repetitions";

/// Whether the 95 % interval of a shown value says nothing: two runs, or wider than the
/// value itself.
pub fn interval_meaningless(m: &Shown) -> bool {
    match m.ci95 {
        Some((lo, hi)) => m.n == 2 || (hi - lo) / 2.0 >= m.value.abs(),
        None => false,
    }
}

/// The shown value ± the half-width of its 95 % interval ([`crate::report::model::shown`]); both ends,
/// "12.3k [9.10k, 15.0k]", when the interval (a geometric mean's is lopsided) is not
/// said by a "±"; the value alone for a single run; the value and [`WIDE_MARK`] when the
/// interval is meaningless.
pub fn mean_ci(metric: &str, m: &Shown) -> String {
    match m.ci95 {
        Some(_) if interval_meaningless(m) => {
            format!("{} {WIDE_MARK}", value(metric, m.value))
        }
        Some((lo, hi)) => match plus_minus(m.value, (lo, hi)) {
            Some(half) => value_pm(metric, m.value, half),
            _ => format!(
                "{} [{}, {}]",
                value(metric, m.value),
                value(metric, lo),
                value(metric, hi)
            ),
        },
        None => value(metric, m.value),
    }
}

/// The coefficient of variation, or "—" when there is no spread to speak of (one run).
pub fn cv_text(m: &MetricStats) -> String {
    if m.summary.n < 2 || !m.summary.cv.is_finite() {
        "—".into()
    } else {
        format!("{:.1} %", m.summary.cv * 100.0)
    }
}

/// The % difference against the baseline with its 95 % interval: "-74.8 % ±1.7", or both
/// ends when the interval is lopsided about the difference ([`interval_beside`]):
/// "-3.3 % [-29.8, -0.0]".
/// "-25.8 % ±?" when the interval says nothing: the candidate has two runs, or the interval
/// is wider than ±100 %.
pub fn pct_text(c: &Comparison, candidate_runs: usize) -> String {
    match c.pct_ci95 {
        Some(_) if pct_interval_meaningless(c, candidate_runs) => {
            format!("{:+.1} % {WIDE_MARK}", c.pct_diff)
        }
        Some(ci) => format!("{:+.1} % {}", c.pct_diff, interval_beside(c.pct_diff, ci)),
        None => format!("{:+.1} %", c.pct_diff),
    }
}

/// Whether the 95 % interval of a difference says nothing and is shown as [`WIDE_MARK`]:
/// the candidate has two runs, or the interval is wider than ±100 %. The one rule the
/// tables and the HTML page's decision matrix and forest plot share.
pub fn pct_interval_meaningless(c: &Comparison, candidate_runs: usize) -> bool {
    c.pct_ci95
        .is_some_and(|(lo, hi)| candidate_runs == 2 || (hi - lo) / 2.0 >= 100.0)
}

/// How an interval `(lo, hi)` of the difference `d` is written beside it: "±1.7" when
/// [`plus_minus`] allows, else both ends, "[-29.8, -0.0]".
pub fn interval_beside(d: f64, (lo, hi): (f64, f64)) -> String {
    match plus_minus(d, (lo, hi)) {
        Some(half) => format!("±{half:.1}"),
        None => format!("[{lo:+.1}, {hi:+.1}]"),
    }
}

/// The half-width to write as `d ± half` when that says the same as the interval `(lo, hi)`,
/// else `None`.
///
/// Why not always "±": a rank test's interval (Hodges–Lehmann, [`crate::stats::shift`]) is
/// lopsided about its estimate when one run is far from the others, and the ratio scale
/// bends every interval a little. "−3.3 % ±14.9" beside "worse" read as an interval from
/// −18 % to +12 %, holding 0, where the test's own interval was −29.8 % to −0.0 %. So the
/// "±" form is kept only when each of its implied ends is within a quarter of the
/// half-width of the true one and on the same side of 0.
fn plus_minus(d: f64, (lo, hi): (f64, f64)) -> Option<f64> {
    let half = (hi - lo) / 2.0;
    let (implied_lo, implied_hi) = (d - half, d + half);
    let off = (implied_lo - lo).abs().max((implied_hi - hi).abs());
    let same_side = |a: f64, b: f64| (a < 0.0) == (b < 0.0) && (a > 0.0) == (b > 0.0);
    (off <= half / 4.0 && same_side(implied_lo, lo) && same_side(implied_hi, hi)).then_some(half)
}

/// How much of an undecided decision a narrow column keeps: all of it, all but what would
/// decide it ("~4 more"), or the range alone in its compact form ("-8.5…+3.1 %"). What the
/// runs still allow is the last thing a narrow terminal gives up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Brevity {
    Full,
    NoTail,
    Compact,
}

/// The decision word of a comparison, short enough for a narrow column: "worse",
/// "undecided: within -8.5 to +3.1 %, ~4 more".
pub fn decision_text(c: &Comparison) -> String {
    decision_text_at(c, Brevity::Full)
}

/// [`decision_text`] at a [`Brevity`]: "undecided: within -8.5 to +3.1 %, ~4 more",
/// "undecided: within -8.5 to +3.1 %", "undecided: -8.5…+3.1 %". A decided comparison
/// reads the same at every brevity.
pub fn decision_text_at(c: &Comparison, brevity: Brevity) -> String {
    match &c.verdict {
        None => String::new(),
        Some(v) if v.decision == Decision::Undecided => {
            let mut out = "undecided".to_string();
            match (v.within_pct, brevity) {
                (Some((lo, hi)), Brevity::Compact) => {
                    out.push_str(&format!(": {}…{} %", pct_words(lo), pct_words(hi)));
                }
                (Some((lo, hi)), _) => out.push_str(&format!(
                    ": within {} to {} %",
                    pct_words(lo),
                    pct_words(hi)
                )),
                (None, _) => {}
            }
            if brevity == Brevity::Full {
                if let Some(n) = v.runs_to_decide.filter(|&n| n > 0) {
                    out.push_str(&format!(", ~{n} more"));
                }
            }
            out
        }
        Some(v) => v.decision.as_str().into(),
    }
}

/// What an undecided comparison still allows: "within -8.5 % to +3.1 %" (its 95 %
/// interval, [`crate::stats::Verdict::within_pct`]), so "undecided" also says how large a
/// difference the runs have ruled out; empty when it has no interval.
pub fn within_text(v: &crate::stats::Verdict) -> String {
    v.within_pct.map_or_else(String::new, |(lo, hi)| {
        format!("within {} % to {} %", pct_words(lo), pct_words(hi))
    })
}

/// A signed percentage in words: whole numbers from 10 % up, one decimal below, so that a
/// small difference and an interval ending near zero read "+3.4" and "-0.3", not "+3" and
/// "-0".
pub fn pct_words(x: f64) -> String {
    match x.abs() < 9.95 {
        true => format!("{x:+.1}"),
        false => format!("{x:+.0}"),
    }
}

/// The % difference against the baseline and its decision: "-74.8 % ±6.9 worse",
/// "+0.5 % equivalent", "-2.0 % ±6.7 undecided: within -8.5 % to +4.7 % (~7 more runs)",
/// "-3.3 % [-29.8, -0.0] worse" (a lopsided interval, [`interval_beside`]), "+444.1 % ±?
/// worse" (the interval says nothing, [`pct_interval_meaningless`]): the difference written
/// by [`pct_text`], the one rule every output shares (summary.md once printed "(±114.4)"
/// where the terminal said "±?").
pub fn vs_baseline(c: Option<&Comparison>, candidate_runs: usize) -> String {
    vs_baseline_with(c, candidate_runs, None)
}

/// [`vs_baseline`] of a comparison the budget may have stopped: a stopped one says why
/// in place of the runs that would decide it, "-10.0 % ±16.4 undecided: within -25 % to
/// +7.9 %; stopped by the budget: needs ~6 more runs (~15 s), beyond the 13 s left of the
/// budget".
pub fn vs_baseline_with(
    c: Option<&Comparison>,
    candidate_runs: usize,
    stop: Option<&StopShown>,
) -> String {
    let Some(c) = c else {
        return String::new();
    };
    let pct = pct_text(c, candidate_runs);
    match &c.verdict {
        None => pct,
        Some(v) if v.decision == Decision::Undecided => {
            let mut out = format!("{pct} undecided");
            let within = within_text(v);
            if !within.is_empty() {
                out.push_str(&format!(": {within}"));
            }
            match (stop, v.runs_to_decide.filter(|&n| n > 0)) {
                (Some(stop), _) => out.push_str(&format!("; {}", stop.words)),
                (None, Some(n)) => out.push_str(&format!(" (~{n} more runs)")),
                (None, None) => {}
            }
            out
        }
        Some(v) => format!("{pct} {}", v.decision.as_str()),
    }
}

/// Which intervals the tables print, as every report's header says it: a key metric's and
/// a difference's at 95 %, except a difference's that a decision rests on at that
/// decision's level (`ci_level` in summary.json and summary.csv): a called difference's
/// false-coverage-adjusted level, an undecided one's range at the level a call would need
/// (so the interval beside "undecided" holds zero, as the range does).
pub const INTERVALS: &str =
    "95 % intervals (a difference's at its decision's level: FCR-adjusted when called, its range's when undecided)";

/// What the decision words mean, with the procedure that adjusted the p-values named once
/// (the headlines then say "adjusted p"); `over` is the family it adjusted over.
pub fn decision_words(margin_pct: f64, adjustment: Adjustment, over: &str) -> String {
    format!(
        "better/worse = significant at a 5 % false discovery rate over {over} (adjusted p: \
         {}; ratio scale); equivalent = 90 % CI within ±{margin_pct} %; undecided = neither yet, \
         \"within A to B\" the difference an interval at the level a call would need now \
         (at least 95 %) still allows",
        adjustment.name()
    )
}

/// The legend every report of a run prints once: the decision words, named for the
/// procedure the report's verdicts came from ([`super::report::Report::adjustment`]), and
/// which statistic the tables show.
pub fn legend(r: &super::report::Report) -> String {
    format!(
        "{}; {}{}",
        decision_words(r.margin_pct, r.adjustment, "the run's comparisons"),
        super::shown::RULE,
        steal_note(&r.sections)
    )
}

/// What the legend says when some differences with the baseline were adjusted for the CPU
/// time the hypervisor stole ([`crate::stats::steal`]): how many, and what their % is;
/// nothing when none was (bare metal, old records).
fn steal_note(sections: &[super::section::Section]) -> String {
    let verdicts: Vec<&crate::stats::Verdict> = sections
        .iter()
        .flat_map(|s| s.rows.iter().filter_map(|r| r.metric(&s.key_metric)))
        .filter_map(|m| m.vs_baseline.as_ref()?.verdict.as_ref())
        .collect();
    let adjusted = verdicts.iter().filter(|v| v.steal.is_some()).count();
    if adjusted == 0 {
        return String::new();
    }
    format!(
        "; {adjusted} of {} differences adjusted for the CPU time the hypervisor stole \
         (their %, test and key figures are at no steal: summary.json `steal_adjusted`)",
        verdicts.len()
    )
}

/// The column header of a metric: the workload's own short name for it, else the common
/// ones, else the metric's name with spaces.
pub fn header(metric: &str) -> String {
    if let Some(h) = crate::workload::metric_header(metric) {
        return h.into();
    }
    match metric {
        "files_per_s" => "files/s".into(),
        "mb_per_s" => "MB/s".into(),
        "write_amplification" => "write amp".into(),
        "space_amplification" => "space amp".into(),
        "peak_cached_bytes" => "peak cache".into(),
        "min_mem_free_bytes" => "min free memory".into(),
        "cpu_system_pct" => "CPU sys".into(),
        "device_read_latency_ms" => "dev read lat".into(),
        "device_write_latency_ms" => "dev write lat".into(),
        "device_read_iops" => "dev read IOPS".into(),
        "device_write_iops" => "dev write IOPS".into(),
        other => other.replace('_', " "),
    }
}

/// The cells every table shows for a row: key metric (with ✓/✗), CV, and the comparison
/// with the baseline; plus the runs cell. One place, so the outputs cannot drift apart.
pub struct RowCells {
    /// The target's name, with "(reference, RAM)" for a memory target.
    pub target: String,
    pub key: String,
    pub mark: &'static str,
    pub cv: String,
    pub vs: String,
    /// The difference alone ("-74.8 % ±1.7"); empty on the baseline's row.
    pub pct: String,
    /// The decision alone ("worse", "undecided, ~4 more runs").
    pub decision: String,
    /// Its shorter forms, for a narrow table: [`Brevity::NoTail`], [`Brevity::Compact`].
    pub decision_shorter: [String; 2],
    pub runs: String,
    /// The key metric's interval was left out as meaningless ([`WIDE_NOTE`]).
    pub wide: bool,
}

/// A row's decision cell at every [`Brevity`]. A stopped comparison's "~N more" is what
/// the budget would not pay for: its reason is said under the table instead.
fn decision_cells(row: &super::section::Row, c: &Comparison) -> (String, [String; 2]) {
    let full = match row.budget_stop {
        Some(_) => Brevity::NoTail,
        None => Brevity::Full,
    };
    (
        decision_text_at(c, full),
        [
            decision_text_at(c, Brevity::NoTail),
            decision_text_at(c, Brevity::Compact),
        ],
    )
}

pub fn row_cells(row: &super::section::Row, key: &str, baseline: &str) -> RowCells {
    use super::section::Mark;
    let (k, cv, vs) = match (row.metric(key), row.shown.get(key)) {
        (Some(m), Some(shown)) => (
            mean_ci(key, shown),
            cv_text(m),
            if row.target == baseline {
                "baseline".to_string()
            } else {
                vs_baseline_with(
                    m.vs_baseline.as_ref(),
                    m.summary.n,
                    row.budget_stop.as_ref(),
                )
            },
        ),
        _ => ("—".into(), String::new(), String::new()),
    };
    let cmp = row.metric(key).and_then(|m| m.vs_baseline.as_ref());
    let (pct, decision, decision_shorter) = match cmp {
        _ if row.target == baseline => {
            let b = "baseline".to_string();
            (String::new(), b.clone(), [b.clone(), b])
        }
        Some(c) => {
            let (decision, shorter) = decision_cells(row, c);
            let n = row.metric(key).map_or(0, |m| m.summary.n);
            (pct_text(c, n), decision, shorter)
        }
        None => (String::new(), String::new(), Default::default()),
    };
    let wide = row.shown.get(key).is_some_and(interval_meaningless) || pct.contains(WIDE_MARK);
    RowCells {
        target: if row.reference {
            format!("{} (reference, RAM)", row.target)
        } else {
            row.target.clone()
        },
        key: k,
        mark: match row.mark {
            Some(Mark::Best) => " ✓",
            Some(Mark::Worst) => " ✗",
            None => "",
        },
        cv,
        vs,
        pct,
        decision,
        decision_shorter,
        wide,
        runs: {
            // A run an interrupt cut short is not a failure of the file system: counted
            // apart, as the warnings say it.
            let cut = row
                .failed
                .iter()
                .filter(|f| f.1 == crate::results::Status::Interrupted)
                .count();
            let mut r = row.ok.to_string();
            for (n, word) in [
                (row.failed.len() - cut, "failed"),
                (cut, "interrupted"),
                (row.invalid, "invalid"),
            ] {
                if n > 0 {
                    r.push_str(&format!(", {n} {word}"));
                }
            }
            r
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_is_plus_minus_only_when_that_says_the_same() {
        // Symmetric, or nearly (the ratio scale's slight bend): the short form.
        assert_eq!(interval_beside(-74.8, (-76.5, -73.1)), "±1.7");
        assert_eq!(interval_beside(529.7, (444.2, 628.8)), "±92.3");
        // Lopsided: both ends, so 0 is not put inside an interval that excludes it.
        assert_eq!(interval_beside(-3.3, (-29.8, -0.02)), "[-29.8, -0.0]");
        // Implied ends close, but one would cross 0 where the interval does not.
        assert_eq!(interval_beside(4.0, (0.2, 8.4)), "[+0.2, +8.4]");
        assert_eq!(interval_beside(4.0, (-0.2, 8.0)), "±4.1");
    }

    #[test]
    fn units_follow_names() {
        assert_eq!(value("peak_cached_bytes", 3.0 * 1024.0 * 1024.0), "3.0 MiB");
        assert_eq!(value("lat_p99_us", 643.2), "0.643 ms");
        assert_eq!(value("device_read_latency_ms", 1.6), "1.60 ms");
        assert_eq!(value("write_amplification", 1.234), "1.23×");
        assert_eq!(value("files_per_s", 123456.0), "123k");
        assert_eq!(value("seconds_per_pass", 0.0234), "0.023 s");
        assert_eq!(value("files_per_s", 9.8765), "9.88");
        assert_eq!(value("seconds", 0.01234), "0.012 s");
        assert_eq!(sig3(2_500_000.0), "2.50M");
    }

    #[test]
    fn an_interval_takes_the_unit_and_scale_of_its_mean() {
        assert_eq!(value_pm("files_per_s", 11_700.0, 7673.0), "11.7k ± 7.7k");
        assert_eq!(value_pm("files_per_s", 20_000.0, 1490.0), "20.0k ± 1.5k");
        assert_eq!(value_pm("files_per_s", 5050.0, 376.0), "5050 ± 376");
        assert_eq!(value_pm("lat_p99_us", 1600.0, 50.0), "1.60 ms ± 0.050 ms");
        assert_eq!(value_pm("seconds", 12.3, 0.41), "12.3 s ± 0.41 s");
        assert_eq!(value_pm("write_amplification", 1.2, 0.05), "1.20× ± 0.05×");
    }
}
