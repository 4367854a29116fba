//! The runner walks a plan: for every cell (target × workload × threads × repetition, in
//! interleaved order) it provisions a fresh file system, runs the workload's points under
//! the monitor, checks the file system, tears it down and appends the measurements.

pub mod assemble;
pub mod harness;
pub mod host_facts;
pub mod progress;
pub mod schedule;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::dataset::DatasetError;
use crate::plan::size::human_bytes;
use crate::plan::{Location, Plan, Runs};
use crate::provision::instance::planned_commands;
use crate::provision::{host, Instance, InstanceSpec, ProvisionError, WorkDir};
use crate::results::store::{self, Store, StoreError};
use crate::results::{Measurement, Status};
use crate::workload::{self, Ctx, Workload, WorkloadError};
use harness::MonitoredHarness;
use progress::Progress;

/// How to run a plan (what is not part of the plan itself).
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub out: PathBuf,
    pub work_root: PathBuf,
    /// Keep the work directory (scratch data, journal, images) after the run.
    pub keep: bool,
    pub quiet: bool,
    pub allow_device: bool,
    pub wipe: bool,
    /// Append to an existing results directory, skipping what it already holds.
    pub resume: bool,
    /// Refuse a plan whose data set does not fit the work directory's free space.
    pub space_check: bool,
    pub command_line: Vec<String>,
}

/// What a finished (or interrupted) run did.
#[derive(Debug, Default)]
pub struct RunSummary {
    pub out: PathBuf,
    pub measured: usize,
    /// One line per measurement that did not end `ok`.
    pub failures: Vec<String>,
    pub interrupted: bool,
    pub skipped_targets: Vec<(String, String)>,
}

/// Why a run could not start. All of these are bad input or refusals (exit code 2).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{0}")]
    Refused(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Provision(#[from] ProvisionError),
    #[error("data set: {0}")]
    Dataset(#[from] DatasetError),
}

/// Sizes images and checks the host can hold them; returns the default image size.
fn size_check(
    plan: &Plan,
    data_bytes: u64,
    work_root: &Path,
    enforce: bool,
) -> Result<u64, RunError> {
    const MIB: u64 = 1 << 20;
    // Room for the data set twice (copy within the target) plus file-system overhead.
    let image = (4 * data_bytes + 512 * MIB).max(1 << 30).div_ceil(MIB) * MIB;
    let probe = work_root
        .ancestors()
        .find(|a| a.exists())
        .unwrap_or(Path::new("/"));
    let free = crate::provision::workdir::free_bytes(probe).unwrap_or(u64::MAX);
    // Scratch source + the most a cell writes into its sparse image.
    let need = 4 * data_bytes + 256 * MIB;
    if enforce
        && plan
            .targets
            .iter()
            .any(|t| matches!(t.location, Location::Loop))
        && free < need
    {
        return Err(RunError::Refused(format!(
            "the data set ({}) needs about {} free in {} but only {} is free: lower --scale or use --work-dir on a larger disk",
            human_bytes(data_bytes),
            human_bytes(need),
            probe.display(),
            human_bytes(free)
        )));
    }
    if plan.targets.iter().any(|t| t.location == Location::Memory) {
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
    Ok(image)
}

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
    let bytes = crate::dataset::profile::estimated_bytes(plan.dataset.profile, plan.dataset.scale)?;
    Ok(bytes.min(u64::MAX as f64 / 8.0) as u64)
}

/// Checks a `dir:` target before anything is created in it.
fn check_dir_target(p: &Path, work_root: &Path) -> Result<(), String> {
    let md = std::fs::symlink_metadata(p).map_err(|e| format!("{}: {e}", p.display()))?;
    let real = std::fs::canonicalize(p).map_err(|e| format!("{}: {e}", p.display()))?;
    if !real.is_dir() {
        return Err(format!("{} is not a directory", p.display()));
    }
    let _ = md;
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
            crate::provision::guard::check_device(d, opts.wipe)?;
        }
    }
    Ok(())
}

