//! The run options, defined once: [`Settings`] is both the flags of `fsarena run` (clap,
//! flattened into the command line) and the TOML plan file (serde), so each option is one
//! field whose doc comment is its `--help` line, whose type reads and checks its value the
//! same way from either (see [`super::value`]), and whose use is in [`super::resolve`]:
//! flags win over the file, the file over the built-in defaults.
//!
//! ```toml
//! runs = 3                 # or "auto"
//! scale = 0.01                       # or a series: [0.01, 0.1]; or files = 2500, data = "40G"
//! threads = [1, 2, 4]
//! workloads = ["create", "scan", "delete"]
//! targets = ["ext4", "xfs"]          # catalogue names, dir:PATH, NAME@/dev/DEVICE
//! baseline = "ext4"
//! timeout = 600                      # seconds per measurement
//! margin = 5                         # equivalence margin, % of the baseline
//! budget = "5m"                      # wall time `auto` may spend (runs = "auto" or unset)
//! phase_floor = "0.25s"              # shortest measured phase a key metric may come from
//! max_steal = 20                     # % of the CPU a hypervisor may keep (default "off")
//! io_hosts = ["node1", "node2:8766"] # fio --server hosts the io workloads run on
//! age = 60                           # age every file system to 60 % full first (loop targets)
//! age_free_extent = "64K"            # ... its free space cut into pieces of about this size
//! fs_size = "64G"                    # every loop image's size (sparse; the default)
//! rank_dirs = "shared"               # under MPI: all ranks in one tree (default "own")
//! cpus = "all"                       # cells anywhere (default "auto": fewer threads than CPUs, CPUs of their own)
//! in_turn = "off"                    # every point on its own (default "on": read-only points paired with the baseline's)
//! trace = "app.fstrace"              # what the replay workload replays (timing = "original")
//!
//! [dataset]
//! profile = "small"
//! seed = 42
//!
//! [[target]]                         # a configuration of your own
//! name = "ext4-journal-noatime"
//! base = "ext4"                      # or fs = "ext4"
//! mkfs = ["-b", "4096"]
//! mount = ["data=journal", "noatime"]
//! size = "2G"
//!
//! [workload.db]                      # options handed to one workload
//! threads = 12
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::{ArgMatches, Args, CommandFactory};
use serde::Deserialize;

use super::value::CpusChoice;
use super::value::{
    self, AgeFreeExtent, AgePct, Budget, Compressibility, Content, DataSizes, DuplicateFraction,
    FileCounts, FileSize, ImageSize, InTurnChoice, Margin, MaxSteal, PhaseFloor, Profiles,
    RankDirsChoice, RunCount, Scales, ThreadList, Timeout,
};

