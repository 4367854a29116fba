//! Memory cgroups for database engines: a cache the engine cannot hide in.
//!
//! A database engine run on a machine with gigabytes of free memory keeps its whole database
//! in the page cache, and its reads never reach the device. Database workloads therefore run
//! their engine (a child process) inside a memory cgroup made here, whose limit counts page
//! cache pages as well as the engine's own memory. Page cache pages are charged to the
//! cgroup of the process that faults them in, so only the engine's reads and writes fill it.
//!
//! cgroup v1 (a `memory` hierarchy, nested under this process's own memory cgroup) and v2
//! (`cgroup2` with the memory controller enabled for this process's cgroup's children) are
//! both supported. Every cgroup is journaled before it is made and released after it is
//! removed, so `fsarena cleanup` can kill what is left in it and remove it after `kill -9`.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::error::ProvisionError;
use super::journal::{Journal, Kind, Op};
use super::workdir::OWNER_FILE;

/// Which cgroup interface a memory cgroup is made through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

impl Version {
    pub fn label(self) -> &'static str {
        match self {
            Version::V1 => "cgroup v1",
            Version::V2 => "cgroup v2",
        }
    }
}

/// Where this process may make memory cgroups: the directory (its own memory cgroup, so
/// the limits of whatever contains fsarena still apply) and the interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parent {
    pub dir: PathBuf,
    pub version: Version,
}

/// Finds where a memory cgroup can be made, or says in one line why none can.
pub fn parent() -> Result<Parent, ProvisionError> {
    let mountinfo = fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| ProvisionError::io("reading /proc/self/mountinfo", e))?;
    let own = fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| ProvisionError::io("reading /proc/self/cgroup", e))?;
    locate(&mountinfo, &own, &|p| p.is_dir(), &|p| {
        fs::read_to_string(p).unwrap_or_default()
    })
    .ok_or_else(|| {
        ProvisionError::Unsupported(
            "no memory cgroup here: neither a cgroup v1 `memory` hierarchy nor cgroup v2 with \
             the memory controller available to this process's cgroup"
                .into(),
        )
    })
}

/// Where this process may make a cgroup that only counts its processes' CPU time (cgroup
/// v2's `cpu.stat`, kept in every v2 cgroup whatever controllers are enabled): its own v2
/// cgroup, or `None` where there is no cgroup v2 (`fsarena record` then keeps no CPU time).
pub fn accounting_parent() -> Option<Parent> {
    let mountinfo = fs::read_to_string("/proc/self/mountinfo").ok()?;
    let own = fs::read_to_string("/proc/self/cgroup").ok()?;
    let dir = mounts(&mountinfo)
        .1?
        .join(own_path(&own, &|c: &str| c.is_empty())?);
    dir.join("cpu.stat").is_file().then_some(Parent {
        dir,
        version: Version::V2,
    })
}

/// The v1 `memory` hierarchy's mount point and cgroup v2's, from `/proc/self/mountinfo`.
fn mounts(mountinfo: &str) -> (Option<PathBuf>, Option<PathBuf>) {
    let mut v1 = None;
    let mut v2 = None;
    for line in mountinfo.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let Some(dash) = f.iter().position(|&x| x == "-") else {
            continue;
        };
        let (Some(mnt), Some(fstype), Some(opts)) = (f.get(4), f.get(dash + 1), f.get(dash + 3))
        else {
            continue;
        };
        if *fstype == "cgroup" && opts.split(',').any(|o| o == "memory") {
            v1 = Some(PathBuf::from(mnt));
        } else if *fstype == "cgroup2" {
            v2 = Some(PathBuf::from(mnt));
        }
    }
    (v1, v2)
}

/// This process's cgroup path (relative) in the hierarchy whose controller list `pick`
/// accepts, from `/proc/self/cgroup`.
fn own_path(own: &str, pick: &dyn Fn(&str) -> bool) -> Option<String> {
    own.lines().find_map(|l| {
        let mut p = l.splitn(3, ':');
        let (_, ctrl, path) = (p.next()?, p.next()?, p.next()?);
        pick(ctrl).then(|| path.trim_start_matches('/').to_string())
    })
}

