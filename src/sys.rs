//! Small wrappers over kernel interfaces used by several stages (cache dropping, syncfs,
//! device numbers, removals that may find nothing). Kept here so workloads and the runner share one implementation.

pub mod cpus;
pub mod steps;

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

/// The signals fsarena stops its helpers and servers with, back to their default action in
/// a child about to exec (call it from `pre_exec`; async-signal-safe). A shell starts a
/// background job (`fsarena run … &`, a script, nohup) with SIGINT and SIGQUIT ignored, and
/// an ignored disposition survives exec: a PostgreSQL server given up on while it started
/// lost the SIGINT of its fast shutdown, ran until killed 30 s later, and left its shared
/// memory on the host.
pub fn stop_signals_default() -> io::Result<()> {
    for signal in [libc::SIGINT, libc::SIGQUIT, libc::SIGTERM] {
        // SAFETY: signal(2) with SIG_DFL changes only this process's disposition.
        if unsafe { libc::signal(signal, libc::SIG_DFL) } == libc::SIG_ERR {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Makes `cmd` start a helper that dies with this process: `signal` reaches it when the
/// thread that spawns it ends, which, since that thread waits for the helper, happens only
/// when fsarena itself is killed (`kill -9`); an orphaned helper would otherwise go on
/// working on what the cleanup is about to take down. A parent that died before the
/// signal was armed is caught too: the helper then does not start.
pub fn dies_with_parent(cmd: &mut std::process::Command, signal: libc::c_int) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: only async-signal-safe system calls (prctl, getppid, signal) between fork and
    // exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, signal as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            stop_signals_default()
        });
    }
}

/// A command for a helper tool (mkfs, mount, a file system's own tools, `useradd`, `ldd`)
/// in a process group of its own, dying with fsarena ([`dies_with_parent`], SIGKILL): a
/// terminal's Ctrl-C (SIGINT to the foreground group) reaches fsarena alone, which stops
/// after the current measurement and stops its helpers itself, in order; killed by the
/// terminal, a helper's death would read as a failure of the target (issue 39).
pub fn helper_command(program: impl AsRef<std::ffi::OsStr>) -> std::process::Command {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(program);
    cmd.process_group(0);
    dies_with_parent(&mut cmd, libc::SIGKILL);
    cmd
}

/// `sync`, then drop clean page cache, dentries and inodes. Dirty pages are not dropped by
/// the kernel, hence the sync first.
pub fn drop_caches() -> io::Result<()> {
    rustix::fs::sync();
    drop_clean_caches()
}

/// Drops the machine's clean page cache, dentries and inodes, without a `sync` first: for
/// a caller that has written back the one file system it needs cold ([`write_back`]).
/// `sync(2)` waits on every dirty page of the machine, other programs' too, which makes
/// no file system of ours colder.
pub fn drop_clean_caches() -> io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open("/proc/sys/vm/drop_caches")?;
    f.write_all(b"3\n")
}

/// Writes back what one file system holds dirty: its mount (`syncfs` on `root`: its
/// inodes, its journal, its own block device's cache) and, when given, its `device`
/// (`fsync` on it: the block device's cache where a FUSE daemon such as ntfs-3g writes,
/// and the flush that reaches the image under a loop device). What `sync(2)` would do for
/// this file system, without waiting on everyone else's writes.
pub fn write_back(root: &Path, device: Option<&Path>) -> io::Result<()> {
    syncfs(root)?;
    if let Some(dev) = device {
        File::open(dev)?.sync_all()?;
    }
    Ok(())
}

/// Writes back `path`'s dirty pages and evicts its cached ones (`fdatasync`, then
/// `POSIX_FADV_DONTNEED`): the next read of it comes from the device. Only this file's pages,
/// unlike [`drop_caches`], so the rest of the machine's cache (a run's warm source trees)
/// stays where it is.
pub fn evict_file(path: &Path) -> io::Result<()> {
    let f = File::open(path)?;
    rustix::fs::fdatasync(&f)?;
    rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed)?;
    Ok(())
}

