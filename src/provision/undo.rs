//! The undo steps of an [`Instance`](super::Instance): every step that creates something
//! pushes one (after journaling it), and teardown, an error half-way and `Drop` pop them.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::clone_trace::{CloneTrace, IdleTraces};
use super::write_trace::WriteTrace;
use super::{fscrypt, reuse};

pub(super) enum Undo {
    RemoveFile(PathBuf),
    /// Gives back a master image's one-clone-attached claim (see `master`).
    Unclaim(Arc<AtomicBool>),
    Detach {
        dev: PathBuf,
        image: PathBuf,
    },
    Unmount(PathBuf),
    RemoveDir(PathBuf),
    RemoveTree(PathBuf),
    /// Removes an fscrypt key from the file system mounted at `mnt` (before its unmount).
    RemoveKey {
        mnt: PathBuf,
        id: fscrypt::KeyId,
    },
    /// Ends a write trace (a clone's, or that of a file system kept as an image while its
    /// first copy is made), after the file system's last write and before its device is
    /// detached, leaving what it found in `found`.
    EndTrace {
        trace: WriteTrace,
        found: reuse::Found,
        /// The instance `trace` runs on, handed back to `idle` for the next clone.
        tracer: CloneTrace,
        idle: IdleTraces,
    },
    /// A clone's image, once detached: the master's spare for the next cell when `found`
    /// holds its written ranges, else removed.
    ReturnClone {
        img: PathBuf,
        found: reuse::Found,
        to: Arc<reuse::Reuse>,
    },
}

impl Undo {
    /// The name its wall seconds are summed under (`sys::steps`); `None` for an unmount,
    /// which times its unmount and the check after it apart.
    pub(super) fn step_name(&self) -> Option<&'static str> {
        Some(match self {
            Undo::RemoveFile(_) => "remove_image",
            Undo::Unclaim(_) => "unclaim",
            Undo::Detach { .. } => "detach",
            Undo::Unmount(_) => return None,
            Undo::RemoveDir(_) | Undo::RemoveTree(_) => "remove_dir",
            Undo::RemoveKey { .. } => "remove_key",
            Undo::EndTrace { .. } => "trace_end",
            Undo::ReturnClone { .. } => "return_clone",
        })
    }
}
