//! One cell: every point of a workload, each measured on its own freshly made file system,
//! under the monitor, and checked after it. Whatever happens, a cell yields records.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use super::harness::MonitoredHarness;
use super::progress::Progress;
use super::ranks::{self, Ranks};
use super::schedule::Cell;
use super::{assemble, host_facts};
use crate::plan::Plan;
use crate::provision::{Instance, InstanceSpec, MasterImage, ProvisionError, WorkDir};
use crate::results::record::CellKey;
use crate::results::{LogPlacement, Measurement, Status};
use crate::workload::{self, Ctx, Point, Workload, WorkloadError};

/// Why a cell could not start a point: the status to record, the one-line error, and
/// notes kept with the record (a failed tool's whole output, whose error line holds only
/// the part that names the error).
pub type Failure = (Status, String, Vec<String>);

/// A provisioning error as a cell records it.
pub fn provision_failure(e: ProvisionError) -> Failure {
    let notes = e
        .tool_output()
        .map(|o| vec![format!("tool output: {o}")])
        .unwrap_or_default();
    (Status::Error, format!("provision: {e}"), notes)
}

/// Whether a record is a provisioning failure (the cell never reached its workload).
pub fn is_provision_failure(m: &Measurement) -> bool {
    m.status != Status::Ok
        && m.error.as_deref().is_some_and(|e| {
            e.starts_with("provision: ") || e.starts_with("cannot populate the image: provision: ")
        })
}

/// What every point of one cell shares.
pub struct CellRun<'a> {
    pub plan: &'a Plan,
    pub spec: &'a InstanceSpec<'a>,
    pub workload: &'a dyn Workload,
    pub cell: &'a Cell,
    /// The cell's data set (`plan.datasets()[cell.dataset]`).
    pub dataset: &'a crate::dataset::DatasetSpec,
    pub work: &'a WorkDir,
    pub cancel: &'a Arc<AtomicBool>,
    /// The run's populated image of this target, when the workload wants the data set
    /// present: each point then runs on a copy of it instead of an empty file system.
    pub master: Option<&'a MasterImage>,
    /// Points of this cell already recorded in final form (`--resume` of a cell that was
    /// cut short): kept, not measured again.
    pub recorded: &'a std::collections::HashSet<CellKey>,
    /// Under MPI: the job whose ranks run this cell together.
    pub ranks: Option<&'a Ranks>,
    /// The workload's `log_target`, when it names a target other than this cell's: every
    /// point gets a fresh file system of it for the log.
    pub log_spec: Option<&'a InstanceSpec<'a>>,
}

/// The directory made for the log on a `log_target` file system.
pub const LOG_DIR: &str = "fsarena-log";

/// The workload's directory on a target's file system (also inside a populated image).
pub const WORK_DIR: &str = "fsarena-work";

/// A provisioned file system with the two working directories of one point.
struct Fresh {
    inst: Instance,
    root: PathBuf,
    scratch: PathBuf,
    /// The run's shared source trees (`None` if the directory could not be made: the
    /// workloads then make theirs in `scratch`).
    sources: Option<PathBuf>,
    /// The data set is already under `root` (a clone of the populated image).
    populated: bool,
    /// The plan's `log_target` for this point: its own fresh file system and the directory
    /// on it handed to the workload as `Ctx::log_root`.
    log: Option<(Instance, PathBuf)>,
}

