//! Populate once, clone per cell: a target's file system is made and filled with the data
//! set once per run (the *master* image), checked, and detached; every cell that wants the
//! data set present then gets its own copy of that image, attached and mounted fresh.
//!
//! Writing a data set of thousands of files on every cell cost more than the measurements
//! themselves; copying an image costs one sequential copy (or nothing, with a reflink).
//!
//! A cell's clone is not thrown away: the blocks its cell wrote are traced on its loop
//! device (`write_trace`), and the next cell gets the same file back with just those blocks
//! copied from the master (`image_copy::restore`) — byte for byte the master again, for the
//! cost of what the last cell changed instead of the whole data set. A clone whose writes
//! are not known for certain is removed, and the next one copied whole.
//!
//! btrfs (and any file system that registers devices by UUID) must never see two devices
//! with the same file-system id at once, so a master is detached before any clone exists
//! and at most one clone of a master is attached at a time — enforced here by a claim, not
//! left to the order in which the runner happens to call.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::error::ProvisionError;
use super::first_copy::FirstCopy;
use super::image_copy::{self, copy_image, CopyKind};
use super::instance::{image_path, sanitize, Instance, InstanceSpec};
use super::journal::{Journal, Kind, Op};
use super::reuse::{self, Copied, Reuse, Spare};
use super::traced;
use super::undo::Undo;
use super::workdir::WorkDir;
use crate::plan::Location;
use crate::results::{CloneOrigin, Health};
use crate::sys::{ignore_missing, steps};

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
    /// The image's data regions (everything else is a hole), for restoring a spare clone.
    extents: Vec<(u64, u64)>,
    /// Where the image came from when it was not populated for the run (a cell's file
    /// system kept: [`MasterImage::keep`]), in every clone's provenance notes.
    origin: Option<String>,
    /// The clone the last cell handed back, to be restored for the next.
    reuse: Arc<Reuse>,
    /// A kept image's first copy, made beside the kept file system's teardown
    /// ([`MasterImage::keep`]), offered to `reuse` when the first clone is asked for.
    first: Mutex<Option<FirstCopy>>,
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
    pub fn seal(inst: Instance, target: &str) -> Result<MasterImage, ProvisionError> {
        Self::seal_copying(inst, target, None)
    }

    /// [`MasterImage::seal`], and when `copies` is given, its first spare clone is copied
    /// there ([`SpareCopy`]) from the moment the file system is unmounted, beside the
    /// check instead of after it; the copy is kept only if the image is sealed.
    pub fn seal_copying(
        mut inst: Instance,
        target: &str,
        copies: Option<&Sender<SpareCopy>>,
    ) -> Result<MasterImage, ProvisionError> {
        let Some(path) = image_of(&inst) else {
            return Err(ProvisionError::Unsupported(
                "internal: a populated instance has no image".into(),
            ));
        };
        let reuse: Arc<Reuse> = Arc::default();
        let journal = Arc::clone(&inst.journal);
        let mut verdict = None;
        let mut start_copy = || {
            let (tx, rx) = std::sync::mpsc::channel();
            let job = SpareCopy {
                spare: first_clone_path(&path),
                master: path.clone(),
                reuse: Arc::clone(&reuse),
                journal: Arc::clone(&journal),
                sealed: rx,
            };
            if copies.is_some_and(|c| c.send(job).is_ok()) {
                verdict = Some(tx);
            }
        };
        let sealed = Self::seal_inner(&mut inst, target, &path, &reuse, &mut start_copy, &mut None);
        if let Some(v) = verdict {
            let _ = v.send(sealed.is_ok());
        }
        sealed
    }

    /// Keeps a cell's file system that holds the data set exactly as a populated image
    /// does (a `create` cell's, checked by its workload) as the target's master:
    /// [`MasterImage::seal`], with the check's verdict, which belongs to the records
    /// measured on it whether or not the image could be kept. `origin` says where the image
    /// came from, in the provenance of every clone of it. The first clone's copy is made
    /// meanwhile, beside the unmount and the check ([`FirstCopy`]).
    pub fn keep(
        mut inst: Instance,
        target: &str,
        origin: String,
        work: &WorkDir,
    ) -> (Option<Health>, Result<MasterImage, ProvisionError>) {
        let Some(path) = image_of(&inst) else {
            let (health, res) = inst.teardown(true);
            let refused = ProvisionError::Unsupported("the file system has no image".into());
            return (health, res.and(Err(refused)));
        };
        let first = FirstCopy::start(&mut inst, work, &path, first_clone_path(&path));
        let mut health = None;
        let kept = Self::seal_inner(
            &mut inst,
            target,
            &path,
            &Arc::default(),
            &mut || {},
            &mut health,
        );
        let kept = match kept {
            Ok(mut m) => {
                m.origin = Some(origin);
                m.first = Mutex::new(first);
                Ok(m)
            }
            Err(e) => {
                if let Some(first) = first {
                    first.discard();
                }
                Err(e)
            }
        };
        (health, kept)
    }

    fn seal_inner(
        inst: &mut Instance,
        target: &str,
        path: &Path,
        reuse: &Arc<Reuse>,
        unmounted: &mut dyn FnMut(),
        verdict: &mut Option<Health>,
    ) -> Result<MasterImage, ProvisionError> {
        let sector_size = inst
            .provenance
            .loop_device
            .as_deref()
            .and_then(|d| super::loopdev::sector_size(Path::new(d)));
        // The undo stack of a loop instance starts with the image's removal: keep that one.
        let (health, res) = inst.unwind_with(true, 1, unmounted);
        verdict.clone_from(&health);
        res?;
        if let Some(h) = health.as_ref().filter(|h| !h.passed) {
            return Err(ProvisionError::Unsupported(format!(
                "the populated image failed its check ({}): {}",
                h.command.join(" "),
                h.output.trim()
            )));
        }
        inst.undo.pop();
        let extents = fs::File::open(path)
            .and_then(|f| image_copy::data_extents(&f))
            .map_err(|e| ProvisionError::io(format!("cannot map {}", path.display()), e));
        let extents = match extents {
            Ok(x) => x,
            Err(e) => {
                let _ = fs::remove_file(path);
                return Err(e);
            }
        };
        Ok(MasterImage {
            path: path.to_path_buf(),
            target: target.to_string(),
            mkfs_command: inst.provenance.mkfs_command.take(),
            mkfs_version: inst.provenance.mkfs_version.take(),
            sector_size,
            health,
            claim: Arc::new(AtomicBool::new(false)),
            holds_dataset: true,
            aging: None,
            extents,
            origin: None,
            reuse: Arc::clone(reuse),
            first: Mutex::new(None),
            journal: Arc::clone(&inst.journal),
        })
    }

    /// Whether the first copy made beside the kept file system's unmount and check is
    /// still being made (a measured phase must not start beside it).
    pub fn first_copy_under_way(&self) -> bool {
        (self.first.lock().ok()).is_some_and(|f| f.as_ref().is_some_and(FirstCopy::under_way))
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
        inst.daemon_cpus = spec.daemon_cpus.clone();
        self.claim(&mut inst)?;
        let name = spec.name();
        let found = reuse::Found::default();
        let cloned = steps::timed("clone", || self.clone_image(&mut inst, work, &name, &found))?;
        let img = cloned.img;
        // The clone starts cold without dropping the machine's caches: a fresh mount on a
        // freshly attached device, over an image none of whose pages are cached (a buffered
        // copy or restore would leave some).
        steps::timed("evict", || crate::sys::evict_file(&img))
            .map_err(|e| ProvisionError::io(format!("cannot evict {}", img.display()), e))?;
        let dev = steps::timed("losetup", || inst.attach(&img, self.sector_size))?;
        match steps::timed("trace_start", || traced::arm(&inst, work, &name, &found)) {
            Ok(end) => inst.undo.push(end),
            Err(why) => reuse::settle(&found, Err(why)),
        }
        inst.provenance.mkfs_command = self.mkfs_command.clone();
        inst.provenance.mkfs_version = self.mkfs_version.clone();
        inst.provenance.aging = self.aging.clone();
        inst.provenance.notes.extend(self.origin.clone());
        inst.provenance.clone = Some(CloneOrigin {
            method: cloned.kind.as_str().into(),
            seconds: cloned.seconds,
            bytes: Some(cloned.bytes),
        });
        inst.mount_device(t, work, &dev, &name)?;
        Ok(inst)
    }

    /// Raises this image's one-clone-attached claim for `inst` (given back when `inst` is
    /// taken down); refused while another clone holds it.
    fn claim(&self, inst: &mut Instance) -> Result<(), ProvisionError> {
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
        Ok(())
    }

    /// The clone's image file for `inst` (called `name`): the spare copied ahead of the
    /// first cell, else the last cell's clone restored to this master, else a whole copy.
    /// Each is handed back to this master (with what `found` learns of its writes) once
    /// detached; why a spare could not be restored goes into the provenance's notes.
    fn clone_image(
        &self,
        inst: &mut Instance,
        work: &WorkDir,
        name: &str,
        found: &reuse::Found,
    ) -> Result<Cloned, ProvisionError> {
        let (restored, why_not) = self.restore_spare();
        let (img, kind, seconds, bytes) = match restored {
            Some(Restored {
                path,
                seconds,
                bytes,
                copied: None,
            }) => {
                inst.undo.push(self.return_clone(&path, found));
                (path, CopyKind::Restore, seconds, bytes)
            }
            // A whole copy no cell has used yet, made while nothing was measured.
            Some(Restored {
                path,
                seconds,
                copied: Some(copied),
                ..
            }) => {
                inst.undo.push(self.return_clone(&path, found));
                inst.provenance.notes.push(copied.note.into());
                let seconds = copied.seconds + seconds;
                (path, copied.kind, seconds, self.data_bytes())
            }
            None => {
                let img = image_path(work, name)?;
                inst.journal(Op::Create, Kind::Image, &img, Some("clone"))?;
                inst.undo.push(self.return_clone(&img, found));
                let (kind, seconds) = copy_image(&self.path, &img)?;
                (img, kind, seconds, self.data_bytes())
            }
        };
        if let Some(why) = why_not {
            inst.provenance
                .notes
                .push(format!("the clone was copied whole, not restored ({why})"));
        }
        Ok(Cloned {
            img,
            kind,
            seconds,
            bytes,
        })
    }
}