/// The pure part of [`parent`]: from `/proc/self/mountinfo` and `/proc/self/cgroup`, the
/// v1 memory hierarchy if there is one, else a v2 cgroup whose children get `memory`.
fn locate(
    mountinfo: &str,
    own: &str,
    is_dir: &dyn Fn(&Path) -> bool,
    read: &dyn Fn(&Path) -> String,
) -> Option<Parent> {
    let (v1, v2) = mounts(mountinfo);
    if let (Some(mnt), Some(path)) = (
        v1,
        own_path(own, &|c: &str| c.split(',').any(|x| x == "memory")),
    ) {
        let dir = mnt.join(path);
        if is_dir(&dir) {
            return Some(Parent {
                dir,
                version: Version::V1,
            });
        }
    }
    let (mnt, path) = (v2?, own_path(own, &|c: &str| c.is_empty())?);
    let dir = mnt.join(path);
    let has = |file: &str| {
        read(&dir.join(file))
            .split_whitespace()
            .any(|c| c == "memory")
    };
    (is_dir(&dir) && has("cgroup.controllers") && has("cgroup.subtree_control")).then_some(Parent {
        dir,
        version: Version::V2,
    })
}

/// The journal of the run directory holding `path` (a scratch or target directory of a
/// cell), if `path` lies in one: the runner does not hand workloads its journal, but every
/// scratch directory is inside the run directory, next to the owner marker and journal.
pub fn run_journal(path: &Path) -> Option<Arc<Journal>> {
    let run = path
        .ancestors()
        .find(|a| a.join(OWNER_FILE).is_file() && a.join(Journal::FILE_NAME).is_file())?;
    Journal::open(&run.join(Journal::FILE_NAME))
        .ok()
        .map(Arc::new)
}

/// A memory cgroup fsarena made; removed (its processes killed first) when dropped.
#[derive(Debug)]
pub struct MemoryCgroup {
    pub path: PathBuf,
    pub version: Version,
    journal: Option<Arc<Journal>>,
    removed: bool,
}

/// Names are unique within a process and say whose they are.
static SEQ: AtomicU32 = AtomicU32::new(0);

/// The prefix of every cgroup fsarena makes; cleanup removes nothing without it.
pub const PREFIX: &str = "fsarena-";

impl MemoryCgroup {
    /// Makes a memory cgroup under `parent` with `limit` bytes (page cache included),
    /// journaled in `journal` first when there is one. `tag` names its user.
    pub fn create(
        parent: &Parent,
        tag: &str,
        limit: u64,
        journal: Option<Arc<Journal>>,
    ) -> Result<MemoryCgroup, ProvisionError> {
        let cg = Self::holding(parent, tag, journal)?;
        if cg.version == Version::V1 {
            // Stall instead of killing when the limit is reached: the owner raises the limit
            // as the engine's own memory grows (see `track`), so only the cache is squeezed.
            let _ = fs::write(cg.path.join("memory.oom_control"), "1");
        } else {
            let _ = fs::write(cg.path.join("memory.swap.max"), "0");
        }
        cg.set_limit(limit)?;
        Ok(cg)
    }

