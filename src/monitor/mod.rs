//! The monitor: samples device, memory and CPU counters while a measured phase runs.
//!
//! The parsers ([`diskstats`], [`meminfo`], [`cpu`]) are pure functions over /proc text; the
//! private `sampler` turns readings into deltas and a series; [`Monitor`] runs it on a
//! background thread for exactly the span between [`Monitor::start`] and [`Monitor::stop`].

mod aside;
pub mod cpu;
pub mod diskstats;
pub mod meminfo;
mod sampler;
pub mod steadiness;

use std::collections::BTreeMap;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

pub use aside::Aside;
use aside::Cmd;
pub use cpu::{CpuPercent, CpuStatError, CpuTimes};
pub use diskstats::{counter_delta, DiskCounters, DiskStatsError, SECTOR_BYTES};
pub use meminfo::{MemInfo, MemInfoError};

use crate::sys::DevId;
use sampler::Sampler;

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
    pub peak_in_flight: u64,
}

impl DeviceDelta {
    fn unseen(dev: DevId) -> DeviceDelta {
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
    /// Seconds of the window set aside ([`Aside::run`]): left out of `seconds` and of every
    /// device, CPU and process figure.
    pub aside_seconds: f64,
    /// In the order the devices were given to [`Monitor::start`].
    pub devices: Vec<DeviceDelta>,
    /// The baseline at t = 0, one point per tick of [`schedule`], and the final one; device
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
    /// See [`cpu::CpuPercent::steal`]; 0 on a machine that is not a VM.
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

/// Shortest interval accepted: below it the /proc reads themselves would become the load.
const MIN_INTERVAL: Duration = Duration::from_millis(10);

/// The interval of the first [`FAST_SPAN`] of every phase. Many measured phases last well
/// under a second (small scales), and at a steady 200 ms they would have one or two points,
/// too few to see anything. A sample costs tens of microseconds of CPU (three /proc reads,
/// see `sampler`; `sample_costs_well_under_a_millisecond` checks it), so 40 samples a second
/// cost well under 1 % of one CPU.
pub const FAST_INTERVAL: Duration = Duration::from_millis(25);

/// How long a phase is sampled at [`FAST_INTERVAL`] before backing off to the interval the
/// caller asked for, so long phases keep a modest series.
pub const FAST_SPAN: Duration = Duration::from_secs(1);

/// The interval after a phase has run for `elapsed`: [`FAST_INTERVAL`] (or `steady`, if it
/// is shorter) during the first [`FAST_SPAN`], `steady` afterwards.
pub fn schedule(elapsed: Duration, steady: Duration) -> Duration {
    if elapsed < FAST_SPAN {
        steady.min(FAST_INTERVAL)
    } else {
        steady
    }
}

/// A running sampler. Dropping it without [`Monitor::stop`] stops the thread and discards
/// the figures.
pub struct Monitor {
    devices: Vec<DevId>,
    stop: Option<Sender<Cmd>>,
    thread: Option<JoinHandle<MonitorReport>>,
    aside: Aside,
}

impl Monitor {
    /// Takes the baseline reading, then samples on a background thread every `interval` (at
    /// least 10 ms), faster during the phase's first second (see [`schedule`]). `devices[0]` is the target's block device; further devices (the
    /// disk holding a loop image) are tracked for deltas too. Devices absent from
    /// /proc/diskstats are allowed and reported with `DeviceDelta::seen == false`.
    ///
    /// Fails only if the /proc files cannot be opened or the baseline cannot be read.
    pub fn start(devices: &[DevId], interval: Duration) -> std::io::Result<Monitor> {
        Self::start_with(devices, interval, &Aside::default())
    }

    /// [`Monitor::start`], with `aside` attached until the monitor stops: spans run through
    /// it ([`Aside::run`]) are left out of the phase's figures.
    pub fn start_with(
        devices: &[DevId],
        interval: Duration,
        aside: &Aside,
    ) -> std::io::Result<Monitor> {
        let interval = interval.max(MIN_INTERVAL);
        let sampler = Sampler::new(devices)?;
        let (tx, rx) = mpsc::channel::<Cmd>();
        let thread = std::thread::Builder::new()
            .name("fsarena-monitor".into())
            .spawn(move || run(sampler, interval, rx))?;
        aside.attach(tx.clone());
        Ok(Monitor {
            devices: devices.to_vec(),
            stop: Some(tx),
            thread: Some(thread),
            aside: aside.clone(),
        })
    }

    /// Takes a final reading, stops the thread and returns everything.
    pub fn stop(mut self) -> MonitorReport {
        self.shutdown().unwrap_or_else(|| {
            // Only a panic in the sampler gets here; say so instead of inventing figures.
            MonitorReport {
                devices: self
                    .devices
                    .iter()
                    .map(|&d| DeviceDelta::unseen(d))
                    .collect(),
                warnings: vec!["the monitor thread panicked; no figures".to_string()],
                ..MonitorReport::default()
            }
        })
    }

    fn shutdown(&mut self) -> Option<MonitorReport> {
        // The handle's copy of the sender goes first, so nothing can pause a finished phase.
        self.aside.detach();
        // The message wakes the thread at once, whatever it waits for.
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(Cmd::Stop);
        }
        self.thread.take()?.join().ok()
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// The thread body: a reading at every tick of a fixed [`schedule`] (so samples do not
/// drift by the time each takes), and a final one as soon as the monitor is stopped.
fn run(mut sampler: Sampler, interval: Duration, cmds: mpsc::Receiver<Cmd>) -> MonitorReport {
    let began = Instant::now();
    let step = |at: Instant| schedule(at.saturating_duration_since(began), interval);
    let mut next = began + step(began);
    loop {
        match cmds.recv_timeout(next.saturating_duration_since(Instant::now())) {
            Err(RecvTimeoutError::Timeout) => {
                sampler.sample();
                // If the machine stalled us past several ticks, skip them rather than burst.
                let now = Instant::now();
                while next <= now {
                    next += step(next);
                }
            }
            Ok(Cmd::Begin(ack)) => {
                sampler.aside_begin();
                let _ = ack.send(());
            }
            Ok(Cmd::End(ack)) => {
                sampler.aside_end();
                let _ = ack.send(());
            }
            Ok(Cmd::Stop) | Err(RecvTimeoutError::Disconnected) => {
                sampler.sample();
                return sampler.finish();
            }
        }
    }
}

#[cfg(test)]
mod tests;
