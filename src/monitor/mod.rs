//! The monitor: samples device, memory and CPU counters while a measured phase runs.
//!
//! The parsers ([`diskstats`], [`meminfo`], [`cpu`]) are pure functions over /proc text; the
//! private `sampler` turns readings into deltas and a series; [`Monitor`] runs it on a
//! background thread for exactly the span between [`Monitor::start`] and [`Monitor::stop`].

pub mod cpu;
pub mod diskstats;
pub mod meminfo;
mod sampler;

use std::collections::BTreeMap;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

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
    /// From the baseline reading in `start` to the final one in `stop`.
    pub seconds: f64,
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
    /// False when not one clock tick (10 ms of CPU time over all CPUs) elapsed in the phase,
    /// so the three percentages above are 0 for want of data, not measured.
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
        put("peak_writeback_bytes", self.peak_writeback_bytes as f64);
        if self.cpu_measured {
            put("cpu_user_pct", self.cpu_user_pct);
            put("cpu_system_pct", self.cpu_system_pct);
            put("cpu_iowait_pct", self.cpu_iowait_pct);
        }
        put("process_cpu_seconds", self.process_cpu_seconds);
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
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<MonitorReport>>,
}

impl Monitor {
    /// Takes the baseline reading, then samples on a background thread every `interval` (at
    /// least 10 ms), faster during the phase's first second (see [`schedule`]). `devices[0]` is the target's block device; further devices (the
    /// disk holding a loop image) are tracked for deltas too. Devices absent from
    /// /proc/diskstats are allowed and reported with `DeviceDelta::seen == false`.
    ///
    /// Fails only if the /proc files cannot be opened or the baseline cannot be read.
    pub fn start(devices: &[DevId], interval: Duration) -> std::io::Result<Monitor> {
        let interval = interval.max(MIN_INTERVAL);
        let sampler = Sampler::new(devices)?;
        let (tx, rx) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("fsarena-monitor".into())
            .spawn(move || run(sampler, interval, rx))?;
        Ok(Monitor {
            devices: devices.to_vec(),
            stop: Some(tx),
            thread: Some(thread),
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
        // Dropping the sender wakes the thread at once (Disconnected), whatever it waits for.
        drop(self.stop.take());
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
fn run(mut sampler: Sampler, interval: Duration, stop: mpsc::Receiver<()>) -> MonitorReport {
    let began = Instant::now();
    let step = |at: Instant| schedule(at.saturating_duration_since(began), interval);
    let mut next = began + step(began);
    loop {
        match stop.recv_timeout(next.saturating_duration_since(Instant::now())) {
            Err(RecvTimeoutError::Timeout) => {
                sampler.sample();
                // If the machine stalled us past several ticks, skip them rather than burst.
                let now = Instant::now();
                while next <= now {
                    next += step(next);
                }
            }
            Ok(()) | Err(RecvTimeoutError::Disconnected) => {
                sampler.sample();
                return sampler.finish();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};

    const MIB: u64 = 1 << 20;

    fn present(dev: DevId) -> bool {
        let text = std::fs::read_to_string("/proc/diskstats").unwrap();
        let mut out = [None];
        diskstats::find_devices(&text, &[dev], &mut out);
        out[0].is_some()
    }

    /// The device holding `/`, or failing that the first whole virtio/SCSI/NVMe disk.
    fn root_device() -> DevId {
        let dev = DevId::from_dev_t(std::fs::metadata("/").unwrap().dev());
        if present(dev) {
            return dev;
        }
        let text = std::fs::read_to_string("/proc/diskstats").unwrap();
        for line in text.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            let name = f[2];
            let whole = (name.starts_with("vd") || name.starts_with("sd"))
                && !name.ends_with(|c: char| c.is_ascii_digit())
                || name.starts_with("nvme") && !name.contains('p');
            if whole {
                return DevId {
                    major: f[0].parse().unwrap(),
                    minor: f[1].parse().unwrap(),
                };
            }
        }
        panic!("no block device for / in /proc/diskstats");
    }

    /// A device number that no block device has: tmpfs's anonymous device.
    fn unseen_device() -> DevId {
        let shm = std::fs::metadata("/dev/shm").map(|m| DevId::from_dev_t(m.dev()));
        match shm {
            Ok(d) if !present(d) => d,
            _ => DevId {
                major: 0,
                minor: 0xFFFFF,
            },
        }
    }

    #[test]
    fn direct_write_of_64_mib_is_counted_on_the_root_device() {
        let root = root_device();
        let interval = Duration::from_millis(20);
        let dir = tempfile::TempDir::new_in("/var/tmp").unwrap();
        let path = dir.path().join("monitor-direct");
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(rustix::fs::OFlags::DIRECT.bits() as i32)
            .open(&path)
            .unwrap();
        // O_DIRECT needs an aligned buffer; carve one out of a larger Vec.
        let chunk = MIB as usize;
        let backing = vec![0xA5u8; chunk + 4096];
        let off = backing.as_ptr().align_offset(4096);
        let buf = &backing[off..off + chunk];

        let monitor = Monitor::start(&[root, unseen_device()], interval).unwrap();
        let began = Instant::now();
        for _ in 0..64 {
            file.write_all(buf).unwrap();
        }
        file.sync_all().unwrap();
        // Make the phase span several intervals so the series has several points.
        std::thread::sleep((interval * 4).saturating_sub(began.elapsed()));
        let report = monitor.stop();

        let d = &report.devices[0];
        assert_eq!(d.dev, root);
        assert!(d.seen);
        assert!(d.write_bytes >= 64 * MIB, "{d:?}");
        assert!(d.write_ios >= 1 && d.busy_ms >= 1, "{d:?}");
        assert!(!report.devices[1].seen);
        assert_eq!(report.devices[1].write_bytes, 0);

        let mut m = BTreeMap::new();
        report.add_metrics(&mut m);
        assert!(m["device_write_bytes"] >= (64 * MIB) as f64);
        assert!(m["device_write_iops"] > 0.0);
        assert!(m["bytes_per_write"] > 0.0);
        assert!(!m.contains_key("backing_write_bytes"), "unseen device");

        assert!(report.seconds >= (interval * 4).as_secs_f64());
        assert!(report.series.len() >= 3, "{}", report.series.len());
        for w in report.series.windows(2) {
            assert!(w[1].t > w[0].t, "timestamps must increase");
            assert!(w[1].device_write_bytes >= w[0].device_write_bytes);
        }
        let last = report.series.last().unwrap();
        assert!(
            (last.t - report.seconds).abs() < 1e-9,
            "final point ends the phase"
        );
        assert_eq!(last.device_write_bytes, d.write_bytes);
        assert!(report.series.iter().all(|s| s.mem_free_bytes > 0));

        assert!(report.start_cached_bytes > 0);
        assert!(report.peak_cached_bytes >= report.start_cached_bytes);
        assert!(report
            .series
            .iter()
            .all(|s| s.cached_bytes <= report.peak_cached_bytes));
        let min_free = report
            .series
            .iter()
            .map(|s| s.mem_free_bytes)
            .min()
            .unwrap();
        assert!(report.min_mem_free_bytes > 0 && report.min_mem_free_bytes <= min_free);
        assert!(report.cpu_measured);
        let cpu = report.cpu_user_pct + report.cpu_system_pct + report.cpu_iowait_pct;
        // The split itself may be all idle on a quiet machine; it must be a valid share.
        assert!((0.0..=100.0 + 1e-9).contains(&cpu), "{cpu}");
        assert!(report.process_cpu_seconds > 0.0);
        assert_eq!(report.warnings.len(), 1, "{:?}", report.warnings);
    }

    #[test]
    fn phase_shorter_than_an_interval_still_has_a_baseline_and_a_final_point() {
        let report = Monitor::start(&[root_device()], Duration::from_secs(60))
            .unwrap()
            .stop();
        assert!(report.devices[0].seen);
        assert_eq!(report.series.len(), 2);
        assert_eq!(report.series[0].t, 0.0);
        assert_eq!(report.series[0].device_write_bytes, 0);
        assert!(report.series[0].cached_bytes > 0);
        assert!(report.seconds < 30.0);
        assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    }

    #[test]
    fn no_device_at_all_gives_no_device_metrics() {
        let report = Monitor::start(&[unseen_device()], Duration::from_millis(10))
            .unwrap()
            .stop();
        assert!(!report.devices[0].seen);
        let mut m = BTreeMap::new();
        report.add_metrics(&mut m);
        assert!(m.keys().all(|k| !k.starts_with("device_")), "{m:?}");
        assert!(m.contains_key("peak_cached_bytes"));
    }

    /// Regression (issue 14): a 0.2 s phase sampled every 200 ms had one or two points.
    #[test]
    fn short_phase_is_sampled_fast_then_backs_off() {
        assert_eq!(
            schedule(Duration::ZERO, Duration::from_millis(200)),
            FAST_INTERVAL
        );
        assert_eq!(
            schedule(FAST_SPAN, Duration::from_millis(200)),
            Duration::from_millis(200)
        );
        assert_eq!(
            schedule(Duration::ZERO, Duration::from_millis(10)),
            Duration::from_millis(10)
        );
        let monitor = Monitor::start(&[root_device()], Duration::from_millis(200)).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let report = monitor.stop();
        // 8 ticks at 25 ms fit in 200 ms; allow a loaded machine to skip a few.
        assert!(report.series.len() >= 6, "{}", report.series.len());
        assert_eq!(report.series[0].t, 0.0, "the series starts at the baseline");
    }

    /// What fast sampling costs: the median CPU time of one sample (three /proc reads and a
    /// parse). At [`FAST_INTERVAL`] a millisecond would be 4 % of one CPU; it is far less.
    #[test]
    fn sample_costs_well_under_a_millisecond() {
        let mut sampler = Sampler::new(&[root_device()]).unwrap();
        let mut costs: Vec<f64> = (0..200)
            .map(|_| {
                let before = cpu::process_cpu_seconds().unwrap();
                let t = Instant::now();
                sampler.sample();
                // Wall time bounds CPU time from above unless preempted; take the smaller.
                let cpu_s = cpu::process_cpu_seconds().unwrap() - before;
                cpu_s.min(t.elapsed().as_secs_f64())
            })
            .collect();
        costs.sort_by(f64::total_cmp);
        let median = costs[costs.len() / 2];
        eprintln!("median sample cost {:.1} µs", median * 1e6);
        assert!(median < 1e-3, "median sample cost {median} s");
    }

    #[test]
    fn dropping_a_running_monitor_stops_its_thread() {
        let monitor = Monitor::start(&[], Duration::from_millis(10)).unwrap();
        std::thread::sleep(Duration::from_millis(30));
        drop(monitor); // must return, not hang
    }

    fn sample_report() -> MonitorReport {
        let dev = DevId { major: 7, minor: 3 };
        MonitorReport {
            seconds: 2.0,
            devices: vec![
                DeviceDelta {
                    dev,
                    seen: true,
                    read_bytes: 8192,
                    write_bytes: 1 << 20,
                    read_ios: 2,
                    write_ios: 0,
                    read_ms: 3,
                    write_ms: 0,
                    busy_ms: 3,
                    discard_bytes: 0,
                    peak_in_flight: 1,
                },
                DeviceDelta {
                    write_bytes: 5 << 20,
                    seen: true,
                    ..DeviceDelta::unseen(DevId {
                        major: 254,
                        minor: 0,
                    })
                },
            ],
            start_cached_bytes: 100,
            peak_cached_bytes: 400,
            peak_dirty_bytes: 7,
            peak_writeback_bytes: 9,
            min_mem_free_bytes: 1,
            cpu_user_pct: 10.0,
            cpu_system_pct: 20.0,
            cpu_iowait_pct: 5.0,
            cpu_measured: true,
            process_cpu_seconds: 0.5,
            ..MonitorReport::default()
        }
    }

    #[test]
    fn add_metrics_computes_ratios_and_omits_undefined_ones() {
        let mut m = BTreeMap::new();
        sample_report().add_metrics(&mut m);
        assert_eq!(m["device_read_bytes"], 8192.0);
        assert_eq!(m["device_read_latency_ms"], 1.5);
        assert_eq!(m["bytes_per_read"], 4096.0);
        assert_eq!(m["device_read_iops"], 1.0);
        assert_eq!(m["device_write_iops"], 0.0);
        assert!(
            !m.contains_key("device_write_latency_ms"),
            "no writes: no latency"
        );
        assert!(!m.contains_key("bytes_per_write"));
        assert_eq!(m["backing_write_bytes"], (5 << 20) as f64);
        assert_eq!(m["cache_growth_bytes"], 300.0);
        assert_eq!(m["peak_dirty_bytes"], 7.0);
        assert_eq!(m["peak_writeback_bytes"], 9.0);
        assert_eq!(m["cpu_system_pct"], 20.0);
        assert_eq!(m["process_cpu_seconds"], 0.5);
    }

    #[test]
    fn add_metrics_omits_cpu_split_when_not_measured_and_unseen_backing() {
        let mut r = sample_report();
        r.cpu_measured = false;
        r.devices[1].seen = false;
        let mut m = BTreeMap::new();
        r.add_metrics(&mut m);
        assert!(!m.contains_key("cpu_user_pct"));
        assert!(!m.contains_key("backing_write_bytes"));
        assert!(m.contains_key("process_cpu_seconds"));
    }
}
