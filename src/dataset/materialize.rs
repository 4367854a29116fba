//! Writing a planned tree to disk with many threads: directories level by level, files in
//! batches of one directory through `openat`, bytes from [`super::content`] (or copied from
//! a user's `source_dir`).

use std::collections::BTreeMap;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;
use std::time::Instant;

use rayon::prelude::*;
use rustix::fs::{Mode, OFlags};

use super::content::{fill_content, CHUNK};
use super::error::DatasetError;
use super::manifest::{FileEntry, Manifest};
use super::spec::DatasetSpec;

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
    let root_fd = rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| io_err(root, e.into()))?;
    let pool = crate::fsops::pool(threads).map_err(|e| io_err(root, e.source))?;
    let shared = spec.shared.is_some();
    make_dirs(&pool, root_fd.as_fd(), root, &manifest.dirs, shared)?;
    let batches = batches(manifest);
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

/// An I/O error at `path`, as the data set reports it.
fn io_err(path: &Path, e: std::io::Error) -> DatasetError {
    DatasetError::Io {
        path: path.to_path_buf(),
        source: e,
    }
}

/// Makes the directories `dirs` under `root` one depth level at a time, parents first
/// and each level in parallel on `pool`: a file's batch may then open its directory
/// without waiting on another task.
fn make_dirs(
    pool: &rayon::ThreadPool,
    root_fd: BorrowedFd,
    root: &Path,
    dirs: &[String],
    shared: bool,
) -> Result<(), DatasetError> {
    let mut levels: BTreeMap<usize, Vec<&str>> = BTreeMap::new();
    for d in dirs {
        levels.entry(d.matches('/').count()).or_default().push(d);
    }
    pool.install(|| {
        levels.values().try_for_each(|level| {
            level.par_iter().try_for_each(|d| {
                match rustix::fs::mkdirat(root_fd, *d, Mode::from_raw_mode(0o755)) {
                    // In a tree all ranks share, another rank may have made it first.
                    Err(rustix::io::Errno::EXIST) if shared => Ok(()),
                    other => other.map_err(|e| io_err(&root.join(d), e.into())),
                }
            })
        })
    })
}

/// The manifest's files in batches of one directory each, at most [`BATCH_FILES`] files
/// or [`BATCH_BYTES`] bytes (one larger file alone), so a directory of thousands of small
/// files spreads over all workers and each batch opens its directory once.
fn batches(manifest: &Manifest) -> Vec<(&str, Vec<&FileEntry>)> {
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
    batches
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
            let snap = crate::dataset::snapshot(dir.path(), 2, true).unwrap();
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
            matches!(err, DatasetError::Io { ref source, .. } if source.raw_os_error() == Some(rustix::io::Errno::EXIST.raw_os_error())),
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
        let snap = crate::dataset::snapshot(dst.path(), 2, true).unwrap();
        assert!(m.diff(&snap.manifest, true).is_empty());
    }
}
