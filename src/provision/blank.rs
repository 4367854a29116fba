//! A fresh file system copied, not made: for a file system whose mkfs writes much through
//! the loop device, the first fresh cell of a target keeps a copy of its image as mkfs left
//! it (the *blank*), and every later fresh cell of that target starts on a copy of the blank
//! instead of running mkfs again.
//!
//! Why: mkntfs writes a 64 MiB `$LogFile` on a 64 GiB volume, in small direct-I/O writes to
//! the sparse image, which took ~2 s per fresh ntfs cell (and left an image of thousands of
//! extents, slow to remove); a copy of the blank's data regions is one sequential write of
//! its 67 MiB (issue 41's measurement, BENCHMARKS.md).
//!
//! What it keeps: the copy is byte for byte the file system mkfs made, never mounted, so
//! each cell still gets a fresh file system of its own, as sparse as mkfs leaves it; only
//! the identity mkfs drew (the volume serial) is the same in every cell, which no
//! measured operation reads. The blank is journaled like any image and removed at the run's
//! end (`fsarena cleanup` after a `kill -9`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::error::ProvisionError;
use super::image_copy::copy_image;
use super::journal::{Journal, Kind, Op};
use crate::plan::TargetConfig;
use crate::sys::{ignore_missing, steps};

/// A kept image of a fresh file system, and how mkfs made it (for the copies' provenance).
#[derive(Debug, Clone)]
pub struct Blank {
    pub path: PathBuf,
    pub mkfs_command: Option<Vec<String>>,
    pub mkfs_version: Option<String>,
}

/// The note in the provenance of a cell whose file system is a copy of the blank.
pub const NOTE: &str =
    "a copy of the file system mkfs made for this target's first fresh cell, never mounted (the blank)";

impl Blank {
    /// Copies the blank into the new image `img` (journaled by the caller), evicted from
    /// the page cache as a fresh image starts.
    pub fn copy_to(&self, img: &Path) -> Result<(), ProvisionError> {
        steps::timed("blank_copy", || copy_image(&self.path, img))?;
        crate::sys::evict_file(img)
            .map_err(|e| ProvisionError::io(format!("cannot evict {}", img.display()), e))
    }
}

/// The run's blanks, by target name and image size.
#[derive(Debug, Default)]
pub struct Blanks {
    kept: Mutex<HashMap<(String, u64), Blank>>,
}

impl Blanks {
    /// The blank of target `target` at `size` bytes, if one is kept.
    pub fn get(&self, target: &str, size: u64) -> Option<Blank> {
        let kept = self.kept.lock().ok()?;
        kept.get(&(target.to_string(), size)).cloned()
    }

    /// After mkfs made target `t`'s fresh file system on the image `img` (`size` bytes,
    /// called `<target>-<seq>.img`) with `mkfs` (command, version): kept as the blank,
    /// `<target>-blank-<seq>.img` beside it, when `t` is copied from one and has none yet.
    pub fn after_mkfs(
        &self,
        t: &TargetConfig,
        size: u64,
        img: &Path,
        mkfs: (&Option<Vec<String>>, &Option<String>),
        journal: &Journal,
    ) {
        let stem = img.file_stem().map(|s| s.to_string_lossy().into_owned());
        // Named by the cell's number too: two targets' names made file-safe may be one.
        let Some((name, seq)) = stem.as_deref().and_then(|s| s.rsplit_once('-')) else {
            return;
        };
        if !t.fs.copied_from_blank() || self.get(&t.name, size).is_some() {
            return;
        }
        let blank = Blank {
            path: img.with_file_name(format!("{name}-blank-{seq}.img")),
            mkfs_command: mkfs.0.clone(),
            mkfs_version: mkfs.1.clone(),
        };
        steps::timed("blank_keep", || {
            self.keep(&t.name, size, img, blank, journal)
        });
    }

    /// Keeps a copy of `img` (a file system mkfs just made, not yet mounted) as the blank
    /// of `target` at `size`, journaled before it is made; a failed copy is removed and
    /// only costs the next cells their own mkfs.
    fn keep(&self, target: &str, size: u64, img: &Path, blank: Blank, journal: &Journal) {
        let Ok(mut kept) = self.kept.lock() else {
            return;
        };
        let key = (target.to_string(), size);
        if kept.contains_key(&key)
            || journal
                .record(Op::Create, Kind::Image, &blank.path, Some("blank"))
                .is_err()
        {
            return;
        }
        match copy_image(img, &blank.path) {
            Ok(_) => {
                kept.insert(key, blank);
            }
            Err(e) => {
                eprintln!("fsarena: cannot keep a blank of {target} ({e}): each cell runs mkfs");
                remove(&blank.path, journal);
            }
        }
    }

    /// Removes every blank (the run's end, before its work directory is cleaned up).
    pub fn remove_all(&self, journal: &Arc<Journal>) {
        if let Ok(mut kept) = self.kept.lock() {
            for (_, b) in kept.drain() {
                remove(&b.path, journal);
            }
        }
    }
}

fn remove(path: &Path, journal: &Journal) {
    match std::fs::remove_file(path).or_else(ignore_missing) {
        Ok(()) => {
            let _ = journal.record(Op::Release, Kind::Image, path, None);
        }
        Err(e) => eprintln!("fsarena: cannot remove {}: {e}", path.display()),
    }
}
