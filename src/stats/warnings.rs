//! What a reader should distrust, and what to do about it: the warnings [`super::aggregate`]
//! raises, with their thresholds and their wording in one place, so every report says the
//! same thing the same way.

use std::fmt;

use serde::Serialize;

use super::outliers::OUTLIER_SIGMAS;

/// A coefficient of variation above this makes [`Warning::WideSpread`]: differences
/// smaller than the spread itself cannot be told apart with a handful of runs.
pub const WIDE_SPREAD_CV: f64 = 0.10;

/// Fewer successful runs than this make [`Warning::TooFewRuns`]: with 2 runs the
/// t-multiplier of a 95 % interval is 12.7, with 3 it is 4.3.
pub const MIN_USEFUL_RUNS: usize = 3;

/// [`Warning::ReadsFromMemory`] after its count of runs, and alone where the report lists
/// it once for every table it concerns.
pub const READS_FROM_MEMORY: &str = "read with direct I/O, yet the device read under a tenth \
     of it — the reads came from memory beneath the file system (a FUSE daemon caches its \
     device), so the figure is not the device's; only a file larger than RAM reads from the \
     device";

/// [`Warning::WritesAbsorbed`] after its count of runs.
pub const WRITES_ABSORBED: &str = "wrote with direct I/O, yet the device wrote under nine \
     tenths of it — the writes were absorbed by a cache beneath the file system (a FUSE \
     daemon caches its device) and its syncs did not reach the device, so the figure is not \
     the device's";

/// [`Warning::FsyncsUnflushed`] after its count of runs.
pub const FSYNCS_UNFLUSHED: &str = "made fsyncs the device never flushed (under one cache \
     flush for ten fsyncs) — the FUSE daemon did not pass them on, so the synced data may \
     still sit in a cache beneath the file system and the figure is not that of durable \
     writes";

/// The replay's self-check: beyond this gap (in %) between the replay's time and the
/// program's own, on the file-system type it was recorded on, the row is warned about.
pub use crate::workload::replay::TIME_GAP_PCT as REPLAY_TIME_GAP_PCT;

/// [`Warning::ReplayTimeGap`] after its count of runs and the gap.
pub const REPLAY_TIME_GAP: &str = "the replay's time strayed from the program's own on the \
     file-system type the trace was recorded on — it does not reproduce this program's \
     timing, so read its differences with care (the self-check note has the figures; \
     `--timing think` keeps the program's own computing between calls)";

/// Something a reader should know before trusting a group's numbers. `Display` gives the
/// explanation and what to do about it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Warning {
    /// The coefficient of variation exceeds [`WIDE_SPREAD_CV`].
    WideSpread { metric: String, cv: f64 },
    /// Values flagged by [`super::outliers::mad_outliers`].
    Outliers { metric: String, count: usize },
    /// Fewer than [`MIN_USEFUL_RUNS`] successful repetitions.
    TooFewRuns { n: usize },
    /// Repetitions that ended in an error status.
    Failed { count: usize },
    /// Repetitions cut short by an interrupt (Ctrl-C, a signal): nothing went wrong with the
    /// file system, and `--resume` measures them again.
    Interrupted { count: usize },
    /// Repetitions whose file system failed its health check.
    Invalid { count: usize },
    /// Metric values that were NaN or infinite and were left out.
    NonFinite { metric: String, count: usize },
    /// The baseline target has no successful run of this workload point.
    NoBaseline { baseline: String },
    /// Runs whose measured phase was shorter than the run's phase floor (their records
    /// carry `below_floor`); `seconds` is the median phase of the group.
    ShortPhase { count: usize, seconds: f64 },
    /// Runs that read with O_DIRECT while the device read under a tenth of it (their
    /// records carry `reads_from_memory`): the figure is memory's, not the device's.
    ReadsFromMemory { count: usize },
    /// Runs that wrote with O_DIRECT while the device wrote under nine tenths of it (their
    /// records carry `writes_absorbed`): the figure is a cache's, not the device's.
    WritesAbsorbed { count: usize },
    /// Runs on a FUSE file system whose fsyncs the device did not flush (their records
    /// carry `fsyncs_unflushed`): the syncs ended in a cache, not on the device.
    FsyncsUnflushed { count: usize },
    /// Replay runs whose time, on the file-system type the trace was recorded on, strayed
    /// from the program's own by more than [`REPLAY_TIME_GAP_PCT`] (their records carry
    /// `replay_time_gap_pct`); `pct` is the median gap of the group's runs.
    ReplayTimeGap { count: usize, pct: f64 },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::WideSpread { metric, cv } => wide_spread(f, metric, *cv),
            Warning::Outliers { metric, count } => outliers(f, metric, *count),
            Warning::TooFewRuns { n } => too_few_runs(f, *n),
            Warning::Failed { count } => write!(
                f,
                "{} failed and {} left out of the statistics — the remaining runs may flatter \
                 this file system; see the status and error columns",
                runs(*count, "run", "runs"),
                if *count == 1 { "is" } else { "are" }
            ),
            Warning::Interrupted { count } => write!(
                f,
                "{} cut short by an interrupt and left out of the statistics — not a failure \
                 of the file system; `fsarena run --resume` measures {} again",
                runs(*count, "run was", "runs were"),
                if *count == 1 { "it" } else { "them" }
            ),
            Warning::Invalid { count } => write!(
                f,
                "{} failed the file-system health check afterwards — kept in the raw results, \
                 never averaged; a file system that corrupts data is not fast",
                runs(*count, "run", "runs")
            ),
            Warning::NonFinite { metric, count } => write!(
                f,
                "{metric}: {} not a finite number and left out — a zero duration or a \
                 division by zero upstream",
                runs(*count, "value was", "values were")
            ),
            Warning::NoBaseline { baseline } => write!(
                f,
                "baseline {baseline:?} has no successful run of this workload — nothing to \
                 compare against; pick another with --baseline"
            ),
            Warning::ShortPhase { count, seconds } => write!(
                f,
                "{} measured for only {seconds:.3} s (median), under the phase floor — timer \
                 and scheduler noise weigh on the figure; a larger --scale lengthens the phase",
                runs(*count, "run was", "runs were")
            ),
            Warning::ReadsFromMemory { count } => {
                write!(f, "{} {READS_FROM_MEMORY}", runs(*count, "run", "runs"))
            }
            Warning::WritesAbsorbed { count } => {
                write!(f, "{} {WRITES_ABSORBED}", runs(*count, "run", "runs"))
            }
            Warning::FsyncsUnflushed { count } => {
                write!(f, "{} {FSYNCS_UNFLUSHED}", runs(*count, "run", "runs"))
            }
            Warning::ReplayTimeGap { count, pct } => write!(
                f,
                "{} (median {pct:+.0} %, beyond ±{REPLAY_TIME_GAP_PCT:.0} %): {REPLAY_TIME_GAP}",
                runs(*count, "run", "runs")
            ),
        }
    }
}

