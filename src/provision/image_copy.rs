//! Copies of a populated image: a reflink where the work directory's file system shares
//! extents (btrfs, xfs), else a copy of the data extents only, so a 1 GiB image holding
//! 200 MiB of data costs 200 MiB, not 1 GiB, and the copy stays sparse.
//!
//! The copy is made with direct I/O, several chunks read and written at once: the master
//! was written through a direct-I/O loop device, so it is not in the page cache, and a
//! buffered copy (`copy_file_range`) read it with small read-ahead and then wrote the whole
//! copy back on `fsync`, one after the other, at a fraction of the disk's speed. The
//! buffered copy remains the fallback where the work directory refuses `O_DIRECT`.

use std::fs::{File, OpenOptions};
use std::os::fd::AsFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use rustix::fs::SeekFrom;
use rustix::io::Errno;

use super::error::ProvisionError;
use crate::fsops::range_copy::{by_kernel, KernelCopy, Range};

/// How a copy of an image was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyKind {
    /// `FICLONE`: the copy shares the master's extents until written.
    Reflink,
    /// The data extents copied (direct I/O, else `copy_file_range`), holes left as holes.
    Copy,
    /// An earlier copy made equal to the master again by copying back only the blocks the
    /// cell that used it wrote or discarded (see `write_trace`).
    Restore,
}

impl CopyKind {
    /// The word recorded in a measurement's provenance.
    pub fn as_str(self) -> &'static str {
        match self {
            CopyKind::Reflink => "reflink",
            CopyKind::Copy => "copy",
            CopyKind::Restore => "restore",
        }
    }
}

/// Copies `src` to the new file `dst` (which must not exist) and makes the copy durable, so
/// its writeback never lands inside a measured phase. Returns how, and the seconds it took.
/// On error `dst` may exist: the caller journaled it and removes it.
pub fn copy_image(src: &Path, dst: &Path) -> Result<(CopyKind, f64), ProvisionError> {
    copy_image_until(src, dst, &AtomicBool::new(false))
}

/// [`copy_image`], given up with an `Interrupted` error as soon as `stop` is raised: a copy
/// made beside other work (`first_copy`) that is no longer wanted, which at a study's scale
/// would otherwise hold up an interrupted run's teardown for minutes.
pub fn copy_image_until(
    src: &Path,
    dst: &Path,
    stop: &AtomicBool,
) -> Result<(CopyKind, f64), ProvisionError> {
    let t0 = Instant::now();
    let io = |what: &str, p: &Path, e: std::io::Error| {
        ProvisionError::io(format!("cannot {what} {}", p.display()), e)
    };
    stopped(stop).map_err(|e| io("copy the image to", dst, e))?;
    let from = File::open(src).map_err(|e| io("open", src, e))?;
    let to = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(dst)
        .map_err(|e| io("create", dst, e))?;
    let kind = match rustix::fs::ioctl_ficlone(&to, &from) {
        Ok(()) => CopyKind::Reflink,
        Err(e) if refused(e) => {
            let extents = data_extents(&from).map_err(|e| io("read the extents of", src, e))?;
            let direct = direct_copy(src, dst, &extents, from_len(&from, src)?, stop)
                .map_err(|e| io("copy the image to", dst, e))?;
            if !direct {
                sparse_copy(&from, &to, &extents, stop)
                    .map_err(|e| io("copy the image to", dst, e))?;
            }
            CopyKind::Copy
        }
        Err(e) => return Err(io("reflink the image to", dst, e.into())),
    };
    to.sync_all().map_err(|e| io("sync", dst, e))?;
    Ok((kind, t0.elapsed().as_secs_f64()))
}

/// Errors by which a kernel or file system says "no reflink here" (not a failure).
fn refused(e: Errno) -> bool {
    [
        Errno::OPNOTSUPP,
        Errno::NOTSUP,
        Errno::XDEV,
        Errno::INVAL,
        Errno::NOTTY,
        Errno::NOSYS,
        Errno::PERM,
    ]
    .contains(&e)
}

/// The size of `from`, with the error naming `path`.
fn from_len(from: &File, path: &Path) -> Result<u64, ProvisionError> {
    from.metadata()
        .map(|m| m.len())
        .map_err(|e| ProvisionError::io(format!("cannot stat {}", path.display()), e))
}

