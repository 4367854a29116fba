//! What size a report's answer is for: each data set's files and bytes and whether it fits
//! in the host's page cache (a verdict on 40 MB in RAM says little about 40 GB on disk), and,
//! for a run over several scales, whether each verdict holds across them
//! ([`crate::stats::verdicts::scale_check`] decides; this words it). The exporters print
//! these beside their headline; `summary.json` carries both.

use serde::Serialize;

use super::section::{point_name, threads_phrase, threads_told};
use crate::dataset::sizing;
use crate::plan::series::count_label;
use crate::plan::size::human_bytes;
use crate::plan::Plan;
use crate::stats::verdicts::scale_check::{self, Outcome, ScaleCheck};
use crate::stats::verdicts::Point;
use crate::workload::initial::Starts;

/// One data set of the run, as big as the plan made it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DataSetSize {
    /// The label its records carry; `None` for a run of one data set.
    pub label: Option<String>,
    /// Files generated (exact) and bytes expected (the mean size of each class × its count);
    /// `None` for an own state whose files cannot be counted before the run (`pg`'s cluster).
    pub files: Option<u64>,
    pub bytes: u64,
    /// Whether those bytes fit in the host's RAM, so reads after the first may come from
    /// the page cache: "fits in page cache" or "larger than RAM"; or the limit a workload
    /// holds its page cache to ("page cache held to 25 % of it").
    pub page_cache: String,
    /// Set when this is not a data set but a workload's own initial state (a replay's
    /// trace, a database): that workload's name; `label` then says what the state is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_state_of: Option<String>,
}

/// The run's scale check: how many comparisons hold, flip and stay undecided across the
/// data-set sizes, and each comparison with its decision at every size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScaleCheckSummary {
    pub holds: usize,
    pub flips: usize,
    pub undecided: usize,
    pub comparisons: Vec<ScaleCheck>,
}

/// The sizes of the plan's generated data sets (none for a directory of the user's own,
/// whose size only planning it would tell, or when no workload starts from the data set),
/// then of each workload's own initial state (`Workload::initial_state`; one that cannot
/// be read here is left out), judged against `ram` bytes of memory.
pub fn sizes(plan: &Plan, ram: u64) -> Vec<DataSetSize> {
    let starts = Starts::of(plan);
    let generated = starts.dataset && plan.dataset.source_dir.is_none();
    let datasets = if generated {
        plan.datasets()
    } else {
        Vec::new()
    };
    let mut out: Vec<DataSetSize> = datasets
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let bytes = sizing::bytes(d).unwrap_or(0.0) as u64;
            DataSetSize {
                label: plan.dataset_label(i),
                files: Some(sizing::files(d).unwrap_or(0)),
                bytes,
                page_cache: page_cache(bytes, ram).into(),
                initial_state_of: None,
            }
        })
        .collect();
    out.extend(starts.known().map(|(name, own)| {
        DataSetSize {
            label: Some(own.what.clone()),
            files: own.files,
            bytes: own.bytes,
            page_cache: own
                .cache
                .clone()
                .unwrap_or_else(|| page_cache(own.bytes, ram).into()),
            initial_state_of: Some(name.to_string()),
        }
    }));
    out
}

/// "fits in page cache" when the data set is smaller than the RAM (unknown RAM counts as
/// none), else "larger than RAM".
fn page_cache(bytes: u64, ram: u64) -> &'static str {
    match bytes < ram {
        true => FITS,
        false => LARGER,
    }
}

const FITS: &str = "fits in page cache";
const LARGER: &str = "larger than RAM";

/// The scale check of the decided `points`, when the plan ran two or more scales.
pub fn check(points: &[Point], baseline: &str, plan: &Plan) -> Option<ScaleCheckSummary> {
    let steps = plan.scale_steps();
    if steps.is_empty() {
        return None;
    }
    let comparisons = scale_check::check(points, baseline, &steps);
    let (holds, flips, undecided) = scale_check::tally(&comparisons);
    Some(ScaleCheckSummary {
        holds,
        flips,
        undecided,
        comparisons,
    })
}

