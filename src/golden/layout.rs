//! What a populated image holds, and writing it: the data set exactly as the workloads
//! lay it down for themselves on a target that has no image (`prepare`, or dated in
//! `DATED_DIR` for the workloads that read a dated tree on the target), so a cell on a copy
//! of the image starts from the same tree as a cell that made its own.

use std::sync::atomic::AtomicBool;
use std::sync::mpsc::Sender;
use std::time::Instant;

use super::failure::{provision_failure, Failure};
use crate::plan::Plan;
use crate::provision::master::SpareCopy;
use crate::provision::{Instance, InstanceSpec, MasterImage, WorkDir};
use crate::results::Status;
use crate::sys::steps;
use crate::workload::{self, Ctx, StartState};

/// The workload's directory on a target's file system (also inside a populated image).
pub const WORK_DIR: &str = "fsarena-work";

/// Makes `spec`'s populated image for the run: a fresh file system holding exactly what
/// [`workload::prepare::prepare`] writes, where every workload expects it, then checked and
/// detached. Built here, beside the cells' own contexts, so the two cannot disagree. An
/// error keeps the status a cell writing the data set itself would have recorded (a
/// target too small for the data set is `enospc`, not a generic error).
pub fn populate_master(
    plan: &Plan,
    dataset: usize,
    spec: &InstanceSpec,
    work: &WorkDir,
    cancel: &AtomicBool,
) -> Result<MasterImage, Failure> {
    populate_master_as(plan, dataset, spec, work, cancel, Layout::DataSet, None)
}

/// How many threads write the data set, plain or dated, into a populated image: one, as a user's copy or
/// unpack writes a tree, and whatever the host's CPU count (an image written by two threads
/// on a 2-core host read 15-25 % slower in btrfs's cold and warm scans than one written by
/// one: 2026-11-30, BENCHMARKS.md "Harness efficiency"). A `create` cell's file system is
/// kept as the image only when it ran with as many ([`super::populate::Masters::keeps`]), so
/// a cell copies the same layout whether or not the plan has `create` first.
pub const IMAGE_WRITERS: usize = 1;

/// What a populated image holds under its work directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Layout {
    /// The data set as [`workload::prepare::prepare`] writes it.
    DataSet,
    /// The data set dated, in `DATED_DIR`, as [`workload::prepare::dated_on_target`]
    /// writes it (`StartState::DatedDataSet`).
    Dated,
    /// The named workload's own starting state, as its `Workload::lay_down` writes it
    /// (`StartState::OwnState`: `replay`'s initial state).
    Own(&'static str),
}

impl Layout {
    /// The populated image a cell of `w` starts from on a target that has images: the dated
    /// data set, the data set, or none (the workload starts from an empty file system).
    pub fn copied_by(w: &dyn workload::Workload) -> Option<Layout> {
        let spec = w.spec();
        match spec.start {
            StartState::Empty => None,
            StartState::DataSet => Some(Layout::DataSet),
            StartState::DatedDataSet => Some(Layout::Dated),
            StartState::OwnState => Some(Layout::Own(spec.name)),
        }
    }
}

/// [`populate_master`] with the given layout; with `copies`, the image's first spare clone
/// is copied there while it is checked ([`MasterImage::seal_copying`]).
pub fn populate_master_as(
    plan: &Plan,
    dataset: usize,
    spec: &InstanceSpec,
    work: &WorkDir,
    cancel: &AtomicBool,
    layout: Layout,
    copies: Option<&Sender<SpareCopy>>,
) -> Result<MasterImage, Failure> {
    let datasets = plan.datasets();
    let kind = match layout {
        Layout::DataSet => "master".to_string(),
        Layout::Dated => "dated-master".to_string(),
        Layout::Own(name) => format!("{name}-master"),
    };
    let role = match plan.dataset_label(dataset) {
        // A size label ("2.5k files · 38.9 MiB") names a file here: ASCII only.
        Some(label) => format!(
            "{}-{kind}",
            label.replace(|c: char| !c.is_ascii_alphanumeric() && c != '.', "_")
        ),
        None => kind.to_string(),
    };
    let Some(dataset) = datasets.get(dataset) else {
        return Err((
            Status::Error,
            "internal: no such data set".into(),
            Vec::new(),
        ));
    };
    let inst = MasterImage::provision_as(spec, work, &role).map_err(provision_failure)?;
    let written = steps::timed("write", || {
        write_layout(plan, dataset, &inst, cancel, layout)
    });
    if let Err(e) = written {
        let _ = inst.teardown(false);
        return Err(e);
    }
    MasterImage::seal_copying(inst, &spec.target.name, copies)
        .map_err(|e| (Status::Error, e.to_string(), Vec::new()))
}

/// Writes `dataset` into a master image's work directory, exactly as
/// [`workload::prepare::prepare`] lays it down for a cell (also on an aged image).
pub fn write_dataset(
    plan: &Plan,
    dataset: &crate::dataset::DatasetSpec,
    inst: &Instance,
    cancel: &AtomicBool,
) -> Result<(), Failure> {
    write_layout(plan, dataset, inst, cancel, Layout::DataSet)
}

/// Writes `dataset` into a master image's work directory in `layout`, exactly as the
/// workloads lay it down for themselves on a target that has no populated image.
fn write_layout(
    plan: &Plan,
    dataset: &crate::dataset::DatasetSpec,
    inst: &Instance,
    cancel: &AtomicBool,
    layout: Layout,
) -> Result<(), Failure> {
    let root = inst.root.join(WORK_DIR);
    std::fs::create_dir(&root)
        .map_err(|e| {
            (
                workload::status_of_io(&e),
                format!("cannot create {}: {e}", root.display()),
                Vec::new(),
            )
        })
        .and_then(|_| {
            let empty = toml::Table::new();
            let options = match layout {
                Layout::Own(name) => plan.workload_options.get(name).unwrap_or(&empty),
                _ => &empty,
            };
            let ctx = Ctx {
                threads: match layout {
                    Layout::DataSet | Layout::Dated => IMAGE_WRITERS,
                    Layout::Own(_) => std::thread::available_parallelism().map_or(1, |n| n.get()),
                },
                deadline: Some(Instant::now() + plan.timeout),
                ..Ctx::new(&root, &root, dataset, options, cancel)
            };
            match layout {
                Layout::DataSet => workload::prepare::prepare(&ctx).map(|_| ()),
                Layout::Dated => workload::prepare::dated_on_target(&ctx).map(|_| ()),
                Layout::Own(name) => match workload::by_name(name) {
                    Some(w) => w.lay_down(&ctx),
                    None => Err(workload::WorkloadError::Option(format!(
                        "internal: no workload {name}"
                    ))),
                },
            }
            .map_err(|e| (e.status(), e.to_string(), Vec::new()))
        })
}