/// A metric's spread between runs: its CV, or, when it has none (a mean near zero), why.
fn wide_spread(f: &mut fmt::Formatter<'_>, metric: &str, cv: f64) -> fmt::Result {
    if cv.is_finite() {
        write!(
            f,
            "{metric} varies {:.0} % between runs (CV) — small differences take many \
             runs to decide; make sure nothing else uses the disk or CPU",
            cv * 100.0
        )
    } else {
        write!(
            f,
            "{metric} scatters around zero, so its relative spread is unbounded — \
             compare absolute values instead"
        )
    }
}

/// Runs far from the others, kept in the statistics.
fn outliers(f: &mut fmt::Formatter<'_>, metric: &str, count: usize) -> fmt::Result {
    write!(
        f,
        "{metric}: {} far from the others (more than {OUTLIER_SIGMAS} robust \
         standard deviations from the median) — something else may have run at the \
         same time; {} kept in the statistics, check the raw values",
        runs(count, "run is", "runs are"),
        if count == 1 { "it is" } else { "they are" }
    )
}

/// No successful run, or too few for a spread worth stating.
fn too_few_runs(f: &mut fmt::Formatter<'_>, n: usize) -> fmt::Result {
    if n == 0 {
        return write!(
            f,
            "no successful run — there is nothing to summarise; see the failures above"
        );
    }
    write!(
        f,
        "only {} — {}; run with --runs {MIN_USEFUL_RUNS} or more",
        runs(n, "successful run", "successful runs"),
        if n == 1 {
            "no spread or confidence interval can be given"
        } else {
            "the confidence interval is very wide"
        }
    )
}

/// "1 run" / "3 runs".
fn runs(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_read_well() {
        let w = Warning::WideSpread {
            metric: "files_per_s".to_string(),
            cv: 0.23,
        };
        assert_eq!(
            w.to_string(),
            "files_per_s varies 23 % between runs (CV) — small differences take many runs to \
             decide; make sure nothing else uses the disk or CPU"
        );
        let inf = Warning::WideSpread {
            metric: "x".to_string(),
            cv: f64::INFINITY,
        };
        assert!(inf.to_string().contains("around zero"));
        assert!(Warning::TooFewRuns { n: 1 }
            .to_string()
            .starts_with("only 1 successful run — no spread"));
        assert!(Warning::TooFewRuns { n: 2 }
            .to_string()
            .starts_with("only 2 successful runs — the confidence"));
        assert!(Warning::Failed { count: 2 }
            .to_string()
            .starts_with("2 runs failed and are left out"));
        assert!(Warning::Interrupted { count: 1 }
            .to_string()
            .starts_with("1 run was cut short by an interrupt and left out"));
        assert!(Warning::ShortPhase {
            count: 3,
            seconds: 0.042
        }
        .to_string()
        .starts_with("3 runs were measured for only 0.042 s (median), under the phase floor"));
        assert!(Warning::Outliers {
            metric: "seconds".to_string(),
            count: 1
        }
        .to_string()
        .starts_with("seconds: 1 run is far from the others"));
        assert!(Warning::ReadsFromMemory { count: 2 }
            .to_string()
            .starts_with("2 runs read with direct I/O, yet the device read under a tenth"));
    }
}