/// The data regions of `from` as `(start, end)` byte ranges (`SEEK_DATA`/`SEEK_HOLE`);
/// everything else is a hole.
pub fn data_extents(from: &File) -> std::io::Result<Vec<(u64, u64)>> {
    let size = from.metadata()?.len();
    let (mut out, mut off) = (Vec::new(), 0u64);
    while off < size {
        let start = match rustix::fs::seek(from, SeekFrom::Data(off)) {
            Ok(s) => s,
            // No data after `off`: the rest is a hole.
            Err(Errno::NXIO) => break,
            Err(e) => return Err(e.into()),
        };
        let end = rustix::fs::seek(from, SeekFrom::Hole(start))?.min(size);
        out.push((start, end));
        off = end;
    }
    Ok(out)
}

/// Copies every data extent of `from` to the same offset of `to` and sizes `to` like
/// `from`, with the kernel's buffered `copy_file_range`; holes stay holes.
fn sparse_copy(
    from: &File,
    to: &File,
    extents: &[(u64, u64)],
    stop: &AtomicBool,
) -> std::io::Result<()> {
    to.set_len(from.metadata()?.len())?;
    for &(start, end) in extents {
        stopped(stop)?;
        copy_range(from, to, start, end)?;
    }
    Ok(())
}

/// Copies bytes `[start, end)` of `from` to the same offsets of `to` (`copy_file_range`,
/// [`by_kernel`]). An image copy has no buffered fallback here: both files live in the work
/// directory, so a refusal or a copy that stops short is an error that names the offset.
fn copy_range(from: &File, to: &File, start: u64, end: u64) -> std::io::Result<()> {
    let r = Range::new(start, start, end - start);
    match by_kernel(from.as_fd(), to.as_fd(), r)? {
        KernelCopy::Moved(n) if n == r.len => Ok(()),
        KernelCopy::Moved(n) => Err(std::io::Error::other(format!(
            "copy_file_range copied nothing at offset {} (copying up to {end})",
            start + n
        ))),
        KernelCopy::Refused(e) => Err(e.into()),
    }
}

/// Makes `dst`, an earlier copy of `src`, equal to `src` again where `written` says it was
/// changed since (byte ranges, e.g. a cell's writes and discards traced on its loop device):
/// each range, widened to whole 4 KiB blocks, gets `src`'s data where `src` has data
/// (`src_extents`, its data regions) and becomes a hole where `src` has one, so the copy
/// stays exactly as sparse as a fresh one. Returns the bytes copied, and makes `dst`
/// durable. Bytes outside `written` are not read: the caller vouches for them.
pub fn restore(
    src: &Path,
    src_extents: &[(u64, u64)],
    dst: &Path,
    written: &[(u64, u64)],
) -> Result<u64, ProvisionError> {
    let io = |what: &str, p: &Path, e: std::io::Error| {
        ProvisionError::io(format!("cannot {what} {}", p.display()), e)
    };
    let from = File::open(src).map_err(|e| io("open", src, e))?;
    let to = OpenOptions::new()
        .write(true)
        .open(dst)
        .map_err(|e| io("open", dst, e))?;
    let size = from_len(&from, src)?;
    let mut copied = 0u64;
    for &(s, e) in written {
        let (s, e) = (
            (s / ALIGN) * ALIGN,
            e.div_ceil(ALIGN).saturating_mul(ALIGN).min(size),
        );
        let mut at = s;
        // The master's data regions that overlap [s, e), in order; between them, holes.
        for &(ds, de) in src_extents.iter().filter(|&&(ds, de)| de > s && ds < e) {
            let (ds, de) = (ds.max(s), de.min(e));
            if ds > at {
                punch(&to, at, ds - at).map_err(|e| io("punch a hole in", dst, e))?;
            }
            copy_range(&from, &to, ds, de).map_err(|e| io("restore", dst, e))?;
            copied += de - ds;
            at = de;
        }
        if e > at {
            punch(&to, at, e - at).map_err(|e| io("punch a hole in", dst, e))?;
        }
    }
    to.sync_data().map_err(|e| io("sync", dst, e))?;
    Ok(copied)
}

