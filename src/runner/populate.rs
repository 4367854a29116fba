//! The run's populated images, one per target and data set whose cells want the data set
//! present, each built the first time a cell needs it and removed when the run ends.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

use super::cell::Failure;
use super::layout::{populate_master_as, Layout};
use super::progress::Progress;
use crate::plan::Plan;
use crate::provision::master::clonable;
use crate::provision::{InstanceSpec, MasterImage, WorkDir};
use crate::results::Status;
use crate::workload::Workload;

/// Populated images by (target index, data-set index, layout); a failure is kept so that every cell of that target
/// reports it instead of paying for another attempt.
pub struct Masters<'r> {
    pub plan: &'r Plan,
    pub work: &'r WorkDir,
    pub cancel: &'r AtomicBool,
    built: HashMap<(usize, usize, Layout), Result<MasterImage, Failure>>,
    /// The aged images, when the plan ages (`--age`): every cell of a loop target then
    /// copies one of them.
    aged: super::aged::AgedImages,
    /// Seconds each image built ahead of the cells took, until the first cell that copies
    /// it takes them into its `cell_seconds` (as a cell that built the image itself would
    /// have): what `--dry-run` prices later plans from.
    ahead: HashMap<(usize, usize, Layout), f64>,
}

/// What a cell gets: no image (it makes its own file system), an image, or the reason the
/// image could not be made.
pub enum Source<'a> {
    Fresh,
    Clone(&'a MasterImage),
    Failed(Failure),
    /// Cancelled while the image was being written.
    Interrupted,
}

impl<'r> Masters<'r> {
    /// No image built yet.
    pub fn new(plan: &'r Plan, work: &'r WorkDir, cancel: &'r AtomicBool) -> Self {
        Masters {
            plan,
            work,
            cancel,
            built: HashMap::new(),
            aged: Default::default(),
            ahead: HashMap::new(),
        }
    }

    /// The image cells of `w` on target `target` (provisioned as `spec`) with data set
    /// `dataset` copy, built now if this is the first cell to need it.
    pub fn for_cell<'a>(
        &'a mut self,
        w: &dyn Workload,
        target: usize,
        dataset: usize,
        spec: &InstanceSpec,
        progress: &Progress,
    ) -> Source<'a> {
        if let (Some(pct), true) = (self.plan.age_pct, clonable(spec)) {
            let with_dataset = w.wants_populated_target();
            let (plan, work, cancel) = (self.plan, self.work, self.cancel);
            return self.aged.for_cell(
                plan,
                pct,
                target,
                with_dataset,
                spec,
                work,
                cancel,
                progress,
            );
        }
        let Some(key) = image_key(w, target, dataset, spec) else {
            return Source::Fresh;
        };
        if !self.built.contains_key(&key) && self.build(key, spec, progress).is_none() {
            // Interrupted, not broken: `--resume` tries again.
            return Source::Interrupted;
        }
        match self.built.get(&key) {
            Some(Ok(m)) => Source::Clone(m),
            Some(Err((status, e, notes))) => Source::Failed((
                *status,
                format!("cannot populate the image: {e}"),
                notes.clone(),
            )),
            None => Source::Failed((
                Status::Error,
                "internal: no populated image".into(),
                Vec::new(),
            )),
        }
    }
}

impl Masters<'_> {
    /// The seconds spent building ahead the image a cell of `w` on `target` with data set
    /// `dataset` copies, if no earlier cell took them.
    pub fn take_ahead_seconds(
        &mut self,
        w: &dyn Workload,
        target: usize,
        dataset: usize,
        spec: &InstanceSpec,
    ) -> f64 {
        image_key(w, target, dataset, spec)
            .and_then(|key| self.ahead.remove(&key))
            .unwrap_or(0.0)
    }
}

/// Which populated image a cell of `w` on target `target` with data set `dataset` copies:
/// none when the workload starts from an empty file system or the target has no image.
fn image_key(
    w: &dyn Workload,
    target: usize,
    dataset: usize,
    spec: &InstanceSpec,
) -> Option<(usize, usize, Layout)> {
    let layout = match (w.wants_dated_target(), w.wants_populated_target()) {
        (true, _) => Layout::Dated,
        (false, true) => Layout::DataSet,
        (false, false) => return None,
    };
    clonable(spec).then_some((target, dataset, layout))
}

impl<'r> Masters<'r> {
    /// Populates the image `key` now and keeps it, or the reason it could not be made;
    /// `None` when the run was interrupted meanwhile (nothing kept).
    fn build(
        &mut self,
        key: (usize, usize, Layout),
        spec: &InstanceSpec,
        progress: &Progress,
    ) -> Option<&Result<MasterImage, Failure>> {
        let (_, dataset, layout) = key;
        let dated = if layout == Layout::Dated {
            "dated "
        } else {
            ""
        };
        let which = match self.plan.dataset_label(dataset) {
            Some(l) => format!("the {dated}{l} data set"),
            None => format!("the {dated}data set"),
        };
        progress.println(&format!(
            "populating an image of {} with {which} (once per run)",
            spec.target.name
        ));
        let made = populate_master_as(self.plan, dataset, spec, self.work, self.cancel, layout);
        if made.is_err() && self.cancel.load(Ordering::SeqCst) {
            return None;
        }
        Some(self.built.entry(key).or_insert(made))
    }

    /// Populates, before the first cell, every image that the cells `wanted` (workload,
    /// target, data set, spec) will copy, in their order, and makes each one's first copy
    /// on a second thread while the next is populated: the populate keeps the CPUs busy
    /// and the copy the disk, so the two overlap where one after the other they added up.
    /// Nothing is measured meanwhile. Stops early when the run is interrupted (a cell then
    /// builds what is missing, as without this).
    pub fn build_ahead<'s>(
        &mut self,
        wanted: impl IntoIterator<Item = (&'s dyn Workload, usize, usize, InstanceSpec<'s>)>,
        progress: &Progress,
    ) {
        if self.plan.age_pct.is_some() {
            return; // aged images are built per cell kind (`aged`)
        }
        let (tx, rx) = std::sync::mpsc::channel::<crate::provision::master::SpareCopy>();
        std::thread::scope(|scope| {
            scope.spawn(move || rx.into_iter().for_each(|job| job.run()));
            for (w, target, dataset, spec) in wanted {
                let Some(key) = image_key(w, target, dataset, &spec) else {
                    continue;
                };
                if self.built.contains_key(&key) {
                    continue;
                }
                let t0 = std::time::Instant::now();
                let built = self.build(key, &spec, progress).is_some();
                if built {
                    self.ahead.insert(key, t0.elapsed().as_secs_f64());
                }
                match self.built.get(&key).filter(|_| built) {
                    Some(Ok(m)) => {
                        let _ = tx.send(m.spare_copy());
                    }
                    Some(Err(_)) => {}
                    None => break,
                }
            }
            drop(tx);
        });
    }
}
