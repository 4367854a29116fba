//! The file system of one point: made fresh (or copied from the populated image, or joined
//! under MPI) with its working directories, and retired after it: unmounted, checked, and
//! removed, its check's verdict written into the records measured on it.

use std::path::{Path, PathBuf};

use super::context::CellRun;
use crate::provision::workdir::WorkDir;
use crate::provision::{Instance, InstanceSpec, MasterImage};
use crate::results::{Measurement, Status};
use crate::runner::failure::{provision_failure, Failure};
use crate::sys::steps;
use crate::workload::in_turn::InTurn;
use crate::workload::{self, Ctx, Point, WriteBack};

/// The directory made for the log on a `log_target` file system.
pub const LOG_DIR: &str = "fsarena-log";

pub use crate::golden::layout::WORK_DIR;

/// The log target's file system of a point, and the log directory on it.
pub type LogFs = (Instance, PathBuf);

/// The baseline's file system beside a point's, and what the workload is told of it.
pub type BesideFs = (Instance, InTurn);

/// A provisioned file system with the two working directories of one point.
pub struct Fresh {
    pub inst: Instance,
    pub root: PathBuf,
    pub scratch: PathBuf,
    /// The run's shared source trees (`None` if the directory could not be made: the
    /// workloads then make theirs in `scratch`).
    pub sources: Option<PathBuf>,
    /// The data set is already under `root` (a clone of the populated image).
    pub populated: bool,
    /// The point before ran on this file system (`Ctx::follows`).
    pub follows: bool,
    /// The plan's `log_target` for this point: its own fresh file system and the directory
    /// on it handed to the workload as `Ctx::log_root`.
    pub log: Option<LogFs>,
    /// The baseline's file system beside this one, for a point measured in turn with it,
    /// and what the workload is told of it.
    pub beside: Option<BesideFs>,
}

impl Fresh {
    /// What the workload sees of one point of `c` on this file system: built in one place
    /// so asking for points and running one see the same thing.
    pub fn ctx<'b>(&'b self, c: &'b CellRun, options: &'b toml::Table) -> Ctx<'b> {
        Ctx {
            root: &self.root,
            scratch: &self.scratch,
            sources: self.sources.as_deref(),
            threads: c.cell.threads,
            dataset: c.dataset,
            options,
            cancel: c.cancel,
            deadline: Some(std::time::Instant::now() + c.plan.timeout),
            populated: self.populated,
            log_root: self.log.as_ref().map(|(_, dir)| dir.as_path()),
            follows: self.follows,
            in_turn: self.beside.as_ref().map(|(_, t)| t),
        }
    }
}

/// Provisions a file system for point `point` (`p`) of `c`, with its working directories:
/// the team's shared tree, a copy of the populated image, or a new one.
pub fn provision(c: &CellRun, point: usize, p: &Point) -> Result<Fresh, Failure> {
    let work = c.work;
    // The mount is made on the cell's CPUs: a FUSE daemon it starts runs beside the work.
    let spec = &InstanceSpec {
        daemon_cpus: c.placement().map(|p| p.work),
        ..c.spec.clone()
    };
    let step = c.step(&format!("point {point}"));
    let master = c.master_for(p);
    let shared = c.team.shared_instance(&step, spec, work, WORK_DIR);
    let in_shared_tree = shared.is_some();
    let inst = match (shared, master) {
        (Some(joined), _) => joined?,
        (None, Some(master)) => master.clone_for(spec, work).map_err(provision_failure)?,
        (None, None) => Instance::provision(spec, work).map_err(provision_failure)?,
    };
    let root = inst.root.join(WORK_DIR);
    let scratch = match work.subdir("scratch") {
        Ok(d) => d.join(format!("{}-{point}", spec.seq)),
        Err(e) => {
            let _ = inst.teardown(false);
            return Err((
                workload::status_of_io(&e),
                format!("cannot create the scratch directory: {e}"),
                Vec::new(),
            ));
        }
    };
    let populated = master.is_some_and(|m| m.holds_dataset);
    let made = if populated || in_shared_tree {
        // The copy arrives with the data set in place and cold (`clone_for` mounts it
        // fresh over an image with nothing cached), with no machine-wide cache drop: that
        // would also evict the run's source trees, which copy and sync then read back
        // from the disk in every cell. What the mount itself left dirty is written back
        // first: no writeback of the run's own may land in the measured phase. (A shared
        // tree arrives made by rank 0, empty.)
        std::fs::metadata(&root)
            .and_then(|_| {
                if populated {
                    let device = inst.provenance.loop_device.as_deref().map(Path::new);
                    steps::timed("writeback", || write_back_own(&inst.root, device))?;
                }
                Ok(())
            })
            .and_then(|_| std::fs::create_dir_all(&scratch))
    } else {
        std::fs::create_dir(&root).and_then(|_| std::fs::create_dir_all(&scratch))
    };
    if let Err(e) = made {
        let _ = inst.teardown(false);
        let _ = std::fs::remove_dir_all(&scratch);
        return Err((
            workload::status_of_io(&e),
            format!("cannot prepare the working directories: {e}"),
            Vec::new(),
        ));
    }
    let (log, beside) = match others(c, p, populated) {
        Ok(others) => others,
        Err(e) => {
            let _ = inst.teardown(false);
            let _ = std::fs::remove_dir_all(&scratch);
            return Err(e);
        }
    };
    Ok(Fresh {
        inst,
        root,
        scratch,
        sources: work.subdir("sources").ok(),
        populated,
        follows: false,
        log,
        beside,
    })
}

