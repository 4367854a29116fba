//! What the budget pays for: every candidate's minimum runs come before any decision, so a
//! race of more candidates than the budget pays for at the minimum would spend its whole
//! budget (and more) before it could drop one. Before the candidates are drawn, one
//! candidate's minimum is priced the way the dry run prices a plan (`cost::estimate`:
//! earlier runs of the file system's defaults on this host, else the coarse model), and only
//! as many candidates are drawn as the budget pays for — never fewer than the defaults and
//! one other, since a race of one answers nothing.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::cost::estimate::{estimate, Priced, Size};
use crate::cost::history::History;
use crate::plan::Plan;
use crate::workload::initial::Starts;

/// The fewest candidates a race is drawn with: the defaults and one other.
pub const FEWEST: usize = 2;

/// The candidates asked for and those the budget pays for, with the estimate behind it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Afforded {
    /// Candidates asked for (`--candidates`, default 16), and drawn.
    pub asked: usize,
    pub drawn: usize,
    /// Seconds one candidate's minimum runs are estimated to take, images included.
    pub candidate_s: f64,
    /// Seconds of budget the minimum runs may take (the budget less the run's closing).
    pub budget_s: f64,
    /// What the estimate rests on ("earlier runs on this host", "a coarse model").
    pub basis: String,
}

impl Afforded {
    /// Whether the budget cut the candidates asked for.
    pub fn cut(&self) -> bool {
        self.drawn < self.asked
    }

    /// The one line that says the space was cut, and why; `None` when it was not.
    pub fn line(&self) -> Option<String> {
        self.cut().then(|| {
            format!(
                "the {} budget pays for the minimum runs of {} candidates (~{:.0} s each, from {}): \
                 racing {} of the {} asked, the defaults included",
                humantime::format_duration(Duration::from_secs(self.budget_s.round() as u64)),
                self.drawn,
                self.candidate_s,
                self.basis,
                self.drawn,
                self.asked
            )
        })
    }
}

/// How many of `asked` candidates the `budget` pays for when each one's minimum costs
/// `candidate_s` seconds: at least [`FEWEST`], at most `asked`.
pub fn affordable(asked: usize, budget: Duration, candidate_s: f64) -> usize {
    let budget = crate::runner::Deadline::spendable(budget).as_secs_f64();
    let paid = if candidate_s > 0.0 {
        (budget / candidate_s).floor() as usize
    } else {
        asked
    };
    paid.min(asked).max(FEWEST.min(asked))
}

/// Seconds one candidate's `min_runs` take on `plan` (whose one target is the file system's
/// defaults, as `fsarena run --target FS` names it, so earlier runs of it price it), and
/// what that rests on.
pub fn candidate_cost(plan: &Plan, min_runs: u32, history: &History) -> (f64, String) {
    let datasets = plan.datasets();
    let takes_threads: Vec<bool> = (plan.workloads.iter())
        .map(|name| crate::workload::by_name(name).is_some_and(|w| w.spec().uses_threads))
        .collect();
    // The one target's cells (the plan has no other).
    let cells: Vec<Priced> = (plan.cells(0..min_runs, 1, &takes_threads).iter())
        .map(|c| (0, c.dataset, plan.workloads[c.workload].as_str()))
        .collect();
    let starts = Starts::of(plan);
    // What the cells of each scale start from: the most files and bytes of a data set at it.
    let mut each = vec![(0u64, 0u64); plan.scales().len()];
    for (d, spec) in datasets.iter().enumerate() {
        let (files, bytes) = spec
            .plan()
            .map_or((0, 0), |m| (m.files.len() as u64, m.total_bytes()));
        let most = &mut each[plan.scale_index(d)];
        *most = (most.0.max(files), most.1.max(bytes));
    }
    let sizes = |w: &str, s: usize| {
        let (data_files, data_bytes) = each.get(s).copied().unwrap_or((0, 0));
        Size {
            files: starts.files_of(w, data_files).unwrap_or(data_files) as f64,
            bytes: starts.bytes_of(w, data_bytes).unwrap_or(data_bytes) as f64,
        }
    };
    let e = estimate(plan, &cells, &sizes, history);
    let basis = match (e.from_history, e.from_model) {
        (_, 0) => "earlier runs on this host",
        (0, _) => "a coarse model: no earlier run of the defaults here",
        _ => "earlier runs here and a coarse model",
    };
    (e.minimum_s, basis.to_string())
}

/// What `budget` pays for of the `asked` candidates on `plan`, each run `min_runs` times.
pub fn afford(
    plan: &Plan,
    asked: usize,
    min_runs: u32,
    budget: Duration,
    history: &History,
) -> Afforded {
    let (candidate_s, basis) = candidate_cost(plan, min_runs, history);
    Afforded {
        asked,
        drawn: affordable(asked, budget, candidate_s),
        candidate_s,
        budget_s: budget.as_secs_f64(),
        basis,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_pays_for_whole_candidates_never_fewer_than_the_defaults_and_one() {
        let budget = Duration::from_secs(15 * 60);
        let closing = crate::runner::CLOSING.as_secs_f64();
        // 60 s a candidate: (900 - closing) / 60 = 14 whole candidates of the 16 asked.
        assert_eq!(
            affordable(16, budget, 60.0),
            ((900.0 - closing) / 60.0) as usize
        );
        assert_eq!(affordable(16, budget, 60.0), 14);
        assert_eq!(affordable(8, budget, 60.0), 8, "never more than asked");
        assert_eq!(affordable(16, budget, 1000.0), FEWEST, "a race needs two");
        assert_eq!(affordable(16, budget, 0.0), 16, "no estimate, no cut");
    }

    #[test]
    fn a_candidate_is_priced_like_the_dry_run_prices_its_cells() {
        let ext4 = crate::plan::catalogue::get("ext4").unwrap();
        let ds = crate::dataset::DatasetSpec {
            scale: 0.002,
            ..Default::default()
        };
        let plan = Plan::of(vec![ext4], &["create", "scan"], ds);
        let h = History::default();
        let (one, basis) = candidate_cost(&plan, 1, &h);
        let (two, _) = candidate_cost(&plan, 2, &h);
        assert!(basis.contains("coarse model"), "{basis}");
        assert!(one > 0.0 && two > one, "{one} {two}");
        // scan copies an image built once per candidate: two runs cost less than twice one.
        assert!(two < 2.0 * one, "{one} {two}");
        let a = afford(&plan, 16, 2, Duration::from_secs(4), &h);
        assert_eq!(a.drawn, FEWEST);
        let line = a.line().unwrap();
        assert!(line.contains("racing 2 of the 16 asked"), "{line}");
        assert!(afford(&plan, 4, 2, Duration::from_secs(3600), &h)
            .line()
            .is_none());
    }
}
