//! `--runs auto`: the time budget spent where the answer is still open.
//!
//! Every group (target × workload × thread count) first gets the minimum repetitions. Then,
//! round after round, the run asks the run's decisions (the report's own,
//! [`crate::stats::verdicts`]) which disk-target comparisons
//! with the baseline are still `undecided`, orders them by the estimated runs that would
//! decide them (closest first), and gives one more repetition to the candidate's group, the
//! baseline's, or both, whichever narrows the comparison's interval most
//! ([`crate::stats::next_run_side`]: a noisy candidate beside a steady baseline gets its
//! own runs), for as many of them as the remaining budget pays for, from what their cells
//! cost so far. Comparisons the estimate cannot promise a decision for within what is left
//! (their estimated runs cost more than the remaining budget, or none within
//! [`crate::stats::decision::MAX_RUNS_ESTIMATE`] runs) wait until no other is open, then
//! get the rest: last, not never. The estimate takes today's spread as the truth, and one
//! wild run inflates it; more runs are how that is found out, but not at the price of the
//! comparisons a few runs would decide. It stops when every comparison is decided, when
//! every group of an undecided one reaches the plan's maximum, or when the budget is spent.
//! A reference target (tmpfs) is never a reason to run more: it is not ranked.
//!
//! The budget is the run's wall time from its start, minimum repetitions included; the
//! minimum is always run, even past the budget (a comparison needs it), and the dry run
//! says when that alone cannot fit.

use std::collections::{BTreeMap, HashMap};

use crate::plan::Plan;
use crate::report::key_metric;
use crate::results::record::CellId;
use crate::results::store::Loaded;
use crate::stats::sequential::Looks;
use crate::stats::verdicts::{self, Point};
use crate::stats::{next_run_side, Side};

/// One (target, workload, thread count): the unit a round repeats.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Group {
    pub target: String,
    pub workload: String,
    /// The data set's profile, when the run has several.
    pub dataset: Option<String>,
    pub threads: u32,
}

impl Group {
    /// Whether `cell` is one of this group's repetitions.
    pub fn holds(&self, cell: &CellId) -> bool {
        self.target == cell.target
            && self.workload == cell.workload
            && self.threads == cell.threads
            && self.dataset == cell.dataset
    }
}

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
        .map(|(i, v)| Open {
            group: Group {
                target: p.groups[i].key.target.clone(),
                workload: p.workload.clone(),
                dataset: p.dataset.clone(),
                threads: p.threads,
            },
            variant: p.variant.clone(),
            runs_to_decide: v.runs_to_decide,
            side: side_for(base_raw, p.raw(i), looks),
        })
        .collect()
}

/// What one round will repeat, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Round {
    /// The groups to give one more repetition, in the order their questions were chosen.
    pub groups: Vec<Group>,
    /// Estimated seconds the round costs.
    pub cost_s: f64,
    /// Undecided comparisons the round works on.
    pub questions: usize,
}

/// Chooses the next round: undecided comparisons closest to a decision first (those without
/// an estimate last); each needs its candidate's group, the baseline's or both repeated
/// once, as its `side` says (shared groups are paid once); a comparison is taken when what it adds fits in
/// `remaining_s` and none of its groups has reached `max_runs`.
pub fn plan_round(
    open: &[Open],
    baseline: &str,
    runs_done: &HashMap<Group, u32>,
    max_runs: u32,
    cost_s: &dyn Fn(&Group) -> f64,
    remaining_s: f64,
) -> Round {
    let sides_of = |o: &Open| -> Vec<Group> {
        let base = Group {
            target: baseline.to_string(),
            ..o.group.clone()
        };
        match o.side {
            Side::Candidate => vec![o.group.clone()],
            Side::Baseline => vec![base],
            Side::Both => vec![o.group.clone(), base],
        }
    };
    let mut order: Vec<&Open> = open.iter().collect();
    order.sort_by_key(|o| (o.runs_to_decide.unwrap_or(usize::MAX), o.group.clone()));
    // Comparisons whose estimate fits in what is left first and alone; the others only
    // once none of those is left, so the rounds go where the budget can still decide.
    let at_max = |g: &Group| runs_done.get(g).copied().unwrap_or(0) >= max_runs;
    let reachable = |o: &&Open| {
        o.runs_to_decide
            .is_some_and(|n| n as f64 * sides_of(o).iter().map(cost_s).sum::<f64>() <= remaining_s)
    };
    if order
        .iter()
        .any(|o| reachable(o) && !sides_of(o).iter().any(at_max))
    {
        order.retain(reachable);
    }
    let mut round = Round {
        groups: Vec::new(),
        cost_s: 0.0,
        questions: 0,
    };
    for o in order {
        let needed: Vec<Group> = sides_of(o)
            .into_iter()
            .filter(|g| !round.groups.contains(g))
            .collect();
        if needed.iter().any(at_max) {
            continue;
        }
        let add: f64 = needed.iter().map(cost_s).sum();
        if round.cost_s + add <= remaining_s {
            round.cost_s += add;
            round.groups.extend(needed);
            round.questions += 1;
        }
    }
    round
}

/// What cells have cost so far, per group, for the budget and the progress ETA.
#[derive(Debug, Default, Clone)]
pub struct Costs {
    per_group: BTreeMap<Group, Spent>,
}

/// What one group's finished cells took.
#[derive(Debug, Default, Clone, Copy)]
struct Spent {
    seconds: f64,
    cells: u32,
    longest: f64,
}

impl Costs {
    /// Records one finished cell's wall seconds.
    pub fn add(&mut self, g: Group, seconds: f64) {
        let e = self.per_group.entry(g).or_default();
        e.seconds += seconds;
        e.cells += 1;
        e.longest = e.longest.max(seconds);
    }

