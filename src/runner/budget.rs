//! `--runs auto`: the time budget spent where the answer is still open.
//!
//! Every group (target × workload × thread count) first gets the minimum repetitions. Then,
//! round after round, the run asks the run's decisions (the report's own,
//! [`crate::stats::verdicts`]) which disk-target comparisons with the baseline are still
//! `undecided`, and prices each ([`seconds_to_decide`]: the runs each side lacks to reach the
//! look its estimate says would decide it, times what that side's cells cost so far). One
//! more round pays `its cost / that price` of a decision, so the expected progress per
//! second is `1 / price`: the cheapest decision goes first, a −85 % difference one run from
//! a decision on a costly FUSE file system before a +2 % one that needs 40 cheap runs. A
//! round takes the cheapest comparisons while their prices, added up, fit in what is left
//! (one for every open comparison would spend the budget on all and decide none), each on
//! the side(s) that narrow its interval most ([`crate::stats::next_run_side`]).
//!
//! A comparison the budget cannot decide is **stopped** and the run says why ([`Stopped`]):
//! its price exceeds what is left, or a group of it made the most runs allowed. It is
//! priced again each round (the baseline's runs for others can lower its estimate). The
//! estimate takes today's spread as the truth, so a wild run can stop a comparison a few
//! runs would have decided: the price of not spending the budget where it will not decide.
//! One with no estimate at all (no look up to the plan's maximum would decide it on
//! today's spread) is not stopped but comes last: it gets the rounds no priced comparison
//! takes, since at three runs a real difference often has none (`plan_round`). The budget ends when every
//! comparison is decided or stopped, or when it is spent. A reference target (tmpfs) is
//! never a reason to run more: it is not ranked.
//!
//! The budget is the run's wall time from its start, minimum repetitions included; the
//! minimum is always run, even past the budget (a comparison needs it), and the dry run
//! says when that alone cannot fit.

use std::collections::HashMap;

pub use super::rounds::{Beyond, Group, Round, Stopped};
use crate::plan::Plan;
use crate::report::key_metric;
use crate::results::store::Loaded;
use crate::stats::sequential::Looks;
use crate::stats::significance::Test;
use crate::stats::verdicts::{self, Point};
use crate::stats::{next_run_side, Side};

/// An undecided comparison of a disk target with the baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct Open {
    pub group: Group,
    /// The point within the workload (`cold`, `within`, …), for messages.
    pub variant: String,
    /// Estimated further runs per target that would decide it.
    pub runs_to_decide: Option<usize>,
    /// Which side's next run helps most.
    pub side: Side,
    /// The runs each side has made: (baseline, candidate).
    pub runs: (usize, usize),
    /// The candidate was measured in turn with the baseline in every run, so its cells
    /// hold both sides of the comparison: only they are repeated and paid for.
    pub in_turn: bool,
}

/// Why the open comparisons could not be found: the run cannot tell what is decided.
#[derive(Debug, thiserror::Error)]
pub enum BudgetError {
    #[error("cannot decide which comparisons are open: {0}")]
    Decide(String),
}

/// The key-metric comparisons of the repetitions in `state` that are still undecided, as the
/// report would print them: the same decisions ([`verdicts::decide`]: same statistics, same
/// family, same baseline), within ±`margin_pct` %. A reference target (tmpfs) is never
/// open. An error when the margin is no positive number or `state` holds repetitions but no
/// plan naming their baseline: neither can be decided.
pub fn open_questions(state: &Loaded, margin_pct: f64) -> Result<Vec<Open>, BudgetError> {
    if !(margin_pct.is_finite() && margin_pct > 0.0) {
        return Err(BudgetError::Decide(format!(
            "the equivalence margin {margin_pct} % is not a positive number"
        )));
    }
    if state.measurements.is_empty() {
        return Ok(Vec::new());
    }
    let baseline = verdicts::planned_baseline(state).ok_or_else(|| {
        BudgetError::Decide("the repetitions carry no readable plan, so no baseline".into())
    })?;
    // The metric each workload is decided on and the looks are the report's choice, so the
    // two cannot disagree on which comparison is open.
    let looks = verdicts::planned_looks(state);
    let points = verdicts::decide(
        &state.measurements,
        &baseline,
        margin_pct,
        &looks,
        &key_metric,
    );
    Ok(points
        .iter()
        .flat_map(|p| open_in(p, &baseline, &looks))
        .collect())
}