/// The plan's workloads, with their options checked before anything is provisioned.
fn resolve_workloads(plan: &Plan) -> Result<Vec<Box<dyn Workload>>, RunError> {
    for (name, table) in &plan.workload_options {
        let w = workload::by_name(name).ok_or_else(|| {
            RunError::Refused(format!(
                "[workload.{name}]: unknown workload; valid: {}",
                workload::names().join(", ")
            ))
        })?;
        w.check_options(table).map_err(RunError::Refused)?;
    }
    plan.workloads
        .iter()
        .map(|n| {
            workload::by_name(n).ok_or_else(|| {
                RunError::Refused(format!(
                    "unknown workload `{n}`; valid: {}",
                    workload::names().join(", ")
                ))
            })
        })
        .collect()
}

/// Each workload with the thread counts it runs at (`--threads` only where it applies).
fn thread_lists(plan: &Plan, workloads: &[Box<dyn Workload>]) -> Vec<(usize, Vec<usize>)> {
    workloads
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let threads = if w.uses_threads() {
                plan.threads.clone()
            } else {
                vec![1]
            };
            (i, threads)
        })
        .collect()
}

/// `--dry-run`: exactly what would be created, formatted, mounted and run. Touches nothing.
pub fn dry_run(plan: &Plan, opts: &RunOptions) -> Result<String, RunError> {
    use std::fmt::Write;
    let workloads = resolve_workloads(plan)?;
    check_devices(plan, opts)?;
    let (usable, skipped) = usable_targets(plan, &opts.work_root);
    size_check(plan, estimate(plan)?, &opts.work_root, opts.space_check)?;
    let manifest = plan.dataset.plan()?;
    let data = manifest.total_bytes();
    let image = size_check(plan, data, &opts.work_root, opts.space_check)?;
    let run_dir = opts.work_root.join("run-<time>-<pid>");
    let mut s = String::new();
    let _ = writeln!(
        s,
        "work directory: {} (created, removed at the end{})",
        run_dir.display(),
        if opts.keep { " unless --keep" } else { "" }
    );
    let _ = writeln!(s, "results: {}", opts.out.join(store::FILE_NAME).display());
    let _ = writeln!(
        s,
        "data set: {:?} scale {} seed {}: {} files, {}",
        plan.dataset.profile,
        plan.dataset.scale,
        plan.dataset.seed,
        manifest.files.len(),
        human_bytes(data)
    );
    let _ = writeln!(
        s,
        "repetitions: {:?}; threads: {:?}; baseline: {}",
        plan.runs, plan.threads, plan.baseline
    );
    for (name, why) in &skipped {
        let _ = writeln!(s, "skip target {name}: {why}");
    }
    let wl = thread_lists(plan, &workloads);
    let mut seq = 0;
    for rep in 0..plan.runs.max() {
        for cell in schedule::repetition(rep, usable.len(), &wl) {
            seq += 1;
            let t = &plan.targets[usable[cell.target]];
            let spec = InstanceSpec {
                target: t,
                seq,
                size: t.size.unwrap_or(image),
                allow_device: opts.allow_device,
                wipe: opts.wipe,
            };
            let _ = writeln!(
                s,
                "cell {seq}: repetition {} target {} workload {} threads {}",
                rep + 1,
                t.name,
                workloads[cell.workload].name(),
                cell.threads
            );
            for c in planned_commands(&spec, &run_dir) {
                let _ = writeln!(s, "    {c}");
            }
        }
    }
    Ok(s)
}

