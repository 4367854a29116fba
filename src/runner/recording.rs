//! The results store as the run sees it: opened (fresh, or resumed with what is already
//! final) before anything is provisioned, and each record described in one line.

use std::collections::HashSet;

use super::{host_facts, RunError, RunOptions};
use crate::plan::Plan;
use crate::results::store::{self, Store};
use crate::results::{Measurement, Status};
use crate::workload::Workload;

/// A cell as `--resume` skips it (target, workload, threads, repetition): all its points
/// together, unlike the per-point [`crate::results::CellKey`].
pub type DoneKey = (String, String, u32, u32);

/// Opens the results store: a new one with the host facts, or with `--resume` the existing
/// one plus the cells it already holds in final form (a cell with any unfinished record is
/// run again).
pub fn open_store(
    plan: &Plan,
    opts: &RunOptions,
    skipped: &[(String, String)],
) -> Result<(Store, HashSet<DoneKey>), RunError> {
    if !opts.resume {
        let plan_json = serde_json::to_value(plan).unwrap_or(serde_json::Value::Null);
        let mut facts = host_facts::gather(&opts.work_root, opts.command_line.clone(), plan_json);
        facts.skipped_targets = skipped.to_vec();
        return Ok((Store::create(&opts.out, &facts)?, HashSet::new()));
    }
    let loaded = store::load(&opts.out)?;
    let mut done = HashSet::new();
    let mut redo = HashSet::new();
    for m in &loaded.measurements {
        let k = (
            m.target.clone(),
            m.workload.clone(),
            m.threads,
            m.repetition,
        );
        if store::is_final(m.status) {
            done.insert(k);
        } else {
            redo.insert(k);
        }
    }
    done.retain(|k| !redo.contains(k));
    Ok((Store::reopen(&opts.out)?, done))
}

/// The summary line of a record that did not end `ok`.
pub fn failure_line(m: &Measurement) -> String {
    format!(
        "{} {}{} threads {} repetition {}: {}{}",
        m.target,
        m.workload,
        if m.variant.is_empty() {
            String::new()
        } else {
            format!(" [{}]", m.variant)
        },
        m.threads,
        m.repetition + 1,
        m.status.as_str(),
        m.error
            .as_ref()
            .map(|e| format!(" ({e})"))
            .unwrap_or_default()
    )
}

/// The progress line of a finished point: its key metric, or what went wrong.
pub fn describe(m: &Measurement, w: &dyn Workload) -> String {
    let (key, _) = w.key_metric();
    match (m.status, m.metrics.get(key)) {
        (Status::Ok, Some(v)) => format!("ok {v:.1} {key}"),
        (Status::Ok, None) => "ok".to_string(),
        (s, _) => format!(
            "{}{}",
            s.as_str(),
            m.error
                .as_ref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default()
        ),
    }
}