/// What a round asks of the run so far: the comparisons still open and the target each is
/// made against. `fsarena run` asks [`AgainstBaseline`]; `fsarena tune` asks its race,
/// whose comparisons are with the best candidate so far (`crate::tune`).
pub trait Questions {
    fn ask(&self, state: &Loaded, plan: &Plan) -> Result<Asked, BudgetError>;

    /// Whether the minimum repetitions, too, stop at the budget (a cell that no longer
    /// fits is not started): not for `fsarena run`, whose comparisons need the minimum,
    /// but for a race whose minimum was sized to the budget beforehand and whose unraced
    /// candidates it reports.
    fn minimum_within_budget(&self) -> bool {
        false
    }
}

/// The open comparisons, the target they are made against, and the line that says the
/// budget is done when none is open.
#[derive(Debug, Clone, PartialEq)]
pub struct Asked {
    pub open: Vec<Open>,
    pub against: String,
    pub settled: String,
}

/// The run's own questions: every disk target against the plan's baseline.
pub struct AgainstBaseline;

impl Questions for AgainstBaseline {
    fn ask(&self, state: &Loaded, plan: &Plan) -> Result<Asked, BudgetError> {
        Ok(Asked {
            open: open_questions(state, plan.margin_pct)?,
            against: plan.baseline.clone(),
            settled: "budget: every comparison with the baseline is decided".into(),
        })
    }
}

/// Which side a comparison's next run should go to. A sequential run decides only at its
/// looks, from the first n runs of *both* sides: a side already at the next look gains
/// nothing until the other reaches it, so only that other side is repeated, else both. A
/// fixed-size run's sides: the one that narrows the interval most ([`next_run_side`]).
pub fn side_for(base: &[f64], cand: &[f64], looks: &Looks) -> Side {
    if !looks.is_sequential() {
        return next_run_side(base, cand);
    }
    let next = looks.next_after(base.len().min(cand.len()));
    match next.map(|n| (base.len() >= n, cand.len() >= n)) {
        Some((true, false)) => Side::Candidate,
        Some((false, true)) => Side::Baseline,
        _ => Side::Both,
    }
}

/// The undecided comparisons of one decided point, each with the side whose next run
/// helps most ([`side_for`]).
pub fn open_in(p: &Point, baseline: &str, looks: &Looks) -> Vec<Open> {
    let base_raw = p.baseline_index(baseline).map_or(&[][..], |b| p.raw(b));
    p.undecided()
        .map(|(i, v)| {
            // Measured in turn, the candidate's cells hold both sides of the comparison:
            // only they are repeated, and only their runs count.
            let in_turn = p.vs_baseline(i).is_some_and(|c| c.test == Test::InTurn);
            let nc = p.raw(i).len();
            Open {
                group: Group {
                    target: p.groups[i].key.target.clone(),
                    workload: p.workload.clone(),
                    dataset: p.dataset.clone(),
                    threads: p.threads,
                },
                variant: p.variant.clone(),
                runs_to_decide: v.runs_to_decide,
                side: match in_turn {
                    true => Side::Candidate,
                    false => side_for(base_raw, p.raw(i), looks),
                },
                runs: (base_raw.len(), nc),
                in_turn,
            }
        })
        .collect()
}

/// The baseline's group of `o`.
fn baseline_of(o: &Open, baseline: &str) -> Group {
    Group {
        target: baseline.to_string(),
        ..o.group.clone()
    }
}

