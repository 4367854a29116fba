//! How numbers read in every report: units from the metric's name, three significant digits,
//! and the decision word (better / worse / equivalent / undecided) beside every difference.

use crate::plan::size::human_bytes;
use crate::stats::{Comparison, Decision, MetricStats};

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
    if metric.ends_with("_us") {
        return format!("{} µs", sig3(v));
    }
    if metric.ends_with("_ms") {
        return format!("{} ms", sig3(v));
    }
    if metric == "seconds" || metric.ends_with("_seconds") {
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

/// "mean ± half-width of the 95 % interval", or the mean alone for a single run.
pub fn mean_ci(metric: &str, m: &MetricStats) -> String {
    match m.summary.ci95 {
        Some((lo, hi)) => format!(
            "{} ± {}",
            value(metric, m.summary.mean),
            value(metric, (hi - lo) / 2.0)
        ),
        None => value(metric, m.summary.mean),
    }
}

/// The % difference against the baseline and its decision: "-74.8 % (±6.9) worse",
/// "+0.5 % equivalent", "-2.0 % (±6.7) undecided (~7 more runs)".
pub fn vs_baseline(c: Option<&Comparison>) -> String {
    let Some(c) = c else {
        return String::new();
    };
    let pct = match c.pct_ci95 {
        Some((lo, hi)) => format!("{:+.1} % (±{:.1})", c.pct_diff, (hi - lo) / 2.0),
        None => format!("{:+.1} %", c.pct_diff),
    };
    match &c.verdict {
        None => pct,
        Some(v) if v.decision == Decision::Undecided => match v.runs_to_decide {
            Some(n) if n > 0 => format!("{pct} undecided (~{n} more runs)"),
            _ => format!("{pct} undecided"),
        },
        Some(v) => format!("{pct} {}", v.decision.as_str()),
    }
}

/// The legend every report prints once: what the decision words mean.
pub fn legend(margin_pct: f64) -> String {
    format!(
        "better/worse = significant after Benjamini–Hochberg control over the run (FDR 5 %, \
         ratio scale); equivalent = 90 % CI within ±{margin_pct} %; undecided = neither yet"
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
    pub runs: String,
}

pub fn row_cells(row: &super::model::Row, key: &str, baseline: &str) -> RowCells {
    use super::model::Mark;
    let (k, cv, vs) = match row.metric(key) {
        Some(m) => (
            mean_ci(key, m),
            format!("{:.1} %", m.summary.cv * 100.0),
            if row.target == baseline {
                "baseline".to_string()
            } else {
                vs_baseline(m.vs_baseline.as_ref())
            },
        ),
        None => ("—".into(), String::new(), String::new()),
    };
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
        runs: if row.failed.is_empty() && row.invalid == 0 {
            row.ok.to_string()
        } else {
            format!(
                "{} ({} failed, {} invalid)",
                row.ok,
                row.failed.len(),
                row.invalid
            )
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_follow_names() {
        assert_eq!(value("peak_cached_bytes", 3.0 * 1024.0 * 1024.0), "3.0 MiB");
        assert_eq!(value("lat_p99_us", 643.2), "643 µs");
        assert_eq!(value("write_amplification", 1.234), "1.23×");
        assert_eq!(value("files_per_s", 123456.0), "123k");
        assert_eq!(value("files_per_s", 9.8765), "9.88");
        assert_eq!(value("seconds", 0.01234), "0.012 s");
        assert_eq!(sig3(2_500_000.0), "2.50M");
    }
}
