//! The run's decisions, shared by the report and the time budget: every key-metric
//! comparison of a run with its baseline gets one of better / worse / equivalent / undecided
//! ([`super::decision`]) with false-discovery-rate control over the whole run (the adaptive
//! two-stage step-up, [`ADJUSTMENT`]), and each
//! workload point's ranking (leader vs runner-up, last vs second-to-last among the disk
//! targets) rests on the same family. The report prints these verdicts and `--runs auto`
//! spends its budget on the undecided ones; both call [`decide`], so they cannot disagree.
//!
//! Memory targets (tmpfs) are compared with the baseline, but never ranked: they are a
//! reference ([`is_reference`]).
//!
//! * [`points`]: a workload point's groups (one per target) and the metric it is decided on.
//! * [`family`]: the family of comparisons, its adjustment and the verdicts.
//! * [`scale_check`]: whether each verdict holds across the data-set sizes of a run.

pub mod family;
pub mod fixed;
pub mod looks;
pub mod points;
mod pools;
pub mod scale_check;

pub use family::{verdict, Family};
pub use points::{is_reference, KeyMetric, Point, RankedPair};

use super::aggregate::aggregate;
use super::decision::{Adjustment, ALPHA};
use super::sequential::Looks;
use crate::plan::Plan;
use crate::results::store::Loaded;
use crate::results::Measurement;

/// The procedure [`decide`] adjusts a run's family with ([`Family::adaptive`]); a report
/// names the one its verdicts carry, and this one when nothing was decided.
pub const ADJUSTMENT: Adjustment = Adjustment::TwoStage;

/// The baseline the plan of `loaded` names, when its plan can be read.
pub fn planned_baseline(loaded: &Loaded) -> Option<String> {
    let plan: Plan = serde_json::from_value(loaded.host.plan.clone()).ok()?;
    Some(plan.baseline)
}

/// The looks the run's plan made ([`Looks::of_runs`]): a schedule for `--runs auto`, one
/// look for a fixed count or a plan that cannot be read.
pub fn planned_looks(loaded: &Loaded) -> Looks {
    serde_json::from_value::<Plan>(loaded.host.plan.clone())
        .map_or_else(|_| Looks::fixed(), |p| Looks::of_runs(&p.runs))
}

/// The target every comparison of a run is made against: the plan's baseline, else (results
/// whose plan cannot be read) the first target measured.
pub fn baseline(loaded: &Loaded) -> String {
    planned_baseline(loaded)
        .or_else(|| loaded.measurements.first().map(|m| m.target.clone()))
        .unwrap_or_default()
}

/// Every workload point of the run's `measurements`, decided against `baseline` within
/// ±`margin_pct` %: grouped per target ([`aggregate`]), gathered into points decided on the
/// metric `key_of` names for each workload, and every comparison judged in one family at
/// the `looks` the run made (sequentially for `--runs auto`: [`crate::stats::sequential`]).
pub fn decide(
    measurements: &[Measurement],
    baseline: &str,
    margin_pct: f64,
    looks: &Looks,
    key_of: &dyn Fn(&str) -> Option<KeyMetric>,
) -> Vec<Point> {
    let groups = aggregate(measurements, baseline, ALPHA);
    let mut points = points::gather(groups, key_of);
    family::decide_points(&mut points, baseline, margin_pct, looks);
    points
}
