//! The records written to `results.jsonl`: plain serde data, no behaviour beyond naming.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::monitor::Sample;

/// How a measurement ended. Only `Ok` measurements enter the statistics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    #[default]
    Ok,
    /// The file system ran out of space (ENOSPC) during the workload.
    Enospc,
    /// The device or file system failed I/O (EIO, EROFS after a shutdown).
    Eio,
    /// The per-measurement timeout expired.
    Timeout,
    /// SIGINT/SIGTERM arrived while it ran.
    Interrupted,
    /// Anything else, with a message in `error`.
    Error,
    /// Measured, but the file system failed its health check afterwards: kept, never averaged.
    Invalid,
    /// Measured while a virtual machine's hypervisor kept more of the CPU than the plan's
    /// `max_steal` allows ([`crate::stats::disturbed`]): kept, never averaged, and measured
    /// again (a later record of the same cell replaces it, as after an interrupt).
    Disturbed,
}

impl Status {
    /// Whether the measurement counts.
    pub fn is_ok(self) -> bool {
        self == Status::Ok
    }
    /// The status as written in results files and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Enospc => "enospc",
            Status::Eio => "eio",
            Status::Timeout => "timeout",
            Status::Interrupted => "interrupted",
            Status::Error => "error",
            Status::Invalid => "invalid",
            Status::Disturbed => "disturbed",
        }
    }

    /// The status with its error message, as reports list a run that did not end `ok`:
    /// `eio (write: Input/output error)`, or the status alone when the message only repeats
    /// it (an interrupted run's error is "interrupted").
    pub fn with_error(self, error: Option<&str>) -> String {
        match error.filter(|e| *e != self.as_str()) {
            Some(e) => format!("{} ({e})", self.as_str()),
            None => self.as_str().to_string(),
        }
    }
}

/// One line of `results.jsonl`. The first line of a file is always `Host`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "snake_case")]
pub enum Record {
    Host(Box<HostFacts>),
    Measurement(Box<Measurement>),
    /// A comparison `--runs auto` stopped giving runs ([`super::budget_stop`]); a file
    /// from before it has none, and reads as before.
    BudgetStop(Box<super::budget_stop::BudgetStop>),
    /// One invocation of `fsarena run` on this file ended ([`RunEnd`]); a file from before it
    /// has none, and reads as before.
    RunEnd(RunEnd),
}

/// When one invocation of `fsarena run` (a first run, or each `--resume` of it) began and
/// finished walking its plan, its cleanup included. The records' own times say when each
/// cell ran, not when the run stopped, and a results file copied or unpacked later keeps no
/// file time of its run: a run's wall time is read from here (`bench/harness_time.py`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RunEnd {
    pub started_unix: f64,
    pub finished_unix: f64,
}

/// Facts about the machine and the invocation, recorded once per run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct HostFacts {
    pub fsarena_version: String,
    pub kernel: String,
    pub cpu_model: String,
    pub cpus: usize,
    pub mem_total_bytes: u64,
    /// Model of the device that holds the work directory, when sysfs tells it.
    pub work_device: Option<String>,
    pub command_line: Vec<String>,
    pub started_unix: f64,
    /// The resolved plan, so `--resume` and `report` know what was asked for.
    pub plan: serde_json::Value,
    /// Targets of the plan this host could not run, with the reason.
    #[serde(default)]
    pub skipped_targets: Vec<(String, String)>,
    /// Workloads of the plan this host cannot run (a program missing), with the reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped_workloads: Vec<(String, String)>,
    /// The generated data set's bytes ÷ their zstd-3 size, over a sample (how much a
    /// compressing file system could save on it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset_zstd_ratio: Option<f64>,
}

