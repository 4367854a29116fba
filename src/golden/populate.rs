//! The run's populated images, one per target and data set whose cells want the data set
//! present, each built the first time a cell needs it and removed when the run ends.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;

use super::aged::AgedImages;
use super::announce::Announce;
use super::failure::Failure;
use super::layout::{populate_master_as, Layout, IMAGE_WRITERS};
/// What [`Masters::for_cell`] answers, named where the callers find the images.
pub use super::source::Source;
use crate::plan::Plan;
use crate::provision::master::{clonable, SpareCopy};
use crate::provision::{InstanceSpec, MasterImage, WorkDir};
use crate::results::Status;
use crate::sys::steps;
use crate::workload::{StartState, Workload};

/// Populated images by (target index, data-set index, layout); a failure is kept so that every cell of that target
/// reports it instead of paying for another attempt.
pub struct Masters<'r> {
    pub plan: &'r Plan,
    pub work: &'r WorkDir,
    pub cancel: &'r AtomicBool,
    /// Shared, so a cell can copy another target's image beside its own (the baseline's,
    /// for a point measured in turn: [`Masters::image`]).
    built: HashMap<(usize, usize, Layout), Result<Arc<MasterImage>, Failure>>,
    /// The aged images, when the plan ages (`--age`): every cell of a loop target then
    /// copies one of them.
    aged: AgedImages,
    /// Seconds each image built ahead of the cells took, until the first cell that copies
    /// it takes them into its `cell_seconds` (as a cell that built the image itself would
    /// have): what `--dry-run` prices later plans from.
    ahead: HashMap<(usize, usize, Layout), f64>,
    /// Each image's build by step (`sys::steps`), until the first cell that copies it takes
    /// them into its record: where the time before the first cell goes.
    steps: HashMap<(usize, usize, Layout), BTreeMap<String, f64>>,
    /// Images not built ahead because a cell that leaves the data set on its file system
    /// (`WorkloadSpec::leaves_dataset`) runs before every cell that copies them: that file
    /// system is kept instead ([`Masters::adopt`]).
    awaited: HashSet<(usize, usize, Layout)>,
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
            steps: HashMap::new(),
            awaited: HashSet::new(),
        }
    }

    /// The image files the run's end will remove for these images: each one's, and the
    /// spare clone beside it (an aged image's included).
    pub fn images(&self) -> usize {
        2 * (self.built.values().filter(|m| m.is_ok()).count() + self.aged.made())
    }

    /// Whether the file system of a cell of `w` with `threads` on `target` with data set
    /// `dataset` is to be kept as the populated image later cells copy: `w` leaves the data
    /// set on it, written by as many threads as an image is ([`IMAGE_WRITERS`]), and that
    /// image was left unbuilt for it and is not made yet.
    pub fn keeps(
        &self,
        w: &dyn Workload,
        (target, dataset, threads): (usize, usize, usize),
        spec: &InstanceSpec,
    ) -> bool {
        let key = (target, dataset, Layout::DataSet);
        leaves_image(w, threads, spec)
            && self.awaited.contains(&key)
            && !self.built.contains_key(&key)
    }

    /// Takes a cell's kept file system ([`Masters::keeps`]) as the populated image of
    /// `target` and `dataset`.
    pub fn adopt(&mut self, target: usize, dataset: usize, master: MasterImage) {
        let key = (target, dataset, Layout::DataSet);
        self.awaited.remove(&key);
        self.built.entry(key).or_insert(Ok(Arc::new(master)));
    }

    /// The image cells of `w` on `target` with data set `dataset` copy, when it is built
    /// and the plan does not age its file systems: what a cell of another target copies to
    /// measure a point in turn with this one.
    pub fn image(
        &self,
        w: &dyn Workload,
        target: usize,
        dataset: usize,
        spec: &InstanceSpec,
    ) -> Option<Arc<MasterImage>> {
        let key = image_key(w, target, dataset, spec).filter(|_| self.plan.age_pct.is_none())?;
        self.built.get(&key)?.as_ref().ok().cloned()
    }

    /// The image cells of `w` on target `target` (provisioned as `spec`) with data set
    /// `dataset` copy, built now if this is the first cell to need it; with the seconds
    /// that build took and its steps, when it was made now.
    pub fn for_cell<'a>(
        &'a mut self,
        w: &dyn Workload,
        target: usize,
        dataset: usize,
        spec: &InstanceSpec,
        progress: &dyn Announce,
    ) -> (Source<'a>, Option<BuiltNow>) {
        if let (Some(pct), true) = (self.plan.age_pct, clonable(spec)) {
            let with_dataset = w.spec().start == StartState::DataSet;
            let (plan, work, cancel) = (self.plan, self.work, self.cancel);
            let aged = self.aged.for_cell(
                plan,
                pct,
                target,
                with_dataset,
                spec,
                work,
                cancel,
                progress,
            );
            return (aged, None);
        }
        let Some(key) = image_key(w, target, dataset, spec) else {
            return (Source::Fresh, None);
        };
        let mut built_now = None;
        if !self.built.contains_key(&key) {
            let t = std::time::Instant::now();
            if self.build(key, spec, progress).is_none() {
                // Interrupted, not broken: `--resume` tries again.
                return (Source::Interrupted, None);
            }
            let image_steps = self.steps.remove(&key).unwrap_or_default();
            built_now = Some(BuiltNow {
                seconds: t.elapsed().as_secs_f64(),
                steps: image_steps,
            });
        }
        let source = match self.built.get(&key) {
            Some(Ok(m)) => Source::Clone(m.as_ref()),
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
        };
        (source, built_now)
    }
}