    /// Makes a cgroup under `parent` with no limit, journaled first: only to hold a tree of
    /// processes (`fsarena record`'s strace and the program it traces) that `fsarena
    /// cleanup` kills whole after a `kill -9`, wherever in the tree they have gone.
    pub fn holding(
        parent: &Parent,
        tag: &str,
        journal: Option<Arc<Journal>>,
    ) -> Result<MemoryCgroup, ProvisionError> {
        let name = format!(
            "{PREFIX}{tag}-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let path = parent.dir.join(name);
        if let Some(j) = &journal {
            j.record(
                Op::Create,
                Kind::Cgroup,
                &path,
                Some(parent.version.label()),
            )
            .map_err(|e| ProvisionError::io("cannot write the run journal", e))?;
        }
        let cg = MemoryCgroup {
            path,
            version: parent.version,
            journal,
            removed: false,
        };
        fs::create_dir(&cg.path)
            .map_err(|e| ProvisionError::io(format!("mkdir {}", cg.path.display()), e))?;
        Ok(cg)
    }

    fn file(&self, v1: &str, v2: &str) -> PathBuf {
        self.path.join(match self.version {
            Version::V1 => v1,
            Version::V2 => v2,
        })
    }

    /// Sets the limit. On v2 it is `memory.high` (reclaim and throttle, never kill), the
    /// counterpart of v1's limit with the OOM killer off.
    pub fn set_limit(&self, bytes: u64) -> Result<(), ProvisionError> {
        let f = self.file("memory.limit_in_bytes", "memory.high");
        fs::write(&f, bytes.to_string())
            .map_err(|e| ProvisionError::io(format!("writing {}", f.display()), e))
    }

    /// The limit in effect (the kernel rounds to pages).
    pub fn limit(&self) -> Option<u64> {
        read_u64(&self.file("memory.limit_in_bytes", "memory.high"))
    }

    /// Moves process `pid` (0: the caller) into the cgroup.
    pub fn enter(&self, pid: u32) -> io::Result<()> {
        fs::write(self.path.join("cgroup.procs"), pid.to_string())
    }

    /// Path of the file whose write moves a process in; for a child to enter itself after
    /// `fork` without allocating.
    pub fn procs_file(&self) -> PathBuf {
        self.path.join("cgroup.procs")
    }

    /// Highest memory use the kernel recorded (page cache included).
    pub fn peak(&self) -> Option<u64> {
        read_u64(&self.file("memory.max_usage_in_bytes", "memory.peak"))
    }

    /// `(everything charged, page cache, shared memory)` bytes now. Shared memory (tmpfs
    /// pages) is counted in the page cache but cannot be reclaimed without swap, so the
    /// engine's own, unreclaimable memory is the first minus the second plus the third.
    pub fn usage(&self) -> Option<(u64, u64, u64)> {
        let total = read_u64(&self.file("memory.usage_in_bytes", "memory.current"))?;
        let stat = fs::read_to_string(self.path.join("memory.stat")).ok()?;
        let (cache_key, shmem_key) = match self.version {
            Version::V1 => ("total_cache", "total_shmem"),
            Version::V2 => ("file", "shmem"),
        };
        let field = |key: &str| {
            stat.lines().find_map(|l| {
                let (name, v) = l.split_once(' ')?;
                (name == key)
                    .then(|| v.trim().parse::<u64>().ok())
                    .flatten()
            })
        };
        Some((total, field(cache_key)?, field(shmem_key).unwrap_or(0)))
    }

    /// Whether a task in the cgroup is stalled at the limit waiting for memory (v1 with the
    /// OOM killer off: `under_oom 1` in `memory.oom_control`). v2's `memory.high` throttles
    /// instead of stalling, so never there.
    pub fn under_oom(&self) -> bool {
        self.version == Version::V1
            && fs::read_to_string(self.path.join("memory.oom_control"))
                .is_ok_and(|s| s.lines().any(|l| l.trim() == "under_oom 1"))
    }

    /// Times the limit was hit (v1 `memory.failcnt`, v2 `high` events).
    pub fn limit_hits(&self) -> Option<u64> {
        match self.version {
            Version::V1 => read_u64(&self.path.join("memory.failcnt")),
            Version::V2 => fs::read_to_string(self.path.join("memory.events"))
                .ok()?
                .lines()
                .find_map(|l| l.strip_prefix("high ")?.trim().parse().ok()),
        }
    }

    /// Kills whatever is still inside and removes the cgroup, then journals the release.
    pub fn remove(mut self) -> Result<(), ProvisionError> {
        self.removed = true;
        remove_path(&self.path)
            .map_err(|e| ProvisionError::io(format!("removing {}", self.path.display()), e))?;
        if let Some(j) = &self.journal {
            let _ = j.record(Op::Release, Kind::Cgroup, &self.path, None);
        }
        Ok(())
    }
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        if !self.removed && remove_path(&self.path).is_ok() {
            if let Some(j) = &self.journal {
                let _ = j.record(Op::Release, Kind::Cgroup, &self.path, None);
            }
        }
    }
}

fn read_u64(p: &Path) -> Option<u64> {
    let s = fs::read_to_string(p).ok()?;
    match s.trim() {
        "max" => Some(u64::MAX),
        v => v.parse().ok(),
    }
}

