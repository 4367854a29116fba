//! The report's decisions: every key-metric comparison of a run gets one of better / worse /
//! equivalent / undecided ([`crate::stats::decision`]), with Benjamini–Hochberg control over
//! the whole run; each section's headline and its ✓ / ✗ marks rest on the same family.
//!
//! The family is every key-metric comparison against the baseline, plus, per section, the
//! comparisons the headline and the marks make (leader vs runner-up, last vs second-to-last
//! among the disk targets) when they are not already a comparison with the baseline. Memory
//! targets (tmpfs) are compared with the baseline, but never ranked: they are a reference.

use super::model::{Mark, Row, Section, ALPHA};
use crate::stats::{
    self, benjamini_hochberg, decide, next_level, runs_to_decide, Comparison, Decision, Verdict,
    ADJUSTMENT,
};

/// Where a p-value of the family came from.
enum Slot {
    /// The key metric of row `.1` in section `.0`, against the baseline.
    Row(usize, usize),
    /// A ranking pair of section `.0`: its index in that section's pairs.
    Pair(usize, usize),
}

/// Two neighbours in a section's ranking: `win` leads `next` by the key metric's mean.
struct Pair {
    win: usize,
    next: usize,
    /// `next` as baseline, `win` as candidate.
    cmp: Option<Comparison>,
    /// The row slot of the same samples when one of the two is the baseline.
    same_as_row: Option<usize>,
}

fn raw(row: &Row, key: &str) -> Vec<f64> {
    row.metric(key).map(|m| m.raw.clone()).unwrap_or_default()
}

/// Disk rows with a key-metric mean, best first.
fn ranked(rows: &[Row], key: &str, higher: bool) -> Vec<usize> {
    let mut order: Vec<usize> = (0..rows.len())
        .filter(|&i| !rows[i].reference && rows[i].mean(key).is_some())
        .collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (
            rows[a].mean(key).unwrap_or(0.0),
            rows[b].mean(key).unwrap_or(0.0),
        );
        let o = x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal);
        if higher {
            o.reverse()
        } else {
            o
        }
    });
    order
}

/// Decides every section of a report: verdicts on the key metric's `vs_baseline`, marks
/// and headlines.
pub fn decide_all(sections: &mut [Section], baseline: &str, margin_pct: f64) {
    let mut slots: Vec<Slot> = Vec::new();
    let mut p: Vec<f64> = Vec::new();
    let mut pairs: Vec<Vec<Pair>> = Vec::new();
    for (si, s) in sections.iter().enumerate() {
        let key = &s.key_metric;
        for (ri, row) in s.rows.iter().enumerate() {
            if let Some(c) = row.metric(key).and_then(|m| m.vs_baseline.as_ref()) {
                slots.push(Slot::Row(si, ri));
                p.push(c.p_value);
            }
        }
        let order = ranked(&s.rows, key, s.higher_is_better);
        let mut ps: Vec<Pair> = Vec::new();
        if order.len() >= 2 {
            let top = (order[0], order[1]);
            let bottom = (order[order.len() - 1], order[order.len() - 2]);
            // The worst pair is read "worst trails the second-worst", so store it led by the
            // second-worst; with two targets both pairs are the same comparison.
            let mut wanted = vec![top];
            if (bottom.1, bottom.0) != top {
                wanted.push((bottom.1, bottom.0));
            }
            for (win, next) in wanted {
                let same_as_row = if s.rows[win].target == baseline {
                    Some(next)
                } else if s.rows[next].target == baseline {
                    Some(win)
                } else {
                    None
                };
                let cmp = stats::compare(&raw(&s.rows[next], key), &raw(&s.rows[win], key), ALPHA);
                if let (None, Some(c)) = (same_as_row, &cmp) {
                    slots.push(Slot::Pair(si, ps.len()));
                    p.push(c.p_value);
                }
                ps.push(Pair {
                    win,
                    next,
                    cmp,
                    same_as_row,
                });
            }
        }
        pairs.push(ps);
    }
    let adjusted = benjamini_hochberg(&p);
    // The level BH asks of the next comparison it would call: what the runs-to-decide
    // estimate must reach.
    let called = adjusted.iter().filter(|&&x| x < ALPHA).count();
    let level = next_level(ALPHA, called, p.len());
    let mut row_adj: Vec<Vec<Option<f64>>> =
        sections.iter().map(|s| vec![None; s.rows.len()]).collect();
    let mut pair_adj: Vec<Vec<Option<f64>>> = pairs.iter().map(|ps| vec![None; ps.len()]).collect();
    for (slot, &ph) in slots.iter().zip(&adjusted) {
        match *slot {
            Slot::Row(si, ri) => row_adj[si][ri] = Some(ph),
            Slot::Pair(si, pi) => pair_adj[si][pi] = Some(ph),
        }
    }
    for (si, s) in sections.iter_mut().enumerate() {
        let key = s.key_metric.clone();
        let higher = s.higher_is_better;
        let base_raw = s
            .rows
            .iter()
            .find(|r| r.target == baseline)
            .map(|r| raw(r, &key));
        for (row, ph) in s.rows.iter_mut().zip(&row_adj[si]) {
            let cand = raw(row, &key);
            let Some(ph) = *ph else { continue };
            let Some(c) = row
                .metrics
                .get_mut(&key)
                .and_then(|m| m.vs_baseline.as_mut())
            else {
                continue;
            };
            c.verdict = Some(verdict(c, ph, higher, margin_pct, || {
                base_raw
                    .as_ref()
                    .and_then(|b| runs_to_decide(b, &cand, margin_pct, level))
            }));
        }
        for (pi, pair) in pairs[si].iter_mut().enumerate() {
            let ph = match pair.same_as_row {
                Some(ri) => row_adj[si][ri],
                None => pair_adj[si][pi],
            };
            let (Some(c), Some(ph)) = (pair.cmp.as_mut(), ph) else {
                continue;
            };
            let (next, win) = (raw(&s.rows[pair.next], &key), raw(&s.rows[pair.win], &key));
            c.verdict = Some(verdict(c, ph, higher, margin_pct, || {
                runs_to_decide(&next, &win, margin_pct, level)
            }));
        }
        let decisive = |pair: &Pair| {
            pair.cmp
                .as_ref()
                .and_then(|c| c.verdict.as_ref())
                .is_some_and(|v| matches!(v.decision, Decision::Better | Decision::Worse))
        };
        if let Some(top) = pairs[si].first() {
            if decisive(top) {
                s.rows[top.win].mark = Some(Mark::Best);
            }
            let bottom = pairs[si].last().unwrap_or(top);
            if decisive(bottom) {
                s.rows[bottom.next].mark = Some(Mark::Worst);
            }
        }
        s.decision = headline(s, pairs[si].first());
    }
}

