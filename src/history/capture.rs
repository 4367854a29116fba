//! A results directory read into what the history keeps of it: the run's fingerprint and
//! each repetition's key metric. The same reading serves `fsarena run`'s registration and
//! `fsarena history add`, so a run registered as it ends and one imported later are kept
//! alike.

use std::collections::BTreeMap;
use std::path::Path;

use xxhash_rust::xxh3::xxh3_64;

use super::entry::{Captured, RunEntry, Value};
use super::error::HistoryError;
use crate::plan::Plan;
use crate::results::record::HostFacts;
use crate::results::store::{self, Loaded};
use crate::stats::verdicts::points::KeyMetric;

/// Plan keys that change how a run is decided or stopped, not what it measures: two runs
/// that differ only in these belong to one series.
const UNMEASURED_KEYS: [&str; 5] = ["runs", "baseline", "margin_pct", "max_steal_pct", "timeout"];

/// The commit this binary was built from (`build.rs`), empty when it was built outside git.
pub const COMMIT: &str = env!("FSARENA_COMMIT");

/// Reads `dir/results.jsonl` and what the history keeps of it, with `labels`.
pub fn capture(dir: &Path, labels: &BTreeMap<String, String>) -> Result<Captured, HistoryError> {
    let loaded = store::load(dir).map_err(|e| HistoryError::Results {
        dir: dir.to_path_buf(),
        why: e.to_string(),
    })?;
    Ok(from_loaded(&loaded, dir, labels))
}

/// What the history keeps of a results file already read.
pub fn from_loaded(loaded: &Loaded, dir: &Path, labels: &BTreeMap<String, String>) -> Captured {
    let h = &loaded.host;
    let (host_key, host) = host_print(h);
    let plan_digest = plan_digest(&h.plan);
    let id = hex(xxh3_64(
        format!("{host_key}|{}|{plan_digest}", h.started_unix).as_bytes(),
    ));
    let (dataset, dataset_bytes) = dataset(h);
    let measured = loaded
        .measurements
        .iter()
        .filter(|m| m.status.is_ok())
        .count() as u64;
    let run = RunEntry {
        id: id.clone(),
        started_unix: h.started_unix,
        host_key,
        host,
        kernel: h.kernel.clone(),
        version: h.fsarena_version.clone(),
        commit: if h.fsarena_version == env!("CARGO_PKG_VERSION") {
            COMMIT.to_string()
        } else {
            String::new()
        },
        plan_digest,
        plan_name: plan_name(&h.plan),
        dataset,
        dataset_bytes,
        results_path: std::path::absolute(dir)
            .unwrap_or_else(|_| dir.to_path_buf())
            .display()
            .to_string(),
        measured,
        failed: loaded.measurements.len() as u64 - measured,
        labels: labels.clone(),
    };
    let values = loaded
        .measurements
        .iter()
        .map(|m| {
            let key: KeyMetric = crate::report::key_metric(&m.workload).unwrap_or_default();
            let point = [m.variant.as_str(), m.dataset.as_deref().unwrap_or("")]
                .into_iter()
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join(" · ");
            Value {
                run_id: id.clone(),
                target: m.target.clone(),
                fs: m.fs.clone(),
                workload: m.workload.clone(),
                point,
                threads: m.threads,
                repetition: m.repetition,
                value: m
                    .metrics
                    .get(&key.name)
                    .copied()
                    .filter(|v| m.status.is_ok() && v.is_finite()),
                metric: key.name,
                higher_is_better: key.higher_is_better,
                status: m.status.as_str().to_string(),
            }
        })
        .collect();
    Captured { run, values }
}

fn hex(x: u64) -> String {
    format!("{x:016x}")
}

/// The host in words and its digest: CPU model and count, memory to the GiB, and the work
/// directory's device model. The kernel is left out: a kernel upgrade is what a series
/// over kernels looks at, on the same host.
fn host_print(h: &HostFacts) -> (String, String) {
    let gib = (h.mem_total_bytes as f64 / (1u64 << 30) as f64).round();
    let words = format!(
        "{} · {} CPUs · {gib} GiB · {}",
        h.cpu_model.trim(),
        h.cpus,
        h.work_device.as_deref().unwrap_or("unknown device")
    );
    (hex(xxh3_64(words.as_bytes()))[..12].to_string(), words)
}

/// The digest of the plan's content without [`UNMEASURED_KEYS`]. serde_json's map is
/// ordered by key, so the digest does not depend on the order the plan was written in.
fn plan_digest(plan: &serde_json::Value) -> String {
    let mut p = plan.clone();
    if let Some(o) = p.as_object_mut() {
        for k in UNMEASURED_KEYS {
            o.remove(k);
        }
    }
    hex(xxh3_64(p.to_string().as_bytes()))[..12].to_string()
}

/// "create, scan on ext4, xfs": the plan's workloads and targets.
fn plan_name(plan: &serde_json::Value) -> String {
    let names = |key: &str, field: Option<&str>| -> String {
        plan.get(key)
            .and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|x| match field {
                        Some(f) => x.get(f).and_then(|n| n.as_str()),
                        None => x.as_str(),
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default()
    };
    format!(
        "{} on {}",
        names("workloads", None),
        names("targets", Some("name"))
    )
}

/// The data set's size as the report states it, and its bytes.
fn dataset(h: &HostFacts) -> (String, u64) {
    let Ok(plan) = serde_json::from_value::<Plan>(h.plan.clone()) else {
        return (String::new(), 0);
    };
    let sizes = crate::report::model::scales::sizes(&plan, h.mem_total_bytes);
    let line = crate::report::model::scales::size_line(&sizes, h.mem_total_bytes);
    (
        line.unwrap_or_default(),
        sizes.iter().map(|s| s.bytes).sum(),
    )
}
