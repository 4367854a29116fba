//! The `-maintenance` points: the server settings that make autovacuum busy, the thread
//! that issues CHECKPOINTs during the measured phase, and the figures and check that say
//! the maintenance ran.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::server::Server;
use crate::workload::error::WorkloadError;

/// Server settings of a maintenance point: autovacuum wakes every second and takes any
/// table with a few dozen changed rows, without cost-based pauses.
pub(super) const SETTINGS: [(&str, &str); 7] = [
    ("autovacuum", "on"),
    ("autovacuum_naptime", "1"),
    ("autovacuum_vacuum_threshold", "50"),
    ("autovacuum_vacuum_scale_factor", "0.01"),
    ("autovacuum_analyze_threshold", "50"),
    ("autovacuum_analyze_scale_factor", "0.01"),
    ("autovacuum_vacuum_cost_delay", "0"),
];

/// Autovacuum and autoanalyze runs so far over the user tables.
pub(super) const AUTOVACUUMS: &str =
    "SELECT coalesce(sum(autovacuum_count + autoanalyze_count), 0) FROM pg_stat_user_tables";

/// Issues a CHECKPOINT every `every` until `done`; returns how many completed.
pub(super) fn checkpointer(
    srv: &Server,
    every: Duration,
    done: &AtomicBool,
) -> Result<u64, WorkloadError> {
    let mut n = 0;
    let mut next = Instant::now() + every;
    while !done.load(Ordering::SeqCst) {
        if Instant::now() >= next {
            srv.sql("CHECKPOINT")?;
            n += 1;
            next += every;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(n)
}

/// A maintenance point's own figures and check: the `checkpoints` issued every `every`
/// and the autovacuum runs (`vacuums`) during the measured phase, at least one of them.
pub(super) fn record(
    every: Duration,
    checkpoints: u64,
    vacuums: f64,
    m: &mut BTreeMap<String, f64>,
    notes: &mut Vec<String>,
) -> Result<(), WorkloadError> {
    let actions = checkpoints as f64 + vacuums;
    // The variant's own check: maintenance that never ran would measure nothing.
    if actions <= 0.0 {
        return Err(WorkloadError::Verify(
            "the maintenance point ran no CHECKPOINT and no autovacuum".into(),
        ));
    }
    m.insert("maintenance_checkpoints".into(), checkpoints as f64);
    m.insert("maintenance_autovacuum_runs".into(), vacuums);
    m.insert("maintenance_actions".into(), actions);
    notes.push(format!(
        "maintenance: aggressive autovacuum ({} runs) and a CHECKPOINT every {} ms \
         ({checkpoints} issued) during the measured phase",
        vacuums,
        every.as_millis()
    ));
    Ok(())
}
