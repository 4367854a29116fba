//! The sampling state machine: reads the three /proc files, turns consecutive readings into
//! wrap-safe deltas, peaks and a time series. It knows nothing about threads; [`super::Monitor`]
//! drives it from a background thread.
//!
//! Cost per sample is three `lseek` + `read` pairs into buffers kept from the previous sample
//! (the files stay open: seq_file regenerates its text when read from offset 0), a scan that
//! fully parses only the watched devices' lines, and one push onto the series.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::time::Instant;

use super::cpu::{self, CpuTimes};
use super::diskstats::{self, DiskCounters};
use super::meminfo::{self, MemInfo};
use super::report::{DeviceDelta, MonitorReport, Sample};
use crate::sys::DevId;

const DISKSTATS: &str = "/proc/diskstats";
const MEMINFO: &str = "/proc/meminfo";
const STAT: &str = "/proc/stat";

/// A /proc file kept open and re-read from the start into a reused buffer.
struct ProcFile {
    path: &'static str,
    file: File,
    buf: Vec<u8>,
}

impl ProcFile {
    fn open(path: &'static str) -> io::Result<ProcFile> {
        Ok(ProcFile {
            path,
            file: File::open(path)?,
            buf: Vec::with_capacity(16 * 1024),
        })
    }

    /// The file's current text. Keeps the buffer's capacity, so after the first few samples
    /// this allocates nothing.
    fn read(&mut self) -> io::Result<&str> {
        self.buf.clear();
        self.file.seek(SeekFrom::Start(0))?;
        self.file.read_to_end(&mut self.buf)?;
        std::str::from_utf8(&self.buf)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{}: {e}", self.path)))
    }
}

/// Failures of one source over the phase, summarised once instead of one warning per sample.
#[derive(Default)]
struct FailureCount {
    count: u64,
    first: Option<String>,
}

impl FailureCount {
    fn record(&mut self, what: impl std::fmt::Display) {
        self.count += 1;
        if self.first.is_none() {
            self.first = Some(what.to_string());
        }
    }
}

/// Everything read at one instant. Reused between samples.
/// The counters at the start of a span set aside ([`super::Aside`]).
struct Mark {
    at: Instant,
    total: Vec<DiskCounters>,
    cpu: CpuTimes,
    process_cpu: Option<f64>,
}

/// The spans set aside, added up: taken out of the phase's figures at the end.
#[derive(Default)]
struct SetAside {
    seconds: f64,
    disks: Vec<DiskCounters>,
    cpu: CpuTimes,
    process_cpu: f64,
}

struct Reading {
    at: Instant,
    /// False when /proc/diskstats itself could not be read (not: a device was absent).
    disks_read: bool,
    disks: Vec<Option<DiskCounters>>,
    mem: Option<MemInfo>,
    cpu: Option<CpuTimes>,
}

pub(super) struct Sampler {
    devices: Vec<DevId>,
    diskstats: ProcFile,
    meminfo: ProcFile,
    stat: ProcFile,
    reading: Reading,
    started: Instant,
    last_at: Instant,

    /// Per device: the last raw counters seen, the deltas summed since the start, whether a
    /// delta was ever measured (present in two readings), and the highest in-flight gauge.
    last_disk: Vec<Option<DiskCounters>>,
    total: Vec<DiskCounters>,
    measured: Vec<bool>,
    peak_in_flight: Vec<u64>,

    first_cpu: CpuTimes,
    last_cpu: CpuTimes,
    start_process_cpu: f64,

    start_cached: u64,
    peak_cached: u64,
    peak_dirty: u64,
    peak_writeback: u64,
    min_free: u64,

    series: Vec<Sample>,
    samples_taken: u64,
    /// The reading that opened the span being set aside, if one is open.
    aside_open: Option<Mark>,
    /// How many spans are open inside one another (a pass set aside whose check is set
    /// aside too): only the outermost one's closing ends what is left out.
    aside_depth: usize,
    /// What the spans set aside so far added up to.
    aside: SetAside,
    disk_failures: FailureCount,
    mem_failures: FailureCount,
    cpu_failures: FailureCount,
}