    /// The mean cost of `g`'s cells; else of the target's cells; else of all cells; else 0.
    /// What a round is planned from.
    pub fn estimate(&self, g: &Group) -> f64 {
        let spent = self.known(g);
        let cells: u32 = spent.iter().map(|s| s.cells).sum();
        match cells {
            0 => 0.0,
            n => spent.iter().map(|s| s.seconds).sum::<f64>() / f64::from(n),
        }
    }

    /// The longest of `g`'s cells, with the same fallbacks: what must still be left of the
    /// budget to start one, so that the last cells of a run do not overrun it (with the
    /// mean, the default run's last round ended 2.8 s past its budget).
    pub fn longest(&self, g: &Group) -> f64 {
        self.known(g).iter().map(|s| s.longest).fold(0.0, f64::max)
    }

    /// What is known of `g`'s cost: its own cells; else its target's; else every group's.
    fn known(&self, g: &Group) -> Vec<Spent> {
        if let Some(s) = self.per_group.get(g) {
            return vec![*s];
        }
        let target: Vec<Spent> = self
            .per_group
            .iter()
            .filter(|(k, _)| k.target == g.target)
            .map(|(_, s)| *s)
            .collect();
        match target.is_empty() {
            false => target,
            true => self.per_group.values().copied().collect(),
        }
    }
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
        Group {
            target: t.into(),
            workload: w.into(),
            dataset: None,
            threads: 1,
        }
    }

    fn question(t: &str, w: &str, runs: Option<usize>) -> Open {
        Open {
            group: g(t, w),
            variant: String::new(),
            runs_to_decide: runs,
            side: Side::Both,
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
    }

    #[test]
    fn a_round_takes_the_closest_questions_that_fit_and_pays_shared_groups_once() {
        let open = vec![
            question("btrfs", "scan", Some(9)),
            question("xfs", "scan", Some(2)),
            question("ntfs", "delete", Some(4)),
            question("exfat", "touch", None),
        ];
        let done = HashMap::new();
        // Every cell costs 2 s; 7 s left.
        let r = plan_round(&open, "ext4", &done, 30, &|_| 2.0, 7.0);
        // xfs scan (closest) + ext4 scan = 4 s; ntfs delete needs 4 s more: too much;
        // btrfs scan shares ext4 scan, so it adds 2 s: fits.
        assert_eq!(
            r.groups,
            vec![g("xfs", "scan"), g("ext4", "scan"), g("btrfs", "scan")]
        );
        assert_eq!(r.cost_s, 6.0);
        assert_eq!(r.questions, 2);
        // Nothing fits in 1 s.
        assert!(plan_round(&open, "ext4", &done, 30, &|_| 2.0, 1.0)
            .groups
            .is_empty());
        // With room for all, the question without an estimate waits for the others…
        let all = plan_round(&open, "ext4", &done, 30, &|_| 1.0, 99.0);
        assert_eq!(all.questions, 3);
        assert!(!all.groups.contains(&g("exfat", "touch")));
        // …and is taken once they are decided.
        let last = plan_round(&open[3..], "ext4", &done, 30, &|_| 1.0, 99.0);
        assert_eq!(last.groups, vec![g("exfat", "touch"), g("ext4", "touch")]);
    }

    /// Measured (default run, 2026-11-25): four `cold-read` comparisons estimated at
    /// 118–144 more runs took a share of every round while `dupes` and `copy` needed 16–17.
    #[test]
    fn questions_the_budget_cannot_decide_wait_for_those_it_can() {
        let open = vec![
            question("xfs", "cold-read", Some(132)),
            question("xfs", "dupes", Some(17)),
            question("btrfs", "copy", None),
        ];
        let done = HashMap::new();
        // 1 s a cell, 100 s left: only dupes (17 × 2 s) can be decided.
        let r = plan_round(&open, "ext4", &done, 30, &|_| 1.0, 100.0);
        assert_eq!(r.groups, vec![g("xfs", "dupes"), g("ext4", "dupes")]);
        // With room for cold-read's runs too, both, closest first.
        let r = plan_round(&open, "ext4", &done, 30, &|_| 1.0, 300.0);
        assert_eq!(r.questions, 2);
        assert_eq!(r.groups[0], g("xfs", "dupes"));
        // Once dupes is decided (or at its maximum), the others get the rounds.
        let r = plan_round(&open[..1], "ext4", &done, 30, &|_| 1.0, 100.0);
        assert_eq!(
            r.groups,
            vec![g("xfs", "cold-read"), g("ext4", "cold-read")]
        );
        let at_max = HashMap::from([(g("xfs", "dupes"), 30)]);
        let r = plan_round(&open, "ext4", &at_max, 30, &|_| 1.0, 100.0);
        assert_eq!(r.questions, 2, "cold-read and copy");
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
    }

    #[test]
    fn costs_fall_back_from_group_to_target_to_all() {
        let mut c = Costs::default();
        assert_eq!(c.estimate(&g("ext4", "scan")), 0.0);
        c.add(g("ext4", "scan"), 2.0);
        c.add(g("ext4", "scan"), 4.0);
        c.add(g("ntfs", "delete"), 10.0);
        assert_eq!(c.estimate(&g("ext4", "scan")), 3.0);
        assert_eq!(c.estimate(&g("ext4", "touch")), 3.0);
        assert_eq!(c.estimate(&g("xfs", "touch")), 16.0 / 3.0);
        assert_eq!(c.longest(&g("ext4", "scan")), 4.0);
        assert_eq!(c.longest(&g("ext4", "touch")), 4.0);
        assert_eq!(c.longest(&g("xfs", "touch")), 10.0);
    }
}
