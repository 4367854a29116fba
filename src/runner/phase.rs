//! What one measured phase yields: what the harness saw of it here ([`Observed`]), and the
//! figures a process contributes to its team's phase ([`Figures`]). Both the harness, which
//! fills them, and the MPI team, which combines them, read them from here.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::monitor::{DeviceDelta, MonitorReport};

/// What the harness saw of the measured phase.
#[derive(Debug, Default)]
pub struct Observed {
    pub monitor: Option<MonitorReport>,
    pub wall_seconds: f64,
    pub syncfs_seconds: f64,
    pub used_before: Option<u64>,
    pub used_after: Option<u64>,
    pub measured: u32,
    pub caches_dropped: u32,
    pub notes: Vec<String>,
    /// The phase failed because another rank did (under MPI), not here.
    pub failed_elsewhere: bool,
    /// What the log target's device did during the phase (when there is one).
    pub log_device: Option<DeviceDelta>,
    /// The host's steadiness probe just before the phase, in ms
    /// ([`crate::monitor::steadiness`]).
    pub probe_ms: Option<f64>,
    /// When the workload first handed the harness its phase, and when the harness last gave
    /// it back: what the workload did before is its preparation, after, its check of its work
    /// (a record's `workload_prepare` and `workload_check`).
    pub entered: Option<Instant>,
    pub left: Option<Instant>,
}

/// One rank's figures of a measured phase.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Figures {
    pub work_seconds: f64,
    pub syncfs_seconds: f64,
    pub files: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
}
