//! The runner walks a plan: for every cell (target × workload × threads × repetition, in
//! interleaved order) it provisions a fresh file system, runs the workload's points under
//! the monitor, checks the file system, tears it down and appends the measurements.
//!
//! Read top-down, a run is a pipeline: the plan checked ([`preflight`]) and its processes
//! joined ([`ranks`]: alone, or the ranks of an MPI job, one [`team::Team`] either way);
//! the results store opened ([`recording`]); the plan's cells walked in their order
//! ([`crate::plan::Plan::cells`]), then the budget's rounds ([`rounds`], [`budget`]) by [`walk`]; each cell measured
//! ([`cell`]: its file systems, its points under the [`harness`], each checked) and its
//! records kept. This module holds [`run`]; the run's inputs, outcome and errors are in
//! [`terms`], below every step that reads them.

pub mod assemble;
pub mod budget;
pub mod cell;
pub mod deadline;
pub mod dry_run;
pub mod failure;
pub mod fs_sizes;
pub mod harness;
pub mod host_facts;
pub mod leftovers;
pub mod phase;
pub mod preflight;
pub mod progress;
pub mod ranks;
pub mod recording;
mod rounds;
pub mod schedule;
pub mod set_aside;
pub mod team;
pub mod terms;
pub mod walk;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::plan::cells::Cell;
use crate::plan::Plan;
use crate::provision::WorkDir;
use crate::results::record::CellId;
use crate::results::store::Store;
use crate::workload::Workload;
pub use deadline::{Deadline, CLOSING};
pub use dry_run::dry_run;
pub use preflight::usable_targets;
pub use terms::{RunError, RunOptions, RunSummary};

/// Runs the plan. Returns once every cell ran or `cancel` was raised; the results file
/// then holds every measurement that finished.
pub fn run(
    plan: &Plan,
    opts: &RunOptions,
    cancel: &Arc<AtomicBool>,
) -> Result<RunSummary, RunError> {
    run_asking(plan, opts, cancel, &budget::AgainstBaseline)
}

/// [`run`], with the budget's rounds spent on what `questions` leaves open (`fsarena tune`
/// races its candidates against the best so far instead of the baseline).
pub fn run_asking(
    plan: &Plan,
    opts: &RunOptions,
    cancel: &Arc<AtomicBool>,
    questions: &dyn budget::Questions,
) -> Result<RunSummary, RunError> {
    let began = host_facts::now_unix();
    let checked = checked(plan, opts);
    // Under MPI every rank meets the others here, before anything is created.
    let ranks::Joined {
        team,
        opts: rank_opts,
        work,
        targets,
    } = ranks::join(
        plan,
        opts,
        checked.as_ref().map(|_| ()).map_err(|e| e.to_string()),
    )?;
    let (checked, sized) = checked?;
    let team = team.as_ref();
    if team.is_root() {
        say_skipped(&checked);
    }
    // The results store first: nothing is provisioned for a run that cannot record. A
    // rank other than 0 records into its own run directory, never into `--out`.
    let opts = &rank_opts;
    let recording::Opened {
        mut store,
        tally,
        state,
    } = recording::open_store(
        plan,
        opts,
        &checked.skipped,
        &checked.skipped_workloads,
        sized.zstd_ratio,
    )?;
    let work = match work {
        Some(w) => w,
        None => {
            if opts.resume {
                leftovers::sweep_earlier(opts);
            }
            WorkDir::create_for(&opts.work_root, Some(&opts.out))?
        }
    };
    team.prepare_targets(&targets, &work)
        .map_err(RunError::Refused)?;
    let mut summary = RunSummary::begun(opts, &checked, &tally);
    let inputs = walk::Inputs {
        plan,
        targets: &targets,
        team,
        opts,
        cancel,
        usable: &checked.usable,
        workloads: &checked.workloads,
        work: &work,
        image: sized.image,
        memory: sized.memory,
        questions,
    };
    let (walked, stopped) = walk_plan(inputs, &mut store, tally, state, &mut summary);
    if let Err(e) = walked {
        // Said even with --quiet, in one line: it is why the run ends here. The run then
        // ends as an interrupted one does (exit code 1), never as a decided budget.
        if team.is_root() {
            eprintln!("fsarena: budget: {e}");
        }
        summary.interrupted = true;
    }
    work_cleanup(work, !opts.keep);
    let end = crate::results::RunEnd {
        started_unix: began,
        finished_unix: host_facts::now_unix(),
    };
    if let Err(e) = store.append_end(&end) {
        // Every measurement is already kept: only the run's wall time is lost with it.
        eprintln!(
            "fsarena: {}: the run's end not recorded: {e}",
            store.path().display()
        );
    }
    if !summary.interrupted && team.is_root() {
        // Exit 0 only for a complete plan: count again what the file really holds.
        summary
            .failures
            .extend(incomplete_unless_stopped(plan, opts, &checked, &stopped));
    }
    Ok(summary)
}