impl Sampler {
    /// Opens the /proc files and takes the baseline reading. Fails if the baseline cannot be
    /// read, because without it no delta of the phase can be honest.
    pub(super) fn new(devices: &[DevId]) -> io::Result<Sampler> {
        let start_process_cpu = cpu::process_cpu_seconds()?;
        let mut diskstats = ProcFile::open(DISKSTATS)?;
        let mut meminfo = ProcFile::open(MEMINFO)?;
        let mut stat = ProcFile::open(STAT)?;
        let n = devices.len();
        let mut disks = vec![None; n];

        let at = Instant::now();
        diskstats::find_devices(diskstats.read()?, devices, &mut disks);
        let mem = meminfo::parse(meminfo.read()?).map_err(invalid_data)?;
        let cpu = cpu::parse_stat(stat.read()?).map_err(invalid_data)?;

        let peak_in_flight = disks.iter().map(|d| d.map_or(0, |c| c.in_flight)).collect();
        // The baseline is the series' first point, so a chart starts at t = 0 with nothing
        // yet written or read (CPU shares need an interval: 0 here, as for a tickless one).
        let mut series = Vec::with_capacity(256);
        series.push(Sample {
            t: 0.0,
            cached_bytes: mem.cached,
            dirty_bytes: mem.dirty,
            writeback_bytes: mem.writeback,
            mem_free_bytes: mem.free,
            ..Sample::default()
        });
        Ok(Sampler {
            devices: devices.to_vec(),
            diskstats,
            meminfo,
            stat,
            last_disk: disks.clone(),
            reading: Reading {
                at,
                disks_read: true,
                disks,
                mem: Some(mem),
                cpu: Some(cpu),
            },
            started: at,
            last_at: at,
            total: vec![DiskCounters::default(); n],
            measured: vec![false; n],
            peak_in_flight,
            first_cpu: cpu,
            last_cpu: cpu,
            start_process_cpu,
            start_cached: mem.cached,
            peak_cached: mem.cached,
            peak_dirty: mem.dirty,
            peak_writeback: mem.writeback,
            min_free: mem.free,
            series,
            samples_taken: 0,
            aside_open: None,
            aside_depth: 0,
            aside: SetAside {
                disks: vec![DiskCounters::default(); n],
                ..SetAside::default()
            },
            disk_failures: FailureCount::default(),
            mem_failures: FailureCount::default(),
            cpu_failures: FailureCount::default(),
        })
    }

    /// Takes one reading, folds it into the totals and appends a point to the series. A source
    /// that fails to read is counted (see [`Sampler::finish`]) and the point is left out of the
    /// series rather than filled with stale figures.
    pub(super) fn sample(&mut self) {
        self.samples_taken += 1;
        self.read_all();
        let at = self.reading.at;
        self.last_at = at;
        self.fold_disks();
        let mem = self.reading.mem;
        if let Some(m) = mem {
            self.peak_cached = self.peak_cached.max(m.cached);
            self.peak_dirty = self.peak_dirty.max(m.dirty);
            self.peak_writeback = self.peak_writeback.max(m.writeback);
            self.min_free = self.min_free.min(m.free);
        }
        let prev_cpu = self.last_cpu;
        if let Some(c) = self.reading.cpu {
            self.last_cpu = c;
        }
        let (Some(m), Some(c), true) = (mem, self.reading.cpu, self.reading.disks_read) else {
            return;
        };
        // No clock tick in the interval: no split to report, so zeros (see `Sample`).
        let pct = c.percent_since(&prev_cpu).unwrap_or_default();
        let dev0 = self.total.first().copied().unwrap_or_default();
        self.series.push(Sample {
            t: at.duration_since(self.started).as_secs_f64(),
            device_read_bytes: dev0.read_bytes(),
            device_write_bytes: dev0.write_bytes(),
            cached_bytes: m.cached,
            dirty_bytes: m.dirty,
            writeback_bytes: m.writeback,
            mem_free_bytes: m.free,
            cpu_user_pct: pct.user,
            cpu_system_pct: pct.system,
            cpu_iowait_pct: pct.iowait,
        });
    }

    /// Takes a reading and opens a span set aside (a span opened inside it only counts
    /// one deeper).
    pub(super) fn aside_begin(&mut self) {
        self.aside_depth += 1;
        if self.aside_open.is_some() {
            return;
        }
        self.sample();
        self.aside_open = Some(Mark {
            at: self.last_at,
            total: self.total.clone(),
            cpu: self.last_cpu,
            process_cpu: cpu::process_cpu_seconds().ok(),
        });
    }

    /// Takes a reading and closes the open span: what changed since it opened is added to
    /// what is set aside.
    pub(super) fn aside_end(&mut self) {
        self.aside_depth = self.aside_depth.saturating_sub(1);
        if self.aside_depth > 0 {
            return;
        }
        let Some(mark) = self.aside_open.take() else {
            return;
        };
        self.sample();
        let a = &mut self.aside;
        a.seconds += self.last_at.duration_since(mark.at).as_secs_f64();
        for ((sum, now), then) in a.disks.iter_mut().zip(&self.total).zip(&mark.total) {
            sum.accumulate(&now.since(then));
        }
        a.cpu = a.cpu.plus(&self.last_cpu.minus(&mark.cpu));
        if let (Some(then), Ok(now)) = (mark.process_cpu, cpu::process_cpu_seconds()) {
            a.process_cpu += (now - then).max(0.0);
        }
    }

