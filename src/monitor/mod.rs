//! The monitor: samples device, memory and CPU counters while a measured phase runs.

pub mod cpu;
pub mod diskstats;
pub mod meminfo;

use serde::{Deserialize, Serialize};

/// One point of a measurement's time series. Byte counters are cumulative since the phase
/// started; percentages are over the interval since the previous sample.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Seconds since the phase started.
    pub t: f64,
    pub device_read_bytes: u64,
    pub device_write_bytes: u64,
    pub cached_bytes: u64,
    pub dirty_bytes: u64,
    pub writeback_bytes: u64,
    pub mem_free_bytes: u64,
    pub cpu_user_pct: f64,
    pub cpu_system_pct: f64,
    pub cpu_iowait_pct: f64,
}
