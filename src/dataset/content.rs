//! File contents: a pure function of (seed, content id, compressibility, offset).
//!
//! Every byte comes from a ChaCha8 stream keyed by the seed and the content id. ChaCha is
//! specified down to the byte, so the same key gives the same bytes on every machine and
//! every architecture, and any offset can be produced without generating what precedes it
//! (the stream is seekable), which is what lets many threads write one large file in chunks.
//!
//! Compressibility `c` is applied per 4 KiB block: the first `(1 - c) × 4096` bytes of each
//! block come from the stream, the rest repeat a 16-byte pattern that is itself derived from
//! the key. A compressor therefore removes about a fraction `c` of every block, and two
//! different contents never become equal even at `c = 1` (their patterns differ).
//!
//! [`materialize`] writes a planned tree to disk with many threads.
//!
//! A content id may carry a "tweak": the bytes of another content with one byte flipped.
//! That is how the generator plants files that differ from another file only in their last
//! byte (decoys for duplicate finders that trust a prefix or a size).

use std::collections::BTreeMap;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;
use std::time::Instant;

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use rustix::fs::{Mode, OFlags};

use super::generate::CHUNK;
use super::{DatasetError, DatasetSpec, FileEntry, Manifest};

/// Size of the block over which compressibility is applied.
pub const BLOCK: u64 = 4096;
/// Length of the repeated pattern in the compressible part of a block.
const PATTERN: usize = 16;

/// Key domains, so the layout stream never equals a content stream.
pub(crate) const DOMAIN_CONTENT: u64 = 1;
pub(crate) const DOMAIN_LAYOUT: u64 = 2;
/// Bumped if the byte generator ever changes, so old and new data never look alike.
const GENERATOR_VERSION: u64 = 1;

/// Bit layout of a tweaked content id: bit 63 set, bits 40..=62 the base content id,
/// bits 0..=39 the offset of the flipped byte.
const TWEAK_FLAG: u64 = 1 << 63;
const TWEAK_OFFSET_BITS: u32 = 40;
const TWEAK_BASE_BITS: u32 = 23;

/// What a content id stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContentId {
    /// Bytes of the stream keyed by this id.
    Plain(u64),
    /// Bytes of `base` with the byte at `offset` inverted.
    Tweaked { base: u64, offset: u64 },
}

impl ContentId {
    /// Decodes a content id as stored in a [`super::FileEntry`].
    pub fn decode(id: u64) -> ContentId {
        if id & TWEAK_FLAG == 0 {
            return ContentId::Plain(id);
        }
        ContentId::Tweaked {
            base: (id >> TWEAK_OFFSET_BITS) & ((1 << TWEAK_BASE_BITS) - 1),
            offset: id & ((1 << TWEAK_OFFSET_BITS) - 1),
        }
    }

    /// Encodes a tweak of `base` at `offset`; `None` if either does not fit the bit layout
    /// (base ids up to 2^23, offsets up to 1 TiB), in which case the decoy is not planted.
    pub fn tweak(base: u64, offset: u64) -> Option<u64> {
        if base == 0 || base >= (1 << TWEAK_BASE_BITS) || offset >= (1 << TWEAK_OFFSET_BITS) {
            return None;
        }
        Some(TWEAK_FLAG | (base << TWEAK_OFFSET_BITS) | offset)
    }
}

/// The 32-byte ChaCha key for a (seed, id, domain) triple.
pub(crate) fn key(seed: u64, id: u64, domain: u64) -> [u8; 32] {
    let mut k = [0u8; 32];
    k[0..8].copy_from_slice(&seed.to_le_bytes());
    k[8..16].copy_from_slice(&id.to_le_bytes());
    k[16..24].copy_from_slice(&domain.to_le_bytes());
    k[24..32].copy_from_slice(&GENERATOR_VERSION.to_le_bytes());
    k
}