/// The file systems point `p` of `c` uses beside its own: the log target's, and the
/// baseline's it is measured in turn with; the first taken down again when the second
/// cannot be made.
fn others(
    c: &CellRun,
    p: &Point,
    populated: bool,
) -> Result<(Option<LogFs>, Option<BesideFs>), Failure> {
    let log = c.log_spec.map(|spec| fresh_log(c, spec)).transpose()?;
    match beside(c, p, populated) {
        Ok(beside) => Ok((log, beside)),
        Err(e) => {
            if let Some((log, _)) = log {
                let _ = log.teardown(false);
            }
            Err(e)
        }
    }
}

/// The baseline's file system for point `p` of `c`, when it is measured in turn
/// ([`CellRun::beside_for`]): a copy of the baseline's populated image where the point's
/// own is one (`populated`, written back as the point's own is), else a fresh one with an
/// empty working directory. Which side's pass opens the phase alternates with the
/// repetition.
fn beside(c: &CellRun, p: &Point, populated: bool) -> Result<Option<BesideFs>, Failure> {
    let Some(b) = c.beside_for(p) else {
        return Ok(None);
    };
    let spec = &InstanceSpec {
        daemon_cpus: c.placement().map(|p| p.work),
        ..b.spec.clone()
    };
    let inst = match (populated, b.master) {
        (true, Some(master)) => master.clone_for(spec, c.work),
        _ => Instance::provision(spec, c.work),
    }
    .map_err(provision_failure)?;
    let root = inst.root.join(WORK_DIR);
    let device = inst.provenance.loop_device.as_deref().map(Path::new);
    let made = match populated {
        true => std::fs::metadata(&root)
            .and_then(|_| steps::timed("writeback", || write_back_own(&inst.root, device))),
        false => std::fs::create_dir(&root),
    };
    if let Err(e) = made {
        let _ = inst.teardown(false);
        return Err((
            workload::status_of_io(&e),
            format!("cannot prepare the baseline's working directory beside this one: {e}"),
            Vec::new(),
        ));
    }
    let in_turn = InTurn {
        target: spec.target.name.clone(),
        writeback: WriteBack {
            root: inst.root.clone(),
            device: device.map(Path::to_path_buf),
        },
        root,
        first: c.cell.repetition % 2 == 1,
        cached: Default::default(),
    };
    Ok(Some((inst, in_turn)))
}

/// Writes back what a clone's own file system holds dirty before its measured phase
/// ([`crate::sys::write_back`]): what mounting wrote, a journal replay, a superblock's mount
/// count, and the block device's cache.
///
/// Not `sync(2)`: that waits on every dirty page of the machine, other programs' too (16 s
/// once beside other writers, 0.0-0.4 s in the other cells of that run), which is harness time
/// and noise and protects nothing: what others write goes on being written during the
/// phase. Everything else of the run's is written back where it is made: the images
/// (`O_DIRECT` or synced copies, evicted with `fdatasync`), the source trees (`syncfs`),
/// the records (`fsync`), and a loop device writes its image with direct I/O.
fn write_back_own(root: &Path, device: Option<&Path>) -> std::io::Result<()> {
    crate::sys::write_back(root, device)
}

/// A fresh file system of the log target with an empty log directory on it.
fn fresh_log(c: &CellRun, spec: &InstanceSpec) -> Result<LogFs, Failure> {
    let inst = Instance::provision(spec, c.work).map_err(provision_failure)?;
    let dir = inst.root.join(LOG_DIR);
    match std::fs::create_dir(&dir) {
        Ok(()) => Ok((inst, dir)),
        Err(e) => {
            let _ = inst.teardown(false);
            Err((
                workload::status_of_io(&e),
                format!("cannot create the log directory {}: {e}", dir.display()),
                Vec::new(),
            ))
        }
    }
}

