//! Taking an [`Instance`] down: its undo steps run newest first (unmount, check, detach,
//! remove), each released in the journal once done. The same unwinding serves a normal
//! teardown, an error half-way through provisioning and `Drop` during a panic; a master
//! image keeps its first steps ([`Instance::unwind_with`]).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::error::ProvisionError;
use super::instance::Instance;
use super::journal::{Kind, Op};
use super::undo::Undo;
use super::{fscrypt, loopdev, mounts, reuse};
use crate::results::Health;
use crate::sys::{ignore_missing, steps};

impl Instance {
    /// Takes everything down in reverse order. With `check`, the file system is checked
    /// read-only right after unmounting; the result says whether the repetition counts.
    /// Keeps going after a failed step so one stuck resource does not strand the others.
    pub fn teardown(mut self, check: bool) -> (Option<Health>, Result<(), ProvisionError>) {
        self.unwind(check, 0)
    }

    /// Undoes steps, newest first, until `keep` remain.
    pub(super) fn unwind(
        &mut self,
        check: bool,
        keep: usize,
    ) -> (Option<Health>, Result<(), ProvisionError>) {
        self.unwind_with(check, keep, &mut || {})
    }

    /// [`Instance::unwind`], calling `unmounted` once the file system is unmounted and
    /// before it is checked: from then on nothing writes to the device, so its image may be
    /// read (a master's first copy starts there, beside the check).
    pub(super) fn unwind_with(
        &mut self,
        check: bool,
        keep: usize,
        unmounted: &mut dyn FnMut(),
    ) -> (Option<Health>, Result<(), ProvisionError>) {
        let mut health = None;
        let mut first_err = None;
        while self.undo.len() > keep {
            let Some(step) = self.undo.pop() else { break };
            let Some((res, kind, path)) = self.undo_step(step, check, &mut health, unmounted)
            else {
                continue;
            };
            match res {
                Ok(()) => {
                    let _ = self.journal.record(Op::Release, kind, &path, None);
                }
                Err(e) => {
                    if first_err.is_none() {
                        first_err = Some(e);
                    }
                }
            }
        }
        (health, first_err.map_or(Ok(()), Err))
    }

    /// Undoes one step: its outcome, with the journal entry (kind, path) that a success
    /// releases; `None` for a step that leaves no entry of its own to release (a claim, a
    /// trace, a clone its master takes back). Unmounting calls `unmounted` and, with
    /// `check`, leaves the file system's health in `health`.
    fn undo_step(
        &mut self,
        step: Undo,
        check: bool,
        health: &mut Option<Health>,
        unmounted: &mut dyn FnMut(),
    ) -> Option<(Result<(), ProvisionError>, Kind, PathBuf)> {
        match step.step_name() {
            Some(name) => steps::timed(name, || self.undo_one(step, check, health, unmounted)),
            None => self.undo_one(step, check, health, unmounted),
        }
    }

    /// [`Instance::undo_step`]'s work, untimed.
    fn undo_one(
        &mut self,
        step: Undo,
        check: bool,
        health: &mut Option<Health>,
        unmounted: &mut dyn FnMut(),
    ) -> Option<(Result<(), ProvisionError>, Kind, PathBuf)> {
        let done = match step {
            Undo::Unclaim(flag) => {
                flag.store(false, Ordering::SeqCst);
                return None;
            }
            Undo::EndTrace {
                trace,
                found,
                tracer,
                idle,
            } => {
                // The instance is journaled on its own and removed at the run's end.
                reuse::settle(&found, trace.finish());
                if let Ok(mut v) = idle.lock() {
                    v.push(tracer);
                }
                return None;
            }
            Undo::ReturnClone { img, found, to } => {
                if !to.hand_back(img.clone(), &found) {
                    self.removals.remove(img, Arc::clone(&self.journal));
                }
                // Still journaled: the master removes it in the end, or the removal's thread.
                return None;
            }
            Undo::Unmount(p) => {
                let r = steps::timed("unmount", || mounts::unmount(&p));
                if r.is_ok() {
                    unmounted();
                }
                if r.is_ok() && check {
                    *health = steps::timed("check", || self.health_check());
                }
                (r, Kind::Mount, p)
            }
            Undo::Detach { dev, image } => (loopdev::detach(&dev, &image), Kind::Loop, image),
            Undo::RemoveKey { mnt, id } => {
                let r = fscrypt::remove_key(&mnt, &id).map(|_| ()).map_err(|e| {
                    ProvisionError::io(
                        format!("cannot remove the fscrypt key of {}", mnt.display()),
                        e,
                    )
                });
                if r.is_ok() {
                    // Two entries were journaled: before the key was added, and with its id.
                    let _ = self.journal.record(Op::Release, Kind::Key, &mnt, None);
                }
                (r, Kind::Key, mnt)
            }
            Undo::RemoveFile(p) => {
                // Off the cell's path; its journal entry is released once it is gone.
                self.removals.remove(p, Arc::clone(&self.journal));
                return None;
            }
            Undo::RemoveDir(p) => (removed(fs::remove_dir(&p), &p), Kind::Dir, p),
            Undo::RemoveTree(p) => (removed(fs::remove_dir_all(&p), &p), Kind::Dir, p),
        };
        Some(done)
    }

    pub(super) fn health_check(&self) -> Option<Health> {
        super::fsck::check(self.fs, self.check_device.as_ref()?)
    }
}

/// A removal of `p` as an undo step's outcome: done once `p` is gone, whether it was
/// there or not (a crash or an earlier step may have removed it).
fn removed(r: std::io::Result<()>, p: &Path) -> Result<(), ProvisionError> {
    r.or_else(ignore_missing)
        .map_err(|e| ProvisionError::io(format!("cannot remove {}", p.display()), e))
}

impl Drop for Instance {
    fn drop(&mut self) {
        if !self.undo.is_empty() {
            if let (_, Err(e)) = self.unwind(false, 0) {
                eprintln!("fsarena: teardown: {e}");
            }
        }
    }
}
