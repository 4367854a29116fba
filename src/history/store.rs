//! The one interface the history's commands use, whichever database holds it.

use super::entry::{Captured, RunEntry, Value};
use super::error::HistoryError;

/// A place the history is kept. Every reading returns whole runs; the commands filter and
/// order them in Rust, so two stores holding the same runs give the same answers.
pub trait Store {
    /// Adds a run and its values in one transaction; `false` when a run of that id was
    /// already kept (it is left as it was, labels included).
    fn add(&mut self, c: &Captured) -> Result<bool, HistoryError>;
    /// Every run, with its labels, oldest first.
    fn runs(&mut self) -> Result<Vec<RunEntry>, HistoryError>;
    /// The values of the runs named.
    fn values(&mut self, run_ids: &[String]) -> Result<Vec<Value>, HistoryError>;
    /// Removes the runs named and everything of theirs; how many were removed.
    fn remove(&mut self, run_ids: &[String]) -> Result<usize, HistoryError>;
    /// Where the history is, for messages.
    fn location(&self) -> String;
}

/// Seconds since the epoch: when a migration was applied, and what `prune --older-than`
/// counts from.
pub fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