fn verdict(
    c: &Comparison,
    p_adjusted: f64,
    higher: bool,
    margin_pct: f64,
    runs: impl FnOnce() -> Option<usize>,
) -> Verdict {
    let decision = decide(
        c.pct_diff, c.pct_ci90, p_adjusted, ALPHA, margin_pct, higher,
    );
    Verdict {
        decision,
        p_adjusted,
        margin_pct,
        runs_to_decide: (decision == Decision::Undecided).then(runs).flatten(),
    }
}

/// A p-value as a reader wants it: "p = 0.016", or "p < 0.001" rather than "p = 0.000"
/// (and not "p = < 0.001").
pub fn p_text(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".into()
    } else {
        format!("p = {p:.3}")
    }
}

/// "about N more runs per target would decide it", or why no number is given.
pub fn runs_phrase(v: &Verdict) -> String {
    match v.runs_to_decide {
        Some(0) => "more runs would decide it".into(),
        Some(n) => format!("~{n} more run{} per target", if n == 1 { "" } else { "s" }),
        None => format!(
            "not within {} runs per target",
            stats::decision::MAX_RUNS_ESTIMATE
        ),
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

/// The section's one-sentence answer, naming disk targets only.
fn headline(s: &Section, top: Option<&Pair>) -> String {
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
    let by = pct(c.pct_diff.abs(), false);
    let dir = if c.pct_diff > 0.0 { "higher" } else { "lower" };
    match v.decision {
        Decision::Better | Decision::Worse => {
            let ci = c
                .pct_ci95
                .map(|(lo, hi)| format!(", 95 % CI {} % to {} %", pct(lo, true), pct(hi, true)))
                .unwrap_or_default();
            format!(
                "{win} wins: {key} {by} % {dir} than {next} (better, {ADJUSTMENT} {}{ci})",
                p_text(v.p_adjusted)
            )
        }
        Decision::Equivalent => {
            let ci = c
                .pct_ci90
                .map(|(lo, hi)| format!(", 90 % CI {lo:+.1} % to {hi:+.1} %"))
                .unwrap_or_default();
            format!(
                "{win} and {next} are equivalent: {key} within ±{} %{ci}",
                v.margin_pct
            )
        }
        Decision::Undecided => format!(
            "{win} leads {next} by {by} %, undecided ({ADJUSTMENT} {}): {}",
            p_text(v.p_adjusted),
            runs_phrase(v)
        ),
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

    #[test]
    fn headline_percentages_keep_a_decimal_below_ten_and_never_read_minus_zero() {
        assert_eq!(pct(-0.3, true), "-0.3");
        assert_eq!(pct(3.44, false), "3.4");
        assert_eq!(pct(26.04, false), "26");
        assert_eq!(pct(-29.4, true), "-29");
        assert_eq!(pct(9.97, true), "+10");
    }
}
