//! The runner walks a plan: for every cell (target × workload × threads × repetition, in
//! interleaved order) it provisions a fresh file system, runs the workload's points under
//! the monitor, checks the file system, tears it down and appends the measurements.
//!
//! This module holds the run's inputs, outcome and errors and the loop over cells; the
//! checks made before anything is created are in [`preflight`], one cell in [`cell`].

pub mod assemble;
pub mod budget;
pub mod cell;
pub mod dry_run;
pub mod harness;
pub mod host_facts;
pub mod preflight;
pub mod progress;
pub mod ranks;
pub mod recording;
mod rounds;
pub mod schedule;
pub mod shared;

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::dataset::DatasetError;
use crate::golden::populate;
use crate::plan::{Plan, Runs, TargetConfig};
use crate::provision::{InstanceSpec, ProvisionError, WorkDir};
use crate::results::store::{Store, StoreError};
use crate::results::Status;
use crate::workload::Workload;
use cell::CellRun;
pub use dry_run::dry_run;
pub use preflight::usable_targets;
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
    /// One line per measurement that did not end `ok`, except those an interrupt cut short.
    pub failures: Vec<String>,
    pub interrupted: bool,
    /// Measurements an interrupt cut short (recorded `interrupted`; `--resume` measures
    /// them again): not failures, and not listed as such.
    pub cut_short: usize,
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

/// Runs the plan. Returns once every cell ran or `cancel` was raised; the results file
/// then holds every measurement that finished.
pub fn run(
    plan: &Plan,
    opts: &RunOptions,
    cancel: &Arc<AtomicBool>,
) -> Result<RunSummary, RunError> {
    let checked = preflight::check(plan, opts).and_then(|c| {
        if c.workloads.is_empty() {
            let why: Vec<String> = c
                .skipped_workloads
                .iter()
                .map(|(n, w)| format!("{n}: {w}"))
                .collect();
            return Err(RunError::Refused(format!(
                "no workload can run here ({})",
                why.join("; ")
            )));
        }
        if c.usable.is_empty() {
            let why: Vec<String> = c.skipped.iter().map(|(n, w)| format!("{n}: {w}")).collect();
            return Err(RunError::Refused(format!(
                "no target can run here ({})",
                why.join("; ")
            )));
        }
        Ok((c, preflight::size(plan, opts)?))
    });
    // Under MPI every rank meets the others here, before anything is created.
    let ranks = ranks::agree_to_start(
        plan,
        opts,
        checked.as_ref().map(|_| ()).map_err(|e| e.to_string()),
    )?;
    let (
        preflight::Checked {
            workloads,
            usable,
            skipped,
            skipped_workloads,
        },
        sized,
    ) = checked?;
    let root = ranks.as_ref().map_or(true, |r| r.world.is_root());
    if root {
        for (name, why) in &skipped {
            eprintln!("fsarena: skipping target {name}: {why}");
        }
        for (name, why) in &skipped_workloads {
            eprintln!("fsarena: skipping workload {name}: {why}");
        }
    }
    let image = sized.image;

    // The results store first: nothing is provisioned for a run that cannot record. A
    // rank other than 0 records into its own run directory, never into `--out`.
    let ranks::Setup {
        opts: rank_opts,
        work,
        targets,
    } = ranks::setup(ranks.as_ref(), plan, opts)?;
    let opts = &rank_opts;
    let recording::Opened { mut store, tally } =
        recording::open_store(plan, opts, &skipped, &skipped_workloads, sized.zstd_ratio)?;

    let work = match work {
        Some(w) => w,
        None => WorkDir::create(&opts.work_root)?,
    };
    if ranks.is_some() {
        ranks::make_rank_dirs(&targets, &work)?;
    }
    let mut summary = RunSummary {
        out: opts.out.clone(),
        skipped_targets: skipped,
        // What a resumed run recorded earlier and did not measure `ok` still counts:
        // exit 0 means every measurement of the plan is `ok`.
        failures: tally
            .failures
            .iter()
            .map(|f| format!("{f} (recorded earlier)"))
            .collect(),
        ..Default::default()
    };
    let wl = schedule::thread_lists(plan, &workloads);
    let datasets = plan.extra_profiles.len() + 1;
    let cells_per_rep = usable.len() * datasets * wl.iter().map(|(_, t)| t.len()).sum::<usize>();
    let mut state = Walk {
        plan,
        targets: &targets,
        ranks: ranks.as_ref(),
        opts,
        cancel,
        usable: &usable,
        workloads: &workloads,
        work: &work,
        image,
        done: tally.done,
        points: tally.points,
        stopped: HashMap::new(),
        provisioned: std::collections::HashSet::new(),
        store: &mut store,
        summary: &mut summary,
        progress: Progress::new(cells_per_rep as u64 * plan.runs.min() as u64, opts.quiet),
        masters: populate::Masters::new(plan, &work, cancel),
        seq: 0,
        costs: budget::Costs::default(),
        started: std::time::Instant::now(),
    };
    let minimum: Vec<schedule::Cell> = (0..plan.runs.min())
        .flat_map(|rep| schedule::repetition(rep, usable.len(), datasets, &wl))
        .collect();
    // The probe's table is built now, long before the first phase's probe, so that probe
    // does not find the fresh table still in the CPU's caches.
    crate::monitor::steadiness::shared();
    state.build_images_ahead(&minimum);
    for (i, cell) in minimum.iter().enumerate() {
        let eta = state.eta(&minimum[i..]);
        state.progress.set_eta(eta);
        if state.run_cell(cell).is_break() {
            break;
        }
    }
    if let Runs::Auto { max, budget, .. } = plan.runs {
        if !state.summary.interrupted {
            state.spend_budget(max, budget);
        }
    }
    state.progress.done();
    let stopped: Vec<String> = state.stopped.keys().cloned().collect();
    // The populated images go before the work directory's cleanup reads the journal.
    drop(state);
    work_cleanup(work, !opts.keep);
    if !summary.interrupted && root {
        // Exit 0 only for a complete plan: count again what the file really holds.
        let names: Vec<&str> = usable
            .iter()
            .map(|&i| plan.targets[i].name.as_str())
            .filter(|n| !stopped.iter().any(|s| s == n))
            .collect();
        for line in incomplete(plan, &opts.out, &names, &workloads) {
            summary.failures.push(line);
        }
    }
    Ok(summary)
}