/// The headline's statement of size: "measured at 2.5k files · 39.1 MiB, fits in page cache
/// (RAM 23.5 GiB)"; with several data sets each is named (a profile name gets its size
/// beside it) and the page-cache clause said once when it is the same for all.
pub fn size_line(sizes: &[DataSetSize], ram: u64) -> Option<String> {
    let first = sizes.first()?;
    // A cache limit is said beside its own state, unless it is the only one.
    let limited = |s: &DataSetSize| ![FITS, LARGER].contains(&s.page_cache.as_str());
    let same = sizes.iter().all(|s| s.page_cache == first.page_cache)
        && (sizes.len() == 1 || !limited(first));
    let each: Vec<String> = sizes
        .iter()
        .map(|s| {
            let size = match s.files {
                Some(1) => format!("1 file · {}", human_bytes(s.bytes)),
                Some(n) => format!("{} files · {}", count_label(n), human_bytes(s.bytes)),
                None => human_bytes(s.bytes),
            };
            let named = match (&s.initial_state_of, &s.label) {
                // Neither counted nor sized before the run: what it is says it all.
                (Some(w), Some(what)) if s.files.is_none() && s.bytes == 0 => {
                    format!("{w}'s initial state: {what}")
                }
                (Some(w), Some(what)) => format!("{w}'s initial state: {size}, {what}"),
                (Some(w), None) => format!("{w}'s initial state: {size}"),
                (None, Some(l)) if !l.ends_with(&size) => format!("{l} ({size})"),
                _ => size,
            };
            match same {
                true => named,
                false => format!("{named}, {}", s.page_cache),
            }
        })
        .collect();
    let cache = match (same, sizes.len()) {
        (true, 1) => format!(", {}", first.page_cache),
        (true, _) if first.page_cache == LARGER => format!(", each {LARGER}"),
        (true, _) => format!(", each {FITS}"),
        (false, _) => String::new(),
    };
    let many = match sizes
        .iter()
        .filter(|s| s.initial_state_of.is_none())
        .count()
    {
        0 | 1 => String::new(),
        n => format!("{n} data sets: "),
    };
    Some(format!(
        "measured at {many}{}{cache} (RAM {})",
        each.join("; "),
        human_bytes(ram)
    ))
}

/// The check as lines a reader scans: the tally, then every flip with its sizes, then
/// what holds.
pub fn check_lines(c: &ScaleCheckSummary) -> Vec<String> {
    let mut out = vec![format!(
        "across scales: {} comparison{} hold, {} flip, {} undecided (decided at fewer than two sizes)",
        c.holds,
        if c.holds == 1 { "" } else { "s" },
        c.flips,
        c.undecided
    )];
    for outcome in [Outcome::Flips, Outcome::Holds] {
        for k in c.comparisons.iter().filter(|k| k.outcome == outcome) {
            out.push(comparison_line(k));
        }
    }
    out
}

/// "flips: sync, xfs vs ext4, 1 thread: better at 2.5k files · 39.1 MiB (-6.5 %), worse at
/// 25k files · 390.6 MiB (+78.6 %)".
pub fn comparison_line(k: &ScaleCheck) -> String {
    let point = point_name(&k.workload, &k.variant);
    let steps: Vec<String> = k
        .per_scale
        .iter()
        .map(|s| {
            format!(
                "{} at {} ({:+.1} %)",
                s.decision.as_str(),
                s.dataset,
                s.pct_diff
            )
        })
        .collect();
    format!(
        "{}: {point}, {} vs {}{}: {}",
        k.outcome.as_str(),
        k.target,
        k.baseline,
        threads_phrase(threads_told(&k.workload, k.threads)),
        steps.join(", ")
    )
}