impl CellRun<'_> {
    /// A record of this cell with nothing measured yet.
    fn base(&self) -> Measurement {
        Measurement {
            target: self.spec.target.name.clone(),
            fs: self.spec.target.fs.name().to_string(),
            workload: self.workload.name().to_string(),
            dataset: self.plan.dataset_label(self.cell.dataset),
            repetition: self.cell.repetition,
            threads: self.cell.threads as u32,
            started_unix: host_facts::now_unix(),
            aged_pct: self.plan.age_pct,
            ..Default::default()
        }
    }

    /// A record of one point of this cell with nothing measured yet.
    fn base_for(&self, p: &Point) -> Measurement {
        let mut m = self.base();
        m.variant = p.variant.clone();
        m.params = p.params.clone();
        m
    }

    /// The label of this cell's step `what` (the same on every rank), so ranks that fall
    /// out of step are caught.
    pub fn step(&self, what: &str) -> String {
        format!(
            "{} {} threads {} repetition {} {what}",
            self.spec.target.name,
            self.workload.name(),
            self.cell.threads,
            self.cell.repetition + 1
        )
    }

    /// Under MPI, for a point this rank cannot run (`m` holds why): takes its part in the
    /// point's barriers so the other ranks record the same failure instead of waiting.
    fn skip_point(&self, point: usize, m: &mut Measurement) {
        if let Some(r) = self.ranks {
            let step = self.step(&format!("point {point}"));
            let why = m.error.clone().unwrap_or_default();
            let _ = ranks::before_phase(r, &step, Err(why.clone()));
            let _ = ranks::after_phase(r, &step, Err(why));
            ranks::agree_point(r, &step, m, false);
        }
    }

    /// A failure of this rank before the cell's points, as every rank records it (under
    /// MPI, the other ranks learn of it at the cell's start).
    pub fn agree_failure(&self, f: Failure) -> Failure {
        match self.ranks {
            Some(r) => ranks::agree_cell(r, &self.step("start"), Err(&f))
                .err()
                .unwrap_or(f),
            None => f,
        }
    }

    /// A one-record result for a cell that could not get as far as its points.
    pub fn fail(&self, (status, error, notes): Failure) -> Vec<Measurement> {
        let mut m = self.base();
        m.status = status;
        m.error = Some(error);
        m.notes = notes;
        vec![m]
    }

    /// What the workload sees of one point: built in one place so `points` and `run`
    /// see the same thing.
    fn ctx<'b>(&'b self, f: &'b Fresh, options: &'b toml::Table) -> Ctx<'b> {
        Ctx {
            root: &f.root,
            scratch: &f.scratch,
            sources: f.sources.as_deref(),
            threads: self.cell.threads,
            dataset: self.dataset,
            options,
            cancel: self.cancel,
            deadline: Some(Instant::now() + self.plan.timeout),
            populated: f.populated,
            log_root: f.log.as_ref().map(|(_, dir)| dir.as_path()),
        }
    }

    /// The populated image point `p` runs on a copy of, if any.
    fn master_for(&self, p: &Point) -> Option<&MasterImage> {
        self.master
            .filter(|_| self.workload.point_wants_populated(p))
    }

    /// Provisions a file system for point `point` (`p`), with its working directories.
    fn fresh(&self, point: usize, p: &Point) -> Result<Fresh, Failure> {
        let (spec, work) = (self.spec, self.work);
        let shared = self.ranks.filter(|r| r.shared);
        let master = self.master_for(p);
        let inst = match (shared, master) {
            (Some(r), _) => {
                let step = self.step(&format!("point {point}"));
                super::shared::instance(r, &step, spec, work, WORK_DIR, &provision_failure)?
            }
            (None, Some(master)) => master.clone_for(spec, work).map_err(provision_failure)?,
            (None, None) => Instance::provision(spec, work).map_err(provision_failure)?,
        };
        let root = inst.root.join(WORK_DIR);
        let scratch = match work.subdir("scratch") {
            Ok(d) => d.join(format!("{}-{point}", spec.seq)),
            Err(e) => {
                let _ = inst.teardown(false);
                return Err((
                    workload::status_of_io(&e),
                    format!("cannot create the scratch directory: {e}"),
                    Vec::new(),
                ));
            }
        };
        let populated = master.is_some_and(|m| m.holds_dataset);
        let made = if populated || shared.is_some() {
            // The copy arrives with the data set in place and cold (`clone_for` mounts it
            // fresh over an image with nothing cached), with no machine-wide cache drop: that
            // would also evict the run's source trees, which copy and sync then read back
            // from the disk in every cell. What is dirty anywhere is still written back
            // first, as the drop's `sync` did: no earlier writeback may land in the measured
            // phase. (A shared tree arrives made by rank 0, empty.)
            std::fs::metadata(&root)
                .map(|_| {
                    if populated {
                        rustix::fs::sync();
                    }
                })
                .and_then(|_| std::fs::create_dir_all(&scratch))
        } else {
            std::fs::create_dir(&root).and_then(|_| std::fs::create_dir_all(&scratch))
        };
        if let Err(e) = made {
            let _ = inst.teardown(false);
            let _ = std::fs::remove_dir_all(&scratch);
            return Err((
                workload::status_of_io(&e),
                format!("cannot prepare the working directories: {e}"),
                Vec::new(),
            ));
        }
        let log = match self.log_spec.map(|spec| self.fresh_log(spec)).transpose() {
            Ok(log) => log,
            Err(e) => {
                let _ = inst.teardown(false);
                let _ = std::fs::remove_dir_all(&scratch);
                return Err(e);
            }
        };
        Ok(Fresh {
            inst,
            root,
            scratch,
            sources: work.subdir("sources").ok(),
            populated,
            log,
        })
    }
}