/// Fills `buf` with the bytes at `offset` of content `content` (deterministic from
/// `spec.seed`, `content` and `spec.compressibility`). Meaningless for a `source_dir` data
/// set, whose bytes come from the user's files.
pub fn fill_content(spec: &DatasetSpec, content: u64, offset: u64, buf: &mut [u8]) {
    let (base, tweak) = match ContentId::decode(content) {
        ContentId::Plain(id) => (id, None),
        ContentId::Tweaked { base, offset } => (base, Some(offset)),
    };
    let mut rng = ChaCha8Rng::from_seed(key(spec.seed, base, DOMAIN_CONTENT));
    let random_per_block = random_bytes_per_block(spec.compressibility);
    if random_per_block == BLOCK {
        fill_stream(&mut rng, offset, buf);
    } else {
        // The pattern lives on stream 1, the random bytes on stream 0.
        let mut pattern = [0u8; PATTERN];
        rng.set_stream(1);
        rng.fill_bytes(&mut pattern);
        rng.set_stream(0);
        let mut pos = 0usize;
        while pos < buf.len() {
            let at = offset + pos as u64;
            let in_block = at % BLOCK;
            let (len, random) = if in_block < random_per_block {
                (random_per_block - in_block, true)
            } else {
                (BLOCK - in_block, false)
            };
            let end = buf.len().min(pos + len as usize);
            if random {
                fill_stream(&mut rng, at, &mut buf[pos..end]);
            } else {
                for (i, b) in buf[pos..end].iter_mut().enumerate() {
                    *b = pattern[((at as usize) + i) % PATTERN];
                }
            }
            pos = end;
        }
    }
    if let Some(t) = tweak {
        if t >= offset && t - offset < buf.len() as u64 {
            buf[(t - offset) as usize] ^= 0xff;
        }
    }
}

/// How many bytes of every 4 KiB block come from the random stream.
fn random_bytes_per_block(compressibility: f64) -> u64 {
    let c = if compressibility.is_finite() {
        compressibility.clamp(0.0, 1.0)
    } else {
        0.0
    };
    ((1.0 - c) * BLOCK as f64).round() as u64
}

/// Fills `buf` with stream bytes `offset..offset + buf.len()`.
fn fill_stream(rng: &mut ChaCha8Rng, offset: u64, buf: &mut [u8]) {
    rng.set_word_pos(u128::from(offset / 4));
    let skip = (offset % 4) as usize;
    if skip == 0 {
        rng.fill_bytes(buf);
        return;
    }
    let mut head = [0u8; 4];
    rng.fill_bytes(&mut head);
    let n = (4 - skip).min(buf.len());
    buf[..n].copy_from_slice(&head[skip..skip + n]);
    if buf.len() > n {
        rng.fill_bytes(&mut buf[n..]);
    }
}

/// xxh3-64 of the first `size` bytes of `content`, generated through `buf` (any length ≥ 1).
pub fn hash_content(spec: &DatasetSpec, content: u64, size: u64, buf: &mut [u8]) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3Default::new();
    let mut off = 0u64;
    while off < size {
        let n = buf.len().min((size - off) as usize);
        fill_content(spec, content, off, &mut buf[..n]);
        h.update(&buf[..n]);
        off += n as u64;
    }
    h.digest()
}

/// What [`materialize_timed`] did.
#[derive(Debug, Clone, Default)]
pub struct Written {
    pub bytes: u64,
    pub files: u64,
    /// Nanoseconds per file (open, write everything, close), if asked for.
    pub file_ns: Vec<u64>,
}

/// Writes every dir and file of `manifest` under `root` (which exists) with `threads`
/// workers; returns bytes written. For a `source_dir` data set it copies from the source.
/// Large writes in ≥ 1 MiB chunks.
pub fn materialize(
    spec: &DatasetSpec,
    manifest: &Manifest,
    root: &Path,
    threads: usize,
) -> Result<u64, DatasetError> {
    materialize_timed(spec, manifest, root, threads, false, &|| false).map(|w| w.bytes)
}

/// Files written per task at most, so a directory of thousands of small files still
/// spreads over all workers.
const BATCH_FILES: usize = 64;
/// Bytes written per task at most (a larger file is a task of its own).
const BATCH_BYTES: u64 = 32 << 20;