/// Unmounts, checks and removes a point's file system; a failed check invalidates the
/// measurements made on it (one, or several points that followed on it).
pub fn retire(f: Fresh, ms: &mut [Measurement], target: &str) {
    let note = |m: &mut [Measurement], text: String| {
        for m in m.iter_mut() {
            m.notes.push(text.clone());
        }
    };
    if let Some((log, _)) = f.log {
        let name = log.provenance.fs_type.clone();
        let (health, td) = log.teardown(true);
        if let Some(h) = health.filter(|h| !h.passed) {
            for m in ms.iter_mut().filter(|m| m.status == Status::Ok) {
                m.status = Status::Invalid;
                m.error = Some(check_failure("the log target's file system", &h));
            }
        }
        if let Err(e) = td {
            note(ms, format!("teardown of the log target: {e}"));
            eprintln!("fsarena: teardown of the log target ({name}): {e}");
        }
    }
    retire_beside(f.beside, ms);
    let (health, td) = f.inst.teardown(true);
    judged(ms, health, &f.scratch);
    if let Err(e) = td {
        note(ms, format!("teardown: {e}"));
        eprintln!("fsarena: teardown of {target}: {e}");
    }
}

/// Unmounts, checks and removes the baseline's file system beside a point's: a failed check
/// invalidates the records whose baseline side was measured on it.
fn retire_beside(beside: Option<BesideFs>, ms: &mut [Measurement]) {
    let Some((inst, t)) = beside else {
        return;
    };
    let (health, td) = inst.teardown(true);
    if let Some(h) = health.filter(|h| !h.passed) {
        for m in ms.iter_mut().filter(|m| m.status == Status::Ok) {
            m.status = Status::Invalid;
            m.error = Some(check_failure("the baseline's file system beside it", &h));
        }
    }
    if let Err(e) = td {
        for m in ms.iter_mut() {
            m.notes.push(format!(
                "teardown of the baseline's file system beside it: {e}"
            ));
        }
        eprintln!(
            "fsarena: teardown of {}'s file system beside a point: {e}",
            t.target
        );
    }
}

/// [`retire`] for a file system that holds the data set exactly as a populated image does
/// (a point of a workload that `leaves_dataset`, with no log target): unmounted and checked
/// the same way, but its image is kept as the target's populated image
/// ([`MasterImage::keep`]) instead of removed, so the run does not write the data set again
/// for the cells that copy it. `None` when it could not be kept (said in the records'
/// notes); the records are judged by the check either way.
pub fn retire_keeping(
    f: Fresh,
    ms: &mut [Measurement],
    target: &str,
    (origin, work): (String, &WorkDir),
) -> Option<MasterImage> {
    let (health, kept) = MasterImage::keep(f.inst, target, origin, work);
    judged(ms, health, &f.scratch);
    let line = match &kept {
        Ok(_) => "this file system, checked, was kept as the target's populated image that later cells copy".to_string(),
        Err(e) => format!("this file system could not be kept as the target's populated image: {e}"),
    };
    for m in ms.iter_mut() {
        m.notes.push(line.clone());
    }
    kept.ok()
}

/// After a file system's teardown: its scratch directory removed, its steps charged to
/// the last record measured on it, and every record judged by its check (`health`).
fn judged(ms: &mut [Measurement], health: Option<crate::results::Health>, scratch: &Path) {
    steps::timed("remove_dir", || std::fs::remove_dir_all(scratch)).ok();
    // The last record measured on this file system carries its teardown's steps.
    if let Some(m) = ms.last_mut() {
        for (step, s) in steps::take() {
            *m.harness_seconds.entry(step).or_insert(0.0) += s;
        }
    }
    if let Some(h) = health {
        for m in ms.iter_mut() {
            if !h.passed && m.status == Status::Ok {
                m.status = Status::Invalid;
                m.error = Some(check_failure("the file system", &h));
            }
            m.health = Some(h.clone());
        }
    }
}

/// The error of a measurement whose file system (`what`) did not pass its check: failed,
/// or no verdict because the checker was killed by a signal (said so: `--resume` redoes it).
fn check_failure(what: &str, h: &crate::results::Health) -> String {
    let cmd = h.command.join(" ");
    if crate::provision::fsck::killed(h) {
        format!("{what}'s check after the measurement was killed by a signal ({cmd}): no verdict")
    } else {
        format!("{what} failed its check after the measurement ({cmd})")
    }
}