impl MasterImage {
    /// The spare clone made equal to this image again (the first copy waited for, what the
    /// last cell wrote copied back from the image), or why there is none.
    fn restore_spare(&self) -> (Option<Restored>, Option<String>) {
        if let Some(first) = self.first.lock().ok().and_then(|mut f| f.take()) {
            first.offer(&self.reuse);
        }
        let (spare, mut why_not) = self.reuse.take();
        let restored = spare.and_then(|spare| {
            let t0 = Instant::now();
            match image_copy::restore(&self.path, &self.extents, &spare.path, &spare.written) {
                Ok(bytes) => Some(Restored {
                    path: spare.path,
                    seconds: t0.elapsed().as_secs_f64(),
                    bytes,
                    copied: spare.copied,
                }),
                Err(e) => {
                    why_not = Some(format!("restoring it failed: {e}"));
                    self.discard(&spare.path);
                    None
                }
            }
        });
        (restored, why_not)
    }

    /// The spare clone's path, made equal to this image and kept as the spare the next
    /// clone starts from ([`MasterImage::restore_spare`]), or why there is none: so a test
    /// can compare it with the image byte for byte before anything mounts it.
    pub fn restored_spare(&self) -> Result<PathBuf, String> {
        match self.restore_spare() {
            (Some(r), _) => {
                let path = r.path.clone();
                self.reuse.offer(Ok(Spare {
                    path: r.path,
                    written: Vec::new(),
                    copied: r.copied,
                }));
                Ok(path)
            }
            (None, why) => Err(why.unwrap_or_else(|| "this image has no spare clone".into())),
        }
    }
}

