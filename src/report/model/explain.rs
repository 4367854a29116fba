//! A verdict that explains: beside each significant difference against the baseline, one line
//! of why, drawn from what the monitor measured in the same cells — bytes the device wrote,
//! CPU time in the kernel, device write and read operations — led, for a workload that times
//! each of its call types, by the type whose time moved most (`call_types`).
//!
//! A rule fires only when its figure moved the same way as the verdict (a slower target did
//! *more* of it, a faster one *less*), by at least [`RATIO`] (or at most 1 / [`RATIO`]), on a
//! figure large enough to matter ([`Rule::floor`]), and when that figure's own difference is
//! significant across the repetitions (p < [`ALPHA`]). Where nothing stands out, no line is
//! written: an explanation is a measured fact, never a guess.
//!
//! The figures a line prints, and the ratio between them, are **medians** of the
//! repetitions, as the tables' side columns are ([`super::shown`]): one run that wrote 1.9 GB
//! must not make a line say "6.3× the bytes" beside a table whose typical run wrote 3×.

use super::call_types;
use super::section::{Row, Section};
use super::shown::median_of;
use crate::plan::FsKind;
use crate::stats::{self, Decision, ALPHA};

/// How far a figure must move (as a ratio of the baseline's) to count as a cause.
pub const RATIO: f64 = 1.5;

/// One cause a verdict can be explained by.
struct Rule {
    /// How the line names the figure, after the ratio ("the bytes", …).
    what: &'static str,
    /// Per-repetition values of a row (in the order the repetitions were recorded).
    values: fn(&Row) -> Option<Vec<f64>>,
    /// The smaller of the two medians must reach this for the rule to speak: a ratio of two
    /// tiny numbers (a few I/Os, milliseconds of CPU) explains nothing.
    floor: f64,
    /// How a value is printed.
    show: fn(f64) -> String,
    /// A known mechanism for a file-system type, said after the numbers.
    hint: fn(fs: &str) -> Option<&'static str>,
}

fn raw(row: &Row, metric: &str) -> Option<Vec<f64>> {
    row.metric(metric).map(|m| m.raw.clone())
}

/// A phase total per pass, repetition by repetition. A phase that repeats its pass to the
/// floor (`passes`) runs as many passes as fit, so a faster target runs more of them and its
/// totals grow with its speed; per pass, two targets did the same work and compare.
fn per_pass(row: &Row, metric: &str) -> Option<Vec<f64>> {
    let v = raw(row, metric)?;
    match raw(row, "passes") {
        Some(n) if n.len() == v.len() => {
            Some(v.iter().zip(&n).map(|(x, n)| x / n.max(1.0)).collect())
        }
        Some(_) => None,
        None => Some(v),
    }
}

/// System CPU seconds per repetition (per pass, when the phase repeats one): the kernel's
/// share of the machine × the phase's length (so a slower phase with the same share still
/// counts its extra time).
fn system_cpu_seconds(row: &Row) -> Option<Vec<f64>> {
    let pct = raw(row, "cpu_system_pct")?;
    let secs = per_pass(row, "seconds")?;
    (pct.len() == secs.len()).then(|| pct.iter().zip(&secs).map(|(p, s)| p / 100.0 * s).collect())
}

fn bytes(v: f64) -> String {
    if v >= 1e9 {
        format!("{:.1} GB", v / 1e9)
    } else {
        format!("{:.1} MB", v / 1e6)
    }
}

fn count(v: f64) -> String {
    format!("{v:.0}")
}

fn cpu(v: f64) -> String {
    format!("{v:.2} s")
}

const RULES: &[Rule] = &[
    Rule {
        what: "the bytes",
        values: |r| per_pass(r, "device_write_bytes"),
        floor: 1e6,
        show: bytes,
        hint: |fs| (fs == "btrfs").then_some("checksums, CoW"),
    },
    Rule {
        what: "the CPU in system time",
        values: system_cpu_seconds,
        floor: 0.05,
        show: cpu,
        hint: |fs| FsKind::parse(fs).and_then(FsKind::fuse).map(|_| "FUSE"),
    },
    Rule {
        what: "the device write I/Os",
        values: |r| per_pass(r, "device_write_ios"),
        floor: 100.0,
        show: count,
        hint: |_| None,
    },
    Rule {
        what: "the device read I/Os",
        values: |r| per_pass(r, "device_read_ios"),
        floor: 100.0,
        show: count,
        hint: |_| None,
    },
];

