//! The runner walks a plan: for every cell (target × workload × threads × repetition, in
//! interleaved order) it provisions a fresh file system, runs the workload's points under
//! the monitor, checks the file system, tears it down and appends the measurements.
//!
//! This module holds the run's inputs, outcome and errors and the loop over cells; the
//! checks made before anything is created are in [`preflight`], one cell in [`cell`].

pub mod assemble;
pub mod cell;
pub mod dry_run;
pub mod harness;
pub mod host_facts;
pub mod populate;
pub mod preflight;
pub mod progress;
pub mod recording;
pub mod repeat;
pub mod schedule;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::dataset::DatasetError;
use crate::plan::Plan;
use crate::provision::{InstanceSpec, ProvisionError, WorkDir};
use crate::results::store::StoreError;
use crate::results::Status;
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

/// Runs the plan. Returns once every cell ran or `cancel` was raised; the results file
/// then holds every measurement that finished.
pub fn run(
    plan: &Plan,
    opts: &RunOptions,
    cancel: &Arc<AtomicBool>,
) -> Result<RunSummary, RunError> {
    let preflight::Checked {
        workloads,
        usable,
        skipped,
    } = preflight::check(plan, opts)?;
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
    let image = preflight::size(plan, opts)?.image;

    // The results store first: nothing is provisioned for a run that cannot record.
    let (mut store, done) = recording::open_store(plan, opts, &skipped)?;

    let work = WorkDir::create(&opts.work_root)?;
    let mut summary = RunSummary {
        out: opts.out.clone(),
        skipped_targets: skipped,
        ..Default::default()
    };
    let wl = schedule::thread_lists(plan, &workloads);
    let cells_per_rep = usable.len() * wl.iter().map(|(_, t)| t.len()).sum::<usize>();
    let mut progress = Progress::new(cells_per_rep as u64 * plan.runs.min() as u64, opts.quiet);
    let mut masters = populate::Masters::new(plan, &work, cancel);
    let mut seq = 0u64;
    let mut rep = 0u32;
    'reps: while rep < plan.runs.max() {
        if rep >= plan.runs.min() {
            match repeat::extra_repetition_reason(plan.runs, &opts.out, &workloads) {
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
            let mut this = CellRun {
                plan,
                spec: &spec,
                workload: w,
                cell: &cell,
                work: &work,
                cancel,
                master: None,
            };
            let records = match masters.for_cell(w, cell.target, &spec, &progress) {
                populate::Source::Fresh => cell::run_cell(&this, &mut progress),
                populate::Source::Clone(m) => {
                    this.master = Some(m);
                    cell::run_cell(&this, &mut progress)
                }
                populate::Source::Failed(status, e) => this.fail(status, e),
                populate::Source::Interrupted => this.fail(
                    Status::Interrupted,
                    "interrupted while populating the image".into(),
                ),
            };
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
                    summary.failures.push(recording::failure_line(m));
                }
                line = recording::describe(m, w);
            }
            if records.iter().any(|m| m.status == Status::Interrupted) {
                summary.interrupted = true;
            }
            progress.finish_cell(&line);
        }
        rep += 1;
    }
    progress.done();
    // The populated images go before the work directory's cleanup reads the journal.
    drop(masters);
    work_cleanup(work, !opts.keep);
    Ok(summary)
}

/// The work directory goes when the run ends, unless `--keep`; mounts and loop devices
/// were already taken down cell by cell.
fn work_cleanup(work: WorkDir, remove: bool) {
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