/// An image a cell built itself, on its first need ([`Masters::for_cell`]).
pub struct BuiltNow {
    /// What the build took.
    pub seconds: f64,
    /// The build by step (`sys::steps`), kept out of the cell's own steps.
    pub steps: BTreeMap<String, f64>,
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

    /// The steps of building ahead the image a cell of `w` on `target` with data set
    /// `dataset` copies, if no earlier cell took them.
    pub fn take_image_steps(
        &mut self,
        w: &dyn Workload,
        target: usize,
        dataset: usize,
        spec: &InstanceSpec,
    ) -> BTreeMap<String, f64> {
        image_key(w, target, dataset, spec)
            .and_then(|key| self.steps.remove(&key))
            .unwrap_or_default()
    }
}

/// Whether a cell of `w` with `threads` on a target made as `spec` leaves on its file system
/// exactly what that target's data-set image holds: `w` leaves the data set, written by as
/// many threads as an image is ([`IMAGE_WRITERS`]), on a target that has images.
fn leaves_image(w: &dyn Workload, threads: usize, spec: &InstanceSpec) -> bool {
    w.spec().leaves_dataset && threads == IMAGE_WRITERS && clonable(spec)
}

/// Which populated image a cell of `w` on target `target` with data set `dataset` copies:
/// none when the workload starts from an empty file system or the target has no image.
fn image_key(
    w: &dyn Workload,
    target: usize,
    dataset: usize,
    spec: &InstanceSpec,
) -> Option<(usize, usize, Layout)> {
    let layout = Layout::copied_by(w)?;
    clonable(spec).then_some((target, dataset, layout))
}

impl<'r> Masters<'r> {
    /// Populates the image `key` now and keeps it, or the reason it could not be made;
    /// `None` when the run was interrupted meanwhile (nothing kept).
    fn build(
        &mut self,
        key: (usize, usize, Layout),
        spec: &InstanceSpec,
        progress: &dyn Announce,
    ) -> Option<&Result<Arc<MasterImage>, Failure>> {
        // Built on the cell's thread: its steps are the image's, not the cell's.
        let (made, image_steps) =
            steps::apart(|| populate(self.plan, self.work, self.cancel, key, spec, progress, None));
        self.steps.insert(key, image_steps);
        Some(self.built.entry(key).or_insert(made?.map(Arc::new)))
    }