/// Runs the plan. Returns once every cell ran or `cancel` was raised; the results file
/// then holds every measurement that finished.
pub fn run(
    plan: &Plan,
    opts: &RunOptions,
    cancel: &Arc<AtomicBool>,
) -> Result<RunSummary, RunError> {
    let workloads = resolve_workloads(plan)?;
    check_devices(plan, opts)?;
    let (usable, skipped) = usable_targets(plan, &opts.work_root);
    if usable.is_empty() {
        let why: Vec<String> = skipped.iter().map(|(n, w)| format!("{n}: {w}")).collect();
        return Err(RunError::Refused(format!(
            "no target can run here ({})",
            why.join("; ")
        )));
    }
    for (name, why) in &skipped {
        eprintln!("fsarena: skipping target {name}: {why}");
    }
    // A cheap estimate first: planning hashes every byte of the data set.
    size_check(plan, estimate(plan)?, &opts.work_root, opts.space_check)?;
    let manifest = plan.dataset.plan()?;
    let image = size_check(
        plan,
        manifest.total_bytes(),
        &opts.work_root,
        opts.space_check,
    )?;

    // The results store first: nothing is provisioned for a run that cannot record.
    let (mut store, done) = if opts.resume {
        let loaded = store::load(&opts.out)?;
        let mut done = HashSet::new();
        let mut redo = HashSet::new();
        for m in &loaded.measurements {
            let k = (
                m.target.clone(),
                m.workload.clone(),
                m.threads,
                m.repetition,
            );
            if store::is_final(m.status) {
                done.insert(k);
            } else {
                redo.insert(k);
            }
        }
        done.retain(|k| !redo.contains(k));
        (Store::reopen(&opts.out)?, done)
    } else {
        let plan_json = serde_json::to_value(plan).unwrap_or(serde_json::Value::Null);
        let mut facts = host_facts::gather(&opts.work_root, opts.command_line.clone(), plan_json);
        facts.skipped_targets = skipped.clone();
        (Store::create(&opts.out, &facts)?, HashSet::new())
    };

    let work = WorkDir::create(&opts.work_root)?;
    let mut summary = RunSummary {
        out: opts.out.clone(),
        skipped_targets: skipped,
        ..Default::default()
    };
    let wl = thread_lists(plan, &workloads);
    let cells_per_rep = usable.len() * wl.iter().map(|(_, t)| t.len()).sum::<usize>();
    let mut progress = Progress::new(cells_per_rep as u64 * plan.runs.min() as u64, opts.quiet);
    let mut seq = 0u64;
    let mut rep = 0u32;
    'reps: while rep < plan.runs.max() {
        if rep >= plan.runs.min() {
            match extra_repetition_reason(plan.runs, &opts.out, &workloads) {
                Some(why) => {
                    progress.println(&format!("repetition {}: {why}", rep + 1));
                    progress.grow(cells_per_rep as u64);
                }
                None => break,
            }
        }
        for cell in schedule::repetition(rep, usable.len(), &wl) {
            if cancel.load(Ordering::SeqCst) {
                summary.interrupted = true;
                break 'reps;
            }
            let target = &plan.targets[usable[cell.target]];
            let w = workloads[cell.workload].as_ref();
            let key = (
                target.name.clone(),
                w.name().to_string(),
                cell.threads as u32,
                rep,
            );
            progress.start_cell(&target.name, w.name(), rep + 1, cell.threads);
            if done.contains(&key) {
                progress.finish_cell("already recorded");
                continue;
            }
            seq += 1;
            let spec = InstanceSpec {
                target,
                seq,
                size: target.size.unwrap_or(image),
                allow_device: opts.allow_device,
                wipe: opts.wipe,
            };
            let records = run_cell(plan, &spec, w, &cell, &work, cancel, &mut progress);
            let mut line = String::new();
            for m in &records {
                if let Err(e) = store.append(m) {
                    // The store is the point of the run: stop rather than measure into the void.
                    eprintln!("fsarena: cannot write {}: {e}", store.path().display());
                    summary.interrupted = true;
                    break 'reps;
                }
                summary.measured += 1;
                if m.status != Status::Ok {
                    summary.failures.push(format!(
                        "{} {}{} threads {} repetition {}: {}{}",
                        m.target,
                        m.workload,
                        if m.variant.is_empty() {
                            String::new()
                        } else {
                            format!(" [{}]", m.variant)
                        },
                        m.threads,
                        m.repetition + 1,
                        m.status.as_str(),
                        m.error
                            .as_ref()
                            .map(|e| format!(" ({e})"))
                            .unwrap_or_default()
                    ));
                }
                line = describe(m, w);
            }
            if records.iter().any(|m| m.status == Status::Interrupted) {
                summary.interrupted = true;
            }
            progress.finish_cell(&line);
        }
        rep += 1;
    }
    progress.done();
    let remove = !opts.keep;
    drop(work_cleanup(work, remove));
    Ok(summary)
}