/// The cells of the plan's minimum repetitions (of `targets`) that `out` does not hold
/// complete, as one summary line (empty when the plan is complete).
fn incomplete(
    plan: &Plan,
    out: &std::path::Path,
    targets: &[&str],
    workloads: &[Box<dyn Workload>],
) -> Vec<String> {
    let done = match crate::results::store::load(out) {
        Ok(l) => recording::tally(&l).done,
        Err(e) => return vec![format!("the results cannot be read back: {e}")],
    };
    let mut missing = Vec::new();
    let mut total = 0;
    for (w, threads) in schedule::thread_lists(plan, workloads) {
        for t in targets {
            for &th in &threads {
                for d in 0..=plan.extra_profiles.len() {
                    for rep in 0..plan.runs.min() {
                        total += 1;
                        let label = plan.dataset_label(d);
                        let on = label
                            .as_ref()
                            .map(|l| format!(" on {l}"))
                            .unwrap_or_default();
                        let k = (
                            t.to_string(),
                            workloads[w].name().to_string(),
                            th as u32,
                            rep,
                            label,
                        );
                        if !done.contains(&k) {
                            missing.push(format!(
                                "{} {}{on} threads {} repetition {}",
                                k.0,
                                k.1,
                                k.2,
                                rep + 1
                            ));
                        }
                    }
                }
            }
        }
    }
    if missing.is_empty() {
        return Vec::new();
    }
    vec![format!(
        "the plan is incomplete: {} of {total} cells hold no complete record (first: {}); run `fsarena run --resume {}`",
        missing.len(),
        missing[0],
        out.display()
    )]
}

/// A run in progress: what every cell needs, and what the run has recorded so far.
struct Walk<'a> {
    plan: &'a Plan,
    /// The plan's targets as this rank works on them (under MPI, `dir:` targets point to
    /// the rank's own subtree); indexed like `plan.targets`.
    targets: &'a [TargetConfig],
    ranks: Option<&'a ranks::Ranks>,
    opts: &'a RunOptions,
    cancel: &'a Arc<AtomicBool>,
    usable: &'a [usize],
    workloads: &'a [Box<dyn Workload>],
    work: &'a WorkDir,
    image: u64,
    done: std::collections::HashSet<recording::DoneKey>,
    /// Points of cells cut short that are recorded in final form (`--resume`).
    points: std::collections::HashSet<crate::results::record::CellKey>,
    /// Targets stopped because their first file system could not be made, with why.
    stopped: HashMap<String, String>,
    /// Targets a file system has been made for at least once.
    provisioned: std::collections::HashSet<String>,
    store: &'a mut Store,
    summary: &'a mut RunSummary,
    progress: Progress,
    masters: populate::Masters<'a>,
    seq: u64,
    costs: budget::Costs,
    started: std::time::Instant,
}