/// An `Interrupted` error once `stop` is raised.
fn stopped(stop: &AtomicBool) -> std::io::Result<()> {
    match stop.load(Ordering::Relaxed) {
        true => Err(std::io::ErrorKind::Interrupted.into()),
        false => Ok(()),
    }
}

/// Deallocates `len` bytes at `off`, keeping the size: they read as zeros, as in the master.
fn punch(f: &File, off: u64, len: u64) -> std::io::Result<()> {
    use rustix::fs::FallocateFlags as F;
    rustix::fs::fallocate(f, F::PUNCH_HOLE | F::KEEP_SIZE, off, len).map_err(Into::into)
}

/// Direct I/O's alignment: offsets, lengths and buffer addresses (4 KiB covers every
/// logical block size a work directory's device has).
const ALIGN: u64 = 4096;
/// Bytes per read and write: large enough to run at the disk's sequential speed.
const CHUNK: u64 = 8 << 20;

/// A buffer whose usable part starts at an [`ALIGN`]ed address (carved out of a larger
/// `Vec`, so no unsafe allocation is needed).
struct Aligned {
    backing: Vec<u8>,
    at: usize,
}

impl Aligned {
    fn new() -> Self {
        let backing = vec![0u8; (CHUNK + ALIGN) as usize];
        let at = backing.as_ptr().align_offset(ALIGN as usize);
        Aligned { backing, at }
    }

    fn get(&mut self, len: usize) -> &mut [u8] {
        &mut self.backing[self.at..self.at + len]
    }
}

/// Copies `extents` of `src` into `dst` (already created, empty) with `O_DIRECT` on both,
/// [`WORKERS`] threads each reading a chunk and writing it, so that several reads and
/// writes are in flight at once (one at a time, the host disk read at half its speed).
/// Returns false, having written nothing, where direct I/O is refused (the open fails, or
/// an extent is not aligned): the caller then copies buffered.
fn direct_copy(
    src: &Path,
    dst: &Path,
    extents: &[(u64, u64)],
    size: u64,
    stop: &AtomicBool,
) -> std::io::Result<bool> {
    let direct = rustix::fs::OFlags::DIRECT.bits() as i32;
    let aligned = |(s, _): &(u64, u64)| s % ALIGN == 0;
    if !extents.iter().all(aligned) {
        return Ok(false);
    }
    let open = |o: &mut OpenOptions, p: &Path| o.custom_flags(direct).open(p);
    let (from, to) = match (
        open(OpenOptions::new().read(true), src),
        open(OpenOptions::new().write(true), dst),
    ) {
        (Ok(f), Ok(t)) => (f, t),
        (Err(e), _) | (_, Err(e)) if e.raw_os_error() == Some(libc::EINVAL) => return Ok(false),
        (Err(e), _) | (_, Err(e)) => return Err(e),
    };
    // Chunks of at most CHUNK bytes, each rounded up to ALIGN (only the file's last block
    // can be partial; the copy is cut back to `size` below).
    let chunks: Vec<(u64, usize)> = extents
        .iter()
        .flat_map(|&(start, end)| {
            (start..end)
                .step_by(CHUNK as usize)
                .map(move |at| (at, ((end - at).min(CHUNK).div_ceil(ALIGN) * ALIGN) as usize))
        })
        .collect();
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let copy_chunks = || -> std::io::Result<()> {
        let mut buf = Aligned::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(&(at, len)) = chunks.get(i) else {
                return Ok(());
            };
            if failed.load(Ordering::Relaxed) {
                return Ok(());
            }
            stopped(stop)?;
            let part = buf.get(len);
            let mut got = 0;
            while got < part.len() {
                match from.read_at(&mut part[got..], at + got as u64) {
                    Ok(0) => break, // end of file: the tail beyond `size`
                    Ok(n) => got += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            part[got..].fill(0);
            to.write_all_at(part, at)?;
        }
    };
    let results: Vec<std::io::Result<()>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..WORKERS)
            .map(|_| {
                scope.spawn(|| {
                    let r = copy_chunks();
                    if r.is_err() {
                        failed.store(true, Ordering::Relaxed);
                    }
                    r
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join()
                    .unwrap_or_else(|_| Err(std::io::Error::other("an image copier panicked")))
            })
            .collect()
    });
    results.into_iter().collect::<std::io::Result<Vec<()>>>()?;
    // A last partial block was written whole: cut the copy back to the image's size.
    to.set_len(size)?;
    Ok(true)
}

