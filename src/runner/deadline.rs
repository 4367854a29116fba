//! The end of a run's wall-time budget (`--budget`, for `--runs auto`): what the run keeps
//! for its own start and end, and how much of the budget is left at any moment. The one
//! place the budget is subtracted from, so the minimum's check, the rounds and the tuner's
//! count of candidates all leave the same room for the run's closing.

use std::time::{Duration, Instant};

/// What a run keeps of its budget for its start, before the budget's clock, and its end:
/// the populated images removed and the report written (3.7 s after the last cell of the
/// default run on 2026-11-27, where 3 s were kept). A walk adds what removing the images it
/// still holds will take ([`Deadline::closing`]).
pub const CLOSING: Duration = Duration::from_secs(4);

/// What a run's end takes besides removing its images: the report written, the run's
/// source trees and its last cell's image removed (1.5–1.9 s of the default run's end on
/// 2026-11-30), with a second to spare for a busier machine.
const BESIDE_IMAGES: Duration = Duration::from_secs(3);

/// A budget counted from the moment the walk started, or none (a rank of an MPI job runs
/// every cell of a round: one that left a cell out on its own clock would wait for ever at
/// the others' barriers).
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    started: Instant,
    budget: Option<Duration>,
    /// What the run keeps for its end: [`CLOSING`], and more where its images are slow
    /// to remove.
    closing: Duration,
}

impl Deadline {
    /// The `budget` of a walk that started at `started`.
    pub fn new(budget: Duration, started: Instant) -> Deadline {
        Deadline {
            started,
            budget: Some(budget),
            closing: CLOSING,
        }
    }

    /// This deadline keeping for the run's end `images` image removals of `each` beside
    /// the rest of it ([`BESIDE_IMAGES`]), and never less than [`CLOSING`]. The default
    /// run's end took 4.6–6.9 s on 2026-11-30 where 4 s were kept, ending it 0.6–3.1 s
    /// after its five minutes: its twenty populated images and spare clones took ~0.17 s
    /// each to remove with the work directory's discards, which wait on the disk, in line
    /// or on threads alike.
    pub fn closing(self, images: usize, each: Option<Duration>) -> Deadline {
        let removals = each.unwrap_or_default() * images as u32;
        Deadline {
            closing: CLOSING.max(BESIDE_IMAGES + removals),
            ..self
        }
    }

    /// No budget: every cell fits.
    pub fn never(started: Instant) -> Deadline {
        Deadline {
            started,
            budget: None,
            closing: CLOSING,
        }
    }

    /// What cells may spend of `budget`: the budget less what the run keeps for its start
    /// and end ([`CLOSING`]), so that a 5-minute budget means 5 minutes of wall time.
    pub fn spendable(budget: Duration) -> Duration {
        budget.saturating_sub(CLOSING)
    }

    /// Seconds the cells may still spend.
    pub fn left_s(&self) -> f64 {
        let spendable = (self.budget).map_or(Duration::MAX, |b| b.saturating_sub(self.closing));
        spendable
            .saturating_sub(self.started.elapsed())
            .as_secs_f64()
    }

    /// What is left until the whole budget ends, the closing included: the least a
    /// progress bar's ETA can say while the budget's rounds may still run.
    pub fn until_end(&self) -> Duration {
        let budget = self.budget.unwrap_or(Duration::MAX);
        budget.saturating_sub(self.started.elapsed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_closing_comes_out_of_the_budget_once() {
        let now = Instant::now();
        let d = Deadline::new(Duration::from_secs(60), now);
        assert!(d.left_s() <= 56.0 && d.left_s() > 55.0, "{}", d.left_s());
        assert!(d.until_end() <= Duration::from_secs(60));
        assert!(d.until_end() > Duration::from_secs(59));
        assert_eq!(Deadline::spendable(Duration::from_secs(3)), Duration::ZERO);
        assert!(Deadline::never(now).left_s() > 1e18);
    }

    /// Session 17: the default run ended 0.6–3.1 s after its five minutes. The 4 s it kept
    /// for its end did not cover removing its images, whose discards wait on the disk.
    #[test]
    fn the_closing_keeps_what_removing_the_run_s_images_takes() {
        let now = Instant::now();
        let d = Deadline::new(Duration::from_secs(60), now);
        let kept = d.closing(10, Some(Duration::from_millis(300)));
        assert!(
            kept.left_s() <= 54.0 && kept.left_s() > 53.0,
            "{}",
            kept.left_s()
        );
        let at_least = |k: Deadline| (k.left_s() - d.left_s()).abs() < 0.1;
        assert!(at_least(d.closing(10, None)), "nothing removed yet");
        assert!(at_least(d.closing(3, Some(Duration::from_millis(300)))));
        assert!(
            kept.until_end() > Duration::from_secs(59),
            "the end itself stays"
        );
    }
}
