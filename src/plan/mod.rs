//! What to run: targets, workloads, threads, repetitions, data set. Built from the catalogue,
//! an optional TOML plan file and command-line flags, in that order of precedence (flags win).

pub mod catalogue;
pub mod cells;
pub mod cpus;
pub mod file;
pub mod fs_kind;
pub mod fs_size;
pub mod io_hosts;
pub mod placement;
pub mod resolve;
pub mod series;
pub mod settings;
pub mod size;
pub mod study;
pub mod target;
pub mod trace_flags;
pub mod value;

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::dataset::{DatasetSpec, Profile};
pub use target::{FsKind, Location, TargetConfig};

/// A fully resolved plan: everything the runner needs, nothing left to defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub targets: Vec<TargetConfig>,
    pub workloads: Vec<String>,
    pub threads: Vec<usize>,
    pub runs: Runs,
    pub dataset: DatasetSpec,
    /// Further profiles of the same data set (`--profile small,medium`): every cell runs
    /// once on each, as the file-management study ran its four data sets. Empty for the
    /// usual plan of one data set, which then records no data-set label.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_profiles: Vec<Profile>,
    /// Further scales of every profile (`--scale 0.01,0.1`): the data-set series is each
    /// profile at `dataset.scale`, then at each of these ([`series`]). Empty for one scale.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_scales: Vec<f64>,
    /// The target every other is compared with (the first, unless named).
    pub baseline: String,
    /// Per-measurement time limit; a stuck workload becomes a `timeout` record.
    #[serde(with = "secs")]
    pub timeout: Duration,
    /// Equivalence margin in percent of the baseline mean: a difference whose 90 % interval
    /// lies inside ±margin is reported as `equivalent`. Results written before the margin
    /// existed read back with the default.
    #[serde(default = "default_margin")]
    pub margin_pct: f64,
    /// No key metric may come from a shorter measured phase: warm, read-only phases repeat
    /// their pass until they reach it; others are flagged when they fall short.
    #[serde(default = "default_phase_floor", with = "secs")]
    pub phase_floor: Duration,
    /// `[workload.NAME]` tables, handed to the workload untouched.
    pub workload_options: BTreeMap<String, toml::Table>,
    /// `--age PCT`: every target's file system is aged to PCT % full by a seeded churn
    /// before it is measured (one aged image per target, cloned per cell); `None`: fresh.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub age_pct: Option<f64>,
    /// `--age-free-extent`: the pieces aging cuts the free space into, bytes; `None`: the
    /// default (`provision::fragment::DEFAULT_FREE_EXTENT`). Only with `age_pct`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub age_free_extent: Option<u64>,
    /// `--fs-size`: the size of every loop image unless a target sets its own; `None`: the
    /// default of [`fs_size::loop_size`] (64 GiB, or for an aged plan 8× the data set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fs_size: Option<u64>,
    /// Under MPI: whether each rank works in its own subtree of a `dir:` target or all
    /// ranks in one tree (`--rank-dirs`). A plan run by one process ignores it.
    #[serde(default, skip_serializing_if = "RankDirs::is_own")]
    pub rank_dirs: RankDirs,
    /// `--max-steal`: a measured phase during which a virtual machine's hypervisor kept
    /// more than this share of the CPU (%) is set aside (`disturbed`) and measured again;
    /// `None` (`off`): never. Results written before it existed read back with the default.
    #[serde(default = "default_max_steal")]
    pub max_steal_pct: Option<f64>,
    /// `--cpus`: whether a cell of fewer threads than CPUs runs on CPUs of its own with its
    /// file system's daemon ([`cpus`]). Results written before it existed read back `all`.
    #[serde(default = "cpus::Cpus::before_binding")]
    pub cpus: cpus::Cpus,
    /// `--in-turn`: a candidate's read-only points are measured in turn with the
    /// baseline's (`crate::workload::Workload::in_turn`). Results written before it existed
    /// read back `false`: none was.
    #[serde(default)]
    pub in_turn: bool,
}

/// Where the ranks of an MPI job work in a `dir:` target (`--rank-dirs own|shared`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RankDirs {
    /// Each rank in its own subtree `PATH/fsarena-rank-K` (mdtest's unique-directory case).
    #[default]
    Own,
    /// All ranks in one tree: common directories, each rank's files tagged `.rK`
    /// (mdtest's shared-directory case: contention on the same directories).
    Shared,
}

impl RankDirs {
    pub fn is_own(&self) -> bool {
        *self == RankDirs::Own
    }

    pub fn parse(s: &str) -> Option<RankDirs> {
        match s {
            "own" => Some(RankDirs::Own),
            "shared" => Some(RankDirs::Shared),
            _ => None,
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            RankDirs::Own => "own",
            RankDirs::Shared => "shared",
        }
    }
}

/// The fill levels `--age` accepts: above 0 and below this.
pub const MAX_AGE_PCT: f64 = 95.0;

/// How many repetitions: fixed, or `auto`: `min` for every group, then further runs for
/// the comparisons still undecided, cheapest decision first, until each is decided or
/// beyond the budget (it would cost more than is left, or a group reached `max`), or the
/// run's wall time reaches `budget`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Runs {
    Fixed(u32),
    Auto {
        min: u32,
        max: u32,
        #[serde(default = "default_budget", with = "secs")]
        budget: Duration,
    },
}