/// The work directory goes when the run ends, unless `--keep`; mounts and loop devices
/// were already taken down cell by cell.
fn work_cleanup(work: WorkDir, remove: bool) -> Result<(), std::io::Error> {
    if remove {
        let mut report = crate::provision::cleanup::CleanupReport::default();
        crate::provision::cleanup::cleanup_run(&work.run, &mut report);
        for e in report.errors {
            eprintln!("fsarena: cleanup: {e}");
        }
    } else {
        eprintln!("fsarena: work directory kept: {}", work.run.display());
    }
    Ok(())
}

fn describe(m: &Measurement, w: &dyn Workload) -> String {
    let (key, _) = w.key_metric();
    match (m.status, m.metrics.get(key)) {
        (Status::Ok, Some(v)) => format!("ok {v:.1} {key}"),
        (Status::Ok, None) => "ok".to_string(),
        (s, _) => format!(
            "{}{}",
            s.as_str(),
            m.error
                .as_ref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default()
        ),
    }
}

/// With `--runs auto`, why one more repetition is needed (None: stop). Looks at each
/// group's key metric over the `ok` repetitions recorded so far.
fn extra_repetition_reason(
    runs: Runs,
    out: &Path,
    workloads: &[Box<dyn Workload>],
) -> Option<String> {
    let Runs::Auto { min, max } = runs else {
        return None;
    };
    let loaded = store::load(out).ok()?;
    let mut groups: std::collections::BTreeMap<(String, String, String, u32), Vec<f64>> =
        Default::default();
    for m in loaded
        .measurements
        .iter()
        .filter(|m| m.status == Status::Ok)
    {
        let Some(w) = workloads.iter().find(|w| w.name() == m.workload) else {
            continue;
        };
        if let Some(v) = m.metrics.get(w.key_metric().0) {
            groups
                .entry((
                    m.target.clone(),
                    m.workload.clone(),
                    m.variant.clone(),
                    m.threads,
                ))
                .or_default()
                .push(*v);
        }
    }
    let rule = crate::stats::adaptive::AdaptiveRule {
        min_runs: min as usize,
        max_runs: max as usize,
        target_cv: 0.05,
    };
    groups.iter().find_map(|((t, w, v, th), samples)| {
        crate::stats::adaptive::needs_another_run(samples, &rule).map(|why| {
            let variant = if v.is_empty() {
                String::new()
            } else {
                format!(" [{v}]")
            };
            format!("{t} {w}{variant} threads {th}: {why}")
        })
    })
}

fn base_measurement(spec: &InstanceSpec, w: &dyn Workload, cell: &schedule::Cell) -> Measurement {
    Measurement {
        target: spec.target.name.clone(),
        fs: spec.target.fs.name().to_string(),
        workload: w.name().to_string(),
        repetition: cell.repetition,
        threads: cell.threads as u32,
        started_unix: host_facts::now_unix(),
        ..Default::default()
    }
}

/// A provisioned file system with the two working directories of one point.
struct Fresh {
    inst: Instance,
    root: PathBuf,
    scratch: PathBuf,
}

