//! The tune's answer, built once from its setup and its records: the best configuration
//! with its gain over the defaults (interval and decision), the runners-up the race could
//! not separate from it, the best safe one when the best gives up safety, each parameter's
//! importance, every candidate's runs and fate, and the commands that apply the answer.
//! Every output (terminal, JSON, `best.toml`, the chart) reads this one model, so an unsafe
//! winner carries its label in all of them.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::afford::Afforded;
use super::importance::{importance, Importance};
use super::race::{scores, standing, Fate};
use super::sample;
use super::setup::{Candidate, Setup, UnsafeValue, DEFAULTS};
use crate::plan::TargetConfig;
use crate::report::key_metric;
use crate::results::{Measurement, Status};
use crate::stats::sequential::Looks;
use crate::stats::verdicts;

/// One candidate as the answer shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub name: String,
    /// Its settings away from the defaults.
    pub changes: String,
    /// Repetitions with an ok record.
    pub runs: usize,
    pub fate: Fate,
    /// Key metric against the leader in %, as the race judged it (at equal CPU steal where
    /// adjusted), the geometric mean over the points.
    pub vs_best_pct: Option<f64>,
    #[serde(rename = "unsafe", skip_serializing_if = "Vec::is_empty")]
    pub unsafe_values: Vec<UnsafeValue>,
}

/// The best configuration against the defaults at one workload point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gain {
    pub workload: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub variant: String,
    pub threads: u32,
    pub metric: String,
    pub pct: f64,
    pub ci95: Option<(f64, f64)>,
    /// better / worse / equivalent / undecided, after the two-stage step-up over the points.
    pub decision: String,
    /// Whether `pct` and `ci95` are the difference at equal CPU steal (the comparison was
    /// adjusted for it, `crate::stats::steal`), which can differ much from the ratio of the
    /// raw means when one side's runs lost more CPU to the hypervisor.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub at_equal_steal: bool,
}

/// The configuration to apply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Best {
    pub name: String,
    pub changes: String,
    pub mkfs_args: Vec<String>,
    pub mount_options: Vec<String>,
    /// The exact commands on a block device (DEVICE and MOUNTPOINT to be replaced).
    pub mkfs_command: Option<String>,
    pub mount_command: String,
    /// What it gives up, when it is unsafe; never empty for an unsafe configuration.
    #[serde(rename = "unsafe")]
    pub unsafe_values: Vec<UnsafeValue>,
    pub gain: Vec<Gain>,
}

/// The whole answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    pub fs: String,
    pub workloads: Vec<String>,
    pub design: String,
    pub space_configurations: usize,
    pub safe_only: bool,
    /// "decided", "the most runs reached, before the budget", "budget spent", or
    /// "interrupted".
    pub ended: String,
    pub best: Option<Best>,
    /// Not separated from the best: equivalent, or still undecided.
    pub runners_up: Vec<String>,
    /// When the best is unsafe: the best candidate that gives up nothing.
    pub best_safe: Option<String>,
    pub importance: Vec<Importance>,
    pub candidates: Vec<Row>,
    pub results: String,
    /// The candidates asked for and those the budget paid for at their minimum runs.
    pub afforded: Option<Afforded>,
    /// Candidates drawn whose minimum runs the budget did not reach.
    pub not_raced: Vec<String>,
}

/// Distinct repetitions of `name` with an ok record.
fn runs_of(ms: &[Measurement], name: &str) -> usize {
    let mut reps: Vec<u32> = ms
        .iter()
        .filter(|m| m.target == name && m.status == Status::Ok)
        .map(|m| m.repetition)
        .collect();
    reps.sort_unstable();
    reps.dedup();
    reps.len()
}

/// Candidate `name`'s fate in the answer: the race's (`raced`), unless every record it has
/// is `ok` and the budget (or an interruption) ended the race before its minimum runs
/// (not raced), or before those of the candidate it is compared with (undecided, where the
/// race could tell nothing and calls it failed).
fn fate_of(raced: Fate, ms: &[Measurement], name: &str) -> Fate {
    if ms
        .iter()
        .any(|m| m.target == name && m.status != Status::Ok)
    {
        return raced;
    }
    if runs_of(ms, name) < super::setup::MIN_RUNS as usize {
        return Fate::NotRaced;
    }
    match raced {
        Fate::Failed => Fate::Open,
        f => f,
    }
}

