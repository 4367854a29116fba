//! What every point of one cell shares, and the records of the cell made from it.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::plan::cells::Cell;
use crate::plan::cpus::Placement;
use crate::plan::Plan;
use crate::provision::{InstanceSpec, MasterImage, WorkDir};
use crate::results::record::CellKey;
use crate::results::Measurement;
use crate::runner::failure::Failure;
use crate::runner::host_facts;
use crate::runner::team::Team;
use crate::workload::{Point, Workload};

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
    /// Who runs this cell: this process alone, or the ranks of an MPI job together.
    pub team: &'a dyn Team,
    /// The workload's `log_target`, when it names a target other than this cell's: every
    /// point gets a fresh file system of it for the log.
    pub log_spec: Option<&'a InstanceSpec<'a>>,
    /// Keep the file system this cell leaves as the target's populated image
    /// (`golden::populate::Masters::keeps`), with the note every clone of it carries.
    pub keep_image: Option<String>,
    /// The baseline's file system, for the points this cell measures in turn with it
    /// ([`crate::workload::Workload::in_turn`]); `None` on the baseline itself, and
    /// wherever a run does not pair (see the runner's `walk`).
    pub beside: Option<Beside<'a>>,
}

/// How the baseline's file system beside a candidate's is made: as its own cells' are.
pub struct Beside<'a> {
    pub spec: &'a InstanceSpec<'a>,
    /// The baseline's populated image, which a point that wants the data set present
    /// copies for the baseline's side too; a point that wants it and finds none here is
    /// measured alone.
    pub master: Option<&'a MasterImage>,
}

impl CellRun<'_> {
    /// A record of this cell with nothing measured yet.
    pub fn base(&self) -> Measurement {
        Measurement {
            target: self.spec.target.name.clone(),
            fs: self.spec.target.fs.name().to_string(),
            workload: self.workload.spec().name.to_string(),
            dataset: self.plan.dataset_label(self.cell.dataset),
            repetition: self.cell.repetition,
            threads: self.cell.threads as u32,
            started_unix: host_facts::now_unix(),
            aged_pct: self.plan.age_pct,
            ..Default::default()
        }
    }

    /// A record of one point of this cell with nothing measured yet.
    pub fn base_for(&self, p: &Point) -> Measurement {
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
            self.workload.spec().name,
            self.cell.threads,
            self.cell.repetition + 1
        )
    }

    /// For a point this process cannot run (`m` holds why): takes its part in the point's
    /// barriers so the other ranks of a job record the same failure instead of waiting.
    pub fn skip_point(&self, point: usize, m: &mut Measurement) {
        let step = self.step(&format!("point {point}"));
        let why = m.error.clone().unwrap_or_default();
        let _ = self.team.before_phase(&step, Err(why.clone()));
        let _ = self.team.after_phase(&step, Err(why), None);
        self.team.agree_point(&step, m, false);
    }

    /// A failure of this process before the cell's points, as every process records it
    /// (under MPI, the other ranks learn of it at the cell's start).
    pub fn agree_failure(&self, f: Failure) -> Failure {
        self.team
            .agree_cell(&self.step("start"), Err(&f))
            .err()
            .unwrap_or(f)
    }

    /// A one-record result for a cell that could not get as far as its points.
    pub fn fail(&self, (status, error, notes): Failure) -> Vec<Measurement> {
        let mut m = self.base();
        m.status = status;
        m.error = Some(error);
        m.notes = notes;
        vec![m]
    }

    /// Where this cell's work runs (`--cpus`, [`crate::plan::Plan::placement`]), by the
    /// threads its options fix if they do (a replay's trace); ranks of an MPI job, which may
    /// share a host, run anywhere.
    pub fn placement(&self) -> Option<Placement> {
        let w = self.workload;
        let options = self.plan.workload_options.get(w.spec().name);
        let own = options.and_then(|o| w.own_threads(o));
        let p = (self.plan).placement(w.spec().name, w.spec().uses_threads, self.cell.threads, own);
        p.filter(|_| self.team.is_alone())
    }

    /// The populated image point `p` runs on a copy of, if any.
    pub fn master_for(&self, p: &Point) -> Option<&MasterImage> {
        self.master
            .filter(|_| self.workload.point_wants_populated(p))
    }

    /// The baseline's file system point `p` is measured in turn with, if any.
    pub fn beside_for(&self, p: &Point) -> Option<&Beside<'_>> {
        let b = self.beside.as_ref().filter(|_| self.workload.in_turn(p))?;
        let populated = self.master_for(p).is_some();
        (!populated || b.master.is_some()).then_some(b)
    }

    /// The key a record of point `p` of this cell (of `of` points) is kept under.
    pub fn point_key(&self, p: &Point, of: u32) -> CellKey {
        let mut m = self.base_for(p);
        m.cell_points = Some(of);
        m.key()
    }
}
