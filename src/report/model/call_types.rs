//! Which call type a difference comes from. A workload that times each of its operation
//! types records `{type}_ops` (how many) and `{type}_p50_us` (their median latency) per
//! repetition — the replay of a recorded program does, per system call type, and so do the
//! operation mixes. Between two targets, the type whose estimated total time (count ×
//! median) moved most is the one a "why" line names, by its median latency, or by its count
//! where the count is what moved: "btrfs slower: fsync p50 3.1 ms vs 0.9 ms".

use super::section::Row;
use crate::stats::{self, ALPHA};

/// A type's estimated total time (µs) must reach this on one side to be named: a ratio of
/// two medians of calls that add up to nothing explains nothing.
const FLOOR_US: f64 = 1000.0;

/// One call type's figure that moved between the baseline and a candidate.
#[derive(Debug, Clone, PartialEq)]
pub struct Moved {
    /// The call type (`fsync`, `open`…).
    pub kind: String,
    /// Which figure: the median latency (µs), else the count.
    pub latency: bool,
    pub base: f64,
    pub cand: f64,
    /// How much of the total time it moved: |count × median| candidate minus baseline, µs.
    pub weight: f64,
}

fn raw(row: &Row, metric: &str) -> Option<Vec<f64>> {
    row.metric(metric).map(|m| m.raw.clone())
}

/// The median of the repetitions, as the tables and the rest of a "why" line show a figure
/// (0 for no run: nothing moved).
fn median(v: &[f64]) -> f64 {
    super::shown::median_of(v).unwrap_or(0.0)
}

/// Whether `b` → `c` moved significantly, by at least `ratio` the way `worse` says.
fn moved(b: &[f64], c: &[f64], worse: bool, ratio: f64) -> bool {
    let (mb, mc) = (median(b), median(c));
    let far = if worse {
        mc >= mb * ratio
    } else {
        mc * ratio <= mb
    };
    mb > 0.0 && far && stats::compare(b, c, ALPHA).is_some_and(|x| x.p_value < ALPHA)
}

/// The call type whose time moved most the way the verdict went (`worse`: the candidate
/// slower), its median latency or count changed by at least `ratio` and significantly across
/// the repetitions; `None` when no type's figures moved so.
pub fn most_moved(base: &Row, cand: &Row, worse: bool, ratio: f64) -> Option<Moved> {
    let kinds = cand
        .metrics
        .keys()
        .filter_map(|k| k.strip_suffix("_p50_us"))
        .filter(|k| cand.metrics.contains_key(&format!("{k}_ops")));
    let mut found: Vec<Moved> = kinds
        .filter_map(|kind| {
            let (bl, cl) = (
                raw(base, &format!("{kind}_p50_us"))?,
                raw(cand, &format!("{kind}_p50_us"))?,
            );
            let (bn, cn) = (
                raw(base, &format!("{kind}_ops"))?,
                raw(cand, &format!("{kind}_ops"))?,
            );
            let (tb, tc) = (median(&bn) * median(&bl), median(&cn) * median(&cl));
            if tb.max(tc) < FLOOR_US {
                return None;
            }
            let latency = moved(&bl, &cl, worse, ratio);
            if !latency && !moved(&bn, &cn, worse, ratio) {
                return None;
            }
            let (base, cand) = if latency {
                (median(&bl), median(&cl))
            } else {
                (median(&bn), median(&cn))
            };
            Some(Moved {
                kind: kind.to_string(),
                latency,
                base,
                cand,
                weight: (tc - tb).abs(),
            })
        })
        .collect();
    found.sort_by(|a, b| b.weight.total_cmp(&a.weight));
    found.into_iter().next()
}

/// Two latencies in µs in one unit, the larger's, as a reader compares them: "3.1 ms vs
/// 0.9 ms", "85.0 µs vs 12.5 µs", "1.20 s vs 0.30 s".
pub fn latencies(a: f64, b: f64) -> String {
    let (div, unit, digits) = match a.max(b) {
        m if m >= 1e6 => (1e6, "s", 2),
        m if m >= 1000.0 => (1000.0, "ms", 1),
        _ => (1.0, "µs", 1),
    };
    format!("{:.digits$} {unit} vs {:.digits$} {unit}", a / div, b / div)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(metrics: &[(&str, &[f64])]) -> Row {
        crate::report::model::explain::tests::row("t", "ext4", metrics)
    }

    const N: &[f64] = &[100.0, 100.0, 100.0];

    #[test]
    fn the_type_whose_time_moved_most_is_named_by_its_latency() {
        let base = row(&[
            ("fsync_ops", N),
            ("fsync_p50_us", &[900.0, 910.0, 890.0]),
            ("open_ops", N),
            ("open_p50_us", &[20.0, 21.0, 19.0]),
        ]);
        let cand = row(&[
            ("fsync_ops", N),
            ("fsync_p50_us", &[3100.0, 3050.0, 3150.0]),
            ("open_ops", N),
            // Moved more as a ratio, but 100 opens of 60 µs are 6 ms against fsync's 310.
            ("open_p50_us", &[60.0, 61.0, 59.0]),
        ]);
        let m = most_moved(&base, &cand, true, 1.5).expect("a type moved");
        assert_eq!((m.kind.as_str(), m.latency), ("fsync", true));
        assert_eq!(latencies(m.cand, m.base), "3.1 ms vs 0.9 ms");
        // The other way round nothing is faster.
        assert_eq!(most_moved(&base, &cand, false, 1.5), None);
    }

    #[test]
    fn a_type_under_the_floor_or_unmoved_is_not_named() {
        let base = row(&[
            ("stat_ops", &[10.0, 10.0, 10.0]),
            ("stat_p50_us", &[1.0, 1.1, 0.9]),
        ]);
        let cand = row(&[
            ("stat_ops", &[10.0, 10.0, 10.0]),
            ("stat_p50_us", &[9.0, 9.1, 8.9]),
        ]);
        assert_eq!(most_moved(&base, &cand, true, 1.5), None, "90 µs in all");
        let same = row(&[("write_ops", N), ("write_p50_us", &[50.0, 51.0, 49.0])]);
        assert_eq!(most_moved(&same, &same, true, 1.5), None);
    }
}