/// One measured cell: a target × workload × variant × threads × repetition.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Measurement {
    pub target: String,
    pub fs: String,
    pub workload: String,
    /// The data set's profile, when the plan runs every cell on several (`--profile
    /// small,medium`); absent when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<String>,
    /// Distinguishes points of a multi-point workload (an `io` sweep point such as
    /// `randread-bs4k-qd32-j1-small`); empty for single-point workloads.
    #[serde(default)]
    pub variant: String,
    /// The parameters behind `variant`, for charts (rw, bs, iodepth, …).
    #[serde(default)]
    pub params: BTreeMap<String, serde_json::Value>,
    pub repetition: u32,
    pub threads: u32,
    pub status: Status,
    pub error: Option<String>,
    /// snake_case numbers: `seconds`, `files_per_s`, `mb_per_s`, `device_write_bytes`, …
    pub metrics: BTreeMap<String, f64>,
    pub provenance: Provenance,
    #[serde(default)]
    pub health: Option<Health>,
    /// The monitor's time series over the measured phase.
    #[serde(default)]
    pub series: Vec<Sample>,
    #[serde(default)]
    pub notes: Vec<String>,
    pub started_unix: f64,
    /// Wall seconds of the cell this record belongs to (provisioning, every point, checks
    /// and teardown) up to this record, which is appended as soon as its point is checked:
    /// the last record of a cell carries the whole cell's. What the budget, the ETA and
    /// `--dry-run`'s estimate learn from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cell_seconds: Option<f64>,
    /// Of `cell_seconds`, the seconds spent building the populated image the cell copied:
    /// its share of the images built ahead of the cells, or the build it made itself. Only
    /// the first cell on each image carries it; `--dry-run` prices an image once per target
    /// from it, and a cell without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_seconds: Option<f64>,
    /// Of `image_seconds`, the image's own build by step (`losetup`, `mkfs`, `mount`,
    /// `write` — the data set written and written back —, `unmount`, `check`, `detach`):
    /// where the time before a run's first cell goes. Its first copy, made beside it on
    /// another thread, is in the provenance's `clone` of the first cell on it. Empty on a
    /// cell that built no image and in records written before 2026-11-29.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub image_steps: BTreeMap<String, f64>,
    /// Wall seconds of the harness's own steps for this record's point, by step (`mkfs`,
    /// `losetup`, `mount`, `clone`, `check`, `unmount`, `detach`, `workload_prepare`,
    /// `workload_check` (`workload_unmeasured`, their sum, before 2026-11-29), …;
    /// `sys::steps`): where `cell_seconds` goes outside the measured phase. The steps of a
    /// file system several points share go to the record that retired it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub harness_seconds: BTreeMap<String, f64>,
    /// Milliseconds the host took for the same fixed walk through memory just before this
    /// measurement's phase ([`crate::monitor::steadiness`]): not a figure of the target, a
    /// reading of the machine, whose spread over the run the report shows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_probe_ms: Option<f64>,
    /// How many points the cell this record belongs to has, so a reader (and `--resume`)
    /// can tell a complete cell from one cut short (a kill -9 in an io sweep, a torn
    /// last line). `None` for a record of a cell that never reached its points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cell_points: Option<u32>,
    /// MPI ranks that ran this measurement together (`mpirun -np N`); absent for one
    /// process, so a run of one rank records exactly what a run without MPI does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks: Option<u32>,
    /// The hosts those ranks ran on, each once; empty for one process.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    /// Where those ranks worked in a `dir:` target: `own` (each its own subtree) or
    /// `shared` (one tree for all); absent for one process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank_dirs: Option<String>,
    /// The fill level (%) the plan aged every file system to before measuring (`--age`);
    /// `None`: a fresh file system. Results written before aging existed load as fresh.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aged_pct: Option<f64>,
    /// The baseline's figures from the same phase, when this point was measured in turn
    /// with it (its passes alternating with this target's on a copy of the baseline's file
    /// system mounted beside it): what this point's comparison with the baseline pairs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_turn: Option<Box<InTurn>>,
}

/// The baseline's side of a point measured in turn ([`Measurement::in_turn`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InTurn {
    /// The baseline target's name.
    pub target: String,
    /// Its figures, named as the record's own (`seconds`, `files_per_s`,
    /// `seconds_per_pass`, `passes`, …), from its passes alone.
    pub metrics: BTreeMap<String, f64>,
    /// Where its passes ran: a copy of its populated image, or a fresh file system.
    pub provenance: Provenance,
}