/// [`materialize`], optionally timing each file, and stopping early with an error of kind
/// [`std::io::ErrorKind::Interrupted`] once `stop()` returns true (polled per batch, so a
/// cancelled run does not write a whole data set first). Directories are made level by level
/// (parents first, each level in parallel); files are written in batches of one directory,
/// each batch opening its directory once and creating files with `openat` relative to it
/// (`O_EXCL`: the target must be fresh).
pub fn materialize_timed(
    spec: &DatasetSpec,
    manifest: &Manifest,
    root: &Path,
    threads: usize,
    time_files: bool,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<Written, DatasetError> {
    let io_err = |path: &Path, e: std::io::Error| DatasetError::Io {
        path: path.to_path_buf(),
        source: e,
    };
    let root_fd = rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| io_err(root, e.into()))?;
    let pool = crate::fsops::pool(threads).map_err(|e| io_err(root, e.source))?;

    // Directories, one depth level at a time.
    let mut levels: BTreeMap<usize, Vec<&str>> = BTreeMap::new();
    for d in &manifest.dirs {
        levels.entry(d.matches('/').count()).or_default().push(d);
    }
    pool.install(|| {
        levels.values().try_for_each(|level| {
            level.par_iter().try_for_each(|d| {
                rustix::fs::mkdirat(&root_fd, *d, Mode::from_raw_mode(0o755))
                    .map_err(|e| io_err(&root.join(d), e.into()))
            })
        })
    })?;

    // Files, batched per directory.
    let mut by_dir: BTreeMap<&str, Vec<&FileEntry>> = BTreeMap::new();
    for f in &manifest.files {
        let dir = f.path.rsplit_once('/').map_or("", |(d, _)| d);
        by_dir.entry(dir).or_default().push(f);
    }
    let mut batches: Vec<(&str, Vec<&FileEntry>)> = Vec::new();
    for (dir, files) in by_dir {
        let mut cur: Vec<&FileEntry> = Vec::new();
        let mut cur_bytes = 0u64;
        for f in files {
            if !cur.is_empty() && (cur.len() >= BATCH_FILES || cur_bytes + f.size > BATCH_BYTES) {
                batches.push((dir, std::mem::take(&mut cur)));
                cur_bytes = 0;
            }
            cur_bytes += f.size;
            cur.push(f);
        }
        if !cur.is_empty() {
            batches.push((dir, cur));
        }
    }
    let ctx = WriteCtx {
        spec,
        root,
        root_fd: root_fd.as_fd(),
        time_files,
    };
    pool.install(|| {
        batches
            .par_iter()
            // The buffer lives in the fold state: one per rayon job, not one per batch.
            .try_fold(
                || (Written::default(), Vec::new()),
                |(mut acc, mut buf), (dir, files)| {
                    if stop() {
                        return Err(io_err(root, std::io::ErrorKind::Interrupted.into()));
                    }
                    write_batch(&ctx, dir, files, &mut buf, &mut acc)?;
                    Ok((acc, buf))
                },
            )
            .map(|r| r.map(|(acc, _)| acc))
            .try_reduce(Written::default, |mut a, b| {
                a.bytes += b.bytes;
                a.files += b.files;
                a.file_ns.extend(b.file_ns);
                Ok(a)
            })
    })
}

struct WriteCtx<'a> {
    spec: &'a DatasetSpec,
    root: &'a Path,
    root_fd: BorrowedFd<'a>,
    time_files: bool,
}

fn write_batch(
    ctx: &WriteCtx,
    dir: &str,
    files: &[&FileEntry],
    buf: &mut Vec<u8>,
    acc: &mut Written,
) -> Result<(), DatasetError> {
    let io_err = |path: &str, e: std::io::Error| DatasetError::Io {
        path: ctx.root.join(path),
        source: e,
    };
    let owned;
    let dirfd = if dir.is_empty() {
        ctx.root_fd
    } else {
        owned = rustix::fs::openat(
            ctx.root_fd,
            dir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| io_err(dir, e.into()))?;
        owned.as_fd()
    };
    for f in files {
        let want = (f.size as usize).clamp(1, CHUNK);
        if buf.len() < want {
            buf.resize(want, 0);
        }
        let name = f.path.rsplit_once('/').map_or(f.path.as_str(), |(_, n)| n);
        let t0 = ctx.time_files.then(Instant::now);
        write_one(ctx, dirfd, name, f, buf).map_err(|e| io_err(&f.path, e))?;
        if let Some(t0) = t0 {
            acc.file_ns.push(t0.elapsed().as_nanos() as u64);
        }
        acc.bytes += f.size;
        acc.files += 1;
    }
    Ok(())
}

