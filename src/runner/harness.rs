//! The harness the runner hands a workload: the monitor around the measured phase, a final
//! `syncfs` inside it, and the space used before and after.

use std::path::Path;
use std::time::{Duration, Instant};

use super::ranks::{self, Figures, Ranks};
use crate::monitor::{Aside, DeviceDelta, Monitor, MonitorReport};
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
    /// The phase failed because another rank did (under MPI), not here.
    pub failed_elsewhere: bool,
    /// What the log target's device did during the phase (when there is one).
    pub log_device: Option<DeviceDelta>,
    /// The host's steadiness probe just before the phase, in ms
    /// ([`crate::monitor::steadiness`]).
    pub probe_ms: Option<f64>,
}

/// The [`Harness`] a workload runs in: monitors `devices` while the measured phase runs
/// under `root`, and keeps what it saw in `observed`.
pub struct MonitoredHarness<'a> {
    pub devices: &'a [DevId],
    /// The block device of the point's `log_target` file system, monitored beside
    /// `devices`; its figures land in [`Observed::log_device`].
    pub log_device: Option<DevId>,
    pub root: &'a Path,
    /// The plan's phase floor, handed to workloads that repeat warm passes.
    pub floor: Duration,
    pub observed: Observed,
    /// Under MPI: the job, and the label of this point (the same on every rank), so the
    /// phase starts and ends with every rank and its figures are the job's.
    pub ranks: Option<(&'a Ranks, String)>,
    /// Attached to the monitor while the phase runs: what the workload sets aside through
    /// it (cache drops between cold passes, checks of a pass) is left out of the figures.
    pub aside: Aside,
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

    fn measure(&mut self, work: &mut crate::workload::Phase<'_>) -> Result<Outcome, WorkloadError> {
        self.observed.measured += 1;
        if let Some((r, step)) = &self.ranks {
            if let Err(e) = ranks::before_phase(r, step, Ok(())) {
                self.observed.failed_elsewhere = true;
                let _ = ranks::after_phase(r, step, Err(e.clone()));
                return Err(WorkloadError::Tool(e));
            }
        }
        self.observed.used_before = used_bytes(self.root);
        let devices: Vec<DevId> = self
            .devices
            .iter()
            .copied()
            .chain(self.log_device)
            .collect();
        // Outside the window: how fast this machine runs the same work right now.
        self.observed.probe_ms = Some(crate::monitor::steadiness::probe_ms());
        let monitor = Monitor::start_with(&devices, SAMPLE_INTERVAL, &self.aside);
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
        if self.log_device.is_some() {
            // Its figures stay apart: the report's own device metrics are the target's.
            self.observed.log_device = self.observed.monitor.as_mut().and_then(|r| r.devices.pop());
        }
        self.observed.wall_seconds = (t1 - t0).as_secs_f64();
        self.observed.syncfs_seconds = (t2 - t1).as_secs_f64();
        self.observed.used_after = used_bytes(self.root);
        let mut result = result;
        if let Some((r, step)) = &self.ranks {
            let mine = match (&result, &synced) {
                (Err(e), _) => Err(e.to_string()),
                (_, Err(e)) => Err(e.to_string()),
                (Ok(o), Ok(())) => Ok(Figures {
                    work_seconds: if o.seconds > 0.0 {
                        o.seconds
                    } else {
                        self.observed.wall_seconds
                    },
                    syncfs_seconds: self.observed.syncfs_seconds,
                    files: o.files,
                    read_bytes: o.logical_read_bytes,
                    write_bytes: o.logical_write_bytes,
                }),
            };
            let mine_failed = mine.is_err();
            match (ranks::after_phase(r, step, mine), result.as_mut()) {
                (Ok(all), Ok(o)) => ranks::combine(o, &mut self.observed, &all),
                (Err(e), _) if !mine_failed => {
                    self.observed.failed_elsewhere = true;
                    return Err(WorkloadError::Tool(e));
                }
                _ => {}
            }
        }
        synced?;
        result
    }

    fn phase_floor(&self) -> Duration {
        self.floor
    }

    fn aside(&self) -> Aside {
        self.aside.clone()
    }
}

impl<'a> MonitoredHarness<'a> {
    /// A harness for one point on `devices` (and `log_device`), under `root`, with the
    /// plan's phase `floor`; not under MPI until `ranks` is set.
    pub fn new(
        devices: &'a [DevId],
        log_device: Option<DevId>,
        root: &'a Path,
        floor: Duration,
    ) -> Self {
        MonitoredHarness {
            devices,
            log_device,
            root,
            floor,
            observed: Observed::default(),
            ranks: None,
            aside: Aside::default(),
        }
    }

    /// Under MPI, for a workload that failed before its measured phase (`why`): takes this
    /// rank's part in the phase's barriers, so the other ranks skip the phase instead of
    /// waiting for this one.
    pub fn stand_in(&mut self, why: &str) {
        if let Some((r, step)) = &self.ranks {
            let _ = ranks::before_phase(r, step, Err(why.to_string()));
            let _ = ranks::after_phase(r, step, Err(why.to_string()));
        }
    }
}