/// The files of the data set whose records carry `label`: where a chart places it on its
/// size axis.
pub fn files_of(sizes: &[DataSetSize], label: Option<&str>) -> Option<u64> {
    sizes
        .iter()
        .find(|s| s.label.as_deref() == label)
        .and_then(|s| s.files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::DatasetSpec;

    #[test]
    fn the_size_line_says_files_bytes_and_whether_it_fits_in_ram() {
        let mut plan = Plan::of(Vec::new(), &["create"], DatasetSpec::default());
        let one = sizes(&plan, 24 << 30);
        let line = size_line(&one, 24 << 30).unwrap();
        assert_eq!(
            line,
            "measured at 2.5k files · 39.1 MiB, fits in page cache (RAM 24.0 GiB)"
        );
        assert_eq!(sizes(&plan, 1 << 20)[0].page_cache, "larger than RAM");
        plan.extra_scales = vec![0.1];
        let two = sizes(&plan, 24 << 30);
        let line = size_line(&two, 24 << 30).unwrap();
        assert_eq!(
            line,
            "measured at 2 data sets: 2.5k files · 39.1 MiB; 25k files · 390.6 MiB, each fits \
             in page cache (RAM 24.0 GiB)"
        );
        let mixed = size_line(&sizes(&plan, 100 << 20), 100 << 20).unwrap();
        assert!(
            mixed.contains("39.1 MiB, fits in page cache; 25k files · 390.6 MiB, larger than RAM"),
            "{mixed}"
        );
        plan.extra_scales.clear();
        plan.extra_profiles = vec![crate::dataset::Profile::Large];
        let named = size_line(&sizes(&plan, 24 << 30), 24 << 30).unwrap();
        assert!(
            named.starts_with("measured at 2 data sets: small (2.5k files · 39.1 MiB); large ("),
            "{named}"
        );
        assert_eq!(files_of(&two, Some("25k files · 390.6 MiB")), Some(25_000));
    }

    /// Defect (issue 41, "every headline says the size it was measured at"): a `db`, `pg` or
    /// fio run's header stated the default data set ("measured at 2.5k files · 39.1 MiB"),
    /// which none of them reads, instead of the database or data file it measured.
    #[test]
    fn a_database_or_fio_runs_header_states_what_it_measured_not_the_data_set() {
        let line = |workloads: &[&str], options: &str| {
            let mut plan = Plan::of(Vec::new(), workloads, DatasetSpec::default());
            if let Some(w) = workloads.first() {
                let table: toml::Table = options.parse().unwrap();
                plan.workload_options.insert(w.to_string(), table);
            }
            size_line(&sizes(&plan, 24 << 30), 24 << 30).unwrap()
        };
        assert_eq!(
            line(&["db"], ""),
            "measured at db's initial state: 1 file · 10.0 MiB, a SQLite database, built for \
             each repetition, page cache held to 25 % of it (RAM 24.0 GiB)"
        );
        assert_eq!(
            line(&["pg"], "pgbench_scale = 64"),
            "measured at pg's initial state: 1.0 GiB, a pgbench database at scale 64, loaded \
             for each repetition, page cache held to 25 % of it (RAM 24.0 GiB)"
        );
        let sweep = line(&["io-sweep"], "");
        assert!(
            sweep.starts_with(
                "measured at io-sweep's initial state: 1 file · 16.0 MiB, a fio data file, then \
                 a large one of up to 2 × RAM × scale, sized on the target"
            ),
            "{sweep}"
        );
        let large = line(&["io-quick"], "size = \"large\"");
        assert!(
            large.starts_with("measured at io-quick's initial state: a fio data file of up to 2"),
            "{large}"
        );
        let both = line(&["db", "create"], "");
        assert!(
            both.starts_with(
                "measured at 2.5k files · 39.1 MiB, fits in page cache; db's initial state: 1 file"
            ) && both.ends_with("page cache held to 25 % of it (RAM 24.0 GiB)"),
            "{both}"
        );
        // Without a limit, whether it fits in RAM is said again.
        let off = line(&["db"], "cache = \"off\"");
        assert!(
            off.ends_with("each repetition, fits in page cache (RAM 24.0 GiB)"),
            "{off}"
        );
    }

    /// Defect (issue 37): a replay's report header stated the default data set ("measured
    /// at 2.5k files · 39.1 MiB"), which the replay never writes, instead of its trace's
    /// initial state; a plan that runs both states both.
    #[test]
    fn a_replays_header_states_its_traces_initial_state_not_the_data_set() {
        let trace = concat!(env!("CARGO_MANIFEST_DIR"), "/traces/tar-xf.fstrace");
        let mut table = toml::Table::new();
        table.insert("trace".into(), toml::Value::String(trace.into()));
        let mut plan = Plan::of(Vec::new(), &["replay"], DatasetSpec::default());
        plan.workload_options.insert("replay".into(), table);
        let line = size_line(&sizes(&plan, 24 << 30), 24 << 30).unwrap();
        assert_eq!(
            line,
            format!(
                "measured at replay's initial state: 1 file · 2.6 MiB, from {trace}, fits in \
                 page cache (RAM 24.0 GiB)"
            )
        );
        plan.workloads.insert(0, "create".into());
        let both = size_line(&sizes(&plan, 24 << 30), 24 << 30).unwrap();
        assert!(
            both.starts_with(
                "measured at 2.5k files · 39.1 MiB; replay's initial state: 1 file · 2.6 MiB"
            ) && both.contains(", each fits in page cache"),
            "{both}"
        );
    }
}
