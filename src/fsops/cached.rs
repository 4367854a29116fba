//! Whether a file's pages are all in the page cache, from `cachestat(2)` (Linux 6.5): one
//! system call per file instead of reading it, so that making sure a tree is warm costs
//! little when it already is.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// `cachestat`'s system call number (the same on every architecture, new-style table).
const SYS_CACHESTAT: libc::c_long = 451;

/// `struct cachestat_range` (linux/mman.h).
#[repr(C)]
struct Range {
    off: u64,
    len: u64,
}

/// `struct cachestat` (linux/mman.h): counts in pages.
#[repr(C)]
#[derive(Default)]
struct Stat {
    nr_cache: u64,
    nr_dirty: u64,
    nr_writeback: u64,
    nr_evicted: u64,
    nr_recently_evicted: u64,
}

/// Whether every page of the first `len` bytes of `fd` is in the page cache. `ENOSYS` on a
/// kernel older than 6.5, `EOPNOTSUPP`-like errors on file systems that refuse it (hugetlbfs):
/// the caller then reads the file, as it would without this.
pub fn wholly_cached(fd: BorrowedFd<'_>, len: u64) -> io::Result<bool> {
    if len == 0 {
        return Ok(true);
    }
    let range = Range { off: 0, len };
    let mut stat = Stat::default();
    // SAFETY: `range` and `stat` are valid for the kernel to read and write for the call;
    // flags must be 0.
    let r = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            fd.as_raw_fd(),
            &range as *const Range,
            &mut stat as *mut Stat,
            0u32,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    let page = rustix::param::page_size() as u64;
    Ok(stat.nr_cache >= len.div_ceil(page))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsFd;

    /// A file just written is cached; after `POSIX_FADV_DONTNEED` (written back first) it
    /// is not. Skips, saying so, on a kernel without `cachestat`.
    #[test]
    fn a_file_just_written_is_cached_and_one_dropped_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let mut f = std::fs::File::create(&p).unwrap();
        f.write_all(&vec![7u8; 256 << 10]).unwrap();
        f.sync_all().unwrap();
        let len = 256 << 10;
        match wholly_cached(f.as_fd(), len) {
            Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {
                eprintln!("skipped: no cachestat on this kernel");
            }
            r => {
                assert!(r.unwrap());
                rustix::fs::fadvise(f.as_fd(), 0, None, rustix::fs::Advice::DontNeed).unwrap();
                assert!(!wholly_cached(f.as_fd(), len).unwrap());
                assert!(wholly_cached(f.as_fd(), 0).unwrap());
            }
        }
    }
}