/// How a result's file system started: "fresh", or "aged to N %".
pub fn condition(aged_pct: Option<f64>) -> String {
    match aged_pct {
        None => "fresh".into(),
        Some(p) => format!("aged to {} %", fmt_pct(p)),
    }
}

/// A percentage without a needless fraction: 60, 62.5.
fn fmt_pct(p: f64) -> String {
    if p.fract() == 0.0 {
        format!("{p:.0}")
    } else {
        format!("{p}")
    }
}

impl Measurement {
    /// The cell this record belongs to.
    pub fn cell_id(&self) -> CellId {
        CellId {
            target: self.target.clone(),
            workload: self.workload.clone(),
            threads: self.threads,
            repetition: self.repetition,
            dataset: self.dataset.clone(),
        }
    }

    /// The point of a cell this record measured (`--resume` measures again only the
    /// points a cell cut short is missing).
    pub fn key(&self) -> CellKey {
        CellKey {
            target: self.target.clone(),
            workload: self.workload.clone(),
            dataset: self.dataset.clone(),
            variant: self.variant.clone(),
            threads: self.threads,
            repetition: self.repetition,
        }
    }
}

/// One cell by the names its records carry: a target × workload × thread count ×
/// repetition, on a data set of the series. The one identity the run skips, counts and
/// resumes by (its points together, unlike the per-point [`CellKey`]). Ordered by its
/// fields in this order: the order cells cut short are listed in.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CellId {
    pub target: String,
    pub workload: String,
    pub threads: u32,
    pub repetition: u32,
    /// The data set's label, when the run has several ([`crate::plan::Plan::dataset_label`]).
    pub dataset: Option<String>,
}

/// Identity of one point of a measurement cell (its `variant`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CellKey {
    pub target: String,
    pub workload: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<String>,
    pub variant: String,
    pub threads: u32,
    pub repetition: u32,
}

/// What was really in effect when a measurement ran (not what was asked for).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// `loop`, `device`, `dir` or `tmpfs`.
    pub location: String,
    /// The file-system type as the kernel reports it in /proc/mounts.
    pub fs_type: String,
    pub mkfs_command: Option<Vec<String>>,
    pub mkfs_version: Option<String>,
    pub mount_command: Option<Vec<String>>,
    /// Options from /proc/mounts after mounting: what the kernel really applied.
    pub mount_options: Option<String>,
    pub image_bytes: Option<u64>,
    pub loop_device: Option<String>,
    /// Whether the loop driver really granted direct I/O (`/sys/block/loopN/loop/dio`).
    pub loop_direct_io: Option<bool>,
    /// major:minor of the block device the monitor watched.
    pub block_device: Option<String>,
    /// major:minor of the device holding a loop image or a `dir:` target.
    pub backing_device: Option<String>,
    pub kernel: String,
    #[serde(default)]
    pub notes: Vec<String>,
    /// Set when the file system was a copy of an image populated once for the run (the data
    /// set already laid down), not made fresh and populated by the workload. Absent in
    /// results written before clones existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clone: Option<CloneOrigin>,
    /// Set when the work directory was encrypted (fscrypt): the policy as the kernel reports
    /// it. Absent for unencrypted targets and in results written before encryption existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encryption: Option<Encryption>,
    /// Set when the file system was a copy of an image aged once for the run (`--age`):
    /// what the aging reached and how fragmented it left the file system.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aging: Option<Aging>,
    /// Set when a database workload kept its log (WAL) on another target of the plan
    /// (`log_target`): that target's name and its own file system, as made for this point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<Box<LogPlacement>>,
    /// Set when the measured phase ran bound to CPUs of its own (`--cpus auto`): the CPUs
    /// of its work and its file system's daemon, and the harness's. Absent: anywhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<crate::plan::cpus::Placement>,
}

/// Where a database workload's log lived when the plan gave it a `log_target`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogPlacement {
    /// The plan's name of the log target.
    pub target: String,
    /// Its file system, made fresh for the point (the monitor's `log_device_*` figures are
    /// of its `block_device`).
    pub provenance: Provenance,
}