fn fresh(spec: &InstanceSpec, work: &WorkDir, point: usize) -> Result<Fresh, (Status, String)> {
    let inst =
        Instance::provision(spec, work).map_err(|e| (Status::Error, format!("provision: {e}")))?;
    let root = inst.root.join("fsarena-work");
    let scratch = work
        .run
        .join("scratch")
        .join(format!("{}-{point}", spec.seq));
    if let Err(e) = std::fs::create_dir(&root).and_then(|_| std::fs::create_dir_all(&scratch)) {
        let _ = inst.teardown(false);
        let _ = std::fs::remove_dir_all(&scratch);
        return Err((
            workload::status_of_io(&e),
            format!("cannot prepare the working directories: {e}"),
        ));
    }
    Ok(Fresh {
        inst,
        root,
        scratch,
    })
}

/// Unmounts, checks and removes a point's file system; a failed check invalidates the
/// measurement made on it.
fn retire(f: Fresh, m: &mut Measurement, target: &str) {
    let (health, td) = f.inst.teardown(true);
    let _ = std::fs::remove_dir_all(&f.scratch);
    if let Some(h) = health {
        if !h.passed && m.status == Status::Ok {
            m.status = Status::Invalid;
            m.error = Some(format!(
                "the file system failed its check after the measurement ({})",
                h.command.join(" ")
            ));
        }
        m.health = Some(h);
    }
    if let Err(e) = td {
        m.notes.push(format!("teardown: {e}"));
        eprintln!("fsarena: teardown of {target}: {e}");
    }
}

/// One cell: every point of the workload, each on its own freshly made file system
/// (a second point must not find the first one's files, caches or free-space layout).
/// Never panics on the workload's behalf and always returns at least one record.
fn run_cell(
    plan: &Plan,
    spec: &InstanceSpec,
    w: &dyn Workload,
    cell: &schedule::Cell,
    work: &WorkDir,
    cancel: &Arc<AtomicBool>,
    progress: &mut Progress,
) -> Vec<Measurement> {
    let fail = |status: Status, error: String| {
        let mut m = base_measurement(spec, w, cell);
        m.status = status;
        m.error = Some(error);
        vec![m]
    };
    let empty = toml::Table::new();
    let options = plan.workload_options.get(w.name()).unwrap_or(&empty);
    let mut current = match fresh(spec, work, 0) {
        Ok(f) => Some(f),
        Err((status, e)) => return fail(status, e),
    };
    // Points are asked of the first file system: some depend on it (an io sweep sizes its
    // large file from the target's free space).
    let points = {
        let Some(f) = current.as_ref() else {
            return fail(Status::Error, "internal: no file system".into());
        };
        let ctx = Ctx {
            root: &f.root,
            scratch: &f.scratch,
            threads: cell.threads,
            dataset: &plan.dataset,
            options,
            cancel,
            deadline: Some(Instant::now() + plan.timeout),
        };
        w.points(&ctx)
    };
    let points = match points {
        Ok(p) if !p.is_empty() => p,
        Ok(_) => vec![workload::Point::default()],
        Err(e) => {
            let mut m = base_measurement(spec, w, cell);
            m.status = e.status();
            m.error = Some(e.to_string());
            if let Some(f) = current.take() {
                m.provenance = f.inst.provenance.clone();
                retire(f, &mut m, &spec.target.name);
            }
            return vec![m];
        }
    };
    let mut records = Vec::new();
    for (i, p) in points.iter().enumerate() {
        if cancel.load(Ordering::SeqCst) {
            // Recorded so `--resume` knows this cell is unfinished and runs it again.
            let mut m = base_measurement(spec, w, cell);
            m.variant = p.variant.clone();
            m.params = p.params.clone();
            m.status = Status::Interrupted;
            m.error = Some("interrupted before this point ran".into());
            records.push(m);
            break;
        }
        let f = match current.take() {
            Some(f) => f,
            None => match fresh(spec, work, i) {
                Ok(f) => f,
                Err((status, e)) => {
                    let mut m = base_measurement(spec, w, cell);
                    m.variant = p.variant.clone();
                    m.params = p.params.clone();
                    m.status = status;
                    m.error = Some(e);
                    records.push(m);
                    continue;
                }
            },
        };
        progress.point(&p.variant);
        let ctx = Ctx {
            root: &f.root,
            scratch: &f.scratch,
            threads: cell.threads,
            dataset: &plan.dataset,
            options,
            cancel,
            deadline: Some(Instant::now() + plan.timeout),
        };
        let mut m = measure_point(w, &ctx, p, &f.inst, spec, cell);
        retire(f, &mut m, &spec.target.name);
        records.push(m);
    }
    if let Some(f) = current.take() {
        let mut m = base_measurement(spec, w, cell);
        retire(f, &mut m, &spec.target.name);
    }
    if records.is_empty() {
        return fail(
            Status::Interrupted,
            "interrupted before the first point".into(),
        );
    }
    records
}