/// The groups `o`'s next round repeats, as its `side` says.
fn sides_of(o: &Open, baseline: &str) -> Vec<Group> {
    let base = baseline_of(o, baseline);
    match o.side {
        Side::Candidate => vec![o.group.clone()],
        Side::Baseline => vec![base],
        Side::Both => vec![o.group.clone(), base],
    }
}

/// The estimated seconds that would decide `o`: the runs each side still lacks to reach
/// the look its estimate names (`runs_to_decide` beyond the smaller side, at least one),
/// each at its group's cost; measured in turn, the candidate's runs alone (its cells,
/// which measure both sides, are what it costs). `None` without an estimate.
pub fn seconds_to_decide(o: &Open, baseline: &str, cost_s: &dyn Fn(&Group) -> f64) -> Option<f64> {
    let (nb, nc) = o.runs;
    if o.in_turn {
        return Some(o.runs_to_decide?.max(1) as f64 * cost_s(&o.group));
    }
    let goal = nb.min(nc) + o.runs_to_decide?.max(1);
    let lacking = |n: usize| goal.saturating_sub(n) as f64;
    Some(lacking(nb) * cost_s(&baseline_of(o, baseline)) + lacking(nc) * cost_s(&o.group))
}

/// Chooses the next round. Each open comparison is priced ([`seconds_to_decide`]) and
/// stopped when it is beyond the budget (its price exceeds `remaining_s`, or one of its
/// groups reached `max_runs`). The others are taken cheapest first while their prices,
/// added up, fit in `remaining_s`; each needs its candidate's group, the baseline's or both
/// repeated once, as its `side` says (shared groups are paid once), and is taken when that
/// fits in `remaining_s` too. Those without an estimate get a round no priced one takes.
pub fn plan_round(
    open: &[Open],
    baseline: &str,
    runs_done: &HashMap<Group, u32>,
    max_runs: u32,
    cost_s: &dyn Fn(&Group) -> f64,
    remaining_s: f64,
) -> Round {
    let at_max = |g: &Group| runs_done.get(g).copied().unwrap_or(0) >= max_runs;
    let mut round = Round {
        groups: Vec::new(),
        cost_s: 0.0,
        questions: 0,
        stopped: Vec::new(),
    };
    let (mut priced, mut unpriced): (Vec<(f64, &Open)>, Vec<&Open>) = (Vec::new(), Vec::new());
    for o in open {
        let why = match seconds_to_decide(o, baseline, cost_s) {
            _ if sides_of(o, baseline).iter().any(at_max) => Beyond::Maximum,
            None => {
                unpriced.push(o);
                continue;
            }
            Some(s) if s > remaining_s => Beyond::Budget {
                runs: o.runs_to_decide.unwrap_or(0).max(1),
                seconds: s,
                left: remaining_s,
            },
            Some(s) => {
                priced.push((s, o));
                continue;
            }
        };
        round.stopped.push(Stopped {
            group: o.group.clone(),
            variant: o.variant.clone(),
            why,
        });
    }
    priced.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.group.cmp(&b.1.group)));
    // What the decisions taken so far will cost: a comparison whose decision no longer fits
    // beside the cheaper ones waits for them (it is not stopped: it fits alone).
    let mut promised = 0.0;
    for (price, o) in priced {
        let needed: Vec<Group> = sides_of(o, baseline)
            .into_iter()
            .filter(|g| !round.groups.contains(g))
            .collect();
        let add: f64 = needed.iter().map(cost_s).sum();
        if promised + price > remaining_s || round.cost_s + add > remaining_s {
            continue;
        }
        promised += price;
        take(&mut round, needed, add);
    }
    // Without an estimate (at three runs a real 10 % difference under a drifting machine
    // often has none: stopping those left 32 % of them decided in `tests/sequential.rs`'s
    // simulation, against 80 % required), a comparison gets what no priced one takes.
    if round.questions == 0 {
        for o in unpriced {
            let needed: Vec<Group> = sides_of(o, baseline)
                .into_iter()
                .filter(|g| !round.groups.contains(g))
                .collect();
            let add: f64 = needed.iter().map(cost_s).sum();
            if round.cost_s + add <= remaining_s {
                take(&mut round, needed, add);
            }
        }
    }
    round
}

