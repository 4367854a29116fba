//! What the monitor hands back for one phase: its [`Sample`] series, each device's
//! [`DeviceDelta`] and the whole [`MonitorReport`], and how they become a measurement's
//! metrics. These plain types sit below the sampler that fills them and the `Monitor` that
//! returns them, so neither has to import the other's parent.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::sys::DevId;

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

/// What one device did over the phase. All figures are deltas except `peak_in_flight`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceDelta {
    pub dev: DevId,
    /// False when the device never appeared in /proc/diskstats in two readings (tmpfs, FUSE
    /// without a block device, a wrong number): every other figure is then 0 and meaningless.
    pub seen: bool,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub read_ios: u64,
    pub write_ios: u64,
    /// Summed time reads spent from issue to completion (so it exceeds wall time under
    /// concurrency); divided by `read_ios` it is the mean read latency.
    pub read_ms: u64,
    pub write_ms: u64,
    /// Wall time with at least one I/O in flight.
    pub busy_ms: u64,
    pub discard_bytes: u64,
    /// Cache flushes the device completed (an fsync that reaches a device with a write
    /// cache sends one); `None` on kernels before 5.5, which do not count them.
    pub flushes: Option<u64>,
    pub peak_in_flight: u64,
}

impl DeviceDelta {
    pub(super) fn unseen(dev: DevId) -> DeviceDelta {
        DeviceDelta {
            dev,
            seen: false,
            read_bytes: 0,
            write_bytes: 0,
            read_ios: 0,
            write_ios: 0,
            read_ms: 0,
            write_ms: 0,
            busy_ms: 0,
            discard_bytes: 0,
            flushes: None,
            peak_in_flight: 0,
        }
    }
}

/// Everything the monitor learnt about one phase.
#[derive(Debug, Clone, Default)]
pub struct MonitorReport {
    /// From the baseline reading in `start` to the final one in `stop`, less the spans set
    /// aside.
    pub seconds: f64,
    /// Seconds of the window set aside (`Aside::run`): left out of `seconds` and of every
    /// device, CPU and process figure.
    pub aside_seconds: f64,
    /// In the order the devices were given to `Monitor::start`.
    pub devices: Vec<DeviceDelta>,
    /// The baseline at t = 0, one point per tick of `schedule`, and the final one; device
    /// figures are those of `devices[0]`.
    pub series: Vec<Sample>,
    pub start_cached_bytes: u64,
    pub peak_cached_bytes: u64,
    pub peak_dirty_bytes: u64,
    pub peak_writeback_bytes: u64,
    pub min_mem_free_bytes: u64,
    /// Averages over the whole phase, in percent of all CPUs.
    pub cpu_user_pct: f64,
    pub cpu_system_pct: f64,
    pub cpu_iowait_pct: f64,
    /// See [`CpuPercent::steal`](super::cpu::CpuPercent::steal); 0 on a machine that is not a VM.
    pub cpu_steal_pct: f64,
    /// False when not one clock tick (10 ms of CPU time over all CPUs) elapsed in the phase,
    /// so the percentages above are 0 for want of data, not measured.
    pub cpu_measured: bool,
    /// This process (all threads) plus its reaped children, over the phase.
    pub process_cpu_seconds: f64,
    /// What went wrong while sampling (unreadable /proc files, unseen devices), for the
    /// measurement's notes.
    pub warnings: Vec<String>,
}

impl DeviceDelta {
    /// Adds this device's figures to a measurement's metrics: `{prefix}read_bytes`,
    /// `{prefix}read_latency_ms`, … and `{per_io}bytes_per_read`, … (the target's device
    /// is `device_` with no per-I/O prefix; a second device, such as a database's log
    /// target, gets its own prefixes). Ratios are left out when their denominator is zero.
    pub fn add_metrics(
        &self,
        prefix: &str,
        per_io: &str,
        seconds: f64,
        metrics: &mut BTreeMap<String, f64>,
    ) {
        let mut put = |k: &str, v: f64| {
            metrics.insert(k.to_string(), v);
        };
        put(&format!("{prefix}read_bytes"), self.read_bytes as f64);
        put(&format!("{prefix}write_bytes"), self.write_bytes as f64);
        put(&format!("{prefix}read_ios"), self.read_ios as f64);
        put(&format!("{prefix}write_ios"), self.write_ios as f64);
        if let Some(flushes) = self.flushes {
            put(&format!("{prefix}flushes"), flushes as f64);
        }
        if self.read_ios > 0 {
            put(
                &format!("{prefix}read_latency_ms"),
                self.read_ms as f64 / self.read_ios as f64,
            );
            put(
                &format!("{per_io}bytes_per_read"),
                self.read_bytes as f64 / self.read_ios as f64,
            );
        }
        if self.write_ios > 0 {
            put(
                &format!("{prefix}write_latency_ms"),
                self.write_ms as f64 / self.write_ios as f64,
            );
            put(
                &format!("{per_io}bytes_per_write"),
                self.write_bytes as f64 / self.write_ios as f64,
            );
        }
        if seconds > 0.0 {
            put(
                &format!("{prefix}read_iops"),
                self.read_ios as f64 / seconds,
            );
            put(
                &format!("{prefix}write_iops"),
                self.write_ios as f64 / seconds,
            );
        }
    }
}

impl MonitorReport {
    /// Adds the standard snake_case metrics to a measurement's metrics map. Device metrics
    /// are omitted for a device that was not seen, and ratios are omitted when their
    /// denominator is zero: an absent figure is honest, a made-up 0 or NaN is not.
    pub fn add_metrics(&self, metrics: &mut BTreeMap<String, f64>) {
        if let Some(d) = self.devices.first().filter(|d| d.seen) {
            d.add_metrics("device_", "", self.seconds, metrics);
        }
        let mut put = |k: &str, v: f64| {
            metrics.insert(k.to_string(), v);
        };
        if let Some(b) = self.devices.get(1).filter(|d| d.seen) {
            put("backing_write_bytes", b.write_bytes as f64);
        }
        put("peak_cached_bytes", self.peak_cached_bytes as f64);
        put(
            "cache_growth_bytes",
            self.peak_cached_bytes
                .saturating_sub(self.start_cached_bytes) as f64,
        );
        put("peak_dirty_bytes", self.peak_dirty_bytes as f64);
        // The least free memory seen (seed 000's monitor showed free memory beside the cache).
        if (1..u64::MAX).contains(&self.min_mem_free_bytes) {
            put("min_mem_free_bytes", self.min_mem_free_bytes as f64);
        }
        put("peak_writeback_bytes", self.peak_writeback_bytes as f64);
        if self.cpu_measured {
            put("cpu_user_pct", self.cpu_user_pct);
            put("cpu_system_pct", self.cpu_system_pct);
            put("cpu_iowait_pct", self.cpu_iowait_pct);
            put("cpu_steal_pct", self.cpu_steal_pct);
        }
        put("process_cpu_seconds", self.process_cpu_seconds);
        if self.aside_seconds > 0.0 {
            put("monitor_aside_seconds", self.aside_seconds);
        }
    }
}
