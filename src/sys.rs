//! Small wrappers over kernel interfaces used by several stages (cache dropping, syncfs,
//! device numbers). Kept here so workloads and the runner share one implementation.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

/// `sync`, then drop clean page cache, dentries and inodes. Dirty pages are not dropped by
/// the kernel, hence the sync first.
pub fn drop_caches() -> io::Result<()> {
    rustix::fs::sync();
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open("/proc/sys/vm/drop_caches")?;
    f.write_all(b"3\n")
}

/// Whether this process may drop caches: opening the control file for writing is the
/// kernel's own permission check and drops nothing.
pub fn can_drop_caches() -> io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/proc/sys/vm/drop_caches")
        .map(drop)
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
