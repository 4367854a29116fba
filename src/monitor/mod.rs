//! The monitor: samples device, memory and CPU counters while a measured phase runs.
//!
//! The parsers ([`diskstats`], [`meminfo`], [`cpu`]) are pure functions over /proc text; the
//! private `sampler` turns readings into deltas and a series; [`Monitor`] runs it on a
//! background thread for exactly the span between [`Monitor::start`] and [`Monitor::stop`].

mod aside;
pub mod cpu;
pub mod diskstats;
pub mod meminfo;
mod report;
mod sampler;
pub mod steadiness;

use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use aside::Aside;
use aside::Cmd;
pub use cpu::{CpuPercent, CpuStatError, CpuTimes};
pub use diskstats::{counter_delta, DiskCounters, DiskStatsError, SECTOR_BYTES};
pub use meminfo::{MemInfo, MemInfoError};
pub use report::{DeviceDelta, MonitorReport, Sample};

use crate::sys::DevId;
use sampler::Sampler;

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
        let (started_tx, started) = mpsc::sync_channel::<()>(1);
        let thread = std::thread::Builder::new()
            .name("fsarena-monitor".into())
            .spawn(move || {
                let _ = started_tx.send(());
                run(sampler, interval, rx)
            })?;
        // Returns only once the thread runs its own code. A thread still starting holds the
        // standard library's lock on its registry of threads; a workload that forks right
        // after the monitor starts (the db engine's confined child) would inherit that lock
        // held, and every thread the child spawns would wait for it forever (seen: all
        // twelve db workers of a child stuck in `set_current_info`).
        let _ = started.recv();
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