impl CellRun<'_> {
    /// A fresh file system of the log target with an empty log directory on it.
    fn fresh_log(&self, spec: &InstanceSpec) -> Result<(Instance, PathBuf), Failure> {
        let inst = Instance::provision(spec, self.work).map_err(provision_failure)?;
        let dir = inst.root.join(LOG_DIR);
        match std::fs::create_dir(&dir) {
            Ok(()) => Ok((inst, dir)),
            Err(e) => {
                let _ = inst.teardown(false);
                Err((
                    workload::status_of_io(&e),
                    format!("cannot create the log directory {}: {e}", dir.display()),
                    Vec::new(),
                ))
            }
        }
    }
}

/// Unmounts, checks and removes a point's file system; a failed check invalidates the
/// measurements made on it (one, or several points that followed on it).
fn retire(f: Fresh, ms: &mut [Measurement], target: &str) {
    let note = |m: &mut [Measurement], text: String| {
        for m in m.iter_mut() {
            m.notes.push(text.clone());
        }
    };
    if let Some((log, _)) = f.log {
        let name = log.provenance.fs_type.clone();
        let (health, td) = log.teardown(true);
        if let Some(h) = health.filter(|h| !h.passed) {
            for m in ms.iter_mut().filter(|m| m.status == Status::Ok) {
                m.status = Status::Invalid;
                m.error = Some(format!(
                    "the log target's file system failed its check after the measurement ({})",
                    h.command.join(" ")
                ));
            }
        }
        if let Err(e) = td {
            note(ms, format!("teardown of the log target: {e}"));
            eprintln!("fsarena: teardown of the log target ({name}): {e}");
        }
    }
    let (health, td) = f.inst.teardown(true);
    let _ = std::fs::remove_dir_all(&f.scratch);
    if let Some(h) = health {
        for m in ms.iter_mut() {
            if !h.passed && m.status == Status::Ok {
                m.status = Status::Invalid;
                m.error = Some(format!(
                    "the file system failed its check after the measurement ({})",
                    h.command.join(" ")
                ));
            }
            m.health = Some(h.clone());
        }
    }
    if let Err(e) = td {
        note(ms, format!("teardown: {e}"));
        eprintln!("fsarena: teardown of {target}: {e}");
    }
}

/// Retires `f` with the records measured on it and hands them to `emit` in order, into
/// `records`. False when a record could not be kept (the cell stops).
fn settle(
    f: Fresh,
    pending: &mut Vec<Measurement>,
    target: &str,
    emit: &mut dyn FnMut(&mut Measurement) -> bool,
    records: &mut Vec<Measurement>,
) -> bool {
    if pending.is_empty() {
        retire(f, &mut [Measurement::default()], target);
        return true;
    }
    retire(f, pending, target);
    let mut kept = true;
    for mut m in pending.drain(..) {
        // After a record that could not be kept, the rest go to the caller unemitted.
        kept = kept && emit(&mut m);
        records.push(m);
    }
    kept
}

/// What a cell produced: its records, the first `emitted` of which were already handed
/// to the caller's `emit` as each point finished.
pub struct CellOutput {
    pub records: Vec<Measurement>,
    pub emitted: usize,
}