/// The verb a rule's ratio is said with.
fn verb(what: &str) -> &'static str {
    if what == "the bytes" {
        "wrote "
    } else {
        ""
    }
}

/// A ratio as the clause says it: "2.4×", "0.4×", and below a tenth "1/30 of" (one decimal
/// would print a reflinked copy's 1.6 MB against 48.7 MB as "0.0×").
fn times(ratio: f64) -> String {
    if ratio < 0.095 {
        format!("1/{:.0} of", 1.0 / ratio)
    } else {
        format!("{ratio:.1}×")
    }
}

/// One fired rule: its ratio and the clause it contributes.
struct Cause {
    strength: f64,
    clause: String,
}

fn cause(rule: &Rule, base: &Row, cand: &Row, worse: bool) -> Option<Cause> {
    let (b, c) = ((rule.values)(base)?, (rule.values)(cand)?);
    let cmp = stats::compare(&b, &c, ALPHA)?;
    let (mb, mc) = (median_of(&b)?, median_of(&c)?);
    if !(mb > 0.0 && mc >= 0.0) || mb.min(mc) < rule.floor || cmp.p_value >= ALPHA {
        return None;
    }
    let ratio = mc / mb;
    let moved = if worse {
        ratio >= RATIO
    } else {
        ratio <= 1.0 / RATIO
    };
    if !moved {
        return None;
    }
    let hint = (rule.hint)(&cand.fs)
        .filter(|_| worse)
        .map(|h| format!(" ({h})"))
        .unwrap_or_default();
    Some(Cause {
        strength: if worse { ratio } else { 1.0 / ratio },
        clause: format!(
            "{}{} {} ({} vs {}){hint}",
            verb(rule.what),
            times(ratio),
            rule.what,
            (rule.show)(mc),
            (rule.show)(mb),
        ),
    })
}

/// "fsync p50 3.1 ms vs 0.9 ms", or "2.0× the rename calls (400 vs 200)" when the count moved.
fn call_type_cause(m: &call_types::Moved) -> Cause {
    let ratio = m.cand / m.base;
    let clause = if m.latency {
        format!("{} p50 {}", m.kind, call_types::latencies(m.cand, m.base))
    } else {
        format!(
            "{} the {} calls ({} vs {})",
            times(ratio),
            m.kind,
            count(m.cand),
            count(m.base)
        )
    };
    Cause {
        strength: ratio.max(1.0 / ratio),
        clause,
    }
}

/// The line explaining why `cand` differs from `base` in `s`, or `None` when the key metric's
/// verdict is not a significant difference or no figure supports one.
pub fn explain_row(s: &Section, base: &Row, cand: &Row) -> Option<String> {
    let verdict = cand
        .metric(&s.key_metric)?
        .vs_baseline
        .as_ref()?
        .verdict
        .as_ref()?;
    let worse = match verdict.decision {
        Decision::Worse => true,
        Decision::Better => false,
        Decision::Equivalent | Decision::Undecided => return None,
    };
    let mut causes: Vec<Cause> = RULES
        .iter()
        .filter_map(|r| cause(r, base, cand, worse))
        .collect();
    causes.sort_by(|a, b| b.strength.total_cmp(&a.strength));
    // The call type that moved most leads: it says where the time went; the device's and
    // the kernel's figures then say how.
    if let Some(m) = call_types::most_moved(base, cand, worse, RATIO) {
        causes.insert(0, call_type_cause(&m));
    }
    if causes.is_empty() {
        return None;
    }
    let clauses: Vec<String> = causes.into_iter().take(2).map(|c| c.clause).collect();
    Some(format!(
        "{} {}: {}",
        cand.target,
        if worse { "slower" } else { "faster" },
        clauses.join("; ")
    ))
}

