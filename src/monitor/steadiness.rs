//! How steady the host itself is: the same walk through memory, timed just before every
//! measured phase.
//!
//! Why: on a shared machine (a VM beside noisy neighbours, a laptop changing clock speed)
//! the same work takes a varying time, and that variation lands in every figure as spread
//! between runs that no file system caused. File-system work is memory-heavy kernel code,
//! so the probe is too: a dependent walk through a table larger than a core's private
//! caches, which a neighbour's use of the shared cache and memory slows down, as it slows
//! the file system. A pure register loop would miss that (on the dev VM it varied 2 % while
//! this walk varied 8 %). The run keeps every timing beside its measurement; the report says
//! how much they varied, so a reader can tell an unsteady machine from an undecidable
//! difference.
//!
//! The walk costs ~3 ms, outside the measured window.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Entries of the walk's table: 2 Mi `u32`s, 8 MiB, more than a core's private caches.
const ENTRIES: usize = 2 << 20;
/// Steps of one walk: ~3 ms on the dev machine, short enough to take before every phase.
const STEPS: usize = 20_000;

/// The table the walk follows: one cycle through every entry in a scrambled order (Sattolo's
/// algorithm), so no step can be predicted or prefetched and no walk falls into a short loop.
pub struct Probe {
    next: Vec<u32>,
}

impl Probe {
    /// Builds the table (~20 ms; the run builds it once, [`shared`]).
    pub fn new() -> Self {
        Self::with_entries(ENTRIES)
    }

    fn with_entries(n: usize) -> Self {
        let mut next: Vec<u32> = (0..n as u32).collect();
        // xorshift64: the same table on every run, no dependency needed for it.
        let mut s: u64 = 0x9E37_79B9_7F4A_7C15;
        for i in (1..n).rev() {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            // Sattolo: j < i (never i itself), which makes the permutation one cycle.
            let j = (s % i as u64) as usize;
            next.swap(i, j);
        }
        Probe { next }
    }

    /// Walks `steps` steps from entry 0 and returns where it ended (so the walk cannot be
    /// optimised away).
    fn walk(&self, steps: usize) -> u32 {
        let mut at = 0u32;
        for _ in 0..steps {
            at = self.next[at as usize];
        }
        at
    }

    /// The time one walk of [`STEPS`] steps takes now.
    pub fn time(&self) -> Duration {
        let t0 = Instant::now();
        std::hint::black_box(self.walk(std::hint::black_box(STEPS)));
        t0.elapsed()
    }
}

impl Default for Probe {
    fn default() -> Self {
        Self::new()
    }
}

/// The process's probe, built on first use.
pub fn shared() -> &'static Probe {
    static PROBE: OnceLock<Probe> = OnceLock::new();
    PROBE.get_or_init(Probe::new)
}

/// One walk of the process's probe, in milliseconds.
pub fn probe_ms() -> f64 {
    shared().time().as_secs_f64() * 1e3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_one_cycle_through_every_entry() {
        let p = Probe::with_entries(1000);
        let mut seen = vec![false; 1000];
        let mut at = 0usize;
        for _ in 0..1000 {
            assert!(
                !seen[at],
                "entry {at} visited twice before the cycle closed"
            );
            seen[at] = true;
            at = p.next[at] as usize;
        }
        assert_eq!(at, 0, "the walk returns to its start after every entry");
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn the_table_is_the_same_on_every_build() {
        assert_eq!(
            Probe::with_entries(4096).next,
            Probe::with_entries(4096).next
        );
    }

    #[test]
    fn a_walk_takes_measurable_time() {
        let ms = probe_ms();
        assert!(ms > 0.0 && ms.is_finite(), "{ms}");
    }
}
