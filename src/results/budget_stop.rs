//! A comparison the time budget gave no further runs, as `results.jsonl` keeps it, so the
//! report can say on the row why it stayed undecided (`--runs auto`'s stop was only a line
//! on stderr, lost with the terminal). The words are said here once, for the run's line and
//! for every output of the report.

use serde::{Deserialize, Serialize};

/// Why a comparison is beyond the budget.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "beyond", rename_all = "snake_case")]
pub enum Beyond {
    /// Its estimated runs per target to a decision cost more seconds than are left.
    Budget {
        runs: usize,
        seconds: f64,
        /// What was left of the budget when it was stopped.
        left: f64,
    },
    /// One of its groups made the most runs the plan allows.
    Maximum,
    /// Still open when the budget ended: no further round fitted in what was `left` (a
    /// comparison with no estimate of its runs to a decision ends so).
    Spent { left: f64 },
}

impl Beyond {
    /// In words: "needs ~14 more runs (~6 min), beyond the 2 min left of the budget".
    pub fn words(&self) -> String {
        match *self {
            Beyond::Budget {
                runs,
                seconds,
                left,
            } => {
                let (need, left) = apart(seconds, left.max(0.0));
                format!(
                    "needs ~{runs} more run{} (~{need}), beyond the {left} left of the budget",
                    if runs == 1 { "" } else { "s" },
                )
            }
            Beyond::Maximum => "made the most runs the run allows".into(),
            Beyond::Spent { left } => format!(
                "no further round fitted in the {} left of the budget",
                duration(left.max(0.0))
            ),
        }
    }

    /// What a row says of it, after its decision: "stopped by the budget: needs ~6 more
    /// runs (~15 s), beyond the 13 s left of the budget".
    pub fn row_words(&self) -> String {
        format!("stopped by the budget: {}", self.words())
    }
}

/// Seconds in words: "40 s" below a minute and a half, "6 min" from there.
fn duration(seconds: f64) -> String {
    match seconds < 90.0 {
        true => format!("{seconds:.0} s"),
        false => format!("{:.0} min", seconds / 60.0),
    }
}

fn rounded(seconds: f64, round: fn(f64) -> f64) -> String {
    match seconds < 90.0 {
        true => format!("{} s", round(seconds)),
        false => format!("{} min", round(seconds / 60.0)),
    }
}

/// A need and the time left, each in words: rounded to the nearest unit, unless both would
/// read the same ("~21 s, beyond the 21 s left"); then the need is rounded up and the time
/// left down, so the line says what the budget compared (the need is always the larger).
fn apart(need: f64, left: f64) -> (String, String) {
    let (n, l) = (duration(need), duration(left));
    if n != l {
        return (n, l);
    }
    (rounded(need, f64::ceil), rounded(left, f64::floor))
}

/// An undecided comparison of `target` with the baseline at one point the budget stopped
/// giving runs, and why. Recorded once, when it is first stopped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BudgetStop {
    pub target: String,
    pub workload: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<String>,
    /// The point within the workload (`cold`, `within`, …); empty for a single point.
    #[serde(default)]
    pub variant: String,
    pub threads: u32,
    pub why: Beyond,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_reads_back_as_written() {
        let s = BudgetStop {
            target: "xfs".into(),
            workload: "search".into(),
            dataset: None,
            variant: "size".into(),
            threads: 1,
            why: Beyond::Budget {
                runs: 6,
                seconds: 15.2,
                left: 13.0,
            },
        };
        let line = serde_json::to_string(&s).unwrap();
        assert!(
            line.contains(r#""why":{"beyond":"budget","runs":6"#),
            "{line}"
        );
        assert_eq!(serde_json::from_str::<BudgetStop>(&line).unwrap(), s);
        assert_eq!(
            s.why.row_words(),
            "stopped by the budget: needs ~6 more runs (~15 s), beyond the 13 s left of the budget"
        );
    }

    /// Defect: a need of 21.4 s and 20.9 s left read "needs ~24 more runs (~21 s), beyond
    /// the 21 s left of the budget", a stop the line itself did not explain.
    #[test]
    fn a_need_and_a_time_left_that_round_alike_still_read_apart() {
        let words = |seconds: f64, left: f64| {
            Beyond::Budget {
                runs: 24,
                seconds,
                left,
            }
            .words()
        };
        assert_eq!(
            words(21.4, 20.9),
            "needs ~24 more runs (~22 s), beyond the 20 s left of the budget"
        );
        assert_eq!(
            words(365.0, 335.0),
            "needs ~24 more runs (~7 min), beyond the 5 min left of the budget"
        );
        // Apart already: rounded to the nearest, as before.
        assert_eq!(
            words(364.0, 100.0),
            "needs ~24 more runs (~6 min), beyond the 2 min left of the budget"
        );
    }
}