/// The plan's checks before anything is created, and its data set sized; a plan with no
/// workload or no target that can run here is refused.
fn checked(
    plan: &Plan,
    opts: &RunOptions,
) -> Result<(preflight::Checked, preflight::Sized), RunError> {
    let c = preflight::check(plan, opts)?;
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
}

/// Says which targets and workloads the checks left out, and why.
fn say_skipped(checked: &preflight::Checked) {
    for (name, why) in &checked.skipped {
        eprintln!("fsarena: skipping target {name}: {why}");
    }
    for (name, why) in &checked.skipped_workloads {
        eprintln!("fsarena: skipping workload {name}: {why}");
    }
}

impl RunSummary {
    /// The summary of a run about to walk its plan into `opts.out`, which already holds
    /// what `tally` counts.
    fn begun(opts: &RunOptions, checked: &preflight::Checked, tally: &recording::Tally) -> Self {
        RunSummary {
            out: opts.out.clone(),
            skipped_targets: checked.skipped.clone(),
            skipped_workloads: checked.skipped_workloads.clone(),
            // What a resumed run recorded earlier and did not measure `ok` still counts:
            // exit 0 means every measurement of the plan is `ok`.
            failures: tally
                .failures
                .iter()
                .map(|f| format!("{f} (recorded earlier)"))
                .collect(),
            ..Default::default()
        }
    }
}

/// Walks the plan ([`walk::Walk`]): whether the budget could tell what was open, and the
/// targets stopped on the way. The walk (and its populated images) ends here, before the
/// work directory's cleanup reads the journal.
fn walk_plan(
    inputs: walk::Inputs,
    store: &mut Store,
    tally: recording::Tally,
    state: crate::results::store::Loaded,
    summary: &mut RunSummary,
) -> (Result<(), budget::BudgetError>, Vec<String>) {
    let mut walk = walk::Walk::new(inputs, store, tally, state, summary);
    let walked = walk.walk();
    (walked, walk.stopped_targets())
}

/// [`incomplete`] for the usable targets that were not stopped.
fn incomplete_unless_stopped(
    plan: &Plan,
    opts: &RunOptions,
    checked: &preflight::Checked,
    stopped: &[String],
) -> Vec<String> {
    let names: Vec<&str> = checked
        .usable
        .iter()
        .map(|&i| plan.targets[i].name.as_str())
        .filter(|n| !stopped.iter().any(|s| s == n))
        .collect();
    incomplete(plan, &opts.out, &names, &checked.workloads)
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
    let takes_threads = schedule::takes_threads(workloads);
    let cells = plan.cells(0..plan.runs.min(), targets.len(), &takes_threads);
    let total = cells.len();
    let mut missing: Vec<(&Cell, CellId)> = (cells.iter())
        .map(|c| (c, cell_id(plan, c, targets, workloads)))
        .filter(|(_, k)| !done.contains(k))
        .collect();
    // Listed workload first, then target, thread count (in the plan's order), data set
    // and repetition.
    missing.sort_by_key(|&(c, _)| {
        let thread =
            (plan.threads_of(&takes_threads, c.workload).iter()).position(|&t| t == c.threads);
        (c.workload, c.target, thread, c.dataset, c.repetition)
    });
    let missing: Vec<String> = (missing.iter())
        .map(|(_, k)| {
            let on = (k.dataset.as_ref())
                .map(|l| format!(" on {l}"))
                .unwrap_or_default();
            let rep = k.repetition + 1;
            format!(
                "{} {}{on} threads {} repetition {rep}",
                k.target, k.workload, k.threads
            )
        })
        .collect();
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

/// What the results file calls `cell` of the plan's minimum on `targets`.
fn cell_id(plan: &Plan, cell: &Cell, targets: &[&str], workloads: &[Box<dyn Workload>]) -> CellId {
    CellId {
        target: targets[cell.target].to_string(),
        workload: workloads[cell.workload].spec().name.to_string(),
        threads: cell.threads as u32,
        repetition: cell.repetition,
        dataset: plan.dataset_label(cell.dataset),
    }
}

/// The work directory goes when the run ends, unless `--keep`; mounts and loop devices
/// were already taken down cell by cell.
fn work_cleanup(work: WorkDir, remove: bool) {
    // The journal is read once every image being removed is gone (`provision::removals`).
    work.removals.wait();
    work.blanks.remove_all(&work.journal);
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