/// Retires `f` with the records measured on it and hands them to `emit` in order, into
/// `records`; with `keep` (the origin [`retire_keeping`] notes, and the run's work
/// directory, whose trace follows the first copy of it), its image is kept as the
/// target's populated image and returned, when every record measured on it is `ok`. False
/// when a record could not be kept (the cell stops).
pub fn settle(
    f: Fresh,
    pending: &mut Vec<Measurement>,
    (target, keep): (&str, Option<(String, &WorkDir)>),
    emit: &mut dyn FnMut(&mut Measurement) -> bool,
    records: &mut Vec<Measurement>,
) -> (bool, Option<MasterImage>) {
    if pending.is_empty() {
        retire(f, &mut [Measurement::default()], target);
        return (true, None);
    }
    let keep = keep.filter(|_| {
        f.log.is_none()
            && f.beside.is_none()
            && !f.populated
            && pending.iter().all(|m| m.status == Status::Ok)
    });
    let image = match keep {
        Some(keep) => retire_keeping(f, pending, target, keep),
        None => {
            retire(f, pending, target);
            None
        }
    };
    (emitted(pending, emit, records), image)
}

/// Hands `pending` to `emit` in order, into `records`; false when one could not be kept.
fn emitted(
    pending: &mut Vec<Measurement>,
    emit: &mut dyn FnMut(&mut Measurement) -> bool,
    records: &mut Vec<Measurement>,
) -> bool {
    let mut kept = true;
    for mut m in pending.drain(..) {
        // After a record that could not be kept, the rest go to the caller unemitted.
        kept = kept && emit(&mut m);
        records.push(m);
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Set in the child process the test below starts: it runs the write-back under a
    /// seccomp filter that kills it on `sync(2)`.
    const CHILD: &str = "FSARENA_TEST_WRITE_BACK_CHILD";

    /// Kills this process (SIGSYS) the moment any of its threads calls `sync(2)`; every
    /// other system call is allowed. Applies to the calling thread and its future children.
    fn kill_on_sync() {
        let insn = |code: u32, jt: u8, jf: u8, k: u32| libc::sock_filter {
            code: code as u16,
            jt,
            jf,
            k,
        };
        let filter = [
            // The system call's number: the first field of `struct seccomp_data`.
            insn(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0, 0, 0),
            insn(
                libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K,
                0,
                1,
                libc::SYS_sync as u32,
            ),
            insn(
                libc::BPF_RET | libc::BPF_K,
                0,
                0,
                libc::SECCOMP_RET_KILL_PROCESS,
            ),
            insn(libc::BPF_RET | libc::BPF_K, 0, 0, libc::SECCOMP_RET_ALLOW),
        ];
        let prog = libc::sock_fprog {
            len: filter.len() as u16,
            filter: filter.as_ptr() as *mut libc::sock_filter,
        };
        // SAFETY: `prog` points at `filter`, both alive across the calls; the kernel copies it.
        let installed = unsafe {
            libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1 as libc::c_ulong, 0, 0, 0) == 0
                && libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    0,
                    &prog as *const libc::sock_fprog,
                ) == 0
        };
        assert!(installed, "seccomp: {}", std::io::Error::last_os_error());
    }

    /// Regression: a clone's cell waited before its phase on `sync(2)`, every dirty page of
    /// the machine (16.3 s once while other programs wrote). The write-back now names only
    /// the cell's own file system and device: run under a filter that kills the process on
    /// `sync(2)`, it must finish, where the old step (`sync(2)` itself, run the same way as
    /// a control) is killed.
    #[test]
    fn the_write_back_before_a_clones_phase_does_not_wait_on_the_whole_machine() {
        match std::env::var(CHILD).as_deref() {
            Ok("write_back") => {
                let dir = tempfile::tempdir().unwrap();
                let device = dir.path().join("device");
                std::fs::write(&device, b"dirty").unwrap();
                kill_on_sync();
                write_back_own(dir.path(), Some(&device)).unwrap();
                return;
            }
            Ok(_) => {
                kill_on_sync();
                rustix::fs::sync();
                return;
            }
            Err(_) => {}
        }
        let run = |what: &str| {
            let name = "runner::cell::fresh::tests::\
                        the_write_back_before_a_clones_phase_does_not_wait_on_the_whole_machine";
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args([name, "--exact", "--test-threads=1"])
                .env(CHILD, what)
                .output()
                .unwrap();
            (
                out.status,
                String::from_utf8_lossy(&out.stdout).into_owned(),
            )
        };
        let (status, said) = run("write_back");
        assert!(status.success(), "{status:?}: {said}");
        assert!(said.contains("1 passed"), "the child ran the test: {said}");
        let (status, said) = run("sync");
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGSYS), "the control: {said}");
    }
}