/// For `remove_*(..).or_else(ignore_missing)`: a removal that finds nothing to remove has
/// done its job (a teardown may meet what a crash, or an earlier step, already removed).
pub fn ignore_missing(e: io::Error) -> io::Result<()> {
    if e.kind() == io::ErrorKind::NotFound {
        Ok(())
    } else {
        Err(e)
    }
}

/// Whether this process may drop caches: opening the control file for writing is the
/// kernel's own permission check and drops nothing.
pub fn can_drop_caches() -> io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/proc/sys/vm/drop_caches")
        .map(drop)
}

/// `statfs`'s `f_type` magic numbers (linux/magic.h) of the file systems fsarena tells apart.
const EXT4_MAGIC: i64 = 0xEF53;
const XFS_MAGIC: i64 = 0x5846_5342;
const BTRFS_MAGIC: i64 = 0x9123_683E;
const TMPFS_MAGIC: i64 = 0x0102_1994;
const RAMFS_MAGIC: i64 = 0x8584_58f6;

/// Whether the file system holding `p` is one of `magics` (false when `statfs` fails).
fn fs_is_one_of(p: &Path, magics: &[i64]) -> bool {
    rustix::fs::statfs(p).is_ok_and(|s| {
        // `f_type`'s width differs between architectures.
        #[allow(clippy::unnecessary_cast)]
        let t = s.f_type as i64;
        magics.contains(&t)
    })
}

/// The name of the file system holding `p`, from `statfs`'s magic number (`ext4` for the
/// ext2/3/4 family, `fuse` for any FUSE file system), or the number in hexadecimal for one
/// this build does not name; `None` when `statfs` fails. A trace keeps it, so a replay on
/// the same type can compare its time with the recorded program's.
pub fn fs_name(p: &Path) -> Option<String> {
    let s = rustix::fs::statfs(p).ok()?;
    // `f_type`'s width differs between architectures.
    #[allow(clippy::unnecessary_cast)]
    let t = s.f_type as i64;
    let name = match t {
        EXT4_MAGIC => "ext4",
        XFS_MAGIC => "xfs",
        BTRFS_MAGIC => "btrfs",
        TMPFS_MAGIC => "tmpfs",
        RAMFS_MAGIC => "ramfs",
        0x6573_5546 => "fuse",
        0x794c_7630 => "overlay",
        0x2011_BAB0 => "exfat",
        0x5346_544e => "ntfs",
        0xF2F5_2010 => "f2fs",
        _ => return Some(format!("{t:#x}")),
    };
    Some(name.to_string())
}

/// Whether `p` is on a memory file system (tmpfs, ramfs): its page cache is the data
/// itself, which no reclaim can evict.
pub fn on_memory_fs(p: &Path) -> bool {
    fs_is_one_of(p, &[TMPFS_MAGIC, RAMFS_MAGIC])
}

/// Whether the file system holding `p` keeps inode numbers and change times of its own that
/// no user can set: ext2/3/4, xfs, btrfs, tmpfs. FUSE file systems (ntfs-3g, exFAT) may make
/// inode numbers up per lookup and keep no change time, so a file's identity there says
/// nothing about whether it was written.
pub fn keeps_identities(p: &Path) -> bool {
    fs_is_one_of(p, &[EXT4_MAGIC, XFS_MAGIC, BTRFS_MAGIC, TMPFS_MAGIC])
}

/// `syncfs` on the file system holding `path`, so buffered writes reach the device.
pub fn syncfs(path: &Path) -> io::Result<()> {
    let f = File::open(path)?;
    rustix::fs::syncfs(&f).map_err(io::Error::from)
}

/// A block device number as the kernel names it in /proc/diskstats and sysfs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DevId {
    pub major: u32,
    pub minor: u32,
}

impl DevId {
    pub fn from_dev_t(dev: u64) -> Self {
        DevId {
            major: rustix::fs::major(dev),
            minor: rustix::fs::minor(dev),
        }
    }
}

impl std::fmt::Display for DevId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.major, self.minor)
    }
}
