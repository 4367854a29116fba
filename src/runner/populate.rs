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
        let layout = match (w.wants_dated_target(), w.wants_populated_target()) {
            (true, _) => Layout::Dated,
            (false, true) => Layout::DataSet,
            (false, false) => return Source::Fresh,
        };
        if !clonable(spec) {
            return Source::Fresh;
        }
        let key = (target, dataset, layout);
        if !self.built.contains_key(&key) {
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
                // Interrupted, not broken: `--resume` tries again.
                return Source::Interrupted;
            }
            self.built.insert(key, made);
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
