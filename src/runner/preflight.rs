//! Everything checked before anything is created: the plan's workloads and their
//! `[workload.NAME]` options, named block devices, `dir:` targets, and whether the host has
//! room for the data set. A refusal here is bad input (exit 2), never a failed measurement.

use std::path::Path;

use super::fs_sizes;
use super::terms::{RunError, RunOptions};
use crate::plan::fs_size;
use crate::plan::size::human_bytes;
use crate::plan::{Location, Plan};
use crate::provision::host;
use crate::workload::initial::Starts;
use crate::workload::{self, Workload};

mod disk_need;
mod logs;
pub use disk_need::{
    disk_need, measured_in_turn, pairs_in_turn, with_margin, Held, LOG_IMAGE_BYTES,
    SPACE_MARGIN_PCT,
};
use logs::check_log_targets;
pub use logs::{log_home, log_target, OWN_LOG};

/// What the first checks found: the workloads to run and which targets this host can take.
pub struct Checked {
    pub workloads: Vec<Box<dyn Workload>>,
    /// Indices into `plan.targets` of the targets that can run here.
    pub usable: Vec<usize>,
    /// Targets that cannot run here, each with why.
    pub skipped: Vec<(String, String)>,
    /// Workloads that cannot run here (a program missing), each with why; not in
    /// `workloads`, so their cells are never started.
    pub skipped_workloads: Vec<(String, String)>,
}

/// The data set as planned and the file-system sizes that follow from it.
pub struct Sized {
    /// The size of every loop image whose target sets none ([`fs_size::loop_size`]).
    pub image: u64,
    /// The size of a tmpfs target that sets none ([`fs_size::memory_size`]).
    pub memory: u64,
    pub data_bytes: u64,
    /// The files of the largest data set.
    pub files: usize,
    /// The files and bytes of the largest data set at each of [`Plan::scales`] (what the
    /// estimate prices the cells of that scale at).
    pub scale_files: Vec<usize>,
    pub scale_bytes: Vec<u64>,
    /// The most disk the run's work directory holds at once (see [`disk_need`]).
    pub disk_bytes: u64,
    /// The data set's measured zstd ratio (`None` for a user's own directory).
    pub zstd_ratio: Option<f64>,
    /// What the workloads start from: the data set, their own states (a replay's trace).
    pub starts: Starts,
}

/// Workloads and options, devices, then targets: the checks that need no data-set planning.
pub fn check(plan: &Plan, opts: &RunOptions) -> Result<Checked, RunError> {
    let (workloads, skipped_workloads): (Vec<_>, Vec<_>) = resolve_workloads(plan)?
        .into_iter()
        .partition(|w| w.unavailable().is_none());
    let skipped_workloads = skipped_workloads
        .iter()
        .map(|w| {
            (
                w.spec().name.to_string(),
                w.unavailable().unwrap_or_default(),
            )
        })
        .collect();
    check_devices(plan, opts)?;
    check_pseudo_dirs(plan)?;
    check_cache_drops(plan, &workloads)?;
    for w in &workloads {
        w.check_work_dir(&opts.work_root)
            .map_err(RunError::Refused)?;
    }
    let (usable, skipped) = usable_targets(plan, &opts.work_root);
    check_log_targets(plan, &skipped)?;
    Ok(Checked {
        workloads,
        usable,
        skipped,
        skipped_workloads,
    })
}

/// Plans the data set and sizes the images, refusing a plan the host cannot hold. A cheap
/// estimate is checked first, because planning hashes every byte of a user's data set.
/// What is sized is what the file systems hold: the data set, or a workload's own state
/// when no workload starts from the data set ([`Starts::bytes_to_hold`]).
pub fn size(plan: &Plan, opts: &RunOptions) -> Result<Sized, RunError> {
    let starts = Starts::of(plan);
    if let Some(why) = starts.unknown() {
        return Err(RunError::Refused(why));
    }
    let each = held_per_dataset(plan, &starts);
    let held = starts.bytes_to_hold(estimate(plan)?);
    size_check(
        plan,
        Held::new(held, &each),
        &opts.work_root,
        opts.space_check,
    )?;
    // With several data sets, every image is sized for the largest.
    let largest = largest_dataset(plan);
    let manifest = largest.plan()?;
    let data_bytes = manifest.total_bytes();
    let (scale_files, scale_bytes) = match plan.scales().len() {
        1 => (vec![manifest.files.len()], vec![data_bytes]),
        n => (0..n)
            .map(|s| (largest_at_scale(plan, s).plan()).map(|m| (m.files.len(), m.total_bytes())))
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .unzip(),
    };
    let held = Held::new(starts.bytes_to_hold(data_bytes), &each);
    let image = size_check(plan, held, &opts.work_root, opts.space_check)?;
    check_mkfs_options(plan, image, &opts.work_root)?;
    Ok(Sized {
        image,
        memory: fs_size::memory_size(held.largest),
        data_bytes,
        files: manifest.files.len(),
        scale_files,
        scale_bytes,
        disk_bytes: disk_need(plan, held),
        // Said of the data set only where a workload reads it.
        zstd_ratio: starts
            .dataset
            .then(|| crate::dataset::ratio::zstd_ratio(&plan.dataset, &manifest))
            .flatten(),
        starts,
    })
}