/// The run options as a user writes them, on the command line or in a plan file: every
/// field empty means "not given". Unknown plan-file keys are errors, reported with line
/// and column.
#[derive(Debug, Default, Clone, Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// A target: catalogue name (ext4, xfs, btrfs-zstd, …), dir:PATH, or NAME@/dev/DEVICE.
    #[arg(long = "target", value_name = "SPEC")]
    #[serde(default)]
    pub targets: Vec<String>,
    /// Workloads to run, comma-separated (`all` for every one).
    #[arg(long = "workload", value_name = "NAME[,NAME...]")]
    #[serde(default, deserialize_with = "listed")]
    pub workloads: Vec<String>,
    /// Thread counts, e.g. 1,2,4.
    #[arg(long, value_name = "LIST")]
    pub threads: Option<ThreadList>,
    /// Repetitions per target, or `auto` (the default): 3, then more runs for the
    /// comparisons still undecided, cheapest decision first, within --budget.
    #[arg(long, value_name = "N|auto")]
    pub runs: Option<RunCount>,
    /// Wall time an `auto` run may spend, e.g. 5m, 90s, 1h (default 5m).
    #[arg(long, value_name = "DURATION")]
    pub budget: Option<Budget>,
    /// Shortest measured phase a key metric may come from (default 0.25s): warm read-only
    /// phases repeat until they reach it; shorter ones are flagged.
    #[arg(long, value_name = "DURATION")]
    pub phase_floor: Option<PhaseFloor>,
    /// Measure a phase again when a virtual machine's hypervisor kept more than PCT % of
    /// the CPU during it (CPU steal; default 20), up to 2 more times; `off` keeps all.
    #[arg(long, value_name = "PCT|off")]
    pub max_steal: Option<MaxSteal>,
    /// Run the io workloads on these `fio --server`s at once (fio's client mode), in the
    /// target directory, which must be the same shared path on every host.
    #[arg(long, value_name = "HOST[:PORT],...", value_delimiter = ',')]
    pub io_hosts: Option<Vec<String>>,
    /// The `.fstrace` the replay workload issues again (`fsarena record` writes one).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// How the replay workload paces its calls: think (as fast as their order allows, but
    /// the program's pauses of 1 ms or more kept: its computing; the default), fast (no
    /// pause kept) or original (every recorded gap kept).
    #[arg(long, value_name = "fast|think|original", value_parser = ["fast", "think", "original"])]
    pub timing: Option<String>,
    /// Shrinks the data sets (1 = full size: 250,000 × 16 KiB for `small`); several,
    /// comma-separated (0.01,0.1), run every cell at each and check each verdict across them.
    #[arg(long, value_name = "F[,F...]", allow_negative_numbers = true)]
    pub scale: Option<Scales>,
    /// The data set stated by its file count instead of --scale (one or a comma list):
    /// the profile at the scale that holds about N files.
    #[arg(long, value_name = "N[,N...]")]
    pub files: Option<FileCounts>,
    /// The data set stated by its total size instead of --scale, e.g. 40G (one or a comma
    /// list): the profile at the scale whose expected total is about that.
    #[arg(long, value_name = "SIZE[,SIZE...]")]
    pub data: Option<DataSizes>,
    /// Every generated file exactly this size, e.g. 4K (the profile still gives the count
    /// and the tree).
    #[arg(long, value_name = "SIZE")]
    pub file_size: Option<FileSize>,
    /// The target others are compared with (default: the first).
    #[arg(long, value_name = "NAME")]
    pub baseline: Option<String>,
    #[command(flatten)]
    #[serde(default)]
    pub dataset: DatasetSettings,
    /// Per-measurement time limit in seconds.
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<Timeout>,
    /// Equivalence margin in % of the baseline: a difference whose 90 % interval lies
    /// inside ±PCT is reported as `equivalent` (default 5).
    #[arg(long, value_name = "PCT", allow_negative_numbers = true)]
    pub margin: Option<Margin>,
    /// Age every file system to PCT % full (0 < PCT < 95) with a seeded churn of creates,
    /// appends, overwrites, renames and deletes before measuring: one aged image per
    /// target, cloned per cell. Loop-image targets only.
    #[arg(long, value_name = "PCT", allow_negative_numbers = true)]
    pub age: Option<AgePct>,
    /// With --age: cut the aged file system's free space into pieces of about SIZE (4K to
    /// 64M; default 64K), so files written into it fragment as on an aged disk.
    #[arg(long = "age-free-extent", value_name = "SIZE")]
    pub age_free_extent: Option<AgeFreeExtent>,
    /// Under MPI: each rank works in its own subtree of a `dir:` target (own, the default)
    /// or all ranks in one tree, their files tagged by rank (shared). One process: the same.
    #[arg(long, value_name = "MODE", value_parser = RankDirsChoice::flag())]
    pub rank_dirs: Option<RankDirsChoice>,
    /// Size of every file system made on a loop image, e.g. 16G (a sparse file: it costs
    /// what is written). Default 64G, with --age 8× the data set (at least 4G); a target's
    /// own size wins, a device keeps its own, tmpfs is sized from the data set.
    #[arg(long = "fs-size", alias = "size", value_name = "SIZE")]
    pub fs_size: Option<ImageSize>,
    /// Where a cell's work runs: auto (the default: a cell of fewer threads than CPUs runs
    /// its workload and its file system's daemon on the last THREADS CPUs, the harness on
    /// the others) or all (anywhere).
    #[arg(long, value_name = "auto|all", value_parser = CpusChoice::flag())]
    pub cpus: Option<CpusChoice>,
    /// Measure a candidate's read-only points (scan, search, dupes, cold-read) in turn
    /// with the baseline's (on, the default): a copy of the baseline's file system beside
    /// the candidate's, the passes alternating in one phase, the comparison paired by
    /// cell; off measures every point on its own.
    #[arg(long = "in-turn", value_name = "on|off", value_parser = InTurnChoice::flag())]
    pub in_turn: Option<InTurnChoice>,
    /// `[[target]]` tables: configurations of the user's own (plan file only).
    #[arg(skip)]
    #[serde(default, rename = "target")]
    pub custom_targets: Vec<TargetTable>,
    /// `[workload.NAME]` tables, handed to the workload, which reads them (plan file only).
    #[arg(skip)]
    #[serde(default)]
    pub workload: BTreeMap<String, toml::Table>,
}