    /// Populates, before the first cell, every image that the cells `wanted` (workload,
    /// target, data set, spec) will copy, one more at once than the machine has CPUs, and
    /// makes each one's first copy on another thread, beside its check. A populate is
    /// CPU-bound (the file system's own work on thousands of small files) with stretches of
    /// writeback, a copy is disk-bound: side by side they overlap where one after the other
    /// they added up. Nothing is measured meanwhile. Stops early when the run is
    /// interrupted (a cell then builds what is missing, as without this).
    pub fn build_ahead<'s>(
        &mut self,
        wanted: impl IntoIterator<Item = (&'s dyn Workload, (usize, usize, usize), InstanceSpec<'s>)>,
        progress: &dyn Announce,
    ) {
        if self.plan.age_pct.is_some() {
            return; // aged images are built per cell kind (`aged`)
        }
        let mut jobs: Vec<((usize, usize, Layout), InstanceSpec<'s>)> = Vec::new();
        let (mut seen, mut left_first) = (HashSet::new(), HashSet::new());
        for (w, (target, dataset, threads), spec) in wanted {
            // A cell that leaves the data set before the first cell that copies it: its
            // file system becomes the image (`adopt`), which is then never written twice.
            let left = (target, dataset, Layout::DataSet);
            if leaves_image(w, threads, &spec) && seen.insert(left) {
                left_first.insert(left);
            }
            match image_key(w, target, dataset, &spec) {
                Some(key) if left_first.contains(&key) && !self.built.contains_key(&key) => {
                    self.awaited.insert(key);
                }
                Some(key) if !self.built.contains_key(&key) && seen.insert(key) => {
                    jobs.push((key, spec))
                }
                _ => {}
            }
        }
        if jobs.is_empty() {
            return;
        }
        // The slowest file systems first, so that the last image sealed is not a long one
        // started late (longest-first keeps the CPUs busy to the end).
        jobs.sort_by(|a, b| {
            a.1.target
                .fs
                .create_rate()
                .total_cmp(&b.1.target.fs.create_rate())
        });
        // Made once here, not raced for by the workers' first mounts.
        let _ = self.work.subdir("mnt");
        // One more than the CPUs: a populate also waits on its writeback part of the time.
        let workers = std::thread::available_parallelism()
            .map_or(1, |n| n.get() + 1)
            .min(jobs.len());
        let next = std::sync::atomic::AtomicUsize::new(0);
        let done = std::sync::Mutex::new(Vec::new());
        let t0 = std::time::Instant::now();
        let (plan, work, cancel) = (self.plan, self.work, self.cancel);
        let (tx, rx) = std::sync::mpsc::channel::<SpareCopy>();
        std::thread::scope(|scope| {
            scope.spawn(move || rx.into_iter().for_each(|job| job.run()));
            for _ in 0..workers {
                let (tx, jobs, next, done) = (tx.clone(), &jobs, &next, &done);
                scope.spawn(move || {
                    while let Some((key, spec)) = jobs.get(next.fetch_add(1, Ordering::SeqCst)) {
                        let started = std::time::Instant::now();
                        let Some(made) =
                            populate(plan, work, cancel, *key, spec, progress, Some(&tx))
                        else {
                            break; // interrupted
                        };
                        let seconds = started.elapsed().as_secs_f64();
                        // This thread's steps since the last image are this image's.
                        let image_steps = steps::take();
                        if let Ok(mut d) = done.lock() {
                            d.push((*key, made, seconds, image_steps));
                        }
                    }
                });
            }
            drop(tx);
        });
        let done = done.into_inner().unwrap_or_default();
        // Each image is charged its share of the time the builds took together, so that
        // `--dry-run`'s history adds up to the wall time the builds cost, not more.
        let wall = t0.elapsed().as_secs_f64();
        let sum: f64 = done.iter().map(|d| d.2).sum();
        for (key, made, seconds, image_steps) in done {
            let share = if sum > 0.0 { wall * seconds / sum } else { 0.0 };
            self.ahead.insert(key, share);
            self.steps.insert(key, image_steps);
            self.built.insert(key, made.map(Arc::new));
        }
    }
}

/// Populates the image `key` (announcing it), or the reason it could not be made; `None`
/// when the run was interrupted meanwhile (nothing kept).
fn populate(
    plan: &Plan,
    work: &WorkDir,
    cancel: &AtomicBool,
    key: (usize, usize, Layout),
    spec: &InstanceSpec,
    progress: &dyn Announce,
    copies: Option<&Sender<SpareCopy>>,
) -> Option<Result<MasterImage, Failure>> {
    let (_, dataset, layout) = key;
    let dated = if layout == Layout::Dated {
        "dated "
    } else {
        ""
    };
    let which = match (layout, plan.dataset_label(dataset)) {
        (Layout::Own(name), _) => format!("{name}'s starting state"),
        (_, Some(l)) => format!("the {dated}{l} data set"),
        (_, None) => format!("the {dated}data set"),
    };
    progress.println(&format!(
        "populating an image of {} with {which} (once per run)",
        spec.target.name
    ));
    let made = populate_master_as(plan, dataset, spec, work, cancel, layout, copies);
    if made.is_err() && cancel.load(Ordering::SeqCst) {
        return None;
    }
    Some(made)
}