impl From<Vec<Measurement>> for CellOutput {
    fn from(records: Vec<Measurement>) -> Self {
        CellOutput {
            records,
            emitted: 0,
        }
    }
}

/// One cell: every point of the workload, each on its own freshly made file system
/// (a second point must not find the first one's files, caches or free-space layout).
/// Each point's record goes to `emit` the moment its file system has passed (or failed)
/// its check, so a kill -9 in a long sweep loses at most the point in progress; `emit`
/// returns false when the record could not be kept, and the cell stops. Never panics on
/// the workload's behalf and always yields at least one record, unless every point was
/// already recorded.
pub fn run_cell(
    c: &CellRun,
    progress: &mut Progress,
    emit: &mut dyn FnMut(&mut Measurement) -> bool,
) -> CellOutput {
    let w = c.workload;
    let target = &c.spec.target.name;
    let empty = toml::Table::new();
    let options = c.plan.workload_options.get(w.name()).unwrap_or(&empty);
    let mut current = match c.fresh(0, &Point::default()) {
        Ok(f) => Some(f),
        Err(failure) => return c.fail(c.agree_failure(failure)).into(),
    };
    // Points are asked of the first file system: some depend on it (an io sweep sizes its
    // large file from the target's free space).
    let points = {
        let Some(f) = current.as_ref() else {
            return c
                .fail((Status::Error, "internal: no file system".into(), Vec::new()))
                .into();
        };
        w.points(&c.ctx(f, options))
    };
    let points = match points {
        Ok(p) if p.is_empty() => Ok(vec![Point::default()]),
        other => other,
    };
    let points = match (points, c.ranks) {
        (Ok(p), Some(r)) => ranks::agree_cell(r, &c.step("start"), Ok(p.len())).map(|()| p),
        (Ok(p), None) => Ok(p),
        (Err(e), _) => Err(c.agree_failure((e.status(), e.to_string(), Vec::new()))),
    };
    let points = match points {
        Ok(p) => p,
        Err((status, e, notes)) => {
            let mut m = c.base();
            m.status = status;
            m.error = Some(e);
            m.notes = notes;
            if let Some(f) = current.take() {
                m.provenance = f.inst.provenance.clone();
                retire(f, std::slice::from_mut(&mut m), target);
            }
            return vec![m].into();
        }
    };
    // The first file system was made for `Point::default()`: a first point that wants the
    // other kind (a populated copy, or an empty one) gets its own.
    let kind = |p: &Point| c.master_for(p).is_some();
    if points
        .first()
        .is_some_and(|p| kind(p) != kind(&Point::default()))
    {
        if let Some(f) = current.take() {
            retire(f, &mut [c.base()], target);
        }
    }
    let of = points.len() as u32;
    let mut records = Vec::new();
    let mut emitted = 0;
    let mut skipped = 0;
    // Points measured on `current` that a following point shares it with: their records
    // wait for its check.
    let mut pending: Vec<Measurement> = Vec::new();
    for (i, p) in points.iter().enumerate() {
        let mut probe = c.base_for(p);
        probe.cell_points = Some(of);
        if c.recorded.contains(&probe.key()) {
            skipped += 1;
            continue;
        }
        if c.cancel.load(Ordering::SeqCst) {
            if let Some(f) = current.take() {
                if !settle(f, &mut pending, target, emit, &mut records) {
                    break;
                }
                emitted = records.len();
            }
            // Recorded so `--resume` knows this cell is unfinished and runs it again.
            let mut m = probe;
            m.status = Status::Interrupted;
            m.error = Some("interrupted before this point ran".into());
            records.push(m);
            break;
        }
        let shared = !pending.is_empty();
        let f = match current.take() {
            Some(f) => f,
            None => match c.fresh(i, p) {
                Ok(f) => f,
                Err((status, e, notes)) => {
                    let mut m = probe;
                    m.status = status;
                    m.error = Some(e);
                    m.notes = notes;
                    c.skip_point(i, &mut m);
                    let kept = emit(&mut m);
                    records.push(m);
                    if !kept {
                        break;
                    }
                    emitted = records.len();
                    continue;
                }
            },
        };
        progress.point(&p.variant);
        let mut m = measure_point(c, &c.ctx(&f, options), p, i, &f);
        m.cell_points = Some(of);
        if shared {
            m.notes.push(format!(
                "measured on the file system of the point before it ({}), which only read it",
                points[i - 1].variant
            ));
        }
        pending.push(m);
        // A read-only point leaves its file system to the next one, where the workload
        // says the next one starts from what it leaves (and outside MPI, whose ranks agree
        // on every provisioning step).
        let follows = points.get(i + 1).is_some_and(|next| {
            c.ranks.is_none()
                && pending.iter().all(|m| m.status == Status::Ok)
                && w.follows_on_same_fs(p, next)
                && !c.recorded.contains(&{
                    let mut k = c.base_for(next);
                    k.cell_points = Some(of);
                    k.key()
                })
        });
        if follows {
            // The next point finds the data set in place, whether this point's file system
            // came with it (a copy of the populated image) or this point wrote it.
            current = Some(Fresh {
                populated: true,
                ..f
            });
            continue;
        }
        if !settle(f, &mut pending, target, emit, &mut records) {
            break;
        }
        emitted = records.len();
    }
    if let Some(f) = current.take() {
        if settle(f, &mut pending, target, emit, &mut records) {
            emitted = records.len();
        }
    }
    if records.is_empty() && skipped == 0 {
        return c
            .fail((
                Status::Interrupted,
                "interrupted before the first point".into(),
                Vec::new(),
            ))
            .into();
    }
    CellOutput { records, emitted }
}