/// What aging did to a target's image (recorded with every cell cloned from it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Aging {
    /// The fill level asked for, % of capacity.
    pub target_pct: f64,
    /// The fill level the churn reached (statvfs, as `df` counts it: used ÷ (used + available)).
    pub reached_pct: f64,
    /// The fill level after the data set was written on top (cells that want it present).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub with_dataset_pct: Option<f64>,
    /// The churn's seed (the data set's).
    pub seed: u64,
    /// Operations applied, and bytes they wrote.
    pub operations: u64,
    pub written_bytes: u64,
    /// Seconds the aging took (churn, syncs and measurements; not mkfs, not the data set).
    pub seconds: f64,
    /// Images aged for this target in this run: 1 per configuration (empty, or holding the
    /// data set), however many cells were cloned from them.
    pub images_built: u32,
    /// The fresh file system, right after mkfs.
    pub before: Fragmentation,
    /// The churn's own tree after aging (the carriers and the data set left out: the
    /// data set is `dataset`, the carriers are `fragmenting`).
    pub after: Fragmentation,
    /// The data set's own files on the aged file system, when it was written on top.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<Fragmentation>,
    /// How the free space was cut into pieces (`provision::fragment`), and what a new file
    /// met before and after. Absent in results written before aging fragmented.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fragmenting: Option<Fragmenting>,
}

/// How aging cut a file system's free space into pieces: carrier files filled it to
/// ENOSPC, then holes of about the target size were punched out of them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Fragmenting {
    /// The free-space extent asked for (`--age-free-extent`), bytes.
    pub target_extent_bytes: u64,
    /// The fill level (%) the churn reached before the first cut (half the level asked).
    pub churn_pct: f64,
    /// Rounds of fill-and-punch (each followed by the churn back up to the level).
    pub rounds: u32,
    /// Bytes the carriers wrote (filling the free space), bytes punched out of them, and
    /// how many holes.
    pub carrier_bytes: u64,
    pub punched_bytes: u64,
    pub holes: u64,
    /// The mean fragment of a probe file (16 MiB, FIEMAP) written into the fresh file
    /// system and into the aged one: the free-space pieces a new file lands in.
    pub probe_before_bytes: Option<u64>,
    pub probe_after_bytes: Option<u64>,
    /// Whether the aged probe's fragment came within 2 × the target.
    pub reached: bool,
}

/// How scattered a file system is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Fragmentation {
    /// Regular files measured.
    pub files: u64,
    /// Mean extents per non-empty file, as FIEMAP reports them.
    pub extents_per_file: Option<f64>,
    /// Mean fragments per non-empty file (extents contiguous on the device count once).
    pub fragments_per_file: Option<f64>,
    /// Free-space extents, where the file system exposes them (ext4: e2freefrag; xfs:
    /// xfs_db freesp); `None` elsewhere (btrfs), said in `free_extents_note`.
    pub free_extents: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free_extents_note: Option<String>,
}

/// The encryption a target's work directory had, read back from the kernel after setting it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Encryption {
    /// `fscrypt` (ext4's native encryption).
    pub method: String,
    /// Policy version (2: keys in the file system's keyring).
    pub policy_version: u8,
    /// Cipher of file contents, e.g. `AES-256-XTS`.
    pub contents_cipher: String,
    /// Cipher of file names, e.g. `AES-256-CTS`.
    pub filenames_cipher: String,
    /// The key's identifier (derived from the key, not secret; the key itself is never stored).
    pub key_identifier: String,
}

/// How a cell's file system was copied from the run's populated image.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CloneOrigin {
    /// `reflink` (shared extents), `copy` (data extents copied, holes kept) or `restore`
    /// (the previous cell's clone, with the blocks that cell wrote copied back from the
    /// master: the same bytes as a fresh copy).
    pub method: String,
    /// Seconds the copy took, including making it durable.
    pub seconds: f64,
    /// Bytes copied (a reflink shares them instead). Absent in results written before
    /// clones were restored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
}

/// The read-only check run on the file system after a repetition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Health {
    pub command: Vec<String>,
    pub passed: bool,
    /// The checker's output, shortened; kept so a failure can be read later.
    pub output: String,
}
