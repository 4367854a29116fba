//! The end of a run's wall-time budget (`--budget`, for `--runs auto`): what the run keeps
//! for its own start and end, and how much of the budget is left at any moment. The one
//! place the budget is subtracted from, so the minimum's check, the rounds and the tuner's
//! count of candidates all leave the same room for the run's closing.

use std::time::{Duration, Instant};

/// What a run keeps of its budget for its start, before the budget's clock, and its end:
/// the populated images removed and the report written (3.7 s after the last cell of the
/// default run on 2026-11-27, where 3 s were kept).
pub const CLOSING: Duration = Duration::from_secs(4);

/// A budget counted from the moment the walk started, or none (a rank of an MPI job runs
/// every cell of a round: one that left a cell out on its own clock would wait for ever at
/// the others' barriers).
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    started: Instant,
    budget: Option<Duration>,
}

impl Deadline {
    /// The `budget` of a walk that started at `started`.
    pub fn new(budget: Duration, started: Instant) -> Deadline {
        Deadline {
            started,
            budget: Some(budget),
        }
    }

    /// No budget: every cell fits.
    pub fn never(started: Instant) -> Deadline {
        Deadline {
            started,
            budget: None,
        }
    }

    /// What cells may spend of `budget`: the budget less what the run keeps for its start
    /// and end ([`CLOSING`]), so that a 5-minute budget means 5 minutes of wall time.
    pub fn spendable(budget: Duration) -> Duration {
        budget.saturating_sub(CLOSING)
    }

    /// Seconds the cells may still spend.
    pub fn left_s(&self) -> f64 {
        let spendable = self.budget.map_or(Duration::MAX, Deadline::spendable);
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
}
