//! The run's aged images (`--age PCT`): per target, at most two — one aged file system for
//! cells that start from an empty work directory, one with the data set written on top of
//! the aging for cells that want it present — each built the first time a cell needs it
//! (mkfs → seeded churn to PCT % → the data set if wanted → sync → fsck) and cloned for
//! every cell, exactly like the run's populated images.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use super::announce::Announce;
use super::failure::{provision_failure, Failure};
use super::layout::{write_dataset, WORK_DIR};
use super::source::Source;
use crate::plan::{FsKind, Plan};
use crate::provision::aging::{self, file_fragmentation, with_free_extents, AGED_DIR};
use crate::provision::fragment::{self, DEFAULT_FREE_EXTENT};
use crate::provision::{Instance, InstanceSpec, MasterImage, WorkDir};
use crate::results::{Aging, Fragmentation, Status};

/// Aged images by (target index, holds the data set).
#[derive(Default)]
pub struct AgedImages {
    built: HashMap<(usize, bool), Result<MasterImage, Failure>>,
    /// Images built per target, for the provenance.
    count: HashMap<usize, u32>,
}

impl AgedImages {
    /// How many aged images are made (each one's file and its spare clone's are removed at
    /// the run's end).
    pub fn made(&self) -> usize {
        self.built.values().filter(|m| m.is_ok()).count()
    }

    /// The aged image a cell of target `target` copies (with the data set when
    /// `with_dataset`), built now if this is the first cell to need it.
    #[allow(clippy::too_many_arguments)]
    pub fn for_cell<'a>(
        &'a mut self,
        plan: &Plan,
        pct: f64,
        target: usize,
        with_dataset: bool,
        spec: &InstanceSpec,
        work: &WorkDir,
        cancel: &AtomicBool,
        progress: &dyn Announce,
    ) -> Source<'a> {
        let key = (target, with_dataset);
        if !self.built.contains_key(&key) {
            progress.println(&format!(
                "aging an image of {} to {pct} %{} (once per run)",
                spec.target.name,
                if with_dataset {
                    ", the data set on top"
                } else {
                    ""
                }
            ));
            let n = self.count.entry(target).or_default();
            *n += 1;
            let made = build(plan, pct, with_dataset, *n, spec, work, cancel);
            if made.is_err() && cancel.load(Ordering::SeqCst) {
                return Source::Interrupted;
            }
            if let Some(a) = made.as_ref().ok().and_then(|m| m.aging.as_ref()) {
                progress.println(&format!("  {}: {}", spec.target.name, aging::summary(a)));
            }
            self.built.insert(key, made);
        }
        match self.built.get(&key) {
            Some(Ok(m)) => Source::Clone(m),
            Some(Err((status, e, notes))) => {
                Source::Failed((*status, format!("cannot age the image: {e}"), notes.clone()))
            }
            None => Source::Failed((Status::Error, "internal: no aged image".into(), Vec::new())),
        }
    }
}

/// Makes, ages, (populates,) checks and seals one image.
fn build(
    plan: &Plan,
    pct: f64,
    with_dataset: bool,
    nth: u32,
    spec: &InstanceSpec,
    work: &WorkDir,
    cancel: &AtomicBool,
) -> Result<MasterImage, Failure> {
    // The spec's size already leaves the data set room after aging (`plan::fs_size`).
    let role = if with_dataset { "aged-dataset" } else { "aged" };
    let inst = MasterImage::provision_as(spec, work, role).map_err(provision_failure)?;
    let made = age_and_fill(plan, pct, with_dataset, nth, spec.target.fs, &inst, cancel);
    let aging = match made {
        Ok(a) => a,
        Err(e) => {
            let _ = inst.teardown(false);
            return Err(e);
        }
    };
    let mut master = MasterImage::seal(inst, &spec.target.name)
        .map_err(|e| (Status::Error, e.to_string(), Vec::new()))?;
    master.holds_dataset = with_dataset;
    master.aging = Some(aging);
    Ok(master)
}

/// The churn, the data set on top, and the fragmentation before and after.
fn age_and_fill(
    plan: &Plan,
    pct: f64,
    with_dataset: bool,
    nth: u32,
    fs: FsKind,
    inst: &Instance,
    cancel: &AtomicBool,
) -> Result<Aging, Failure> {
    let device = inst
        .provenance
        .loop_device
        .as_deref()
        .map(std::path::Path::new);
    let mount = &inst.root;
    let io_fail = |what: &str, e: std::io::Error| {
        (
            crate::workload::status_of_io(&e),
            format!("{what}: {e}"),
            Vec::new(),
        )
    };
    let before = with_free_extents(Fragmentation::default(), fs, device, mount);
    let t0 = Instant::now();
    let extent = plan.age_free_extent.unwrap_or(DEFAULT_FREE_EXTENT);
    let churned =
        aging::age(mount, pct, extent, &plan.dataset, cancel).map_err(provision_failure)?;
    let after = file_fragmentation(&mount.join(AGED_DIR)).map_err(|e| io_fail("FIEMAP", e))?;
    let seconds = t0.elapsed().as_secs_f64();
    let (mut dataset, mut with_dataset_pct) = (None, None);
    if with_dataset {
        write_dataset(plan, &plan.dataset, inst, cancel)?;
        let d = file_fragmentation(&mount.join(WORK_DIR)).map_err(|e| io_fail("FIEMAP", e))?;
        with_dataset_pct = Some(aging::fill_pct(mount).map_err(|e| io_fail("statvfs", e))?);
        dataset = Some(d);
    }
    let after = with_free_extents(after, fs, device, mount);
    // The carriers filled the whole device: give the host back what they freed.
    fragment::trim(mount).map_err(|e| io_fail("FITRIM", e))?;
    Ok(Aging {
        target_pct: pct,
        reached_pct: churned.reached_pct,
        with_dataset_pct,
        seed: plan.dataset.seed,
        operations: churned.operations,
        written_bytes: churned.written_bytes,
        seconds,
        images_built: nth,
        before,
        after,
        dataset,
        fragmenting: Some(churned.fragmenting),
    })
}