/// The data set: flags on the command line, the `[dataset]` table in a plan file.
#[derive(Debug, Default, Clone, Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetSettings {
    /// Data-set profile: small, medium, large, huge, bigfolder, smallfolder; several,
    /// comma-separated, run every cell on each.
    #[arg(long)]
    pub profile: Option<Profiles>,
    /// Seed of the generated data set.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Use your own directory as the data set (dir:PATH).
    #[arg(long = "dataset", value_name = "dir:PATH", value_parser = value::dataset_dir)]
    pub dir: Option<PathBuf>,
    /// Fraction of generated content that compresses (0 to 1).
    #[arg(long, value_name = "F")]
    pub compressibility: Option<Compressibility>,
    /// What generated files hold: typed (text, structured binary or already-compressed
    /// bytes by file type; the default) or random (incompressible unless --compressibility).
    #[arg(long, value_name = "typed|random")]
    pub content: Option<Content>,
    /// Share of generated files planted as duplicates (plan file only).
    #[arg(skip)]
    pub duplicate_fraction: Option<DuplicateFraction>,
}

/// A `[[target]]` table: a configuration of the user's own.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetTable {
    pub name: String,
    /// A catalogue entry to start from.
    pub base: Option<String>,
    pub fs: Option<String>,
    #[serde(default)]
    pub mkfs: Vec<String>,
    #[serde(default)]
    pub mount: Vec<String>,
    pub size: Option<String>,
    pub device: Option<PathBuf>,
    pub dir: Option<PathBuf>,
    pub description: Option<String>,
}

/// A list that, when written, names at least one item: `workloads = []` is a plan that
/// runs nothing, refused rather than read as "the defaults".
fn listed<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let v = Vec::<String>::deserialize(d)?;
    if v.is_empty() {
        return Err(serde::de::Error::custom(
            "invalid workload list ``: name at least one workload",
        ));
    }
    Ok(v)
}

/// A command that holds only the run options, to list them in definition order.
#[derive(clap::Parser)]
struct OnlySettings {
    #[command(flatten)]
    settings: Settings,
}

impl Settings {
    /// The flags (`--target`, `--runs`, …) of these options given on the command line
    /// `matches` was parsed from, in definition order: a resumed run refuses them by name.
    pub fn given_flags(matches: &ArgMatches) -> Vec<String> {
        OnlySettings::command()
            .get_arguments()
            .filter(|a| {
                matches.value_source(a.get_id().as_str())
                    == Some(clap::parser::ValueSource::CommandLine)
            })
            .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
            .collect()
    }
}