/// Runs one point under the monitor and turns what happened into a measurement.
fn measure_point(
    w: &dyn Workload,
    ctx: &Ctx,
    p: &workload::Point,
    inst: &Instance,
    spec: &InstanceSpec,
    cell: &schedule::Cell,
) -> Measurement {
    let mut h = MonitoredHarness {
        devices: &inst.devices,
        root: ctx.root,
        observed: Default::default(),
    };
    let result = w.run(ctx, p, &mut h);
    let mut m = base_measurement(spec, w, cell);
    m.variant = p.variant.clone();
    m.params = p.params.clone();
    m.provenance = inst.provenance.clone();
    m.notes = std::mem::take(&mut h.observed.notes);
    if let Some(r) = &h.observed.monitor {
        m.notes.extend(r.warnings.iter().cloned());
    }
    match result {
        Ok(outcome) if h.observed.measured == 1 => {
            m.metrics = assemble::metrics(&outcome, &h.observed);
            m.notes.extend(outcome.notes.iter().cloned());
            m.series = h
                .observed
                .monitor
                .take()
                .map(|r| r.series)
                .unwrap_or_default();
        }
        Ok(_) => {
            m.status = Status::Error;
            m.error = Some(format!(
                "internal: workload measured {} phases instead of one",
                h.observed.measured
            ));
        }
        Err(e) => {
            let e = if ctx.cancel.load(Ordering::SeqCst) && !matches!(e, WorkloadError::Interrupted)
            {
                WorkloadError::Interrupted
            } else {
                e
            };
            m.status = e.status();
            m.error = Some(e.to_string());
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{HostFacts, Measurement};

    fn store_with(values: &[f64]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::create(dir.path(), &HostFacts::default()).unwrap();
        for (rep, v) in values.iter().enumerate() {
            s.append(&Measurement {
                target: "ext4".into(),
                workload: "create".into(),
                repetition: rep as u32,
                threads: 1,
                metrics: [("files_per_s".to_string(), *v)].into_iter().collect(),
                ..Default::default()
            })
            .unwrap();
        }
        dir
    }

    #[test]
    fn auto_runs_repeat_while_the_key_metric_spreads() {
        let w: Vec<Box<dyn Workload>> = vec![workload::by_name("create").unwrap()];
        let auto = Runs::Auto { min: 3, max: 10 };
        let noisy = store_with(&[100.0, 130.0, 80.0]);
        let why = extra_repetition_reason(auto, noisy.path(), &w).expect("another run");
        assert!(why.starts_with("ext4 create threads 1:"), "{why}");
        let steady = store_with(&[100.0, 101.0, 99.5]);
        assert_eq!(extra_repetition_reason(auto, steady.path(), &w), None);
        let capped = store_with(&[
            100.0, 130.0, 80.0, 120.0, 90.0, 100.0, 130.0, 80.0, 120.0, 90.0,
        ]);
        assert_eq!(extra_repetition_reason(auto, capped.path(), &w), None);
        assert_eq!(
            extra_repetition_reason(Runs::Fixed(3), noisy.path(), &w),
            None
        );
    }
}