impl Walk<'_> {
    /// The time the `cells` still to run will take, each priced at what cells of its group
    /// (else its target, else any) cost so far; within the budget's end for `auto`. `None`
    /// until a cell has been timed.
    fn eta(&self, cells: &[schedule::Cell]) -> Option<std::time::Duration> {
        let mut secs = 0.0;
        for c in cells {
            secs += self.costs.estimate(&self.group(c));
        }
        if secs <= 0.0 {
            return None;
        }
        let mut eta = std::time::Duration::from_secs_f64(secs);
        if let Runs::Auto { budget, .. } = self.plan.runs {
            eta = eta.max(budget.saturating_sub(self.started.elapsed()));
        }
        Some(eta)
    }

    /// What the results file calls `cell` once it is recorded (`--resume` skips those).
    fn done_key(&self, cell: &schedule::Cell) -> recording::DoneKey {
        (
            self.plan.targets[self.usable[cell.target]].name.clone(),
            self.workloads[cell.workload].name().to_string(),
            cell.threads as u32,
            cell.repetition,
            self.plan.dataset_label(cell.dataset),
        )
    }

    /// How the file system of a cell on `target` is provisioned: numbered with the cell
    /// now being run (`seq`), sized by the target or the run's image size.
    fn spec_for<'t>(&self, target: &'t TargetConfig) -> InstanceSpec<'t> {
        InstanceSpec {
            target,
            seq: self.seq,
            size: target.size.unwrap_or(self.image),
            allow_device: self.opts.allow_device,
            wipe: self.opts.wipe,
        }
    }

    /// Populates every image the `cells` still to run will copy, before the first of them
    /// ([`populate::Masters::build_ahead`]).
    fn build_images_ahead(&mut self, cells: &[schedule::Cell]) {
        let wanted: Vec<_> = cells
            .iter()
            .filter(|c| !self.done.contains(&self.done_key(c)))
            .map(|c| {
                let spec = self.spec_for(&self.targets[self.usable[c.target]]);
                (
                    self.workloads[c.workload].as_ref(),
                    c.target,
                    c.dataset,
                    spec,
                )
            })
            .collect();
        self.masters.build_ahead(wanted, &self.progress);
    }

    fn group(&self, cell: &schedule::Cell) -> budget::Group {
        budget::Group {
            target: self.plan.targets[self.usable[cell.target]].name.clone(),
            workload: self.workloads[cell.workload].name().to_string(),
            dataset: self.plan.dataset_label(cell.dataset),
            threads: cell.threads as u32,
        }
    }

    /// Runs one cell and records what it measured; `Break` when the run must stop
    /// (interrupted, or the results file cannot be written).
    fn run_cell(&mut self, cell: &schedule::Cell) -> ControlFlow<()> {
        if self.cancel.load(Ordering::SeqCst) {
            self.summary.interrupted = true;
            return ControlFlow::Break(());
        }
        let plan = self.plan;
        let target = &self.targets[self.usable[cell.target]];
        let w = self.workloads[cell.workload].as_ref();
        let rep = cell.repetition;
        let label = plan.dataset_label(cell.dataset);
        let key = self.done_key(cell);
        let shown = match &label {
            Some(l) => format!("{} · {l}", w.name()),
            None => w.name().to_string(),
        };
        self.progress
            .start_cell(&target.name, &shown, rep + 1, cell.threads);
        if self.done.contains(&key) {
            self.progress.finish_cell("already recorded");
            return ControlFlow::Continue(());
        }
        if self.stopped.contains_key(&target.name) {
            self.progress.finish_cell("skipped: the target is stopped");
            return ControlFlow::Continue(());
        }
        let mut t0 = std::time::Instant::now();
        self.seq += 1;
        let spec = self.spec_for(target);
        // The workload's log on another target (`log_target`, checked before the run): a
        // target of its own per point; a cell on the log target itself keeps its log there.
        let log_spec = preflight::log_target(plan, w.name())
            .filter(|name| *name != target.name)
            .and_then(|name| self.targets.iter().find(|t| t.name == name))
            .map(|t| self.spec_for(t));
        // The first cell on an image built ahead is charged for building it, as it was
        // when it built the image itself.
        let ahead = self
            .masters
            .take_ahead_seconds(w, cell.target, cell.dataset, &spec);
        t0 = t0
            .checked_sub(std::time::Duration::from_secs_f64(ahead))
            .unwrap_or(t0);
        let datasets: Vec<_> = plan
            .datasets()
            .into_iter()
            .map(|d| shared::dataset_for(self.ranks, d))
            .collect();
        let mut this = CellRun {
            plan,
            spec: &spec,
            workload: w,
            cell,
            dataset: &datasets[cell.dataset.min(datasets.len() - 1)],
            work: self.work,
            cancel: self.cancel,
            master: None,
            recorded: &self.points,
            ranks: self.ranks,
            log_spec: log_spec.as_ref(),
        };
        // Each point is appended the moment it is checked (a kill -9 in a long sweep
        // keeps the points already finished).
        let store = &mut *self.store;
        let write_failed = std::cell::Cell::new(false);
        // Known once the image is in hand (below), before the first record is emitted.
        let image_seconds = std::cell::Cell::new((ahead > 0.0).then_some(ahead));
        let ranks = self.ranks;
        let mut emit = |m: &mut crate::results::Measurement| {
            m.cell_seconds = Some(t0.elapsed().as_secs_f64());
            m.image_seconds = image_seconds.get();
            if let Some(r) = ranks {
                r.stamp(m);
            }
            match store.append(m) {
                Ok(()) => true,
                Err(e) => {
                    // The store is the point of the run: stop rather than measure into the void.
                    eprintln!("fsarena: cannot write {}: {e}", store.path().display());
                    write_failed.set(true);
                    false
                }
            }
        };
        let (source, built_now) =
            self.masters
                .for_cell(w, cell.target, cell.dataset, &spec, &self.progress);
        if let Some(b) = built_now {
            image_seconds.set(Some(ahead + b));
        }
        let out = match source {
            populate::Source::Fresh => cell::run_cell(&this, &mut self.progress, &mut emit),
            populate::Source::Clone(m) => {
                this.master = Some(m);
                cell::run_cell(&this, &mut self.progress, &mut emit)
            }
            populate::Source::Failed(f) => this.fail(this.agree_failure(f)).into(),
            populate::Source::Interrupted => this
                .fail(this.agree_failure((
                    Status::Interrupted,
                    "interrupted while populating the image".into(),
                    Vec::new(),
                )))
                .into(),
        };
        let cell::CellOutput {
            mut records,
            emitted,
        } = out;
        for m in records.iter_mut().skip(emitted) {
            if write_failed.get() || !emit(m) {
                break;
            }
        }
        let cell_seconds = t0.elapsed().as_secs_f64();
        let mut line = String::new();
        for m in &records {
            if write_failed.get() {
                break;
            }
            self.summary.measured += 1;
            match m.status {
                Status::Ok => {}
                Status::Interrupted => self.summary.cut_short += 1,
                _ => self.summary.failures.push(recording::failure_line(m)),
            }
            line = recording::describe(m, w);
        }
        if write_failed.get() {
            self.summary.interrupted = true;
            return ControlFlow::Break(());
        }
        self.stop_if_unprovisionable(&target.name, &records);
        let group = self.group(cell);
        // Later rounds copy the image already built: what they cost is the cell without it.
        self.costs
            .add(group, cell_seconds - image_seconds.get().unwrap_or(0.0));
        self.progress.finish_cell(&line);
        if records.iter().any(|m| m.status == Status::Interrupted) {
            self.summary.interrupted = true;
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }

    /// A target whose first cell could not even make its file system (mkfs or mount
    /// options the tool rejects, a size it refuses) would fail the same way in every cell:
    /// it is stopped with one line, and its other cells are not run.
    fn stop_if_unprovisionable(&mut self, target: &str, records: &[crate::results::Measurement]) {
        if self.provisioned.contains(target) || records.is_empty() {
            return;
        }
        if !records.iter().all(cell::is_provision_failure) {
            self.provisioned.insert(target.to_string());
            return;
        }
        let why = records[0].error.clone().unwrap_or_default();
        let line = format!(
            "fsarena: target {target} stopped: its first file system could not be made ({why}); its other cells are skipped"
        );
        // Said even with --quiet: it changes what the run measures.
        if self.opts.quiet {
            eprintln!("{line}");
        } else {
            self.progress.println(&line);
        }
        self.stopped.insert(target.to_string(), why);
    }
}

/// The work directory goes when the run ends, unless `--keep`; mounts and loop devices
/// were already taken down cell by cell.
fn work_cleanup(work: WorkDir, remove: bool) {
    work.release_traces();
    if remove {
        let mut report = crate::provision::cleanup::CleanupReport::default();
        crate::provision::cleanup::cleanup_run(&work.run, &mut report);
        for e in report.errors {
            eprintln!("fsarena: cleanup: {e}");
        }
    } else {
        eprintln!("fsarena: work directory kept: {}", work.run.display());
    }
}
