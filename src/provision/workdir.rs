//! The work directory fsarena creates for a run: images, mount points, scratch data and the
//! journal live here and nowhere else.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::blank::Blanks;
use super::clone_trace::IdleTraces;
use super::error::ProvisionError;
use super::journal::Journal;
use super::removals::Removals;

/// Where run directories go unless `--work-dir` says otherwise. /var/tmp, not /tmp: /tmp
/// is often a tmpfs, and loop images there would eat memory and skew the results.
pub const DEFAULT_ROOT: &str = "/var/tmp/fsarena";

/// The marker that identifies a directory as one fsarena made (cleanup touches no other).
pub const OWNER_FILE: &str = "fsarena-run";

/// A run's private directory.
#[derive(Debug)]
pub struct WorkDir {
    pub root: PathBuf,
    pub run: PathBuf,
    pub journal: Arc<Journal>,
    /// Trace instances no clone is using, for the next clone to trace its writes on
    /// (`clone_trace`): one is made for the first clone and re-armed for every later one,
    /// since clones are attached one at a time.
    pub idle_traces: IdleTraces,
    /// The cells' images being removed off their cells' path (`removals`).
    pub removals: Arc<Removals>,
    /// Fresh file systems kept as mkfs made them, for later cells to copy (`blank`).
    pub blanks: Blanks,
}

impl Drop for WorkDir {
    /// No removal outlives the run: the cleanup after it (or a panic's) finds every image
    /// either gone or still journaled.
    fn drop(&mut self) {
        self.removals.wait();
    }
}

impl WorkDir {
    /// Creates `root/run-<time>-<pid>` with an owner marker and an empty journal.
    pub fn create(root: &Path) -> Result<WorkDir, ProvisionError> {
        Self::create_for(root, None)
    }

    /// [`WorkDir::create`] for a run recording into `out`, which its marker names: a
    /// `--resume` of that results directory finds what this run left if it is killed
    /// ([`runs_for`]).
    pub fn create_for(root: &Path, out: Option<&Path>) -> Result<WorkDir, ProvisionError> {
        // Absolute, whatever the caller passed: the journal, /proc/mounts and losetup name
        // absolute paths, and a relative root made mounts the run could not find (`tune
        // --work-dir wd`, issue 57.5) and a journal `fsarena cleanup` could not match.
        let root = &absolute(root);
        fs::create_dir_all(root)
            .map_err(|e| ProvisionError::io(format!("cannot create {}", root.display()), e))?;
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        let run = root.join(format!("run-{stamp}-{}", std::process::id()));
        fs::create_dir(&run)
            .map_err(|e| ProvisionError::io(format!("cannot create {}", run.display()), e))?;
        let mut marker = format!(
            "pid={}\nstart={}\n",
            std::process::id(),
            process_start_time()
        );
        if let Some(out) = out.and_then(|o| fs::canonicalize(o).ok()) {
            marker.push_str(&format!("{OUT_FIELD}{}\n", out.display()));
        }
        fs::write(run.join(OWNER_FILE), marker)
            .map_err(|e| ProvisionError::io("cannot write the run marker", e))?;
        let journal = Journal::open(&run.join(Journal::FILE_NAME))
            .map_err(|e| ProvisionError::io("cannot open the run journal", e))?;
        Ok(WorkDir {
            root: root.to_path_buf(),
            run,
            journal: Arc::new(journal),
            idle_traces: Arc::default(),
            removals: Arc::default(),
            blanks: Blanks::default(),
        })
    }

    /// A subdirectory of the run, created on demand and journaled first (as a tree:
    /// `cleanup` removes it with its contents, and nothing in the run directory that the
    /// journal does not name).
    pub fn subdir(&self, name: &str) -> io::Result<PathBuf> {
        let p = self.run.join(name);
        if !p.is_dir() {
            self.journal.record(
                super::journal::Op::Create,
                super::journal::Kind::Dir,
                &p,
                Some("tree"),
            )?;
            fs::create_dir_all(&p)?;
        }
        Ok(p)
    }

    /// Removes the idle trace instances (and the tracefs mounts they needed): at the end
    /// of the run, before its cleanup reads the journal.
    pub fn release_traces(&self) {
        let idle = self.idle_traces.lock().map(|mut v| std::mem::take(&mut *v));
        drop(idle);
    }

    /// The run's id (its directory's name), which names what the run makes outside its
    /// directory: a `dir:` target's subdirectory, a clone's trace instance.
    pub fn id(&self) -> String {
        run_id(&self.run)
    }

    /// Free bytes on the file system holding the work directory.
    pub fn free_bytes(&self) -> io::Result<u64> {
        free_bytes(&self.run)
    }

    /// Why an I/O error on a loop target is most likely the host's: the disk holding the
    /// images is (nearly) full, so the loop device's writes to an image failed
    /// (`BLK_STS_NOSPC` in the kernel log) and the target's file system saw I/O errors or
    /// went read-only. `None` while the host has room.
    pub fn out_of_space(&self) -> Option<String> {
        let free = self.free_bytes().ok()?;
        (free < HOST_NEARLY_FULL).then(|| {
            format!(
                "the host file system holding the images ({}) has only {} free: the loop device's writes most likely failed there for lack of space, not through a fault of the target; free some space or use --work-dir on a larger disk",
                self.root.display(),
                crate::plan::size::human_bytes(free)
            )
        })
    }
}