    /// Reads the three files into `self.reading`, recording failures.
    fn read_all(&mut self) {
        self.reading.at = Instant::now();
        self.reading.disks_read = true;
        match self.diskstats.read() {
            Ok(text) => diskstats::find_devices(text, &self.devices, &mut self.reading.disks),
            Err(e) => {
                self.reading.disks_read = false;
                self.disk_failures.record(e);
                self.reading.disks.iter_mut().for_each(|d| *d = None);
            }
        }
        self.reading.mem = match self.meminfo.read().map(meminfo::parse) {
            Ok(Ok(m)) => Some(m),
            Ok(Err(e)) => {
                self.mem_failures.record(e);
                None
            }
            Err(e) => {
                self.mem_failures.record(e);
                None
            }
        };
        self.reading.cpu = match self.stat.read().map(cpu::parse_stat) {
            Ok(Ok(c)) => Some(c),
            Ok(Err(e)) => {
                self.cpu_failures.record(e);
                None
            }
            Err(e) => {
                self.cpu_failures.record(e);
                None
            }
        };
    }

    /// Adds each device's advance since its last known counters. Deltas are taken between
    /// consecutive readings, never first-to-last, so that a counter wrapping mid-phase is
    /// caught (a wrap can be recognised only between two close readings). A device missing
    /// from one reading is simply measured against its last known counters at the next.
    fn fold_disks(&mut self) {
        for i in 0..self.devices.len() {
            let Some(now) = self.reading.disks[i] else {
                continue;
            };
            self.peak_in_flight[i] = self.peak_in_flight[i].max(now.in_flight);
            if let Some(before) = self.last_disk[i] {
                self.total[i].accumulate(&now.since(&before));
                self.measured[i] = true;
            }
            self.last_disk[i] = Some(now);
        }
    }

    /// Finishes the phase: the totals, peaks and averages since the baseline.
    pub(super) fn finish(self) -> MonitorReport {
        let mut warnings = Vec::new();
        for (what, f) in [
            (DISKSTATS, &self.disk_failures),
            (MEMINFO, &self.mem_failures),
            (STAT, &self.cpu_failures),
        ] {
            if let Some(first) = &f.first {
                warnings.push(format!(
                    "{what}: {} of {} samples failed to read (first: {first})",
                    f.count, self.samples_taken
                ));
            }
        }
        let devices = self
            .devices
            .iter()
            .enumerate()
            .map(|(i, &dev)| {
                if !self.measured[i] {
                    warnings.push(format!("device {dev} not seen in {DISKSTATS}"));
                    return DeviceDelta::unseen(dev);
                }
                let t = &self.total[i].since(&self.aside.disks[i]);
                DeviceDelta {
                    dev,
                    seen: true,
                    read_bytes: t.read_bytes(),
                    write_bytes: t.write_bytes(),
                    read_ios: t.reads,
                    write_ios: t.writes,
                    read_ms: t.read_ms,
                    write_ms: t.write_ms,
                    busy_ms: t.io_ms,
                    discard_bytes: t.discard_bytes(),
                    flushes: t.counts_flushes().then_some(t.flushes),
                    peak_in_flight: self.peak_in_flight[i],
                }
            })
            .collect();
        let cpu = self
            .last_cpu
            .minus(&self.aside.cpu)
            .percent_since(&self.first_cpu);
        let process_cpu_seconds = match cpu::process_cpu_seconds() {
            Ok(end) => (end - self.start_process_cpu - self.aside.process_cpu).max(0.0),
            Err(e) => {
                warnings.push(format!("getrusage failed at the end of the phase: {e}"));
                0.0
            }
        };
        let pct = cpu.unwrap_or_default();
        MonitorReport {
            seconds: (self.last_at.duration_since(self.started).as_secs_f64() - self.aside.seconds)
                .max(0.0),
            aside_seconds: self.aside.seconds,
            devices,
            series: self.series,
            start_cached_bytes: self.start_cached,
            peak_cached_bytes: self.peak_cached,
            peak_dirty_bytes: self.peak_dirty,
            peak_writeback_bytes: self.peak_writeback,
            min_mem_free_bytes: self.min_free,
            cpu_user_pct: pct.user,
            cpu_system_pct: pct.system,
            cpu_iowait_pct: pct.iowait,
            cpu_steal_pct: pct.steal,
            cpu_measured: cpu.is_some(),
            process_cpu_seconds,
            warnings,
        }
    }
}

fn invalid_data(e: impl std::error::Error + Send + Sync + 'static) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}
