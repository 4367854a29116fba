//! A file's physical layout through `ioctl(FS_IOC_FIEMAP)`: the extents the file system
//! reports for it, and how many *fragments* they form (runs of extents that are contiguous
//! on the device count once). Aging reports both, before and after, as its measure of how
//! scattered files became; a file system without FIEMAP (tmpfs) answers `EOPNOTSUPP`.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// `_IOWR('f', 11, struct fiemap)`: the request number of FIEMAP (32-byte header).
const FS_IOC_FIEMAP: u64 = 0xC020_660B;
/// Write the file's dirty pages first, so delayed allocation has placed them.
const FIEMAP_FLAG_SYNC: u32 = 0x1;
/// The extent is the file's last.
const FIEMAP_EXTENT_LAST: u32 = 0x1;
/// The extent is shared with another file (a reflink or a snapshot).
const FIEMAP_EXTENT_SHARED: u32 = 0x2000;
/// The file system merged several of its records into this one extent.
const FIEMAP_EXTENT_MERGED: u32 = 0x1000;
/// Extents asked for per call.
const BATCH: usize = 256;

/// `struct fiemap_extent` (linux/fiemap.h), 56 bytes.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct RawExtent {
    logical: u64,
    physical: u64,
    length: u64,
    reserved64: [u64; 2],
    flags: u32,
    reserved: [u32; 3],
}

/// `struct fiemap` with room for [`BATCH`] extents after its header.
#[repr(C)]
struct Request {
    start: u64,
    length: u64,
    flags: u32,
    mapped_extents: u32,
    extent_count: u32,
    reserved: u32,
    extents: [RawExtent; BATCH],
}

/// One extent as the file system reports it (bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    pub logical: u64,
    pub physical: u64,
    pub length: u64,
    pub flags: u32,
}

/// Every extent of `f`, in logical order, after syncing its dirty pages.
pub fn extents(f: &File) -> io::Result<Vec<Extent>> {
    map(f, FIEMAP_FLAG_SYNC)
}

/// Whether `a` and `b` hold the same bytes by where they are: both map every extent to the
/// same place on the device, with the same length at the same offset, and no extent is one
/// whose bytes are not plainly there (inline, encoded, unwritten, delayed, unknown: any
/// flag but last, shared and merged). A reflinked copy is such a file; a copy made by
/// writing is not, and says `false` (so does a file system without FIEMAP, `EOPNOTSUPP`
/// aside: that is an error). Dirty pages are not written first: a file with some shows a
/// delayed or unknown extent and says `false`.
pub fn same_blocks(a: &File, b: &File) -> io::Result<bool> {
    const PLAIN: u32 = FIEMAP_EXTENT_LAST | FIEMAP_EXTENT_SHARED | FIEMAP_EXTENT_MERGED;
    let (x, y) = (map(a, 0)?, map(b, 0)?);
    let plain = |e: &Extent| e.flags & !PLAIN == 0;
    let same = |p: &Extent, q: &Extent| {
        (p.logical, p.physical, p.length) == (q.logical, q.physical, q.length)
    };
    Ok(x.len() == y.len()
        && x.iter().all(plain)
        && y.iter().all(plain)
        && x.iter().zip(&y).all(|(p, q)| same(p, q)))
}

fn map(f: &File, flags: u32) -> io::Result<Vec<Extent>> {
    let mut out = Vec::new();
    let mut start = 0u64;
    loop {
        let mut req = Box::new(Request {
            start,
            length: u64::MAX - start,
            flags,
            mapped_extents: 0,
            extent_count: BATCH as u32,
            reserved: 0,
            extents: [RawExtent::default(); BATCH],
        });
        // SAFETY: `req` is a valid, writable `struct fiemap` with room for `extent_count`
        // extents, which is all the kernel writes.
        let r =
            unsafe { libc::ioctl(f.as_raw_fd(), FS_IOC_FIEMAP as _, &mut *req as *mut Request) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        let n = (req.mapped_extents as usize).min(BATCH);
        if n == 0 {
            return Ok(out);
        }
        let mut last = false;
        for e in &req.extents[..n] {
            out.push(Extent {
                logical: e.logical,
                physical: e.physical,
                length: e.length,
                flags: e.flags,
            });
            last |= e.flags & FIEMAP_EXTENT_LAST != 0;
        }
        let end = req.extents[n - 1].logical + req.extents[n - 1].length;
        if last || n < BATCH || end <= start {
            return Ok(out);
        }
        start = end;
    }
}

/// Fragments: extents that neither continue the previous one on the device nor in the
/// file count as a new piece (ext4 splits a long contiguous run into several entries of
/// its extent tree, which is no fragmentation).
pub fn fragments(ext: &[Extent]) -> usize {
    let mut n = 0;
    let mut prev: Option<&Extent> = None;
    for e in ext {
        let continues = prev.is_some_and(|p| {
            p.physical + p.length == e.physical && p.logical + p.length == e.logical
        });
        if !continues {
            n += 1;
        }
        prev = Some(e);
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Seek, SeekFrom, Write};

    fn ext(logical: u64, physical: u64, length: u64) -> Extent {
        Extent {
            logical,
            physical,
            length,
            flags: 0,
        }
    }

    #[test]
    fn contiguous_extents_form_one_fragment() {
        let e = [
            ext(0, 4096, 4096),
            ext(4096, 8192, 4096),
            ext(8192, 65536, 4096),
        ];
        assert_eq!(fragments(&e), 2);
        assert_eq!(fragments(&[]), 0);
        // A hole between two physically adjacent extents is two pieces of the file.
        assert_eq!(fragments(&[ext(0, 0, 4096), ext(8192, 4096, 4096)]), 2);
    }

    /// A file laid out to a known number of extents: `n` separate 4 KiB islands of data,
    /// a hole between each, so no file system can merge them. Skips only where the temp
    /// directory's file system has no FIEMAP (tmpfs), saying so.
    #[test]
    fn fiemap_reports_a_known_number_of_extents() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("islands");
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&p)
            .unwrap();
        let n = 300u64; // more than one batch
        for i in 0..n {
            f.seek(SeekFrom::Start(i * (1 << 20))).unwrap();
            f.write_all(&[0xa5; 4096]).unwrap();
        }
        let got = match extents(&f) {
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {
                eprintln!("skipped: no FIEMAP on the temp directory's file system");
                return;
            }
            r => r.unwrap(),
        };
        assert_eq!(got.len() as u64, n, "{:?}", &got[..got.len().min(4)]);
        assert_eq!(fragments(&got) as u64, n);
        for (i, e) in got.iter().enumerate() {
            assert_eq!(e.logical, i as u64 * (1 << 20));
            assert_eq!(e.length, 4096);
        }
    }

    /// A file is on its own blocks; a copy written byte for byte is not on them (only a
    /// reflink would be): equal bytes are not enough.
    #[test]
    fn only_the_same_blocks_are_the_same_blocks_and_equal_bytes_are_not_enough() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        for p in [&a, &b] {
            let mut f = File::create(p).unwrap();
            f.write_all(&vec![0x5a; 64 << 10]).unwrap();
            f.sync_all().unwrap();
        }
        let open = |p: &std::path::Path| File::open(p).unwrap();
        match same_blocks(&open(&a), &open(&a)) {
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {
                eprintln!("skipped: no FIEMAP on the temp directory's file system");
            }
            r => {
                assert!(r.unwrap());
                assert!(!same_blocks(&open(&a), &open(&b)).unwrap());
            }
        }
    }
}