/// Runs one point under the monitor and turns what happened into a measurement.
fn measure_point(c: &CellRun, ctx: &Ctx, p: &Point, index: usize, f: &Fresh) -> Measurement {
    let (inst, log) = (&f.inst, f.log.as_ref().map(|(l, _)| l));
    let step = c.step(&format!("point {index}"));
    let log_device = log.and_then(|l| l.devices.first().copied());
    let mut h = MonitoredHarness::new(&inst.devices, log_device, ctx.root, c.plan.phase_floor);
    h.ranks = c.ranks.map(|r| (r, step.clone()));
    // Taken before the workload runs: the record is made after it, and its start is this.
    let started_unix = host_facts::now_unix();
    let result = c.workload.run(ctx, p, &mut h);
    if h.observed.measured == 0 {
        let why = match &result {
            Err(e) => e.to_string(),
            Ok(_) => "internal: the workload measured no phase".into(),
        };
        h.stand_in(&why);
    }
    let mut m = c.base_for(p);
    m.started_unix = started_unix;
    m.provenance = inst.provenance.clone();
    if let (Some(l), Some(spec)) = (log, c.log_spec) {
        m.provenance.log = Some(Box::new(LogPlacement {
            target: spec.target.name.clone(),
            provenance: l.provenance.clone(),
        }));
    }
    m.notes = std::mem::take(&mut h.observed.notes);
    m.host_probe_ms = h.observed.probe_ms;
    if crate::runner::preflight::log_target(c.plan, c.workload.name())
        == Some(c.spec.target.name.as_str())
    {
        m.notes.push(format!(
            "{} is the plan's log_target: the log stays beside the data here",
            c.spec.target.name
        ));
    }
    if let Some(r) = &h.observed.monitor {
        m.notes.extend(r.warnings.iter().cloned());
    }
    match result {
        Ok(outcome) if h.observed.measured == 1 => {
            m.metrics = assemble::metrics(&outcome, &h.observed);
            if let Some(note) = assemble::below_floor(&mut m.metrics, c.plan.phase_floor) {
                m.notes.push(note);
            }
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
            let host = (m.status == Status::Eio && inst.provenance.location == "loop")
                .then(|| c.work.out_of_space())
                .flatten();
            m.error = Some(host.map_or_else(|| e.to_string(), |why| format!("{e}; {why}")));
        }
    }
    if let Some(r) = c.ranks {
        ranks::agree_point(r, &step, &mut m, h.observed.failed_elsewhere);
    }
    m
}
