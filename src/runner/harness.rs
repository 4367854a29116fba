//! The harness the runner hands a workload: the monitor around the measured phase, a final
//! `syncfs` inside it, and the space used before and after.

use std::path::Path;
use std::time::{Duration, Instant};

use super::phase::{Figures, Observed};
use super::team::Team;
use crate::monitor::{Aside, Monitor};
use crate::plan::cpus::Placement;
use crate::provision::removals::Removals;
use crate::sys::cpus;
use crate::sys::{self, DevId};
use crate::workload::{Harness, Outcome, WorkloadError, WriteBack};

/// How often the monitor samples. Between 100 and 250 ms: fine enough to see a burst,
/// coarse enough to cost nothing.
pub const SAMPLE_INTERVAL: Duration = Duration::from_millis(200);

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
    /// Who measures this phase together (alone, or an MPI job whose phase starts and ends
    /// with every rank and whose figures are the job's).
    pub team: &'a dyn Team,
    /// The label of this point, the same on every rank of a job.
    pub step: String,
    /// Attached to the monitor while the phase runs: what the workload sets aside through
    /// it (cache drops between cold passes, checks of a pass) is left out of the figures.
    pub aside: Aside,
    /// Where the measured phase runs (`--cpus`): the phase's thread bound to the work's
    /// CPUs, so the pools and processes it starts inherit them, and the monitor's sampler
    /// started on the harness's; `None` (or a binding the kernel refused): anywhere.
    pub cpus: Option<Placement>,
    /// The run's image removals in progress (`provision::removals`): the phase waits for
    /// them, so no removal's I/O shares the disk with it.
    pub removals: Option<&'a Removals>,
    /// The target keeps its files in memory (tmpfs): nothing of it can be made cold, so no
    /// cache is dropped between its cold passes ([`drops_between_passes`]).
    pub in_memory: bool,
    /// The target's own block device (its loop device), written back with it before a
    /// cache drop ([`crate::sys::write_back`]); `None` for a target without one.
    pub device: Option<&'a Path>,
}

/// Whether cold passes on a target drop the machine's caches between them. Not on one in
/// memory: a tmpfs's pages and dentries are its storage, which a drop cannot evict, so the
/// drop made no pass colder and cost a default run 9.4–9.7 s of evicting everything else
/// (its cold walks are fast, so up to 64 passes a phase, each after a drop of a 24 GiB
/// machine's cache).
pub fn drops_between_passes(in_memory: bool) -> bool {
    !in_memory
}

fn used_bytes(p: &Path) -> Option<u64> {
    let s = rustix::fs::statvfs(p).ok()?;
    Some(
        s.f_blocks
            .saturating_sub(s.f_bfree)
            .saturating_mul(s.f_frsize),
    )
}

/// How a cache drop makes a point's file systems cold. With the target alone, it writes
/// back the target ([`crate::sys::write_back`]) and then drops what is clean: a machine-wide
/// `sync` would wait on every other program's dirty pages as well (one `sync` took
/// 0.01–1.7 s beside another run's writes, and a cold scan drops up to 64 times a phase).
/// With a log target beside it, whose root the harness does not hold, the whole machine is
/// synced first, as before.
pub fn drop_for(log_target: bool) -> fn() -> std::io::Result<()> {
    if log_target {
        sys::drop_caches
    } else {
        sys::drop_clean_caches
    }
}

impl MonitoredHarness<'_> {
    /// One call of [`Harness::measure`]: the phase started with the team, measured under
    /// the monitor, and its figures agreed.
    fn measure_once(
        &mut self,
        work: &mut crate::workload::Phase<'_>,
    ) -> Result<Outcome, WorkloadError> {
        self.observed.measured += 1;
        // Before the team's barrier: the ranks of a job start the phase together.
        if let Some(r) = self.removals {
            sys::steps::timed("wait_removals", || r.wait());
        }
        if let Err(e) = self.team.before_phase(&self.step, Ok(())) {
            self.observed.failed_elsewhere = true;
            let _ = self.team.after_phase(&self.step, Err(e.clone()), None);
            return Err(WorkloadError::Tool(e));
        }
        let (result, synced) = self.monitored(work);
        let mut result = result;
        let mine = self.figures(&result, &synced);
        let mine_failed = mine.is_err();
        let phase = result.as_mut().ok().map(|o| (o, &mut self.observed));
        match self.team.after_phase(&self.step, mine, phase) {
            Err(e) if !mine_failed => {
                self.observed.failed_elsewhere = true;
                return Err(WorkloadError::Tool(e));
            }
            _ => {}
        }
        synced?;
        result
    }
}