impl Plan {
    /// A plan of `targets`, `workloads` and `dataset` with every other choice at its
    /// default: one thread, one run, no baseline named, the default timeout, margin and
    /// phase floor, no workload options, fresh file systems. What code that builds a plan
    /// itself (tests, tools) starts from, changing the fields it cares about.
    pub fn of(targets: Vec<TargetConfig>, workloads: &[&str], dataset: DatasetSpec) -> Plan {
        Plan {
            targets,
            workloads: workloads.iter().map(|w| w.to_string()).collect(),
            threads: vec![1],
            runs: Runs::Fixed(1),
            dataset,
            extra_profiles: Vec::new(),
            extra_scales: Vec::new(),
            baseline: String::new(),
            timeout: DEFAULT_TIMEOUT,
            margin_pct: DEFAULT_MARGIN_PCT,
            phase_floor: DEFAULT_PHASE_FLOOR,
            workload_options: BTreeMap::new(),
            age_pct: None,
            age_free_extent: None,
            fs_size: None,
            rank_dirs: RankDirs::Own,
            max_steal_pct: None,
            cpus: cpus::Cpus::Auto,
            in_turn: false,
        }
    }
}

impl Runs {
    /// The most repetitions this setting can ask for.
    pub fn max(self) -> u32 {
        match self {
            Runs::Fixed(n) => n,
            Runs::Auto { max, .. } => max,
        }
    }
    /// The wall-time budget of `auto`; `None` for a fixed count.
    pub fn budget(self) -> Option<Duration> {
        match self {
            Runs::Fixed(_) => None,
            Runs::Auto { budget, .. } => Some(budget),
        }
    }
    /// The repetitions always run.
    pub fn min(self) -> u32 {
        match self {
            Runs::Fixed(n) => n,
            Runs::Auto { min, .. } => min,
        }
    }
}

/// The default comparison: small data set, file-management workloads, 3 repetitions.
pub const DEFAULT_WORKLOADS: &[&str] = &[
    "create",
    "copy",
    "sync",
    "scan",
    "search",
    "dupes",
    "touch",
    "chmod",
    "copy-verify",
    "cold-read",
    "delete",
];
/// Repetitions every group gets before `auto` spends the budget (and `--runs auto`'s floor).
pub const DEFAULT_RUNS: u32 = 3;
/// The most repetitions `auto` gives one group.
pub const MAX_AUTO_RUNS: u32 = 30;
/// The time budget of an `auto` run when none is given: the whole default run's wall time.
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(300);
/// The time budget of `fsarena tune` when none is given: a race of the default 16
/// candidates at their minimum runs.
pub const DEFAULT_TUNE_BUDGET: Duration = Duration::from_secs(15 * 60);
/// The shortest measured phase a key metric may come from (`--phase-floor`).
///
/// A quarter of a second: 60 scheduler ticks even at 250 Hz, so timer and scheduling noise
/// stay small beside the run-to-run spread. Half a second until 2026-11-30: read-only cells
/// of the default run varied alike between cells at both floors (their log spread 0.149
/// against 0.134 on this dev machine kind, not a difference one sitting can tell) while each
/// cost 38 % less, so a run reaches its decisions sooner (BENCHMARKS.md, "The phase floor").
pub const DEFAULT_PHASE_FLOOR: Duration = Duration::from_millis(250);
/// Data-set scale when neither flag nor file says: small enough for a first run.
pub const DEFAULT_SCALE: f64 = 0.01;
/// The equivalence margin when none is given: ±5 % of the baseline mean.
pub const DEFAULT_MARGIN_PCT: f64 = 5.0;

/// The default `--max-steal`: a measured phase during which the hypervisor kept more than
/// this share of the machine's CPU time (%) is set aside and measured again. Chosen from
/// the distribution of two default runs ([`crate::stats::disturbed`]).
pub const DEFAULT_MAX_STEAL_PCT: f64 = 20.0;
/// Per-measurement time limit when neither flag nor file says.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// Why a plan could not be built. Each is one line that says what to do.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("{path}:{line}:{column}: {message}")]
    Syntax {
        path: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("cannot read plan {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("unknown target `{name}`; valid: {valid}, dir:PATH, NAME@/dev/DEVICE")]
    UnknownTarget { name: String, valid: String },
    #[error("unknown workload `{name}`; valid: {valid}")]
    UnknownWorkload { name: String, valid: String },
    #[error("unknown file system `{name}`; valid: {valid}")]
    UnknownFs { name: String, valid: String },
    #[error("invalid {what} `{value}`: {why}")]
    Invalid {
        what: &'static str,
        value: String,
        why: String,
    },
    #[error("baseline `{0}` is not one of the plan's targets")]
    UnknownBaseline(String),
    #[error("two targets are named `{0}`; give each a distinct name")]
    DuplicateTarget(String),
    #[error("{0} cannot be combined with --resume, which continues the plan recorded in the results directory unchanged (only --budget, --work-dir, --keep, --quiet, --allow-device and --wipe apply); start a new run with --out instead")]
    ResumeConflict(String),
    #[error("no targets to run (none given, and none of the catalogue's default targets is supported here: run `fsarena doctor`)")]
    NoTargets,
}

fn default_margin() -> f64 {
    DEFAULT_MARGIN_PCT
}

fn default_max_steal() -> Option<f64> {
    None
}

fn default_phase_floor() -> Duration {
    DEFAULT_PHASE_FLOOR
}

fn default_budget() -> Duration {
    DEFAULT_BUDGET
}

mod secs {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let v = f64::deserialize(d)?;
        Duration::try_from_secs_f64(v).map_err(serde::de::Error::custom)
    }
}
