//! The first copy of a cell's file system kept as a populated image (`MasterImage::keep`),
//! made beside that file system's own unmount and check instead of in the next cell's
//! set-up, where it waited for them.
//!
//! The copy starts while the file system is still mounted (its measured phase ended with a
//! `syncfs`), so what the unmount and the check write meanwhile may or may not be in it.
//! Those writes are traced on the image's loop device from before the copy starts until
//! after the check (the trace that vouches for a clone's restore, `write_trace`), and the
//! copy is offered as the image's spare clone with them as its written ranges: the first
//! cell restores them from the image, as it would after any cell, so its clone is byte for
//! byte the image. A copy or a trace that fails is removed, and the first cell copies the
//! image whole as before. Until the copy is over, the next measured phase waits for it as
//! for an image's removal ([`super::removals::Removals::beside`]): at a study's scale it
//! outlasts the unmount and check, and a cell that does not start from the image (another
//! target's, or an empty file system) would otherwise measure beside it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::image_copy::copy_image_until;
use super::instance::Instance;
use super::journal::{Journal, Kind, Op};
use super::reuse::{self, Copied, Reuse, Spare};
use super::traced;
use super::undo::Undo;
use super::workdir::WorkDir;
use crate::sys::ignore_missing;

/// What its first clone's provenance says of a copy made this way.
const NOTE: &str = "the clone was copied whole while the file system kept as the image was \
                    unmounted and checked, then made equal to the image by copying back what \
                    the unmount and the check wrote meanwhile (traced)";

/// A copy of a kept image under way, and the trace of the image's writes beside it.
pub struct FirstCopy {
    spare: PathBuf,
    found: reuse::Found,
    copy: JoinHandle<Result<Copied, String>>,
    /// Raised when the copy is no longer wanted: it stops at its next chunk.
    stop: Arc<AtomicBool>,
    /// Raised by the copy's thread when it is over, before the next phase's wait is let go.
    over: Arc<AtomicBool>,
    journal: Arc<Journal>,
}

impl FirstCopy {
    /// Arms the write trace on `inst`'s device, to end right after its unmount and check,
    /// and starts copying `image` (`inst`'s) to `spare` on another thread, journaled first
    /// so a killed run's cleanup removes it. `None`, having started nothing that outlives
    /// `inst`, where the file system has no unmount to follow or its writes cannot be
    /// traced.
    pub(super) fn start(
        inst: &mut Instance,
        work: &WorkDir,
        image: &Path,
        spare: PathBuf,
    ) -> Option<FirstCopy> {
        let at = inst
            .undo
            .iter()
            .position(|u| matches!(u, Undo::Unmount(_)))?;
        let found = reuse::Found::default();
        let name = spare.file_stem()?.to_string_lossy().into_owned();
        let end = traced::arm(inst, work, &name, &found).ok()?;
        // Popped right after the unmount (which checks the file system), before the detach.
        inst.undo.insert(at, end);
        let journal = Arc::clone(&inst.journal);
        journal
            .record(Op::Create, Kind::Image, &spare, Some("clone"))
            .ok()?;
        let (from, to) = (image.to_path_buf(), spare.clone());
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let over = Arc::new(AtomicBool::new(false));
        let ended = Arc::clone(&over);
        let busy = work.removals.beside(&spare);
        let copy = std::thread::Builder::new()
            .name("first-copy".into())
            .spawn(move || {
                let _busy = busy; // dropped last: the wait ends after `over` is raised
                let copied = copy_image_until(&from, &to, &stopped)
                    .map(|(kind, seconds)| Copied {
                        kind,
                        seconds,
                        note: NOTE,
                    })
                    .map_err(|e| e.to_string());
                ended.store(true, Ordering::Release);
                copied
            });
        match copy {
            Ok(copy) => Some(FirstCopy {
                spare,
                found,
                copy,
                stop,
                over,
                journal,
            }),
            Err(_) => {
                remove(&spare, &journal);
                None
            }
        }
    }

    /// Waits for the copy and offers it to `reuse` with the ranges written to the image
    /// since the copy started, for the first clone to restore; or removes it and leaves
    /// the reason for that clone's provenance.
    pub(super) fn offer(self, reuse: &Reuse) {
        let FirstCopy {
            spare,
            found,
            copy,
            journal,
            ..
        } = self;
        let copied = copy
            .join()
            .unwrap_or_else(|_| Err("the copy's thread panicked".into()));
        let written = found
            .lock()
            .ok()
            .and_then(|mut f| f.take())
            .unwrap_or_else(|| Err("the image's writes beside the copy were not traced".into()));
        match (copied, written) {
            (Ok(copied), Ok(written)) => reuse.offer(Ok(Spare {
                path: spare,
                written,
                copied: Some(copied),
            })),
            (Err(why), _) | (_, Err(why)) => {
                remove(&spare, &journal);
                reuse.offer(Err(format!(
                    "the copy made beside the kept file system's check: {why}"
                )));
            }
        }
    }

    /// Whether the copy is still being made.
    pub(super) fn under_way(&self) -> bool {
        !self.over.load(Ordering::Acquire)
    }

    /// Stops the copy, waits for it and removes it: the image was not kept, or is being
    /// removed (an interrupted run).
    pub(super) fn discard(self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.copy.join();
        remove(&self.spare, &self.journal);
    }
}

/// Removes a copy and releases its journal entry.
fn remove(spare: &Path, journal: &Journal) {
    match std::fs::remove_file(spare).or_else(ignore_missing) {
        Ok(()) => {
            let _ = journal.record(Op::Release, Kind::Image, spare, None);
        }
        Err(e) => eprintln!("fsarena: cannot remove {}: {e}", spare.display()),
    }
}