impl Harness for MonitoredHarness<'_> {
    fn drop_caches(&mut self) -> std::io::Result<()> {
        self.observed.caches_dropped += 1;
        self.write_back().run()?;
        drop_for(self.log_device.is_some())()
    }

    fn measure(&mut self, work: &mut crate::workload::Phase<'_>) -> Result<Outcome, WorkloadError> {
        self.observed.entered.get_or_insert_with(Instant::now);
        let result = self.measure_once(work);
        self.observed.left = Some(Instant::now());
        result
    }

    fn phase_floor(&self) -> Duration {
        self.floor
    }

    fn aside(&self) -> Aside {
        self.aside.clone()
    }

    fn pass_dropper(&self) -> fn() -> std::io::Result<()> {
        if drops_between_passes(self.in_memory) {
            drop_for(self.log_device.is_some())
        } else {
            || Ok(())
        }
    }

    fn pass_writeback(&self) -> Option<WriteBack> {
        Some(self.write_back())
    }
}

impl<'a> MonitoredHarness<'a> {
    /// A harness for point `step` on `devices` (and `log_device`), under `root`, with the
    /// plan's phase `floor`, measured by `team`.
    pub fn new(
        devices: &'a [DevId],
        log_device: Option<DevId>,
        root: &'a Path,
        floor: Duration,
        team: &'a dyn Team,
        step: String,
    ) -> Self {
        MonitoredHarness {
            devices,
            log_device,
            root,
            floor,
            observed: Observed::default(),
            team,
            step,
            aside: Aside::default(),
            cpus: None,
            removals: None,
            in_memory: false,
            device: None,
        }
    }

    /// The target, as a cache drop writes it back.
    fn write_back(&self) -> WriteBack {
        WriteBack {
            root: self.root.to_path_buf(),
            device: self.device.map(Path::to_path_buf),
        }
    }

    /// The measured phase itself: `work` under the monitor, then the `syncfs` that puts its
    /// data on the device (only after a phase that succeeded), with what the harness saw.
    fn monitored(
        &mut self,
        work: &mut crate::workload::Phase<'_>,
    ) -> (Result<Outcome, WorkloadError>, Result<(), WorkloadError>) {
        self.observed.used_before = used_bytes(self.root);
        let devices: Vec<DevId> = self
            .devices
            .iter()
            .copied()
            .chain(self.log_device)
            .collect();
        // Outside the window: how fast this machine runs the same work right now.
        self.observed.probe_ms = Some(sys::steps::timed(
            "probe",
            crate::monitor::steadiness::probe_ms,
        ));
        let start = || {
            sys::steps::timed("monitor", || {
                Monitor::start_with(&devices, SAMPLE_INTERVAL, &self.aside)
            })
        };
        let monitor = match &self.cpus {
            Some(p) => cpus::on(&p.harness, start),
            None => start(),
        };
        if let Err(e) = &monitor {
            self.observed
                .notes
                .push(format!("monitor unavailable: {e}"));
        }
        let bound = self.bind();
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
        drop(bound);
        self.observed.monitor = sys::steps::timed("monitor", || monitor.ok().map(Monitor::stop));
        if self.log_device.is_some() {
            // Its figures stay apart: the report's own device metrics are the target's.
            self.observed.log_device = self.observed.monitor.as_mut().and_then(|r| r.devices.pop());
        }
        self.observed.wall_seconds = (t1 - t0).as_secs_f64();
        self.observed.syncfs_seconds = (t2 - t1).as_secs_f64();
        self.observed.used_after = used_bytes(self.root);
        (result, synced)
    }