/// `path` as the kernel names it in /proc/mounts and losetup: absolute, its existing part
/// resolved (`..`, symbolic links), the rest appended with `.` and `..` taken out. A
/// lexically absolute `../../w` (`CWD/../../w`, what `std::path::absolute`
/// gives) matched no mount: every mount "succeeded but nothing is mounted" (issue 57.5).
/// Unchanged if the current directory cannot be read.
pub fn absolute(path: &Path) -> PathBuf {
    let Ok(abs) = std::path::absolute(path) else {
        return path.to_path_buf();
    };
    let Some((base, real)) = abs
        .ancestors()
        .find_map(|a| fs::canonicalize(a).ok().map(|r| (a, r)))
    else {
        return abs;
    };
    let mut out = real;
    for c in abs
        .strip_prefix(base)
        .into_iter()
        .flat_map(Path::components)
    {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    out
}

/// The run directories under `root` this process made (their marker names its pid): what
/// it would leave behind if it ended now.
pub fn made_by_this_process(root: &Path) -> Vec<PathBuf> {
    let me = format!("pid={}", std::process::id());
    fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            fs::read_to_string(p.join(OWNER_FILE)).is_ok_and(|t| t.lines().any(|l| l == me))
        })
        .collect()
}

/// The marker's line naming the results directory the run recorded into.
const OUT_FIELD: &str = "out=";

/// Whether the run directory `run` (one with an owner marker) was made by a run recording
/// into `out`; false for a marker that names no results directory (made before they did).
pub fn runs_for(run: &Path, out: &Path) -> bool {
    let (Ok(text), Ok(out)) = (
        fs::read_to_string(run.join(OWNER_FILE)),
        fs::canonicalize(out),
    ) else {
        return false;
    };
    text.lines()
        .filter_map(|l| l.strip_prefix(OUT_FIELD))
        .any(|p| Path::new(p) == out)
}

/// The run directory's name, which names a `dir:` target's subdirectory (and, through
/// [`WorkDir::id`], a clone's trace instance).
pub(super) fn run_id(run_dir: &Path) -> String {
    run_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "run".into())
}

/// Below this much free space on the host's work directory, an I/O error on a loop target
/// is put down to the host ([`WorkDir::out_of_space`]).
const HOST_NEARLY_FULL: u64 = 256 << 20;

/// Bytes an unprivileged writer may still use on the file system holding `path`.
pub fn free_bytes(path: &Path) -> io::Result<u64> {
    let s = rustix::fs::statvfs(path).map_err(io::Error::from)?;
    Ok(s.f_bavail.saturating_mul(s.f_frsize))
}

/// Why a sparse image of `size` bytes cannot be made under `root` (the work directory,
/// which may not exist yet: its nearest existing ancestor is asked), or `None` when it
/// can. The host's file system bounds a file's size below the target's own limit (ext4
/// with 4 KiB blocks: 16 TiB, whatever the image will hold), and only a real file shows
/// it: a sparse probe file is sized to `size` and removed, writing nothing. Any other
/// error is left to the checks that own it (an unwritable or full directory).
pub fn image_too_large(root: &Path, size: u64) -> Option<String> {
    let dir = root.ancestors().find(|p| p.is_dir())?;
    let probe = dir.join(format!(".fsarena-size-probe-{}", std::process::id()));
    let made = fs::File::create(&probe).and_then(|f| f.set_len(size));
    let _ = fs::remove_file(&probe);
    match made {
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::FBIG.raw_os_error()) => {
            Some(format!(
                "an image of {} cannot be made in {}: its file system's largest file is smaller ({e}); give a smaller --fs-size or a --work-dir on a file system with larger files (xfs, btrfs)",
                crate::plan::size::human_bytes(size),
                dir.display()
            ))
        }
        _ => None,
    }
}

/// This process's start time in clock ticks since boot (field 22 of /proc/self/stat), so a
/// recycled pid is not mistaken for a live run.
pub fn process_start_time() -> u64 {
    start_time_of("self").unwrap_or(0)
}

/// The start time of process `pid` in clock ticks since boot (None if it is gone).
pub fn start_time_of(pid: &str) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces and parentheses: split after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 57.5: a relative work directory with `..` in it was kept as `/cwd/../x`, which
    /// no mount in /proc/mounts is named: the run's mounts looked absent and were left.
    #[test]
    fn a_relative_work_dir_becomes_the_path_the_kernel_names() {
        let cwd = std::env::current_dir().unwrap();
        let ups = "../".repeat(cwd.components().count() - 1);
        let rel = PathBuf::from(format!("{ups}var/tmp/./fsarena-not-made/run/../x"));
        let got = absolute(&rel);
        let var_tmp = fs::canonicalize("/var/tmp").unwrap();
        assert_eq!(got, var_tmp.join("fsarena-not-made/x"));
    }
}