/// A spare clone made equal to its image: where, in how many seconds, the bytes copied
/// back, and how it was first copied when no cell has used it yet.
struct Restored {
    path: PathBuf,
    seconds: f64,
    bytes: u64,
    copied: Option<Copied>,
}

/// A clone's image file and how it was made, for its provenance.
struct Cloned {
    img: PathBuf,
    kind: CopyKind,
    seconds: f64,
    bytes: u64,
}

impl MasterImage {
    /// The bytes of the image's data regions: what a whole copy of it copies.
    fn data_bytes(&self) -> u64 {
        self.extents.iter().map(|(s, e)| e - s).sum()
    }

    /// The undo step that hands the clone at `img` back to this master once detached.
    fn return_clone(&self, img: &Path, found: &reuse::Found) -> Undo {
        Undo::ReturnClone {
            img: img.to_path_buf(),
            found: Arc::clone(found),
            to: Arc::clone(&self.reuse),
        }
    }
}

/// A whole copy of a master into its first spare clone, made ahead of the first cell on
/// another thread, from the moment the master is unmounted ([`MasterImage::seal_copying`]):
/// the copy waits on the disk while the run checks this image and populates the next
/// (CPU-bound). Nothing measured shares the machine with it; the first cell then starts on
/// that copy instead of copying the image itself.
pub struct SpareCopy {
    master: PathBuf,
    spare: PathBuf,
    reuse: Arc<Reuse>,
    journal: Arc<Journal>,
    /// Whether the master was sealed (a copy of an image that failed its check is
    /// removed, never offered).
    sealed: Receiver<bool>,
}