fn write_one(
    ctx: &WriteCtx,
    dirfd: BorrowedFd,
    name: &str,
    f: &FileEntry,
    buf: &mut [u8],
) -> std::io::Result<()> {
    let fd = rustix::fs::openat(
        dirfd,
        name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )?;
    match &ctx.spec.source_dir {
        None => {
            let mut off = 0u64;
            while off < f.size {
                let n = buf.len().min((f.size - off) as usize);
                fill_content(ctx.spec, f.content, off, &mut buf[..n]);
                write_all(fd.as_fd(), &buf[..n])?;
                off += n as u64;
            }
        }
        Some(src) => {
            let from = rustix::fs::open(
                src.join(&f.path),
                OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
                Mode::empty(),
            )?;
            let mut copied = 0u64;
            loop {
                let n = match rustix::io::read(&from, &mut *buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(rustix::io::Errno::INTR) => continue,
                    Err(e) => return Err(e.into()),
                };
                write_all(fd.as_fd(), &buf[..n])?;
                copied += n as u64;
            }
            if copied != f.size {
                return Err(std::io::Error::other(format!(
                    "source file changed since it was planned: {} bytes instead of {}",
                    copied, f.size
                )));
            }
        }
    }
    Ok(())
}

fn write_all(fd: BorrowedFd, mut data: &[u8]) -> std::io::Result<()> {
    while !data.is_empty() {
        match rustix::io::write(fd, data) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => data = &data[n..],
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(c: f64) -> DatasetSpec {
        DatasetSpec {
            compressibility: c,
            ..DatasetSpec::default()
        }
    }

    #[test]
    fn any_offset_matches_the_whole_stream() {
        for c in [0.0, 0.5, 1.0] {
            let s = spec(c);
            let mut whole = vec![0u8; 20_000];
            fill_content(&s, 7, 0, &mut whole);
            for (off, len) in [(0usize, 1usize), (1, 3), (3, 4097), (4095, 2), (8191, 5000)] {
                let mut part = vec![0u8; len];
                fill_content(&s, 7, off as u64, &mut part);
                assert_eq!(part, whole[off..off + len], "c={c} off={off}");
            }
        }
    }

    #[test]
    fn different_ids_and_seeds_differ_even_when_fully_compressible() {
        let mut a = [0u8; 64];
        let mut b = [0u8; 64];
        fill_content(&spec(1.0), 1, 0, &mut a);
        fill_content(&spec(1.0), 2, 0, &mut b);
        assert_ne!(a, b);
        let other_seed = DatasetSpec {
            seed: 43,
            ..DatasetSpec::default()
        };
        fill_content(&DatasetSpec::default(), 1, 0, &mut a);
        fill_content(&other_seed, 1, 0, &mut b);
        assert_ne!(a, b);
    }

    #[test]
    fn compressibility_repeats_a_pattern_in_each_block() {
        let mut buf = vec![0u8; 8192];
        fill_content(&spec(0.5), 3, 0, &mut buf);
        let tail = &buf[2048..4096];
        assert!(tail.chunks(16).all(|c| c == &tail[..16]));
        assert_ne!(&buf[0..16], &buf[16..32]);
    }

    #[test]
    fn tweak_flips_exactly_one_byte() {
        let s = spec(0.0);
        let id = ContentId::tweak(5, 99).unwrap();
        assert_eq!(
            ContentId::decode(id),
            ContentId::Tweaked {
                base: 5,
                offset: 99
            }
        );
        let mut a = vec![0u8; 100];
        let mut b = vec![0u8; 100];
        fill_content(&s, 5, 0, &mut a);
        fill_content(&s, id, 0, &mut b);
        assert_eq!(a[..99], b[..99]);
        assert_ne!(a[99], b[99]);
        assert_eq!(ContentId::tweak(0, 1), None);
        assert_eq!(ContentId::tweak(1 << 23, 1), None);
    }

    fn tempdir() -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix("fsarena-dataset-")
            .tempdir_in("/var/tmp")
            .unwrap()
    }

    #[test]
    fn materialize_then_rehash_equals_the_manifest_for_any_thread_count() {
        let spec = DatasetSpec {
            scale: 0.002,
            compressibility: 0.3,
            ..DatasetSpec::default()
        };
        let m = spec.plan().unwrap();
        let mut digests = Vec::new();
        for threads in [1, 3] {
            let dir = tempdir();
            let bytes = materialize(&spec, &m, dir.path(), threads).unwrap();
            assert_eq!(bytes, m.total_bytes());
            let snap = crate::fsops::snapshot(dir.path(), 2, true).unwrap();
            assert_eq!(m.diff(&snap.manifest, true), Vec::<String>::new());
            digests.push(snap.manifest.digest());
            // Planted groups really have equal bytes, on disk.
            for g in &m.duplicate_groups {
                let first = std::fs::read(dir.path().join(&m.files[g[0]].path)).unwrap();
                for &i in &g[1..] {
                    let other = std::fs::read(dir.path().join(&m.files[i].path)).unwrap();
                    assert_eq!(first, other);
                }
            }
        }
        assert_eq!(digests[0], digests[1]);
        assert_eq!(digests[0], m.digest());
    }

    #[test]
    fn materialize_refuses_a_tree_that_is_not_fresh() {
        let spec = DatasetSpec {
            scale: 0.0004,
            ..DatasetSpec::default()
        };
        let m = spec.plan().unwrap();
        let dir = tempdir();
        materialize(&spec, &m, dir.path(), 2).unwrap();
        let err = materialize(&spec, &m, dir.path(), 2).unwrap_err();
        assert!(
            matches!(err, DatasetError::Io { ref source, .. } if source.raw_os_error() == Some(libc::EEXIST)),
            "{err}"
        );
    }

    #[test]
    fn a_source_dir_is_planned_and_copied() {
        let src = tempdir();
        std::fs::create_dir_all(src.path().join("a/b")).unwrap();
        std::fs::write(src.path().join("a/x.txt"), b"same bytes").unwrap();
        std::fs::write(src.path().join("a/b/y.txt"), b"same bytes").unwrap();
        std::fs::write(src.path().join("z.bin"), vec![7u8; 5 << 20]).unwrap();
        std::fs::write(src.path().join("empty1"), b"").unwrap();
        std::fs::write(src.path().join("empty2"), b"").unwrap();
        std::os::unix::fs::symlink("z.bin", src.path().join("link")).unwrap();
        let spec = DatasetSpec {
            source_dir: Some(src.path().to_path_buf()),
            ..DatasetSpec::default()
        };
        let (m, skipped) = crate::dataset::plan_source(src.path()).unwrap();
        assert_eq!(m, spec.plan().unwrap());
        assert_eq!(skipped, vec!["link (symbolic link)".to_string()]);
        assert_eq!(m.dirs, vec!["a", "a/b"]);
        assert_eq!(m.files.len(), 5);
        assert_eq!(m.duplicate_groups, vec![vec![0, 1]]); // a/b/y.txt, a/x.txt
                                                          // Hashes are the real xxh3 of the bytes, for small files and for big (deferred) ones.
        let z = m.file("z.bin").unwrap();
        assert_eq!(z.hash, xxhash_rust::xxh3::xxh3_64(&vec![7u8; 5 << 20]));
        assert_eq!(
            m.file("a/x.txt").unwrap().hash,
            xxhash_rust::xxh3::xxh3_64(b"same bytes")
        );
        let dst = tempdir();
        assert_eq!(
            materialize(&spec, &m, dst.path(), 2).unwrap(),
            m.total_bytes()
        );
        let snap = crate::fsops::snapshot(dst.path(), 2, true).unwrap();
        assert!(m.diff(&snap.manifest, true).is_empty());
    }
}
