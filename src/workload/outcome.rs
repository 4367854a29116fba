//! What a measured phase produced, as a workload hands it back to the runner.

use std::collections::BTreeMap;

/// What a measured phase produced. The runner derives rates and amplification from it.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Wall-clock seconds of the measured work, as the workload timed it.
    pub seconds: f64,
    /// Files (or entries, or transactions) the phase processed.
    pub files: u64,
    /// Bytes the workload read through the file system API.
    pub logical_read_bytes: u64,
    /// Bytes the workload wrote through the file system API (the denominator of write
    /// amplification).
    pub logical_write_bytes: u64,
    /// Workload-specific numbers (snake_case): `copy_seconds`, `iops`, `p99_latency_us`, …
    pub metrics: BTreeMap<String, f64>,
    /// Facts worth showing (e.g. "reflink used").
    pub notes: Vec<String>,
    /// The phase read with O_DIRECT, so its reads should reach the device: when the device
    /// read next to nothing, something beneath the file (a FUSE daemon's cache of its block
    /// device) served them from memory, and the runner says so beside the figure.
    pub direct_reads: bool,
    /// The phase wrote with O_DIRECT, so every byte it wrote should reach the device before
    /// it ends: when the device wrote far less, a cache beneath the file (a FUSE daemon's
    /// cache of its block device) absorbed the writes, and the runner says so.
    pub synced_writes: bool,
    /// fsync and fdatasync calls the phase made: each should reach the device as a cache
    /// flush, and on a FUSE target the runner says whether the device saw them.
    pub fsyncs: u64,
    /// The baseline's figures from its passes in the same phase, when the point was
    /// measured in turn with it ([`super::passes`], [`super::Ctx::in_turn`]); empty otherwise.
    pub in_turn: BTreeMap<String, f64>,
}
