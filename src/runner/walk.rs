//! A run in progress: the plan walked cell by cell. First the minimum repetitions, in
//! interleaved order; then, for `--runs auto`, the budget's rounds. Each cell is skipped
//! (already recorded, or its target stopped) or measured ([`super::cell`]) and recorded
//! ([`super::recording`]).

use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::budget::{self, BudgetError, Group};
use super::cell::{self, Beside, CellOutput, CellRun};
use super::deadline::Deadline;
use super::progress::Progress;
use super::recording::{self, Recorder, Tally};
use super::schedule;
use super::set_aside::{self, SetAside};
use super::team::Team;
use super::terms::{RunOptions, RunSummary};
use super::{preflight, rounds};

mod beside;
mod budgeted;
mod stops;
use crate::dataset::DatasetSpec;
use crate::golden::populate;
use crate::plan::cells::Cell;
use crate::plan::fs_size;
use crate::plan::{Plan, Runs, TargetConfig};
use crate::provision::{InstanceSpec, WorkDir};
use crate::results::record::{CellId, CellKey};
use crate::results::store::{Loaded, Store};
use crate::results::{Measurement, Status};
use crate::workload::Workload;

/// What a run walks its plan with; none of it changes during the walk.
pub struct Inputs<'a> {
    pub plan: &'a Plan,
    /// The plan's targets as this process works on them (under MPI, `dir:` targets point
    /// to the rank's own subtree); indexed like `plan.targets`.
    pub targets: &'a [TargetConfig],
    pub team: &'a dyn Team,
    pub opts: &'a RunOptions,
    pub cancel: &'a Arc<AtomicBool>,
    /// The targets that can run here, as indices into `targets`.
    pub usable: &'a [usize],
    pub workloads: &'a [Box<dyn Workload>],
    pub work: &'a WorkDir,
    /// The size of the loop images fsarena makes, unless a target sets its own.
    pub image: u64,
    /// The size of a tmpfs target that sets none.
    pub memory: u64,
    /// What the budget's rounds ask ([`budget::Questions`]).
    pub questions: &'a dyn budget::Questions,
}

/// A run in progress: what every cell needs, and what the run has recorded so far.
pub struct Walk<'a> {
    inputs: Inputs<'a>,
    /// The plan's data sets as this process works with them ([`Team::dataset`]), and the
    /// labels their records carry: resolved once for the run, not once a cell.
    datasets: Vec<DatasetSpec>,
    labels: Vec<Option<String>>,
    done: HashSet<CellId>,
    /// Points of cells cut short that are recorded in final form (`--resume`).
    points: HashSet<CellKey>,
    /// What the results file holds, kept in memory as each record is appended: what the
    /// budget decides from.
    state: Loaded,
    /// Targets stopped because their first file system could not be made, with why.
    stopped: HashMap<String, String>,
    /// Targets a file system has been made for at least once.
    provisioned: HashSet<String>,
    store: &'a mut Store,
    summary: &'a mut RunSummary,
    progress: Progress,
    masters: populate::Masters<'a>,
    /// The number of the cell now being run (names its file systems).
    seq: u64,
    costs: rounds::Costs,
    /// The comparisons (candidate's group, variant) the budget stopped and the run said so
    /// of: each is said once.
    beyond: HashSet<(Group, String)>,
    started: Instant,
}

/// The cells of the plan's minimum repetitions on the `usable` targets, in the order they
/// run.
fn minimum(plan: &Plan, workloads: &[Box<dyn Workload>], usable: &[usize]) -> Vec<Cell> {
    let takes_threads = schedule::takes_threads(workloads);
    plan.cells(0..plan.runs.min(), usable.len(), &takes_threads)
}

/// The records of cell `this` from where its file systems come (`source`): its points
/// measured on fresh ones or on copies of its populated image, each kept by `rec`; or the
/// one record of why the image could not be had.
fn measure_from<'c>(
    mut this: CellRun<'c>,
    source: populate::Source<'c>,
    progress: &mut Progress,
    rec: &mut Recorder,
) -> CellOutput {
    let failure = match source {
        populate::Source::Fresh => None,
        populate::Source::Clone(m) => {
            this.master = Some(m);
            None
        }
        populate::Source::Failed(f) => Some(f),
        populate::Source::Interrupted => Some((
            Status::Interrupted,
            "interrupted while populating the image".into(),
            Vec::new(),
        )),
    };
    match failure {
        None => cell::measure_points(&this, progress, &mut |m| rec.keep(m)),
        Some(f) => this.fail(this.agree_failure(f)).into(),
    }
}