/// Sizes images and checks they hold the data set and the host can hold what the run
/// writes; returns the loop images' size.
fn size_check(plan: &Plan, held: Held, work_root: &Path, enforce: bool) -> Result<u64, RunError> {
    let data_bytes = held.largest;
    let image = fs_size::loop_size(plan.fs_size, plan.age_pct, data_bytes);
    check_host_space(plan, held, work_root, enforce)?;
    fs_sizes::check(plan, data_bytes, image)?;
    check_memory(plan, data_bytes)?;
    check_image_files(plan, image, work_root)?;
    Ok(image)
}

/// Every loop image of the plan must be a file the work directory's file system can hold
/// (`--fs-size 17T` on an ext4 host failed with "File too large" after the results
/// directory was made, issue 57.8).
fn check_image_files(plan: &Plan, image: u64, work_root: &Path) -> Result<(), RunError> {
    let largest = (plan.targets.iter())
        .filter(|t| t.location == crate::plan::Location::Loop)
        .map(|t| t.size.unwrap_or(image))
        .max();
    match largest {
        Some(largest) => match crate::provision::workdir::image_too_large(work_root, largest) {
            Some(why) => Err(RunError::Refused(why)),
            None => Ok(()),
        },
        None => Ok(()),
    }
}

/// The bytes the file systems hold for each of the plan's data sets
/// ([`Starts::bytes_to_hold`] of its expected size; a user's directory counts 0 here and
/// is measured by planning).
fn held_per_dataset(plan: &Plan, starts: &Starts) -> Vec<u64> {
    plan.datasets()
        .iter()
        .map(|d| {
            let bytes = match plan.dataset.source_dir {
                Some(_) => 0.0,
                None => crate::dataset::sizing::bytes(d).unwrap_or(0.0),
            };
            starts.bytes_to_hold(bytes.min(u64::MAX as f64 / 8.0) as u64)
        })
        .collect()
}

/// The work directory's file system must hold what the run writes at its peak
/// ([`disk_need`]: what is written into the sparse images, not their nominal size).
fn check_host_space(
    plan: &Plan,
    held: Held,
    work_root: &Path,
    enforce: bool,
) -> Result<(), RunError> {
    let data_bytes = held.largest;
    let probe = work_root
        .ancestors()
        .find(|a| a.exists())
        .unwrap_or(Path::new("/"));
    let free = crate::provision::workdir::free_bytes(probe).unwrap_or(u64::MAX);
    let need = disk_need(plan, held);
    if enforce
        && plan
            .targets
            .iter()
            .any(|t| matches!(t.location, Location::Loop))
        && free < with_margin(need)
    {
        let (aging, lower) = match fs_sizes::aged_writes(plan, data_bytes) {
            0 => (String::new(), "lower --scale"),
            a => (
                format!(", aging writing {}", human_bytes(a)),
                "lower --age, --fs-size or --scale",
            ),
        };
        return Err(RunError::Refused(format!(
            "{} needs about {} free in {} (the plan's estimated peak, {}{aging}, plus {SPACE_MARGIN_PCT} %) but only {} is free: {lower} or use --work-dir on a larger disk",
            match held.datasets {
                1 => format!("the data set ({})", human_bytes(data_bytes)),
                n => format!(
                    "the {n} data sets ({} together, the largest {})",
                    human_bytes(held.all),
                    human_bytes(data_bytes)
                ),
            },
            human_bytes(with_margin(need)),
            probe.display(),
            human_bytes(need),
            human_bytes(free)
        )));
    }
    Ok(())
}

/// tmpfs targets keep what is written in memory: refused when that may exceed half of it.
fn check_memory(plan: &Plan, data_bytes: u64) -> Result<(), RunError> {
    if plan.targets.iter().any(|t| t.location == Location::Memory) {
        let image = fs_size::memory_size(data_bytes);
        let avail = mem_available().unwrap_or(u64::MAX);
        let tmpfs = plan
            .targets
            .iter()
            .filter(|t| t.location == Location::Memory)
            .map(|t| t.size.unwrap_or(image))
            .max()
            .unwrap_or(image);
        let fill = (3 * data_bytes).min(tmpfs);
        if fill > avail / 2 {
            return Err(RunError::Refused(format!(
                "tmpfs would hold about {} but only {} of memory is available: lower --scale",
                human_bytes(fill),
                human_bytes(avail)
            )));
        }
    }
    Ok(())
}