/// The image file of a loop instance: the first undo step of one is its removal.
fn image_of(inst: &Instance) -> Option<PathBuf> {
    match inst.undo.first() {
        Some(Undo::RemoveFile(path)) => Some(path.clone()),
        _ => None,
    }
}

/// What its first clone's provenance says of a copy made ahead of the run's first cell.
const AHEAD: &str =
    "the clone was copied whole before the run's first cell, so nothing measured shared the machine with the copy";

/// Where a master's first spare clone is copied ahead of the cells.
fn first_clone_path(master: &Path) -> PathBuf {
    let stem = master
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    master.with_file_name(format!("{stem}-first-clone.img"))
}

impl SpareCopy {
    /// Makes the copy (journaled first, so a killed run's `fsarena cleanup` removes it) and
    /// offers it to the master; on failure removes it and leaves the reason, and the first
    /// cell copies the image itself as before.
    pub fn run(self) {
        let remove = |spare: &Path| {
            if fs::remove_file(spare).or_else(ignore_missing).is_ok() {
                let _ = self.journal.record(Op::Release, Kind::Image, spare, None);
            }
        };
        let made = self
            .journal
            .record(Op::Create, Kind::Image, &self.spare, Some("clone"))
            .map_err(|e| format!("cannot journal {}: {e}", self.spare.display()))
            .and_then(|()| {
                copy_image(&self.master, &self.spare).map_err(|e| {
                    remove(&self.spare);
                    format!("the copy made ahead failed: {e}")
                })
            });
        // A master that was not sealed is gone, and no cell may start on its copy.
        if !self.sealed.recv().unwrap_or(false) {
            if made.is_ok() {
                remove(&self.spare);
            }
            return;
        }
        self.reuse.offer(made.map(|(kind, seconds)| Spare {
            path: self.spare,
            written: Vec::new(),
            copied: Some(Copied {
                kind,
                seconds,
                note: AHEAD,
            }),
        }));
    }
}

impl MasterImage {
    /// Removes an image of this master's (itself, or its spare clone) and journals that.
    fn discard(&self, path: &Path) {
        match fs::remove_file(path).or_else(ignore_missing) {
            Ok(()) => {
                let _ = self.journal.record(Op::Release, Kind::Image, path, None);
            }
            Err(e) => eprintln!("fsarena: cannot remove {}: {e}", path.display()),
        }
    }
}

impl Drop for MasterImage {
    fn drop(&mut self) {
        if let Some(first) = self.first.get_mut().ok().and_then(|f| f.take()) {
            first.discard();
        }
        if let (Some(spare), _) = self.reuse.take() {
            self.discard(&spare.path);
        }
        self.discard(&self.path.clone());
    }
}

#[cfg(test)]
mod tests;
