//! Populate once, clone per cell: a target's file system is made and filled with the data
//! set once per run (the *master* image), checked, and detached; every cell that wants the
//! data set present then gets its own copy of that image, attached and mounted fresh.
//!
//! Writing a data set of thousands of files on every cell cost more than the measurements
//! themselves; copying an image costs one sequential copy (or nothing, with a reflink).
//!
//! btrfs (and any file system that registers devices by UUID) must never see two devices
//! with the same file-system id at once, so a master is detached before any clone exists
//! and at most one clone of a master is attached at a time — enforced here by a claim, not
//! left to the order in which the runner happens to call.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::image_copy::{copy_image, CopyKind};
use super::instance::{ignore_missing, image_path, sanitize, Instance, InstanceSpec, Undo};
use super::journal::{Journal, Kind, Op};
use super::workdir::WorkDir;
use super::ProvisionError;
use crate::plan::Location;
use crate::results::{CloneOrigin, Health};

/// A populated, checked, detached image that cells copy. Removed (and the removal
/// journaled) when dropped; a killed run leaves it journaled for `fsarena cleanup`.
pub struct MasterImage {
    path: PathBuf,
    target: String,
    mkfs_command: Option<Vec<String>>,
    mkfs_version: Option<String>,
    /// The logical sector size of the loop device the file system was made on: every
    /// clone is attached with it (an xfs made on 512-byte sectors does not mount on 4096).
    sector_size: Option<u32>,
    /// The read-only check made on the populated file system before it was sealed.
    pub health: Option<Health>,
    /// Raised while a clone of this image is attached.
    claim: Arc<AtomicBool>,
    /// Whether the data set is in place under the work directory (false only for an aged
    /// image made for cells that start from an empty work directory).
    pub holds_dataset: bool,
    /// What aging did to this image (`--age`), copied into every clone's provenance.
    pub aging: Option<crate::results::Aging>,
    journal: Arc<Journal>,
}

/// Whether `spec`'s target can be populated once and cloned: only loop images can (a
/// device cannot be copied, tmpfs and `dir:` targets have no image).
pub fn clonable(spec: &InstanceSpec) -> bool {
    matches!(spec.target.location, Location::Loop)
}

impl MasterImage {
    /// Makes the master's file system and mounts it: the caller writes the data set
    /// under `root` and then calls [`MasterImage::seal`].
    pub fn provision(spec: &InstanceSpec, work: &WorkDir) -> Result<Instance, ProvisionError> {
        Self::provision_as(spec, work, "master")
    }

    /// [`MasterImage::provision`] under the image name `<target>-<role>`, for a target
    /// with more than one master (an aged image with and one without the data set).
    pub fn provision_as(
        spec: &InstanceSpec,
        work: &WorkDir,
        role: &str,
    ) -> Result<Instance, ProvisionError> {
        if !clonable(spec) {
            return Err(ProvisionError::Unsupported(format!(
                "target {} is not on a loop image: it cannot be cloned",
                spec.target.name
            )));
        }
        let mut master = spec.clone();
        let name = format!("{}-{role}", sanitize(&spec.target.name));
        master.seq = 0;
        let mut inst = Instance::empty(spec.target, work);
        inst.on_loop(&master, work, &name)?;
        Ok(inst)
    }

    /// Unmounts the populated file system, checks it read-only and detaches it, keeping
    /// the image. A failed check is an error: no cell may measure on a damaged copy.
    pub fn seal(mut inst: Instance, target: &str) -> Result<MasterImage, ProvisionError> {
        let sector_size = inst
            .provenance
            .loop_device
            .as_deref()
            .and_then(|d| super::loopdev::sector_size(Path::new(d)));
        // The undo stack of a loop instance starts with the image's removal: keep that one.
        let (health, res) = inst.unwind(true, 1);
        res?;
        if let Some(h) = health.as_ref().filter(|h| !h.passed) {
            return Err(ProvisionError::Unsupported(format!(
                "the populated image failed its check ({}): {}",
                h.command.join(" "),
                h.output.trim()
            )));
        }
        let Some(Undo::RemoveFile(path)) = inst.undo.pop() else {
            return Err(ProvisionError::Unsupported(
                "internal: a sealed master has no image".into(),
            ));
        };
        Ok(MasterImage {
            path,
            target: target.to_string(),
            mkfs_command: inst.provenance.mkfs_command.take(),
            mkfs_version: inst.provenance.mkfs_version.take(),
            sector_size,
            health,
            claim: Arc::new(AtomicBool::new(false)),
            holds_dataset: true,
            aging: None,
            journal: Arc::clone(&inst.journal),
        })
    }

    /// The image file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A fresh copy of this image for one cell, attached and mounted with the target's
    /// options. Refused while another clone of it is attached.
    pub fn clone_for(
        &self,
        spec: &InstanceSpec,
        work: &WorkDir,
    ) -> Result<Instance, ProvisionError> {
        let t = spec.target;
        if t.name != self.target {
            return Err(ProvisionError::Unsupported(format!(
                "internal: the master of {} cloned for {}",
                self.target, t.name
            )));
        }
        let mut inst = Instance::empty(t, work);
        if self
            .claim
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return Err(ProvisionError::Refused {
                device: self.path.display().to_string(),
                reasons: vec![
                    "another clone of this image is attached (two devices with one file-system id)"
                        .into(),
                ],
            });
        }
        inst.undo.push(Undo::Unclaim(Arc::clone(&self.claim)));
        let name = format!("{}-{}", sanitize(&t.name), spec.seq);
        let img = image_path(work, &name)?;
        inst.journal(Op::Create, Kind::Image, &img, Some("clone"))?;
        inst.undo.push(Undo::RemoveFile(img.clone()));
        let (kind, seconds): (CopyKind, f64) = copy_image(&self.path, &img)?;
        let dev = inst.attach(&img, self.sector_size)?;
        inst.provenance.mkfs_command = self.mkfs_command.clone();
        inst.provenance.mkfs_version = self.mkfs_version.clone();
        inst.provenance.aging = self.aging.clone();
        inst.provenance.clone = Some(CloneOrigin {
            method: kind.as_str().into(),
            seconds,
        });
        inst.mount_device(t, work, &dev, &name)?;
        Ok(inst)
    }
}

impl Drop for MasterImage {
    fn drop(&mut self) {
        match fs::remove_file(&self.path).or_else(ignore_missing) {
            Ok(()) => {
                let _ = self
                    .journal
                    .record(Op::Release, Kind::Image, &self.path, None);
            }
            Err(e) => eprintln!("fsarena: cannot remove {}: {e}", self.path.display()),
        }
    }
}
