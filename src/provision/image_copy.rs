//! Copies of a populated image: a reflink where the work directory's file system shares
//! extents (btrfs, xfs), else a copy of the data extents only, so a 1 GiB image holding
//! 200 MiB of data costs 200 MiB, not 1 GiB, and the copy stays sparse.

use std::fs::{File, OpenOptions};
use std::path::Path;
use std::time::Instant;

use rustix::fs::SeekFrom;
use rustix::io::Errno;

use super::ProvisionError;

/// How a copy of an image was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyKind {
    /// `FICLONE`: the copy shares the master's extents until written.
    Reflink,
    /// The data extents copied with `copy_file_range`, holes left as holes.
    Copy,
}

impl CopyKind {
    /// The word recorded in a measurement's provenance.
    pub fn as_str(self) -> &'static str {
        match self {
            CopyKind::Reflink => "reflink",
            CopyKind::Copy => "copy",
        }
    }
}

/// Copies `src` to the new file `dst` (which must not exist) and makes the copy durable, so
/// its writeback never lands inside a measured phase. Returns how, and the seconds it took.
/// On error `dst` may exist: the caller journaled it and removes it.
pub fn copy_image(src: &Path, dst: &Path) -> Result<(CopyKind, f64), ProvisionError> {
    let t0 = Instant::now();
    let io = |what: &str, p: &Path, e: std::io::Error| {
        ProvisionError::io(format!("cannot {what} {}", p.display()), e)
    };
    let from = File::open(src).map_err(|e| io("open", src, e))?;
    let to = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(dst)
        .map_err(|e| io("create", dst, e))?;
    let kind = match rustix::fs::ioctl_ficlone(&to, &from) {
        Ok(()) => CopyKind::Reflink,
        Err(e) if refused(e) => {
            sparse_copy(&from, &to).map_err(|e| io("copy the image to", dst, e))?;
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

/// Copies every data extent of `from` to the same offset of `to` and sizes `to` like
/// `from`; holes are skipped (`SEEK_DATA`/`SEEK_HOLE`), so they stay holes.
fn sparse_copy(from: &File, to: &File) -> std::io::Result<()> {
    let size = from.metadata()?.len();
    to.set_len(size)?;
    let mut off = 0u64;
    while off < size {
        let start = match rustix::fs::seek(from, SeekFrom::Data(off)) {
            Ok(s) => s,
            // No data after `off`: the rest is a hole.
            Err(Errno::NXIO) => break,
            Err(e) => return Err(e.into()),
        };
        let end = rustix::fs::seek(from, SeekFrom::Hole(start))?.min(size);
        let mut pos = start;
        while pos < end {
            let (mut i, mut o) = (pos, pos);
            let len = (end - pos).min(1 << 30) as usize;
            match rustix::fs::copy_file_range(from, Some(&mut i), to, Some(&mut o), len) {
                Ok(0) => {
                    return Err(std::io::Error::other(format!(
                        "copy_file_range copied nothing at offset {pos} of {size}"
                    )))
                }
                Ok(n) => pos += n as u64,
                Err(Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        off = end;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, Write};
    use std::os::unix::fs::MetadataExt;

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
}
