//! The trace instance clones are traced on (`write_trace`), and the tracefs mount it needs
//! when the system has none: made for a run's first clone, handed from each clone to the
//! next through the work directory (`WorkDir::idle_traces`, an [`IdleTraces`]; clones are
//! attached one at a time, so one instance serves the whole run, however many images it
//! clones), removed at the run's end. Each piece is journaled before it exists, so a killed
//! run's `fsarena cleanup` removes the instance and the mount by name.
//!
//! Below the work directory: it is handed the run's journal, id and mount directory, so
//! the work directory can hold the idle instances without the two importing each other.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::journal::{Journal, Kind, Op};
use super::mounts;
use super::write_trace::{self, Recorder, WriteTrace};
use crate::sys::{ignore_missing, DevId};

/// Trace instances waiting for a clone.
pub type IdleTraces = Arc<Mutex<Vec<CloneTrace>>>;

/// A trace instance, and the tracefs mounted for it (if fsarena mounted one).
#[derive(Debug)]
pub struct CloneTrace {
    recorder: Option<Recorder>,
    mount: Option<PathBuf>,
    journal: Arc<Journal>,
}

impl CloneTrace {
    /// Makes an instance for the run `run_id` (journaled in `journal`), named for the clone
    /// `name` it is made for: on the system's tracefs, else on one mounted for it in the
    /// run's mount directory, which `mnt_dir` creates (only then: a system with a tracefs
    /// needs none).
    pub fn create(
        journal: &Arc<Journal>,
        run_id: &str,
        name: &str,
        mnt_dir: impl FnOnce() -> io::Result<PathBuf>,
    ) -> Result<Self, String> {
        let mut made = CloneTrace {
            recorder: None,
            mount: None,
            journal: Arc::clone(journal),
        };
        let tracefs = match write_trace::mounted_tracefs() {
            Some(t) => t,
            None => made.mount_tracefs(mnt_dir, name)?,
        };
        let instance = write_trace::instance_path(
            &tracefs,
            &format!("{}{run_id}-{name}", write_trace::INSTANCE_PREFIX),
        );
        journal
            .record(Op::Create, Kind::Trace, &instance, None)
            .map_err(|e| format!("cannot journal {}: {e}", instance.display()))?;
        match Recorder::create(&instance) {
            Ok(r) => made.recorder = Some(r),
            Err(e) => {
                let _ = journal.record(Op::Release, Kind::Trace, &instance, None);
                return Err(format!("cannot trace the clone's writes: {e}"));
            }
        }
        Ok(made)
    }

    /// Mounts a tracefs of fsarena's own at `mnt/<name>-tracefs` in the work directory.
    fn mount_tracefs(
        &mut self,
        mnt_dir: impl FnOnce() -> io::Result<PathBuf>,
        name: &str,
    ) -> Result<PathBuf, String> {
        let mnt = mnt_dir()
            .map_err(|e| format!("cannot create the mount directory: {e}"))?
            .join(format!("{name}-tracefs"));
        let journal = |op, kind, detail| {
            self.journal
                .record(op, kind, &mnt, detail)
                .map_err(|e| format!("cannot journal {}: {e}", mnt.display()))
        };
        journal(Op::Create, Kind::Dir, None)?;
        fs::create_dir(&mnt).map_err(|e| format!("cannot create {}: {e}", mnt.display()))?;
        journal(Op::Create, Kind::Mount, Some("tracefs"))?;
        let flags = rustix::mount::MountFlags::NOSUID
            | rustix::mount::MountFlags::NODEV
            | rustix::mount::MountFlags::NOEXEC;
        if let Err(e) = rustix::mount::mount("nodev", &mnt, "tracefs", flags, None) {
            let _ = journal(Op::Release, Kind::Mount, None);
            if fs::remove_dir(&mnt).is_ok() {
                let _ = journal(Op::Release, Kind::Dir, None);
            }
            return Err(format!("cannot mount tracefs: {e}"));
        }
        self.mount = Some(mnt.clone());
        Ok(mnt)
    }

    /// Starts tracing `dev`'s writes (the instance is this clone's alone until it goes back
    /// to the idle ones).
    pub fn start(&self, dev: DevId) -> Result<WriteTrace, String> {
        let recorder = self
            .recorder
            .as_ref()
            .ok_or("internal: no trace instance")?;
        recorder
            .start(dev)
            .map_err(|e| format!("cannot trace the clone's writes: {e}"))
    }
}

impl Drop for CloneTrace {
    fn drop(&mut self) {
        if let Some(recorder) = self.recorder.take() {
            let instance = recorder.instance().to_path_buf();
            match recorder.remove() {
                Ok(()) => release(&self.journal, Kind::Trace, &instance),
                Err(e) => eprintln!("fsarena: cannot remove {}: {e}", instance.display()),
            }
        }
        if let Some(mnt) = self.mount.take() {
            match mounts::unmount(&mnt) {
                Ok(()) => {
                    release(&self.journal, Kind::Mount, &mnt);
                    if fs::remove_dir(&mnt).or_else(ignore_missing).is_ok() {
                        release(&self.journal, Kind::Dir, &mnt);
                    }
                }
                Err(e) => eprintln!("fsarena: cannot unmount {}: {e}", mnt.display()),
            }
        }
    }
}

fn release(journal: &Journal, kind: Kind, path: &Path) {
    let _ = journal.record(Op::Release, kind, path, None);
}