/// Threads copying at once: four reads and writes in flight reach the host disk's speed.
const WORKERS: usize = 4;

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, Write};
    use std::os::unix::fs::MetadataExt;

    /// A copy no longer wanted stops: an interrupted run's teardown does not wait for a
    /// study-sized copy made beside other work (`first_copy`) to finish.
    #[test]
    fn a_stopped_copy_gives_up_with_interrupted() {
        let dir = tempfile::tempdir().unwrap();
        let (src, dst) = (dir.path().join("m.img"), dir.path().join("c.img"));
        let f = File::create(&src).unwrap();
        f.set_len(64 << 20).unwrap();
        (&f).write_all(&vec![1u8; 1 << 20]).unwrap();
        let err = copy_image_until(&src, &dst, &AtomicBool::new(true)).unwrap_err();
        assert!(err.to_string().contains("nterrupted"), "{err}");
        copy_image_until(&src, &dst, &AtomicBool::new(false)).unwrap();
    }

    #[test]
    fn a_copy_is_byte_identical_and_stays_sparse() {
        let dir = tempfile::tempdir().unwrap();
        let (src, dst) = (dir.path().join("m.img"), dir.path().join("c.img"));
        let mut f = File::create(&src).unwrap();
        f.set_len(64 << 20).unwrap();
        for (at, byte) in [(0u64, 1u8), (10 << 20, 2), ((64 << 20) - 4096, 3)] {
            f.seek(std::io::SeekFrom::Start(at)).unwrap();
            f.write_all(&vec![byte; 4096]).unwrap();
        }
        f.sync_all().unwrap();
        let (kind, secs) = copy_image(&src, &dst).unwrap();
        assert!(secs >= 0.0);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        File::open(&src).unwrap().read_to_end(&mut a).unwrap();
        File::open(&dst).unwrap().read_to_end(&mut b).unwrap();
        assert_eq!(a.len(), b.len());
        assert!(
            a == b,
            "the copy differs from the image ({})",
            kind.as_str()
        );
        // 12 KiB of data: the copy must not have allocated the 64 MiB of holes.
        let allocated = std::fs::metadata(&dst).unwrap().blocks() * 512;
        assert!(allocated < 8 << 20, "copy allocated {allocated} bytes");
        assert!(
            copy_image(&src, &dst).is_err(),
            "an existing copy is overwritten"
        );
    }

    /// The direct path itself (where the temporary directory allows `O_DIRECT`): extents
    /// longer than a chunk, a hole between, and a last block cut short, all byte-exact.
    #[test]
    fn a_direct_copy_is_byte_identical_with_long_extents_and_a_partial_last_block() {
        let dir = tempfile::TempDir::new_in("/var/tmp").unwrap();
        let (src, dst) = (dir.path().join("m.img"), dir.path().join("c.img"));
        let size = (40 << 20) - 100;
        let f = File::create(&src).unwrap();
        f.set_len(size).unwrap();
        let long: Vec<u8> = (0..(20u32 << 20)).map(|i| (i % 251) as u8).collect();
        f.write_all_at(&long, 0).unwrap();
        f.write_all_at(&[7u8; 3000], size - 3000).unwrap();
        f.sync_all().unwrap();
        let extents = data_extents(&f).unwrap();
        File::create(&dst).unwrap();
        if !direct_copy(&src, &dst, &extents, size, &AtomicBool::new(false)).unwrap() {
            eprintln!("O_DIRECT refused in /var/tmp: the buffered path is tested above");
            return;
        }
        let (mut a, mut b) = (Vec::new(), Vec::new());
        File::open(&src).unwrap().read_to_end(&mut a).unwrap();
        File::open(&dst).unwrap().read_to_end(&mut b).unwrap();
        assert_eq!(a.len(), b.len());
        assert!(a == b, "the direct copy differs from the image");
        let allocated = std::fs::metadata(&dst).unwrap().blocks() * 512;
        assert!(
            allocated < 24 << 20,
            "the hole was filled: {allocated} bytes"
        );
    }
}