/// What measuring one cell gave: its records, whether they were all kept, and its time.
struct Measured {
    records: Vec<Measurement>,
    write_failed: bool,
    /// The cell's wall time, and the part of it spent building its populated image.
    seconds: f64,
    image_seconds: Option<f64>,
}

impl<'a> Walk<'a> {
    /// A walk of `inputs` that records into `store`, which already holds what `tally`
    /// counts and `state` keeps, and adds up in `summary`.
    pub fn new(
        inputs: Inputs<'a>,
        store: &'a mut Store,
        tally: Tally,
        state: Loaded,
        summary: &'a mut RunSummary,
    ) -> Walk<'a> {
        let (plan, work, cancel) = (inputs.plan, inputs.work, inputs.cancel);
        let cells = minimum(plan, inputs.workloads, inputs.usable).len() as u64;
        let quiet = inputs.opts.quiet;
        let datasets = (plan.datasets().into_iter())
            .map(|d| inputs.team.dataset(d))
            .collect();
        let labels = (0..plan.dataset_count())
            .map(|d| plan.dataset_label(d))
            .collect();
        Walk {
            inputs,
            datasets,
            labels,
            done: tally.done,
            points: tally.points,
            state,
            stopped: HashMap::new(),
            provisioned: HashSet::new(),
            store,
            summary,
            progress: Progress::new(cells, quiet),
            masters: populate::Masters::new(plan, work, cancel),
            seq: 0,
            costs: rounds::Costs::default(),
            beyond: HashSet::new(),
            started: Instant::now(),
        }
    }

    /// Walks the plan: its minimum repetitions, then (`--runs auto`) the budget's rounds.
    /// `Err` when the budget cannot tell what is still open: the run ends on it.
    pub fn walk(&mut self) -> Result<(), BudgetError> {
        let minimum = minimum(self.inputs.plan, self.inputs.workloads, self.inputs.usable);
        // The probe's table is built now, long before the first phase's probe, so that
        // probe does not find the fresh table still in the CPU's caches.
        crate::monitor::steadiness::shared();
        self.build_images_ahead(&minimum);
        let mut cut = false;
        for (i, cell) in minimum.iter().enumerate() {
            // Once cut, the targets left out are stopped: their cells are skipped below.
            cut = cut || self.minimum_overruns(&minimum[i..]);
            let eta = self.eta(&minimum[i..]);
            self.progress.set_eta(eta);
            if self.run_cell(cell).is_break() {
                break;
            }
        }
        let spent = match self.inputs.plan.runs {
            Runs::Auto { max, budget, .. } if !self.summary.interrupted => {
                self.spend_budget(max, budget)
            }
            _ => Ok(()),
        };
        self.progress.done();
        spent
    }

    /// The targets stopped because their first file system could not be made.
    pub fn stopped_targets(&self) -> Vec<String> {
        self.stopped.keys().cloned().collect()
    }

    /// The time the `cells` still to run will take, each priced at what cells of its group
    /// (else its target, else any) cost so far; within the budget's end for `auto`. `None`
    /// until a cell has been timed.
    fn eta(&self, cells: &[Cell]) -> Option<Duration> {
        let mut secs = 0.0;
        for c in cells {
            secs += self.costs.estimate(&self.group(c));
        }
        if secs <= 0.0 {
            return None;
        }
        let mut eta = Duration::from_secs_f64(secs);
        if let Runs::Auto { budget, .. } = self.inputs.plan.runs {
            eta = eta.max(Deadline::new(budget, self.started).until_end());
        }
        Some(eta)
    }

    /// The label the records of data set `d` carry (none for a plan of one data set).
    fn label(&self, d: usize) -> Option<String> {
        self.labels.get(d).cloned().flatten()
    }

    /// What the results file calls `cell` once it is recorded (`--resume` skips those).
    fn cell_id(&self, cell: &Cell) -> CellId {
        CellId {
            target: self.inputs.plan.targets[self.inputs.usable[cell.target]]
                .name
                .clone(),
            workload: self.inputs.workloads[cell.workload].spec().name.to_string(),
            threads: cell.threads as u32,
            repetition: cell.repetition,
            dataset: self.label(cell.dataset),
        }
    }

    /// The group (all repetitions) `cell` belongs to.
    fn group(&self, cell: &Cell) -> Group {
        Group {
            target: self.inputs.plan.targets[self.inputs.usable[cell.target]]
                .name
                .clone(),
            workload: self.inputs.workloads[cell.workload].spec().name.to_string(),
            dataset: self.label(cell.dataset),
            threads: cell.threads as u32,
        }
    }

    /// How the file system of a cell on `target` is provisioned: numbered with the cell
    /// now being run (`seq`), sized by the target or the run's image size.
    fn spec_for<'t>(&self, target: &'t TargetConfig) -> InstanceSpec<'t> {
        InstanceSpec {
            target,
            seq: self.seq,
            size: fs_size::for_target(target, self.inputs.image, self.inputs.memory),
            allow_device: self.inputs.opts.allow_device,
            wipe: self.inputs.opts.wipe,
            daemon_cpus: None,
        }
    }

    /// Populates every image the `cells` still to run will copy, before the first of them
    /// ([`populate::Masters::build_ahead`]).
    fn build_images_ahead(&mut self, cells: &[Cell]) {
        let wanted: Vec<_> = cells
            .iter()
            .filter(|c| !self.done.contains(&self.cell_id(c)))
            .map(|c| {
                let spec = self.spec_for(&self.inputs.targets[self.inputs.usable[c.target]]);
                (
                    self.inputs.workloads[c.workload].as_ref(),
                    (c.target, c.dataset, c.threads),
                    spec,
                )
            })
            .collect();
        self.masters.build_ahead(wanted, &self.progress);
    }

    /// Runs one cell and records it; `Break` when the run must stop (interrupted, or the
    /// results file unwritable). Disturbed points are measured again ([`set_aside`]).
    fn run_cell(&mut self, cell: &Cell) -> ControlFlow<()> {
        if self.inputs.cancel.load(Ordering::SeqCst) {
            self.summary.interrupted = true;
            return ControlFlow::Break(());
        }
        if let Some(why) = self.skipped(cell) {
            self.progress.finish_cell(why);
            return ControlFlow::Continue(());
        }
        let mut spent = 0.0;
        for retry in 0..=set_aside::MAX_RETRIES {
            let measured = self.measure(cell, retry < set_aside::MAX_RETRIES);
            spent += measured.seconds - measured.image_seconds.unwrap_or(0.0);
            let stop = measured.write_failed || self.inputs.cancel.load(Ordering::SeqCst);
            let again = set_aside::retry(&measured.records).filter(|_| !stop);
            self.account(cell, measured, again.is_none().then_some(spent))?;
            let Some(final_points) = again else { break };
            self.points.extend(final_points);
            self.progress.grow(1);
            (self.progress).println(&set_aside::again_line(&self.group(cell), cell, retry + 1));
        }
        ControlFlow::Continue(())
    }

    /// Shows `cell` starting, and why it is not run, if it is not: already recorded, or
    /// its target stopped.
    fn skipped(&mut self, cell: &Cell) -> Option<&'static str> {
        let target = &self.inputs.targets[self.inputs.usable[cell.target]];
        let w = self.inputs.workloads[cell.workload].as_ref();
        let shown = match self.label(cell.dataset) {
            Some(l) => format!("{} · {l}", w.spec().name),
            None => w.spec().name.to_string(),
        };
        self.progress
            .start_cell(&target.name, &shown, cell.repetition + 1, cell.threads);
        if self.done.contains(&self.cell_id(cell)) {
            return Some("already recorded");
        }
        if self.stopped.contains_key(&target.name) {
            return Some("skipped: the target is stopped");
        }
        None
    }

    /// Measures `cell` on its file systems (fresh, or copies of its populated image),
    /// keeping each record the moment it is final.
    fn measure(&mut self, cell: &Cell, retry_left: bool) -> Measured {
        let started = Instant::now();
        self.seq += 1;
        let w = self.inputs.workloads[cell.workload].as_ref();
        let (spec, log_spec) = self.specs(cell, w);
        let keep_image = self.keeps_image(cell, w, &spec, log_spec.is_some());
        let beside = self.beside(cell, w, log_spec.is_some());
        // The first cell on an image built ahead is charged for building it, as it was
        // when it built the image itself.
        let ahead = self
            .masters
            .take_ahead_seconds(w, cell.target, cell.dataset, &spec);
        // Each point is appended the moment it is checked (a kill -9 in a long sweep
        // keeps the points already finished).
        let set_aside = self.set_aside_rule(retry_left);
        let mut rec = Recorder {
            store: &mut *self.store,
            state: &mut self.state,
            team: self.inputs.team,
            started: started
                .checked_sub(Duration::from_secs_f64(ahead))
                .unwrap_or(started),
            image_seconds: (ahead > 0.0).then_some(ahead),
            image_steps: (self.masters).take_image_steps(w, cell.target, cell.dataset, &spec),
            failed: false,
            cancel: self.inputs.cancel,
            set_aside,
        };
        let (source, built_now) =
            self.masters
                .for_cell(w, cell.target, cell.dataset, &spec, &self.progress);
        if let Some(built) = built_now {
            rec.image_seconds = Some(ahead + built.seconds);
            rec.image_steps = built.steps;
        }
        let this = CellRun {
            plan: self.inputs.plan,
            spec: &spec,
            workload: w,
            cell,
            dataset: &self.datasets[cell.dataset.min(self.datasets.len() - 1)],
            work: self.inputs.work,
            cancel: self.inputs.cancel,
            master: None,
            recorded: &self.points,
            team: self.inputs.team,
            log_spec: log_spec.as_ref(),
            keep_image,
            beside: beside.as_ref().map(|(spec, image)| Beside {
                spec,
                master: image.as_deref(),
            }),
        };
        let CellOutput {
            mut records,
            emitted,
            image,
        } = measure_from(this, source, &mut self.progress, &mut rec);
        if let Some(image) = image {
            self.masters.adopt(cell.target, cell.dataset, *image);
        }
        for m in records.iter_mut().skip(emitted) {
            if rec.failed || !rec.keep(m) {
                break;
            }
        }
        Measured {
            records,
            write_failed: rec.failed,
            seconds: rec.started.elapsed().as_secs_f64(),
            image_seconds: rec.image_seconds,
        }
    }

    /// The note every clone carries when the file system `cell` (of workload `w`) leaves is
    /// to be kept as its target's populated image ([`populate::Masters::keeps`]): not under
    /// MPI (the ranks share their steps) nor beside a log target.
    fn keeps_image(
        &self,
        cell: &Cell,
        w: &dyn Workload,
        spec: &InstanceSpec,
        log: bool,
    ) -> Option<String> {
        let keep = !log
            && self.inputs.team.is_alone()
            && (self.masters).keeps(w, (cell.target, cell.dataset, cell.threads), spec);
        keep.then(|| {
            format!(
                "the populated image is the file system the {} cell of repetition {} \
                 ({} thread(s)) wrote and checked, kept instead of writing the data set again",
                w.spec().name,
                cell.repetition + 1,
                cell.threads
            )
        })
    }

    /// The rule that sets a disturbed phase aside (`--max-steal`), if the plan has one;
    /// `retry_left` when the cell may still be measured again.
    fn set_aside_rule(&self, retry_left: bool) -> Option<SetAside> {
        let cpus = self.state.host.cpus;
        (self.inputs.plan.max_steal_pct).map(|max_steal_pct| SetAside {
            max_steal_pct,
            cpus,
            retry_left,
        })
    }

    /// The file system a point of `cell` (of workload `w`) is made as, and the one for its
    /// log ([`preflight::log_home`], named apart from the cell's own: [`InstanceSpec::LOG`]).
    fn specs(&self, cell: &Cell, w: &dyn Workload) -> (InstanceSpec<'a>, Option<InstanceSpec<'a>>) {
        let target = &self.inputs.targets[self.inputs.usable[cell.target]];
        let log = preflight::log_home(self.inputs.plan, w.spec().name, target, self.inputs.targets);
        let log_spec = log.map(|(t, _)| InstanceSpec {
            seq: self.seq | InstanceSpec::LOG,
            ..self.spec_for(t)
        });
        (self.spec_for(target), log_spec)
    }

    /// Adds one try of `cell` to the summary and progress, and the cell's `cost` (all its
    /// tries, no image) once known; `Break` when the run must stop (a record not written,
    /// or the cell interrupted).
    fn account(&mut self, cell: &Cell, measured: Measured, cost: Option<f64>) -> ControlFlow<()> {
        let Measured {
            records,
            write_failed,
            ..
        } = measured;
        if write_failed {
            self.summary.interrupted = true;
            return ControlFlow::Break(());
        }
        let w = self.inputs.workloads[cell.workload].as_ref();
        let mut line = String::new();
        for m in &records {
            self.summary.measured += 1;
            match m.status {
                Status::Ok => {}
                Status::Interrupted => self.summary.cut_short += 1,
                Status::Disturbed => self.summary.set_aside += 1,
                _ => self.summary.failures.push(recording::failure_line(m)),
            }
            line = recording::describe(m, w);
        }
        let target = &self.inputs.targets[self.inputs.usable[cell.target]].name;
        self.stop_if_unprovisionable(target, &records);
        // Later rounds copy the image already built: what they cost is the cell without it.
        if let Some(cost) = cost {
            self.costs.add(self.group(cell), cost);
        }
        self.progress.finish_cell(&line);
        if records.iter().any(|m| m.status == Status::Interrupted) {
            self.summary.interrupted = true;
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }
}
