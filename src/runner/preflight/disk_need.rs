//! The run's disk need: the most the work directory holds at once (the scratch copy, the
//! images and source trees kept for the whole run, a point's log image), by data set
//! ([`Held`]), and the margin the free space must leave above it. A model of what the run
//! will write, beside the refusals the preflight makes from it; the dry run prints the same
//! figure (`Sized::disk_bytes`).

use super::logs::{log_target, OWN_LOG};
use crate::plan::{Location, Plan, TargetConfig};
use crate::runner::fs_sizes::{self, IMAGE_METADATA};
use crate::workload::{self, StartState};

/// What the file systems hold, per data set of the plan: the largest, which sizes every
/// image and the scratch copy, and the sum over all of them, which the images and source
/// trees kept for the whole run hold together.
#[derive(Debug, Clone, Copy)]
pub struct Held {
    pub largest: u64,
    pub all: u64,
    pub datasets: u64,
}

impl Held {
    /// `largest` beside the data sets' own sizes `each` (their sum is never taken below
    /// `largest`, so an estimate that missed a data set is not smaller than before).
    pub fn new(largest: u64, each: &[u64]) -> Held {
        let datasets = each.len().max(1) as u64;
        Held {
            largest,
            all: each.iter().sum::<u64>().max(largest),
            datasets,
        }
    }

    /// One data set of `bytes`.
    pub fn one(bytes: u64) -> Held {
        Held::new(bytes, &[bytes])
    }
}

/// How far above its estimated peak a plan's disk need is checked: the estimate counts the
/// data and a fixed allowance per image, not each file system's own metadata (inode tables,
/// journals, btrfs's duplicated metadata), and a run that fills the host's disk ends its
/// cells in I/O errors rather than measurements (a scale-1 study modelled at 69.2 GiB ran
/// out on 72.8 GiB).
pub const SPACE_MARGIN_PCT: u64 = 10;

/// `need` with [`SPACE_MARGIN_PCT`] on top.
pub fn with_margin(need: u64) -> u64 {
    need.saturating_add(need / 100 * SPACE_MARGIN_PCT)
}

/// The most disk the work directory holds at once: the scratch copy source and the most a
/// cell writes into its sparse image, plus the populated images kept for the whole run (one
/// per loop target: the data set and some metadata) with each one's clone (kept between
/// cells to be restored, not copied again), and the source trees kept for the whole run
/// (`workload::source`: the dated data set, and its changed copy for `sync`, per data set),
/// the point's `log_target` file system when a workload has one ([`LOG_IMAGE_BYTES`]), and
/// the baseline's file system beside a candidate's measured in turn ([`beside_images`]).
/// An aged plan keeps its aged images instead of populated ones ([`fs_sizes::aged_need`]).
/// With several data sets the kept images and trees hold each data set at its own size
/// (`held.all`), not each at the largest's.
pub fn disk_need(plan: &Plan, held: Held) -> u64 {
    let per_set = populated_images(plan);
    4 * held.largest
        + 256 * MIB
        + 2 * per_set * (held.all + held.datasets * IMAGE_METADATA)
        + fs_sizes::aged_need(plan, held.largest)
        + source_trees(plan) * held.all
        + log_images(plan) * LOG_IMAGE_BYTES
        + beside_images(plan) * (held.largest + IMAGE_METADATA)
}

/// How many copies of the baseline's file system the run holds beside a candidate's at
/// once: one, made for a candidate cell whose read-only points are measured in turn with
/// the baseline (a copy of its populated image, or a fresh one the workload lays its tree
/// on) and removed after it, when the plan measures any that way.
pub(super) fn beside_images(plan: &Plan) -> u64 {
    let candidate = |t: &TargetConfig| t.name != plan.baseline && on_loop(t);
    u64::from(
        pairs_in_turn(plan)
            && plan.targets.iter().any(candidate)
            && plan.workloads.iter().any(|w| measured_in_turn(w)),
    )
}

/// Whether the plan measures read-only points in turn with its baseline at all: asked for
/// (`in_turn`), on fresh file systems (not aged), with a loop-image baseline
/// (`runner::walk`'s `beside` also asks a loop-image candidate, alone, without a log target).
pub fn pairs_in_turn(plan: &Plan) -> bool {
    let baseline = plan.targets.iter().find(|t| t.name == plan.baseline);
    plan.in_turn && plan.age_pct.is_none() && baseline.is_some_and(on_loop)
}

/// Whether workload `name` has points measured in turn ([`workload::Workload::in_turn`]).
pub fn measured_in_turn(name: &str) -> bool {
    workload::by_name(name).is_some_and(|w| w.in_turn(&workload::Point::default()))
}

fn on_loop(t: &TargetConfig) -> bool {
    matches!(t.location, Location::Loop)
}

const MIB: u64 = 1 << 20;

/// What one point's `log_target` file system may hold: PostgreSQL's WAL at its peak (its
/// file system's own metadata fits in the overshoot that bound allows for).
pub const LOG_IMAGE_BYTES: u64 = crate::workload::pg::WAL_PEAK_BYTES;

/// How many `log_target` images the run holds at once: one per point that has one, made
/// fresh for the point and removed after it, so at most one (a log on a named device or
/// directory writes nothing into the work directory).
pub(super) fn log_images(plan: &Plan) -> u64 {
    let on_loop = |w: &String| {
        log_target(plan, w).is_some_and(|name| {
            name == OWN_LOG
                || plan
                    .targets
                    .iter()
                    .find(|t| t.name == name)
                    .is_some_and(|t| matches!(t.location, Location::Loop))
        })
    };
    u64::from(plan.workloads.iter().any(on_loop))
}

/// How many source trees outside the targets the run keeps for each data set: the most any
/// of its workloads reads (they share the dated data set).
pub(super) fn source_trees(plan: &Plan) -> u64 {
    plan.workloads
        .iter()
        .filter_map(|n| workload::by_name(n))
        .map(|w| w.spec().source_trees)
        .max()
        .unwrap_or(0)
}

/// How many populated images the run keeps at once for each data set: one per loop target
/// for each layout the plan's workloads start from (the data set, the dated data set, a
/// workload's own state: see `golden::populate`); none in an aged plan, whose cells copy aged images instead.
pub(super) fn populated_images(plan: &Plan) -> u64 {
    if plan.age_pct.is_some() {
        return 0;
    }
    let workloads: Vec<_> = plan
        .workloads
        .iter()
        .filter_map(|n| workload::by_name(n))
        .collect();
    let layouts = [StartState::DataSet, StartState::DatedDataSet]
        .into_iter()
        .filter(|&start| workloads.iter().any(|w| w.spec().start == start))
        .count() as u64
        + workloads
            .iter()
            .filter(|w| w.spec().start == StartState::OwnState)
            .count() as u64;
    layouts
        * plan
            .targets
            .iter()
            .filter(|t| matches!(t.location, Location::Loop))
            .count() as u64
}