/// Adds one comparison's `needed` groups, costing `add` seconds, to `round`.
fn take(round: &mut Round, needed: Vec<Group>, add: f64) {
    round.cost_s += add;
    round.groups.extend(needed);
    round.questions += 1;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{HostFacts, Measurement};
    use crate::stats::Decision;

    /// A run of two workloads decided on different metrics (`create` on files/s, higher
    /// better; `cold-read` on seconds per pass, lower better), at two thread counts and two
    /// data sets: ext4 the baseline, xfs within noise of it (undecided), btrfs far behind
    /// (decided), tmpfs within noise too (undecided, but a reference).
    fn state(with_plan: bool) -> Loaded {
        let jitter = [1.0, 1.03, 0.97];
        let targets = [
            ("ext4", "ext4", [1.0, 1.0, 1.0]),
            ("xfs", "xfs", [1.01, 0.98, 1.04]),
            ("btrfs", "btrfs", [0.5, 0.5, 0.5]),
            ("ram", "tmpfs", [1.02, 0.99, 1.0]),
        ];
        let mut measurements = Vec::new();
        for rep in 0..3u32 {
            for (target, fs, scale) in targets {
                for (workload, threads, dataset) in [
                    ("create", 1, None),
                    ("create", 2, None),
                    ("cold-read", 1, Some("medium".to_string())),
                ] {
                    let f = jitter[rep as usize] * scale[rep as usize];
                    // The metric not decided on says the opposite: deciding on it would
                    // open other questions.
                    let metrics = [
                        ("files_per_s", 1000.0 * f),
                        ("seconds_per_pass", 2.0 / f),
                        (
                            "seconds",
                            1.0 + rep as f64 * 0.5 + (fs == "xfs") as u8 as f64,
                        ),
                    ];
                    measurements.push(Measurement {
                        target: target.into(),
                        fs: fs.into(),
                        workload: workload.into(),
                        dataset,
                        threads,
                        repetition: rep,
                        metrics: metrics.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
                        ..Default::default()
                    });
                }
            }
        }
        let mut plan =
            crate::plan::Plan::of(Vec::new(), &["create", "cold-read"], Default::default());
        plan.baseline = "ext4".into();
        let plan = serde_json::to_value(plan).unwrap();
        Loaded {
            host: HostFacts {
                plan: if with_plan {
                    plan
                } else {
                    serde_json::Value::Null
                },
                ..HostFacts::default()
            },
            measurements,
            skipped: Vec::new(),
            set_aside: Vec::new(),
            budget_stops: Vec::new(),
        }
    }

    /// (target, workload, data set, threads, variant, runs to decide) of a question.
    type Asked = (String, String, Option<String>, u32, String, Option<usize>);

    #[test]
    fn the_open_questions_are_exactly_what_the_report_leaves_undecided() {
        let state = state(true);
        let report = crate::report::build(&state, Some(5.0));
        let mut undecided: Vec<Asked> = Vec::new();
        let mut reference_undecided = 0;
        for s in &report.sections {
            for row in &s.rows {
                let v = row
                    .metric(&s.key_metric)
                    .and_then(|m| m.vs_baseline.as_ref())
                    .and_then(|c| c.verdict.as_ref());
                if v.map(|v| v.decision) != Some(Decision::Undecided) {
                    continue;
                }
                if row.reference {
                    reference_undecided += 1;
                    continue;
                }
                undecided.push((
                    row.target.clone(),
                    s.workload.clone(),
                    s.dataset.clone(),
                    s.threads,
                    s.variant.clone(),
                    v.and_then(|v| v.runs_to_decide),
                ));
            }
        }
        let open: Vec<Asked> = open_questions(&state, 5.0)
            .unwrap()
            .into_iter()
            .map(|o| {
                let g = o.group;
                (
                    g.target,
                    g.workload,
                    g.dataset,
                    g.threads,
                    o.variant,
                    o.runs_to_decide,
                )
            })
            .collect();
        assert_eq!(open, undecided);
        // The fixture exercises what it means to: open questions on both workloads, a
        // reference left out, a decided comparison left out.
        assert_eq!(open.len(), 3, "{open:?}");
        assert!(open.iter().all(|q| q.0 == "xfs"), "{open:?}");
        assert_eq!(reference_undecided, 3);
        assert!(report
            .sections
            .iter()
            .all(|s| s.rows.iter().any(|r| r.target == "btrfs"
                && r.metric(&s.key_metric)
                    .unwrap()
                    .vs_baseline
                    .as_ref()
                    .unwrap()
                    .verdict
                    .as_ref()
                    .unwrap()
                    .decision
                    == Decision::Worse)));
    }

    #[test]
    fn what_cannot_be_decided_is_an_error_not_an_empty_list() {
        let e = open_questions(&state(false), 5.0).unwrap_err();
        assert!(e.to_string().contains("no readable plan"), "{e}");
        let e = open_questions(&state(true), f64::NAN).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("cannot decide which comparisons are open"),
            "{e}"
        );
        let nothing = Loaded {
            measurements: Vec::new(),
            ..state(false)
        };
        assert_eq!(open_questions(&nothing, 5.0).unwrap(), Vec::new());
    }

    fn g(t: &str, w: &str) -> Group {
        Group::one_thread(t, w)
    }

    fn question(t: &str, w: &str, runs: Option<usize>) -> Open {
        Open {
            group: g(t, w),
            variant: String::new(),
            runs_to_decide: runs,
            side: Side::Both,
            runs: (3, 3),
            in_turn: false,
        }
    }

    #[test]
    fn a_round_repeats_only_the_side_that_narrows_the_interval() {
        let mut noisy = question("ntfs", "touch", Some(1));
        noisy.side = Side::Candidate;
        let mut steady = question("xfs", "scan", Some(2));
        steady.side = Side::Baseline;
        let r = plan_round(
            &[noisy, steady],
            "ext4",
            &HashMap::new(),
            30,
            &|_| 1.0,
            99.0,
        );
        assert_eq!(r.groups, vec![g("ntfs", "touch"), g("ext4", "scan")]);
        assert_eq!(r.cost_s, 2.0);
        assert_eq!(r.questions, 2);
        assert!(r.stopped.is_empty());
    }

    /// A FUSE cell costs ten kernel cells (exFAT's `chmod` cells cost 10 s, ext4's and
    /// xfs's 1 s), as on the default run.
    fn fuse_costs(g: &Group) -> f64 {
        if g.target == "exfat" {
            10.0
        } else {
            1.0
        }
    }

    #[test]
    fn a_big_difference_one_run_from_deciding_goes_before_a_small_one_needing_forty() {
        // exfat chmod −85 %: one run of each side decides it, 11 s; xfs chmod +2 %: 40
        // runs of each side, 80 s. The costly cell's decision is the cheaper one.
        let open = vec![
            question("xfs", "chmod", Some(40)),
            question("exfat", "chmod", Some(1)),
        ];
        let done = HashMap::new();
        assert_eq!(seconds_to_decide(&open[1], "ext4", &fuse_costs), Some(11.0));
        assert_eq!(seconds_to_decide(&open[0], "ext4", &fuse_costs), Some(80.0));
        // Room for both decisions: both, the big difference first, ext4's run paid once.
        let r = plan_round(&open, "ext4", &done, 30, &fuse_costs, 100.0);
        assert_eq!(
            r.groups,
            vec![g("exfat", "chmod"), g("ext4", "chmod"), g("xfs", "chmod")]
        );
        assert_eq!((r.questions, r.cost_s), (2, 12.0));
        // Room for either alone, not both: the small difference waits for the big one's
        // decision (it is not stopped: it fits alone).
        let r = plan_round(&open, "ext4", &done, 30, &fuse_costs, 85.0);
        assert_eq!(r.groups, vec![g("exfat", "chmod"), g("ext4", "chmod")]);
        assert!(r.stopped.is_empty(), "{:?}", r.stopped);
        // Ordered by runs alone (the old rule), a round whose one run of xfs fits before
        // exFAT's 10 s one would go to xfs first; by price it never does.
        let r = plan_round(&open, "ext4", &done, 30, &fuse_costs, 12.0);
        assert_eq!(r.groups, vec![g("exfat", "chmod"), g("ext4", "chmod")]);
    }

    #[test]
    fn a_comparison_whose_decision_costs_more_than_is_left_is_stopped_and_says_why() {
        let open = vec![
            question("xfs", "cold-read", Some(14)),
            question("xfs", "dupes", Some(2)),
            question("btrfs", "copy", None),
        ];
        let done = HashMap::new();
        // 13 s a cell, 100 s left: cold-read needs 14 runs of both sides (364 s).
        let r = plan_round(&open, "ext4", &done, 30, &|_| 13.0, 100.0);
        assert_eq!(r.groups, vec![g("xfs", "dupes"), g("ext4", "dupes")]);
        assert_eq!(
            r.stopped,
            vec![Stopped {
                group: g("xfs", "cold-read"),
                variant: String::new(),
                why: Beyond::Budget {
                    runs: 14,
                    seconds: 364.0,
                    left: 100.0
                },
            },]
        );
        // Nothing fits in 20 s: the round is empty, and every comparison priced says why.
        let r = plan_round(&open, "ext4", &done, 30, &|_| 13.0, 20.0);
        assert!(r.groups.is_empty());
        assert_eq!(r.stopped.len(), 2);
        // With room for cold-read's runs, it is taken.
        let r = plan_round(&open, "ext4", &done, 30, &|_| 13.0, 500.0);
        assert_eq!((r.questions, r.stopped.len()), (2, 0));
        // The one without an estimate is not stopped: it gets a round no other takes.
        let r = plan_round(&open[2..], "ext4", &done, 30, &|_| 13.0, 30.0);
        assert_eq!(r.groups, vec![g("btrfs", "copy"), g("ext4", "copy")]);
        assert!(r.stopped.is_empty());
    }

    #[test]
    fn a_side_behind_the_other_pays_only_for_its_own_runs_to_the_look() {
        // The candidate made 5 runs, the baseline 3; the look that decides it is 2 runs
        // ahead of the smaller side: only the baseline's 2 runs are left to pay.
        let mut o = question("ntfs", "scan", Some(2));
        o.runs = (3, 5);
        o.side = Side::Baseline;
        assert_eq!(seconds_to_decide(&o, "ext4", &fuse_costs), Some(2.0));
        o.runs = (5, 3);
        o.group = g("exfat", "scan");
        assert_eq!(seconds_to_decide(&o, "ext4", &fuse_costs), Some(20.0));
        o.runs_to_decide = None;
        assert_eq!(seconds_to_decide(&o, "ext4", &fuse_costs), None);
    }

    #[test]
    fn a_group_at_the_maximum_is_not_repeated() {
        let open = vec![
            question("xfs", "scan", Some(1)),
            question("btrfs", "touch", Some(2)),
        ];
        let done: HashMap<Group, u32> = [(g("ext4", "scan"), 30)].into_iter().collect();
        let r = plan_round(&open, "ext4", &done, 30, &|_| 1.0, 100.0);
        assert_eq!(r.groups, vec![g("btrfs", "touch"), g("ext4", "touch")]);
        assert_eq!(r.stopped.len(), 1);
        assert_eq!(r.stopped[0].why, Beyond::Maximum);
    }
}