/// The processes in the cgroup at `path`.
pub fn procs(path: &Path) -> Vec<i32> {
    fs::read_to_string(path.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// SIGKILLs every process in the fsarena cgroup at `path` until none is left (bounded),
/// then removes it. Refuses a path that is not an fsarena cgroup under /sys/fs/cgroup.
/// A cgroup already gone is not an error.
pub fn remove_path(path: &Path) -> io::Result<()> {
    let ours = path.starts_with("/sys/fs/cgroup")
        && path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(PREFIX));
    if !ours {
        return Err(io::Error::other(format!(
            "{} is not a cgroup fsarena made",
            path.display()
        )));
    }
    if !path.exists() {
        return Ok(());
    }
    let t0 = Instant::now();
    loop {
        let left = procs(path);
        if left.is_empty() {
            break;
        }
        if t0.elapsed() > Duration::from_secs(10) {
            return Err(io::Error::other(format!(
                "processes {left:?} in {} did not die",
                path.display()
            )));
        }
        for pid in left {
            if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
        // A v1 cgroup with the OOM killer off may hold a stalled task: lift the limit so
        // it can run into its SIGKILL.
        let _ = fs::write(path.join("memory.limit_in_bytes"), "-1");
        let _ = fs::write(path.join("memory.high"), "max");
        std::thread::sleep(Duration::from_millis(20));
    }
    // rmdir can race the last task's exit for a moment.
    let mut tries = 0;
    loop {
        match fs::remove_dir(path) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) if tries < 100 => {
                let _ = e;
                tries += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO_V1: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
    const OWN_V1: &str = "4:memory:/process_api/abc\n1:cpu:/\n0::/\n";

    #[test]
    fn v1_memory_hierarchy_is_preferred_and_nested_under_our_own_cgroup() {
        let p = locate(MOUNTINFO_V1, OWN_V1, &|_| true, &|_| String::new()).unwrap();
        assert_eq!(p.version, Version::V1);
        assert_eq!(p.dir, Path::new("/sys/fs/cgroup/memory/process_api/abc"));
    }

    #[test]
    fn v2_needs_the_memory_controller_for_children() {
        let mi = "30 1 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        let own = "0::/user.slice/x\n";
        let with = |ctrl: &'static str| {
            move |p: &Path| {
                if p.ends_with("cgroup.subtree_control") {
                    ctrl.to_string()
                } else {
                    "cpu memory io".to_string()
                }
            }
        };
        let p = locate(mi, own, &|_| true, &with("memory pids")).unwrap();
        assert_eq!(
            (p.dir.as_path(), p.version),
            (Path::new("/sys/fs/cgroup/user.slice/x"), Version::V2)
        );
        assert!(locate(mi, own, &|_| true, &with("pids")).is_none());
        // This machine's layout: v2 without controllers and no v1 memory hierarchy.
        let bare = "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n";
        assert!(locate(bare, "0::/\n", &|_| true, &|_| String::new()).is_none());
    }

    #[test]
    fn remove_path_refuses_what_is_not_ours() {
        assert!(remove_path(Path::new("/sys/fs/cgroup/memory/system")).is_err());
        assert!(remove_path(Path::new("/tmp/fsarena-x")).is_err());
        assert!(remove_path(Path::new("/sys/fs/cgroup/memory/fsarena-gone-1-1")).is_ok());
    }

    /// A real cgroup: made, limited, a process moved in, then killed and removed, with the
    /// journal saying made then released.
    #[test]
    fn a_real_cgroup_is_made_limited_and_removed_with_its_process() {
        let Ok(parent) = parent() else {
            eprintln!("no memory cgroup on this host; skipped");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let j = Arc::new(Journal::open(&dir.path().join("j")).unwrap());
        let cg = MemoryCgroup::create(&parent, "test", 64 << 20, Some(j.clone())).unwrap();
        assert_eq!(cg.limit(), Some(64 << 20));
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        cg.enter(child.id()).unwrap();
        assert_eq!(procs(&cg.path), vec![child.id() as i32]);
        let path = cg.path.clone();
        cg.remove().unwrap();
        assert!(child.wait().unwrap().code().is_none(), "killed by a signal");
        assert!(!path.exists());
        let entries = super::super::journal::read(&dir.path().join("j")).unwrap();
        assert!(super::super::journal::live(&entries).is_empty());
        assert_eq!(entries.len(), 2);
    }
}