/// The best's gain over the defaults at each point, decided in one family.
fn gains(setup: &Setup, ms: &[Measurement], best: &str, looks: &Looks) -> Vec<Gain> {
    let points = verdicts::decide(ms, DEFAULTS, setup.plan.margin_pct, looks, &key_metric);
    points
        .iter()
        .filter_map(|p| {
            let i = p.groups.iter().position(|g| g.key.target == best)?;
            let c = p.vs_baseline(i)?;
            Some(Gain {
                workload: p.workload.clone(),
                variant: p.variant.clone(),
                threads: p.threads,
                metric: p.key.name.clone(),
                pct: c.pct_diff,
                ci95: c.pct_ci95,
                decision: c
                    .verdict
                    .as_ref()
                    .map_or("undecided", |v| v.decision.as_str())
                    .to_string(),
                at_equal_steal: c
                    .verdict
                    .as_ref()
                    .is_some_and(|v| v.steal.is_some_and(|n| n.steal_adjusted)),
            })
        })
        .collect()
}

fn best_of(setup: &Setup, c: &Candidate, ms: &[Measurement], looks: &Looks) -> Best {
    let t: TargetConfig = super::setup::target(&setup.space, c);
    let (mkfs_command, mount_command) =
        crate::provision::planned::device_commands(&t, "DEVICE", Path::new("MOUNTPOINT"));
    Best {
        name: c.name.clone(),
        changes: setup.changes(c),
        gain: if c.name == DEFAULTS {
            Vec::new()
        } else {
            gains(setup, ms, &c.name, looks)
        },
        mkfs_args: t.mkfs_args,
        mount_options: t.mount_options,
        mkfs_command,
        mount_command,
        unsafe_values: setup.unsafe_values(c),
    }
}

/// The answer from `setup` and its records `ms`; `interrupted` when the race was cut short.
pub fn build(setup: &Setup, ms: &[Measurement], interrupted: bool, results: &Path) -> Answer {
    let looks = Looks::of_runs(&setup.plan.runs);
    let names: Vec<String> = setup.candidates.iter().map(|c| c.name.clone()).collect();
    let s = standing(ms, &setup.candidates, setup.plan.margin_pct, &looks);
    let sc = scores(&s.points, &names, s.leader.as_deref().unwrap_or_default());
    let lead = s.leader.as_ref().and_then(|l| sc.get(l).copied().flatten());
    let candidates: Vec<Row> = setup
        .candidates
        .iter()
        .map(|c| Row {
            name: c.name.clone(),
            changes: setup.changes(c),
            runs: runs_of(ms, &c.name),
            fate: fate_of(
                s.fates.get(&c.name).copied().unwrap_or(Fate::Failed),
                ms,
                &c.name,
            ),
            vs_best_pct: sc
                .get(&c.name)
                .copied()
                .flatten()
                .zip(lead)
                .map(|(x, l)| ((x - l).exp() - 1.0) * 100.0),
            unsafe_values: setup.unsafe_values(c),
        })
        .collect();
    let safe: Vec<String> = candidates
        .iter()
        .filter(|r| r.unsafe_values.is_empty() && !matches!(r.fate, Fate::Failed | Fate::NotRaced))
        .map(|r| r.name.clone())
        .collect();
    let best_c = s.leader.as_ref().and_then(|l| setup.candidate(l));
    let best = best_c.map(|c| best_of(setup, c, ms, &looks));
    let best_safe = best
        .as_ref()
        .filter(|b| !b.unsafe_values.is_empty())
        .and_then(|_| super::race::best(&sc, &safe));
    Answer {
        fs: setup.fs.name().to_string(),
        workloads: setup.plan.workloads.clone(),
        design: setup.design.describe().to_string(),
        space_configurations: sample::size(&setup.space),
        safe_only: setup.safe_only,
        ended: if interrupted {
            "interrupted"
        } else if s.open.is_empty() && s.leader.is_some() && !not_raced(&candidates) {
            "decided"
        } else if at_most_runs(ms, &s) {
            "the most runs reached, before the budget"
        } else {
            "budget spent"
        }
        .to_string(),
        best,
        runners_up: candidates
            .iter()
            .filter(|r| matches!(r.fate, Fate::Equivalent | Fate::Open | Fate::Traded))
            .map(|r| r.name.clone())
            .collect(),
        best_safe,
        importance: importance(setup, ms),
        not_raced: candidates
            .iter()
            .filter(|r| r.fate == Fate::NotRaced)
            .map(|r| r.name.clone())
            .collect(),
        candidates,
        results: results.display().to_string(),
        afforded: setup.afforded.clone(),
    }
}

/// Whether every comparison still open has both sides at the most runs a candidate gets:
/// the race ends there, whatever is left of its budget.
fn at_most_runs(ms: &[Measurement], s: &super::race::Standing) -> bool {
    let most = super::setup::MAX_RUNS as usize;
    let leader = s.leader.as_deref().unwrap_or_default();
    !s.open.is_empty()
        && runs_of(ms, leader) >= most
        && s.open.iter().all(|o| runs_of(ms, &o.group.target) >= most)
}

/// Whether some candidate was not raced.
fn not_raced(rows: &[Row]) -> bool {
    rows.iter().any(|r| r.fate == Fate::NotRaced)
}
