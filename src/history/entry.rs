//! What the history keeps of a run: plain data, the same whichever store holds it.

use std::collections::BTreeMap;

use serde::Serialize;

use super::error::HistoryError;

/// One registered run: where and how it was measured, and what it measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunEntry {
    /// Stable over re-imports: a digest of the host, the start time and the plan, so
    /// adding the same results directory twice (or a copy of it) keeps one run.
    pub id: String,
    /// When the run started, in seconds since the epoch.
    pub started_unix: f64,
    /// A digest of the host's fingerprint ([`HostPrint::key`]).
    pub host_key: String,
    /// The fingerprint in words: CPU model, CPUs, memory, the work directory's device.
    pub host: String,
    pub kernel: String,
    pub version: String,
    /// The commit fsarena was built from, when the registering binary knew it and the
    /// run was made by the same version; empty otherwise.
    pub commit: String,
    /// A digest of the plan's content that decides what is measured ([`super::capture`]).
    pub plan_digest: String,
    /// The plan in a few words: its workloads and targets.
    pub plan_name: String,
    /// The data set's size as the report states it.
    pub dataset: String,
    pub dataset_bytes: u64,
    /// The results directory the run was read from, as an absolute path.
    pub results_path: String,
    /// Measurements that ended `ok`, and those that did not.
    pub measured: u64,
    pub failed: u64,
    pub labels: BTreeMap<String, String>,
}

/// One repetition's key metric in a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Value {
    pub run_id: String,
    pub target: String,
    pub fs: String,
    pub workload: String,
    /// The point within the workload: its variant and data set, empty for a plain one.
    pub point: String,
    pub threads: u32,
    pub repetition: u32,
    pub metric: String,
    pub higher_is_better: bool,
    /// `None` when the repetition did not end `ok` (its status says why).
    pub value: Option<f64>,
    pub status: String,
}

/// A run and its values, as read from a results directory.
#[derive(Debug, Clone)]
pub struct Captured {
    pub run: RunEntry,
    pub values: Vec<Value>,
}

/// `key=value`, as `--label` takes it.
pub fn parse_label(s: &str) -> Result<(String, String), HistoryError> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(HistoryError::Label(s.to_string())),
    }
}

/// Which runs a listing, a report or a check looks at. Every field narrows; an empty
/// filter takes them all.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// A plan digest's prefix, or a word of the plan's name.
    pub plan: Option<String>,
    /// A host digest's prefix, or a word of the fingerprint.
    pub host: Option<String>,
    /// `key=value` labels every run must carry.
    pub labels: Vec<(String, String)>,
    /// A target the run measured.
    pub target: Option<String>,
    /// Runs started at or after this time (seconds since the epoch).
    pub since_unix: Option<f64>,
}

impl Filter {
    /// Whether `run` passes every field but `target`, which needs its values.
    pub fn keeps(&self, run: &RunEntry) -> bool {
        let word = |hay: &str, digest: &str, want: &str| {
            digest.starts_with(want) || hay.to_lowercase().contains(&want.to_lowercase())
        };
        self.plan
            .as_deref()
            .map_or(true, |p| word(&run.plan_name, &run.plan_digest, p))
            && self
                .host
                .as_deref()
                .map_or(true, |h| word(&run.host, &run.host_key, h))
            && self
                .labels
                .iter()
                .all(|(k, v)| run.labels.get(k) == Some(v))
            && self.since_unix.map_or(true, |s| run.started_unix >= s)
    }
}

/// Puts each `(run id, key, value)` label on its run.
pub fn attach_labels(runs: &mut [RunEntry], labels: Vec<(String, String, String)>) {
    let mut by_id: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (id, k, v) in labels {
        by_id.entry(id).or_default().insert(k, v);
    }
    for r in runs {
        if let Some(l) = by_id.remove(&r.id) {
            r.labels = l;
        }
    }
}