/// `MemAvailable` from `/proc/meminfo`: what tmpfs targets may fill without swapping.
fn mem_available() -> Option<u64> {
    let t = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb: u64 = t
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// The expected data-set size before planning it (a user's directory is measured by
/// planning, which only stats and hashes what is there).
fn estimate(plan: &Plan) -> Result<u64, RunError> {
    if plan.dataset.source_dir.is_some() {
        return Ok(0);
    }
    let d = largest_dataset(plan);
    let bytes = crate::dataset::sizing::bytes(&d)?;
    Ok(bytes.min(u64::MAX as f64 / 8.0) as u64)
}

/// The plan's data set with the most bytes (the one the images are sized for).
fn largest_dataset(plan: &Plan) -> crate::dataset::DatasetSpec {
    largest(plan, plan.datasets().into_iter())
}

/// The data set with the most bytes among those at scale `s` of the series.
fn largest_at_scale(plan: &Plan, s: usize) -> crate::dataset::DatasetSpec {
    let datasets = plan.datasets().into_iter().enumerate();
    let at = datasets.filter(|(i, _)| plan.scale_index(*i) == s);
    largest(plan, at.map(|(_, d)| d))
}

/// Of `datasets`, the one with the most bytes (the plan's first if there is none).
fn largest(
    plan: &Plan,
    datasets: impl Iterator<Item = crate::dataset::DatasetSpec>,
) -> crate::dataset::DatasetSpec {
    let bytes = |d: &crate::dataset::DatasetSpec| crate::dataset::sizing::bytes(d).unwrap_or(0.0);
    datasets
        .max_by(|a, b| bytes(a).total_cmp(&bytes(b)))
        .unwrap_or_else(|| plan.dataset.clone())
}

/// Kernel pseudo file systems: a `dir:` target there cannot hold files (and must not be
/// written to), so it is refused up front rather than failing its first cell.
const PSEUDO_FS: &[&str] = &[
    "proc",
    "sysfs",
    "devtmpfs",
    "devpts",
    "cgroup",
    "cgroup2",
    "debugfs",
    "tracefs",
    "securityfs",
    "pstore",
    "bpf",
    "configfs",
    "fusectl",
    "mqueue",
    "efivarfs",
    "binfmt_misc",
    "autofs",
    "rpc_pipefs",
    "nsfs",
    "hugetlbfs",
    "selinuxfs",
];

/// The type of the file system `p` lives on, from the mount table (the deepest mount
/// point that contains it).
fn fs_type_of(p: &Path) -> Option<String> {
    let real = std::fs::canonicalize(p).ok()?;
    crate::provision::mounts::read()
        .into_iter()
        .filter(|m| real.starts_with(&m.target))
        .max_by_key(|m| m.target.as_os_str().len())
        .map(|m| m.fstype)
}

/// A target's own mkfs options, checked by the tool's dry mode where it has one, so a
/// typo is one line now rather than a failed first cell.
fn check_mkfs_options(plan: &Plan, image: u64, work_root: &Path) -> Result<(), RunError> {
    // The work root may not exist yet; its nearest existing ancestor holds the scratch file.
    let dir = work_root
        .ancestors()
        .find(|p| p.is_dir())
        .unwrap_or(Path::new("/tmp"));
    for t in &plan.targets {
        crate::provision::dry_mkfs::check(t, t.size.unwrap_or(image), dir).map_err(|why| {
            RunError::Refused(format!(
                "target {}: its mkfs options are refused: {why}",
                t.name
            ))
        })?;
    }
    Ok(())
}

/// Cold phases drop the page cache, which needs root: without it they would fail cell by
/// cell mid-run, so the run is refused now, naming what needs it and what would run.
fn check_cache_drops(plan: &Plan, workloads: &[Box<dyn Workload>]) -> Result<(), RunError> {
    let Err(e) = crate::sys::can_drop_caches() else {
        return Ok(());
    };
    let empty = toml::Table::new();
    let (cold, rest): (Vec<_>, Vec<_>) = workloads.iter().partition(|w| {
        w.drops_caches(plan.workload_options.get(w.spec().name).unwrap_or(&empty))
            .is_some()
    });
    if cold.is_empty() {
        return Ok(());
    }
    let needs: Vec<String> = cold
        .iter()
        .filter_map(|w| {
            let why = w.drops_caches(plan.workload_options.get(w.spec().name).unwrap_or(&empty))?;
            Some(format!("{} ({why})", w.spec().name))
        })
        .collect();
    let instead = if rest.is_empty() {
        String::new()
    } else {
        let names: Vec<&str> = rest.iter().map(|w| w.spec().name).collect();
        format!(", or leave them out: --workload {}", names.join(","))
    };
    Err(RunError::Refused(format!(
        "cannot drop the page cache here (/proc/sys/vm/drop_caches: {e}), and these workloads need it: {}; run as root{instead}",
        needs.join("; ")
    )))
}

/// `dir:` targets on a pseudo file system (`/proc`, `/sys`, `/dev`, cgroups, …) are bad
/// input: refused before anything is created.
fn check_pseudo_dirs(plan: &Plan) -> Result<(), RunError> {
    for t in &plan.targets {
        if let Location::Dir(p) = &t.location {
            if let Some(fs) = fs_type_of(p).filter(|f| PSEUDO_FS.contains(&f.as_str())) {
                return Err(RunError::Refused(format!(
                    "target {}: {} is on the kernel's {fs} pseudo file system, which holds no files of its own: name a directory on a real file system",
                    t.name,
                    p.display()
                )));
            }
        }
    }
    Ok(())
}

/// Checks a `dir:` target before anything is created in it.
fn check_dir_target(p: &Path, work_root: &Path) -> Result<(), String> {
    std::fs::symlink_metadata(p).map_err(|e| format!("{}: {e}", p.display()))?;
    let real = std::fs::canonicalize(p).map_err(|e| format!("{}: {e}", p.display()))?;
    if !real.is_dir() {
        return Err(format!("{} is not a directory", p.display()));
    }
    let root = std::fs::canonicalize(work_root).unwrap_or_else(|_| work_root.to_path_buf());
    if real.starts_with(&root) {
        return Err(format!(
            "{} is inside fsarena's own work directory {}: name a directory of your own",
            p.display(),
            root.display()
        ));
    }
    rustix::fs::access(&real, rustix::fs::Access::WRITE_OK)
        .map_err(|_| format!("{} is not writable", p.display()))?;
    Ok(())
}

/// Splits the plan's targets into those this host can run and those it cannot (with why).
pub fn usable_targets(plan: &Plan, work_root: &Path) -> (Vec<usize>, Vec<(String, String)>) {
    let mut ok = Vec::new();
    let mut skipped = Vec::new();
    for (i, t) in plan.targets.iter().enumerate() {
        let r = match &t.location {
            Location::Dir(p) => check_dir_target(p, work_root),
            _ => host::support(t),
        };
        match r {
            Ok(()) => ok.push(i),
            Err(why) => skipped.push((t.name.clone(), why)),
        }
    }
    (ok, skipped)
}

/// Named block devices are checked before anything is created: a refusal is bad input
/// (exit 2), not a failed measurement. Each cell checks again before its mkfs.
fn check_devices(plan: &Plan, opts: &RunOptions) -> Result<(), RunError> {
    for t in &plan.targets {
        if let Location::Device(d) = &t.location {
            if !opts.allow_device {
                return Err(RunError::Refused(format!(
                    "target {} would format {}, destroying everything on it: pass --allow-device to allow that",
                    t.name,
                    d.display()
                )));
            }
            crate::provision::guard::check_device(d, opts.wipe, &opts.work_root)?;
        }
    }
    Ok(())
}

/// The plan's workloads, with every `[workload.NAME]` table (an empty one for a workload
/// given none) checked by its workload's `check_options` before anything is provisioned.
fn resolve_workloads(plan: &Plan) -> Result<Vec<Box<dyn Workload>>, RunError> {
    for (name, table) in &plan.workload_options {
        let w = workload::by_name(name).ok_or_else(|| {
            RunError::Refused(format!(
                "[workload.{name}]: unknown workload; valid: {}",
                workload::names().join(", ")
            ))
        })?;
        w.check_options(table).map_err(RunError::Refused)?;
        w.check_timeout(table, plan.timeout)
            .map_err(RunError::Refused)?;
    }
    let empty = toml::Table::new();
    plan.workloads
        .iter()
        .map(|n| {
            let w = workload::by_name(n).ok_or_else(|| {
                RunError::Refused(format!(
                    "unknown workload `{n}`; valid: {}",
                    workload::names().join(", ")
                ))
            })?;
            // A workload run without a table gets an empty one: it may need options (`mix`
            // needs at least one named mix), and that is bad input too.
            if !plan.workload_options.contains_key(n) {
                w.check_options(&empty).map_err(RunError::Refused)?;
            }
            Ok(w)
        })
        .collect()
}

#[cfg(test)]
mod tests;