    /// Binds this thread to the work's CPUs for the phase; a refusal is noted and the
    /// phase runs anywhere, recorded so.
    fn bind(&mut self) -> Option<cpus::Bound> {
        let p = self.cpus.as_ref()?;
        match cpus::bind_thread(&p.work) {
            Ok(b) => Some(b),
            Err(e) => {
                let note = format!(
                    "could not bind the phase to CPU {}: {e}; it ran anywhere",
                    p.work
                );
                self.observed.notes.push(note);
                self.cpus = None;
                None
            }
        }
    }

    /// This process's figures of the phase, as its team adds them up (or why it has none).
    fn figures(
        &self,
        result: &Result<Outcome, WorkloadError>,
        synced: &Result<(), WorkloadError>,
    ) -> Result<Figures, String> {
        match (result, synced) {
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
        }
    }

    /// For a workload that failed before its measured phase (`why`): takes this process's
    /// part in the phase's barriers, so the other ranks of a job skip the phase instead of
    /// waiting for this one.
    pub fn stand_in(&mut self, why: &str) {
        let _ = self.team.before_phase(&self.step, Err(why.to_string()));
        let _ = self
            .team
            .after_phase(&self.step, Err(why.to_string()), None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provision::removals::Removals;
    use crate::runner::team::Alone;
    use crate::workload::Harness;
    use std::sync::Arc;

    /// Defect: cold passes on tmpfs dropped the machine's caches between passes, 9.4–9.7 s of
    /// a default run spent evicting everything but the target, which a drop cannot evict.
    #[test]
    fn cold_passes_on_a_target_in_memory_drop_no_caches_between_them() {
        assert!(!drops_between_passes(true));
        assert!(drops_between_passes(false));
    }

    /// Defect guard for the drop without `sync(2)`: what the target holds dirty must be
    /// written back by the drop itself, or it stays in memory and a "cold" pass reads it
    /// from there. A file written and never synced, on the harness's root, is not cached
    /// after the harness's drop. Skips, saying so, on a kernel without `cachestat`.
    #[test]
    fn a_cache_drop_writes_the_target_back_so_none_of_it_stays_cached() {
        use std::io::Write;
        use std::os::fd::AsFd;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("dirty");
        let len = 256u64 << 10;
        std::fs::File::create(&p)
            .unwrap()
            .write_all(&vec![7u8; len as usize])
            .unwrap();
        let f = std::fs::File::open(&p).unwrap();
        match crate::fsops::cached::wholly_cached(f.as_fd(), len) {
            Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {
                eprintln!("skipped: no cachestat on this kernel");
                return;
            }
            r => assert!(r.unwrap(), "a file just written is cached"),
        }
        let mut h =
            MonitoredHarness::new(&[], None, dir.path(), Duration::ZERO, &Alone, "p".into());
        h.drop_caches().unwrap();
        assert!(
            !crate::fsops::cached::wholly_cached(f.as_fd(), len).unwrap(),
            "the target's dirty pages stayed cached through the drop"
        );
    }

    /// A cell's image still being removed off its path must be gone before the next
    /// measured phase starts: its discards would otherwise share the disk with the phase.
    #[test]
    fn a_measured_phase_waits_for_the_removals_in_progress() {
        let dir = tempfile::tempdir().unwrap();
        let removals: Arc<Removals> = Arc::default();
        let img = std::path::PathBuf::from("/w/images/ext4-1.img");
        removals.begin(&img);
        let me = Arc::clone(&removals);
        let finished = Arc::new(std::sync::Mutex::new(None));
        let at = Arc::clone(&finished);
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            *at.lock().unwrap() = Some(Instant::now());
            me.end(&img);
        });
        let mut h =
            MonitoredHarness::new(&[], None, dir.path(), Duration::ZERO, &Alone, "p".into());
        h.removals = Some(&removals);
        let mut started = None;
        h.measure(&mut || {
            started = Some(Instant::now());
            Ok(Outcome::default())
        })
        .unwrap();
        t.join().unwrap();
        let done = finished.lock().unwrap().expect("the removal ended");
        assert!(
            started.expect("the phase ran") >= done,
            "the phase began before the removal ended"
        );
    }
}
