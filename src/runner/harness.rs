//! The harness the runner hands a workload: the monitor around the measured phase, a final
//! `syncfs` inside it, and the space used before and after.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::monitor::{Monitor, MonitorReport};
use crate::sys::{self, DevId};
use crate::workload::{Harness, Outcome, WorkloadError};

/// How often the monitor samples. Between 100 and 250 ms: fine enough to see a burst,
/// coarse enough to cost nothing.
pub const SAMPLE_INTERVAL: Duration = Duration::from_millis(200);

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
}

/// The [`Harness`] a workload runs in: monitors `devices` while the measured phase runs
/// under `root`, and keeps what it saw in `observed`.
pub struct MonitoredHarness<'a> {
    pub devices: &'a [DevId],
    pub root: &'a Path,
    /// The plan's phase floor, handed to workloads that repeat warm passes.
    pub floor: Duration,
    pub observed: Observed,
}

fn used_bytes(p: &Path) -> Option<u64> {
    let s = rustix::fs::statvfs(p).ok()?;
    Some(
        s.f_blocks
            .saturating_sub(s.f_bfree)
            .saturating_mul(s.f_frsize),
    )
}

impl Harness for MonitoredHarness<'_> {
    fn drop_caches(&mut self) -> std::io::Result<()> {
        self.observed.caches_dropped += 1;
        sys::drop_caches()
    }

    fn measure(
        &mut self,
        work: &mut dyn FnMut() -> Result<Outcome, WorkloadError>,
    ) -> Result<Outcome, WorkloadError> {
        self.observed.measured += 1;
        self.observed.used_before = used_bytes(self.root);
        let monitor = Monitor::start(self.devices, SAMPLE_INTERVAL);
        if let Err(e) = &monitor {
            self.observed
                .notes
                .push(format!("monitor unavailable: {e}"));
        }
        let t0 = Instant::now();
        let result = work();
        let t1 = Instant::now();
        // Count buffered writes: without this, write amplification reads low and a
        // write-back cache makes a slow file system look fast.
        let synced = if result.is_ok() {
            sys::syncfs(self.root)
                .map_err(|e| WorkloadError::io("syncfs after the measured phase", e))
        } else {
            Ok(())
        };
        let t2 = Instant::now();
        self.observed.monitor = monitor.ok().map(Monitor::stop);
        self.observed.wall_seconds = (t1 - t0).as_secs_f64();
        self.observed.syncfs_seconds = (t2 - t1).as_secs_f64();
        self.observed.used_after = used_bytes(self.root);
        synced?;
        result
    }

    fn phase_floor(&self) -> Duration {
        self.floor
    }
}