/// Fills `why` on every row of every section that a measured figure explains.
pub fn explain_all(sections: &mut [Section], baseline: &str) {
    for s in sections.iter_mut() {
        let Some(bi) = s.rows.iter().position(|r| r.target == baseline) else {
            continue;
        };
        let whys: Vec<Option<String>> = s
            .rows
            .iter()
            .enumerate()
            .map(|(i, r)| {
                if i == bi {
                    None
                } else {
                    explain_row(s, &s.rows[bi], r)
                }
            })
            .collect();
        for (row, why) in s.rows.iter_mut().zip(whys) {
            row.why = why;
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::stats::{Comparison, Verdict};
    use std::collections::BTreeMap;

    fn stats_of(v: &[f64]) -> crate::stats::MetricStats {
        crate::stats::MetricStats {
            summary: crate::stats::summarize(v).unwrap(),
            raw: v.to_vec(),
            reps: (0..v.len() as u32).collect(),
            vs_baseline: None,
            at_no_steal: None,
            in_turn: None,
        }
    }

    /// A row whose repetitions measured `metrics` (name → values).
    pub(in crate::report) fn row(target: &str, fs: &str, metrics: &[(&str, &[f64])]) -> Row {
        let m: BTreeMap<String, crate::stats::MetricStats> = metrics
            .iter()
            .map(|(k, v)| (k.to_string(), stats_of(v)))
            .collect();
        Row {
            target: target.into(),
            fs: fs.into(),
            ok: 3,
            failed: vec![],
            invalid: 0,
            mark: None,
            reference: false,
            shown: m
                .iter()
                .map(|(k, v)| (k.clone(), crate::report::model::shown::centre(v)))
                .collect(),
            metrics: m,
            warnings: vec![],
            why: None,
            budget_stop: None,
        }
    }

    /// A section of the baseline and one candidate, the candidate's key metric given
    /// `decision` against the baseline.
    fn section(base: Row, mut cand: Row, decision: Decision) -> Section {
        let c: &mut crate::stats::MetricStats = cand.metrics.get_mut("seconds").unwrap();
        let b = base.metric("seconds").unwrap().raw.clone();
        let mut cmp: Comparison = stats::compare(&b, &c.raw, ALPHA).unwrap();
        cmp.verdict = Some(Verdict {
            decision,
            p_adjusted: cmp.p_value,
            adjustment: crate::stats::Adjustment::TwoStage,
            margin_pct: 5.0,
            runs_to_decide: None,
            p_sequential: None,
            look_runs: None,
            ci_level: None,
            runs_limit: None,
            within_pct: None,
            within_level: None,
            equivalence: None,
            steal: None,
        });
        c.vs_baseline = Some(cmp);
        Section {
            workload: "w".into(),
            dataset: None,
            variant: String::new(),
            threads: 1,
            key_metric: "seconds".into(),
            higher_is_better: false,
            columns: vec![],
            rows: vec![base, cand],
            decision: String::new(),
        }
    }

    const BASE_SECS: &[f64] = &[10.0, 10.2, 9.9];
    const SLOW_SECS: &[f64] = &[20.0, 20.5, 19.8];
    const FAST_SECS: &[f64] = &[5.0, 5.1, 4.9];

    /// The neutral figures every test starts from: the same in both rows.
    fn neutral(secs: &[f64]) -> Vec<(&'static str, &[f64])> {
        vec![
            ("seconds", secs),
            ("device_write_bytes", &[100e6, 101e6, 99e6]),
            ("cpu_system_pct", &[20.0, 20.5, 19.5]),
            ("device_write_ios", &[5000.0, 5050.0, 4950.0]),
            ("device_read_ios", &[800.0, 810.0, 790.0]),
        ]
    }

    fn with<'a>(
        mut m: Vec<(&'static str, &'a [f64])>,
        k: &'static str,
        v: &'a [f64],
    ) -> Vec<(&'static str, &'a [f64])> {
        for e in m.iter_mut().filter(|e| e.0 == k) {
            e.1 = v;
        }
        m
    }

    fn why(base: Row, cand: Row, d: Decision) -> Option<String> {
        let mut s = vec![section(base, cand, d)];
        explain_all(&mut s, "base");
        assert_eq!(s[0].rows[0].why, None, "the baseline is never explained");
        s[0].rows[1].why.clone()
    }

    #[test]
    fn bytes_rule_fires_on_a_slower_target_that_wrote_more() {
        let base = row("base", "ext4", &neutral(BASE_SECS));
        let cand = row(
            "btrfs",
            "btrfs",
            &with(
                neutral(SLOW_SECS),
                "device_write_bytes",
                &[310e6, 312e6, 308e6],
            ),
        );
        let w = why(base, cand, Decision::Worse).expect("fires");
        assert!(
            w.starts_with(
                "btrfs slower: wrote 3.1× the bytes (310.0 MB vs 100.0 MB) (checksums, CoW)"
            ),
            "{w}"
        );
        // System time doubled with the phase length (same share, twice as long): it fires too.
        assert!(w.contains("the CPU in system time"), "{w}");
    }

    #[test]
    fn phases_that_repeat_a_pass_compare_their_figures_per_pass() {
        // Both phases last the floor; the slower target fits half the passes, each writing
        // twice the bytes: the totals are equal, the work per pass is not.
        let mut b = neutral(&[0.50, 0.51, 0.49]);
        b.push(("passes", &[20.0, 20.0, 20.0]));
        let mut c = neutral(&[0.50, 0.51, 0.49]);
        c.push(("passes", &[10.0, 10.0, 10.0]));
        let base = row("base", "ext4", &b);
        let cand = row("xfs", "xfs", &c);
        let w = why(base, cand, Decision::Worse).expect("fires");
        assert!(
            w.contains("wrote 2.0× the bytes (10.0 MB vs 5.0 MB)"),
            "{w}"
        );
        assert!(w.contains("2.0× the device write I/Os (500 vs 250)"), "{w}");
    }

    #[test]
    fn cpu_rule_fires_on_a_slower_fuse_target_with_more_system_time() {
        let base = row("base", "ext4", &neutral(BASE_SECS));
        // Same length of phase, four times the kernel's share: only the CPU rule can fire.
        let cand = row(
            "ntfs",
            "ntfs",
            &with(
                neutral(&[10.5, 10.6, 10.4]),
                "cpu_system_pct",
                &[84.0, 82.0, 86.0],
            ),
        );
        let w = why(base, cand, Decision::Worse).expect("fires");
        assert_eq!(
            w,
            "ntfs slower: 4.4× the CPU in system time (8.82 s vs 2.00 s) (FUSE)"
        );
    }

    #[test]
    fn write_ios_rule_fires_on_a_faster_target_with_fewer_device_writes() {
        let base = row("base", "ext4", &neutral(BASE_SECS));
        let cand = row(
            "xfs",
            "xfs",
            &with(
                with(neutral(FAST_SECS), "cpu_system_pct", &[40.0, 41.0, 39.0]),
                "device_write_ios",
                &[2000.0, 2010.0, 1990.0],
            ),
        );
        let w = why(base, cand, Decision::Better).expect("fires");
        assert_eq!(w, "xfs faster: 0.4× the device write I/Os (2000 vs 5000)");
    }

    /// Issue 40 item 3: a "why" line printed the arithmetic mean of the repetitions while
    /// the table beside it prints the median of the same figure, so one run that wrote
    /// 1.9 GB made the line say "6.3× the bytes (628.2 MB …)" where the table read 311 MB.
    /// The line now prints the tables' medians, and its ratio is theirs.
    #[test]
    fn a_why_line_prints_the_median_the_table_shows() {
        const BASE: &[f64] = &[10.0, 10.2, 9.9, 10.1, 10.0];
        const SLOW: &[f64] = &[20.0, 20.5, 19.8, 20.2, 20.1];
        let same = |secs: &'static [f64], bytes: &'static [f64]| {
            vec![
                ("seconds", secs),
                ("device_write_bytes", bytes),
                ("cpu_system_pct", &[20.0, 20.5, 19.5, 20.0, 20.0][..]),
            ]
        };
        let base = row(
            "base",
            "ext4",
            &same(BASE, &[100e6, 101e6, 99e6, 100.5e6, 99.5e6]),
        );
        let cand = row(
            "btrfs",
            "btrfs",
            &same(SLOW, &[310e6, 312e6, 308e6, 311e6, 1900e6]),
        );
        let table = |r: &Row| {
            let m = r.metric("device_write_bytes").unwrap();
            crate::report::model::shown::of("seconds", "device_write_bytes", m).value
        };
        let (tb, tc) = (table(&base), table(&cand));
        assert_eq!((tb, tc), (100e6, 311e6), "the table's medians");
        let w = why(base, cand, Decision::Worse).expect("fires");
        let said = format!(
            "wrote {} the bytes ({} vs {})",
            times(tc / tb),
            bytes(tc),
            bytes(tb)
        );
        assert!(w.contains(&said), "{w} lacks {said}");
        assert!(w.contains("3.1× the bytes (311.0 MB vs 100.0 MB)"), "{w}");
    }

    #[test]
    fn a_ratio_below_a_tenth_is_said_as_a_fraction_not_as_zero() {
        assert_eq!(times(1.6 / 48.7), "1/30 of");
        assert_eq!(times(0.1), "0.1×");
        assert_eq!(times(2.46), "2.5×");
    }

    #[test]
    fn read_ios_rule_fires_on_a_slower_target_with_more_device_reads() {
        let base = row("base", "ext4", &neutral(BASE_SECS));
        let cand = row(
            "f2fs",
            "f2fs",
            &with(
                with(neutral(SLOW_SECS), "cpu_system_pct", &[10.0, 10.1, 9.9]),
                "device_read_ios",
                &[2400.0, 2430.0, 2370.0],
            ),
        );
        let w = why(base, cand, Decision::Worse).expect("fires");
        assert_eq!(w, "f2fs slower: 3.0× the device read I/Os (2400 vs 800)");
    }

    #[test]
    fn silent_when_nothing_stands_out() {
        let base = row("base", "ext4", &neutral(BASE_SECS));
        // Slower, but every figure is the same share of the same work: no cause to name.
        let cand = row(
            "xfs",
            "xfs",
            &with(neutral(SLOW_SECS), "cpu_system_pct", &[10.0, 10.3, 9.8]),
        );
        assert_eq!(why(base, cand, Decision::Worse), None);
    }

    #[test]
    fn silent_when_the_figure_moved_against_the_verdict_or_the_verdict_is_not_a_difference() {
        // Wrote 3× the bytes but was faster: bytes do not explain speed.
        let base = || row("base", "ext4", &neutral(BASE_SECS));
        let more = with(
            neutral(FAST_SECS),
            "device_write_bytes",
            &[300e6, 301e6, 299e6],
        );
        let more = with(more, "cpu_system_pct", &[40.0, 41.0, 39.0]);
        assert_eq!(
            why(base(), row("a", "btrfs", &more), Decision::Better),
            None
        );
        // The same figures with an undecided or equivalent verdict: nothing to explain.
        let slow = with(
            neutral(SLOW_SECS),
            "device_write_bytes",
            &[310e6, 312e6, 308e6],
        );
        assert_eq!(
            why(base(), row("b", "btrfs", &slow), Decision::Undecided),
            None
        );
        assert_eq!(
            why(base(), row("c", "btrfs", &slow), Decision::Equivalent),
            None
        );
    }

    #[test]
    fn silent_on_tiny_or_noisy_figures() {
        let base = row(
            "base",
            "ext4",
            &with(neutral(BASE_SECS), "device_write_ios", &[10.0, 11.0, 9.0]),
        );
        // 3× of ten I/Os is below the floor; 3× bytes with a huge spread is not significant.
        let m = with(neutral(SLOW_SECS), "device_write_ios", &[30.0, 31.0, 29.0]);
        let m = with(m, "cpu_system_pct", &[10.0, 10.3, 9.8]);
        let m = with(m, "device_write_bytes", &[20e6, 600e6, 20e6]);
        assert_eq!(why(base, row("x", "xfs", &m), Decision::Worse), None);
    }
}
