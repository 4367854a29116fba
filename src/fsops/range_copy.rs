//! Bytes copied between two open files at explicit offsets: `copy_file_range` in the kernel
//! ([`by_kernel`]) and `pread`/`pwrite` through a buffer ([`by_buffer`]). Which errnos mean
//! "this method does not work between these files here", what a short copy means and where
//! the source ends are decided here once, for every copy of the crate that moves bytes
//! itself: a whole file's ([`super::copy`]), the replay of a clone a file system refuses,
//! and a populated image's data extents (`provision::image_copy`).
//! The files' own positions are never moved, so a caller may hand over any range.

use std::os::fd::BorrowedFd;

use rustix::io::Errno;
use xxhash_rust::xxh3::Xxh3Default;

/// Errnos that mean "this method does not work between these files here", after which the
/// next method is tried. EXDEV: different file systems; EOPNOTSUPP/ENOTTY/ENOSYS: the file
/// system or kernel lacks it; EINVAL: e.g. FUSE or older kernels refusing the range.
pub fn is_unsupported(e: Errno) -> bool {
    e == Errno::XDEV
        || e == Errno::OPNOTSUPP
        || e == Errno::NOTTY
        || e == Errno::NOSYS
        || e == Errno::INVAL
}

/// The bytes to copy: where they start in the source, where they go in the destination,
/// and how many.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    /// Where the bytes start in the source.
    pub src_off: u64,
    /// Where they go in the destination.
    pub dst_off: u64,
    /// How many: the copy stops earlier where the source ends.
    pub len: u64,
}

impl Range {
    /// `len` bytes from `src_off` of the source to `dst_off` of the destination.
    pub fn new(src_off: u64, dst_off: u64, len: u64) -> Range {
        Range {
            src_off,
            dst_off,
            len,
        }
    }

    /// From `off` of the source to the same offset of the destination, up to the source's
    /// end however long it is by then.
    pub fn to_end(off: u64) -> Range {
        Range::new(off, off, u64::MAX)
    }
}

/// How far `copy_file_range` took a [`Range`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelCopy {
    /// It moved these bytes: the whole range, or fewer where it returned 0 (the source
    /// ended, or a file system that copies nothing), which each caller treats as it must.
    Moved(u64),
    /// It refused before the first byte with an errno that means "not between these files
    /// here" ([`is_unsupported`]): the caller copies through a buffer instead.
    Refused(Errno),
}

/// `copy_file_range` over `r` in chunks of at most 1 GiB, at explicit offsets (the files'
/// own positions stay where they are). A refusal after the first byte is an error: the
/// method worked between these files, so what failed is the copy.
pub fn by_kernel(
    src: BorrowedFd<'_>,
    dst: BorrowedFd<'_>,
    r: Range,
) -> rustix::io::Result<KernelCopy> {
    const CHUNK: u64 = 1 << 30;
    let (mut in_off, mut out_off) = (r.src_off, r.dst_off);
    let end = r.src_off.saturating_add(r.len);
    while in_off < end {
        let want = (end - in_off).min(CHUNK) as usize;
        match rustix::fs::copy_file_range(src, Some(&mut in_off), dst, Some(&mut out_off), want) {
            Ok(0) => break,
            Ok(_) | Err(Errno::INTR) => {}
            Err(e) if in_off == r.src_off && is_unsupported(e) => {
                return Ok(KernelCopy::Refused(e))
            }
            Err(e) => return Err(e),
        }
    }
    Ok(KernelCopy::Moved(in_off - r.src_off))
}

/// Copies `r` by `pread` and `pwrite` through `buf` (make it large, ≥ 1 MiB, and reuse it),
/// stopping where the source ends; `hasher`, when given, sees every byte read, so a
/// verifying copier never reads the source twice. Returns the bytes copied.
pub fn by_buffer(
    src: BorrowedFd<'_>,
    dst: BorrowedFd<'_>,
    r: Range,
    buf: &mut [u8],
    mut hasher: Option<&mut Xxh3Default>,
) -> rustix::io::Result<u64> {
    let mut done = 0u64;
    while done < r.len {
        let n = (r.len - done).min(buf.len() as u64) as usize;
        let got = match rustix::io::pread(src, &mut buf[..n], r.src_off + done) {
            Ok(0) => break,
            Ok(got) => got,
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e),
        };
        if let Some(h) = hasher.as_deref_mut() {
            h.update(&buf[..got]);
        }
        write_all_at(dst, &buf[..got], r.dst_off + done)?;
        done += got as u64;
    }
    Ok(done)
}

/// All of `bytes` at `off`: `pwrite` may write less than it was given, and one that writes
/// nothing has no room left.
fn write_all_at(dst: BorrowedFd<'_>, bytes: &[u8], off: u64) -> rustix::io::Result<()> {
    let mut put = 0;
    while put < bytes.len() {
        match rustix::io::pwrite(dst, &bytes[put..], off + put as u64) {
            Ok(0) => return Err(Errno::NOSPC),
            Ok(n) => put += n,
            Err(Errno::INTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    /// 3 MiB + 5 bytes that differ from one offset to the next.
    fn source(dir: &std::path::Path) -> Vec<u8> {
        let data: Vec<u8> = (0..(3 << 20) + 5u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        std::fs::write(dir.join("src.bin"), &data).unwrap();
        data
    }

    #[test]
    fn a_range_is_copied_between_its_offsets_and_stops_where_the_source_ends() {
        let dir = tempfile::Builder::new()
            .prefix("fsarena-range-")
            .tempdir_in("/var/tmp")
            .unwrap();
        let data = source(dir.path());
        let src = std::fs::File::open(dir.path().join("src.bin")).unwrap();
        let size = data.len() as u64;
        for kernel in [true, false] {
            let out = dir.path().join("out.bin");
            std::fs::write(&out, vec![0xAAu8; 64]).unwrap();
            let dst = std::fs::OpenOptions::new().write(true).open(&out).unwrap();
            let mut buf = vec![0u8; 4096];
            let mut copy = |r: Range| {
                if kernel {
                    match by_kernel(src.as_fd(), dst.as_fd(), r).unwrap() {
                        KernelCopy::Moved(n) => n,
                        KernelCopy::Refused(e) => panic!("refused within one file system: {e}"),
                    }
                } else {
                    by_buffer(src.as_fd(), dst.as_fd(), r, &mut buf, None).unwrap()
                }
            };
            // Several buffers' worth, from one offset to another.
            assert_eq!(copy(Range::new(1000, 10, 10_000)), 10_000);
            // Asked past the source's end: what there is.
            assert_eq!(copy(Range::new(size - 100, 20_000, 1000)), 100);
            assert_eq!(copy(Range::to_end(size)), 0);
            let got = std::fs::read(&out).unwrap();
            assert_eq!(got.len(), 20_100, "by kernel: {kernel}");
            assert!(got[..10] == [0xAA; 10], "bytes before the range kept");
            assert!(got[10..10_010] == data[1000..11_000], "by kernel: {kernel}");
            assert!(
                got[20_000..] == data[data.len() - 100..],
                "by kernel: {kernel}"
            );
        }
    }
}
