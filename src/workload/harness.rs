//! The services the runner gives a workload during a point: the measured phase, cache
//! drops, the phase floor.

use super::error::WorkloadError;
use super::outcome::Outcome;

/// A measured phase's work, as a workload hands it to [`Harness::measure`].
pub type Phase<'a> = dyn FnMut() -> Result<Outcome, WorkloadError> + 'a;

/// Services the runner gives a workload.
pub trait Harness {
    /// `sync`, then drop the page cache, dentries and inodes, so the next phase starts cold.
    fn drop_caches(&mut self) -> std::io::Result<()>;
    /// Runs the measured phase under the monitor and ends it with `syncfs` on the target so
    /// buffered writes are counted. Call it exactly once per point.
    fn measure(&mut self, work: &mut Phase<'_>) -> Result<Outcome, WorkloadError>;
    /// The shortest phase a key metric may come from (`--phase-floor`): warm read-only
    /// passes repeat until they reach it ([`super::passes::measure_passes`]). Zero outside a run.
    fn phase_floor(&self) -> std::time::Duration {
        std::time::Duration::ZERO
    }
    /// The cache drop that cold passes make between passes, inside the measured phase
    /// ([`super::passes::measure_cold_passes`]): a plain function, because `measure` holds the
    /// harness while the passes run. It runs after [`Harness::pass_writeback`]'s file system
    /// was written back, so it need not `sync` the machine: the runner's is
    /// [`crate::sys::drop_clean_caches`].
    fn pass_dropper(&self) -> fn() -> std::io::Result<()> {
        crate::sys::drop_caches
    }
    /// The file system whose writes a cold pass leaves dirty (under `relatime` a first walk
    /// gives every directory it reads a new access time) and which
    /// [`super::passes::measure_cold_passes`] writes back with `syncfs` after every pass but
    /// the last, inside the measured time: the cache drop before the next pass would
    /// otherwise write them outside it, and a phase of several passes would not pay for
    /// what a phase of one pays for in its final `syncfs`. Written back whole again before
    /// each drop, after the reset of its access times. The runner's is the target's root
    /// and device; `None` (the default) syncs nothing.
    fn pass_writeback(&self) -> Option<WriteBack> {
        None
    }
    /// The handle through which work inside the measured phase that is not the phase's own
    /// (the cache drop between cold passes, a pass's check) is left out of the monitor's
    /// figures ([`crate::monitor::Aside`]). Take it before `measure`; inert by default.
    fn aside(&self) -> crate::monitor::Aside {
        crate::monitor::Aside::default()
    }
}

/// A file system to write back whole ([`crate::sys::write_back`]): its root, and its
/// block device when it has one of its own (a loop device), whose cache a FUSE daemon
/// writes through and whose flush reaches the image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteBack {
    pub root: std::path::PathBuf,
    pub device: Option<std::path::PathBuf>,
}

impl WriteBack {
    /// Writes the file system back; after it, a drop of the machine's clean caches leaves
    /// nothing of it in memory.
    pub fn run(&self) -> std::io::Result<()> {
        crate::sys::write_back(&self.root, self.device.as_deref())
    }
}

/// A harness without a monitor, for unit tests and for tools that only need timing.
#[derive(Debug, Default)]
pub struct PlainHarness {
    pub measured: usize,
    pub dropped: usize,
}

impl Harness for PlainHarness {
    fn drop_caches(&mut self) -> std::io::Result<()> {
        self.dropped += 1;
        crate::sys::drop_caches()
    }
    fn measure(&mut self, work: &mut Phase<'_>) -> Result<Outcome, WorkloadError> {
        self.measured += 1;
        work()
    }
}
