//! Work inside a measured phase that is not the phase's own: the cache drop between two cold
//! passes, the check of a pass's result. Such a span runs on the same CPUs and may touch the
//! same device, so left in the monitor's window it would be charged to the file system: a
//! cold phase's system CPU would include evicting every inode between its passes, which has
//! nothing to do with walking the tree and differs between file systems.
//!
//! [`Aside::run`] has the monitor take a reading just before and just after the span, and
//! the monitor leaves what changed between those two readings (seconds, device counters,
//! CPU ticks, this process's CPU time) out of the phase's figures. The time series keeps
//! every sample: it shows what happened, spans set aside included.

use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};

/// What the measured code asks of the monitor's thread.
pub(super) enum Cmd {
    /// Take a reading and open a span set aside; answer when done.
    Begin(Sender<()>),
    /// Take a reading and close the span; answer when done.
    End(Sender<()>),
    /// Take the last reading and finish.
    Stop,
}

/// A handle through which code running inside a measured phase sets a span of its work
/// aside. Cloneable and cheap; inert (it just runs the span) while no monitor is attached,
/// so a workload can use it the same way under any harness.
#[derive(Clone, Default)]
pub struct Aside(Arc<Mutex<Option<Sender<Cmd>>>>);

impl std::fmt::Debug for Aside {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Aside")
    }
}

impl Aside {
    /// Runs `span` with the attached monitor's figures paused around it (readings taken
    /// before and after, the difference left out of the phase); without a monitor, just
    /// runs it.
    pub fn run<T>(&self, span: impl FnOnce() -> T) -> T {
        let tx = self.0.lock().ok().and_then(|g| g.clone());
        let ask = |cmd: fn(Sender<()>) -> Cmd| {
            if let Some(tx) = &tx {
                let (ack, done) = mpsc::channel();
                // A monitor that is gone cannot pause; the span simply runs.
                if tx.send(cmd(ack)).is_ok() {
                    let _ = done.recv();
                }
            }
        };
        ask(Cmd::Begin);
        let out = span();
        ask(Cmd::End);
        out
    }

    /// Whether a monitor is attached (for tests).
    pub fn attached(&self) -> bool {
        self.0.lock().is_ok_and(|g| g.is_some())
    }

    pub(super) fn attach(&self, tx: Sender<Cmd>) {
        if let Ok(mut g) = self.0.lock() {
            *g = Some(tx);
        }
    }

    pub(super) fn detach(&self) {
        if let Ok(mut g) = self.0.lock() {
            *g = None;
        }
    }
}
