//! Checks the workloads run on their own results, shared so that every workload holds its
//! work to the same standard: a tree equals a manifest (every path, size and hash, nothing
//! extra), a set of files is the manifest's, copied files kept their source's times.
//!
//! A workload that is fast by being wrong must fail here, never be reported.

use std::collections::BTreeMap;
use std::os::fd::AsFd;
use std::path::Path;

use rayon::prelude::*;

use super::error::WorkloadError;
use crate::dataset::{self, Manifest};
use crate::fsops::{self, Kind, Need};

/// Modification times may differ by this much after a copy: FAT-family file systems keep
/// 2-second timestamps; everything else keeps them to 100 ns or better.
pub const MTIME_TOLERANCE_NS: i128 = 2_000_000_000;

/// Checks that `root` holds exactly the manifest: every directory, every file with its
/// size and xxh3 hash, nothing missing and nothing extra.
pub fn tree(root: &Path, manifest: &Manifest, threads: usize) -> Result<(), WorkloadError> {
    tree_of(root, None, manifest, threads, true)
}

/// [`tree`] without reading any file: every directory, every file with its size, nothing
/// missing and nothing extra. For checks that learn the bytes another way (by identity, by
/// block map) or hash only some files ([`content_problem`]).
pub fn structure(root: &Path, manifest: &Manifest, threads: usize) -> Result<(), WorkloadError> {
    tree_of(root, None, manifest, threads, false)
}

/// What is wrong with the bytes `read` found in `f`'s file (its hash and length against
/// the manifest's), if anything.
pub fn content_problem(
    f: &dataset::FileEntry,
    read: std::io::Result<fsops::Hashed>,
) -> Option<String> {
    match read {
        Ok(h) if h.hash == f.hash && h.len == f.size => None,
        Ok(h) => Some(format!(
            "{}: content differs (xxh3 {:016x} instead of {:016x})",
            f.path, h.hash, f.hash
        )),
        Err(e) => Some(format!("{}: {e}", f.path)),
    }
}

/// [`tree`] for the data set `spec` describes: in a tree several MPI ranks share
/// (`spec.shared`), only this rank's files are held to the manifest (the directories are
/// everyone's; the other ranks' files, tagged with their rank, check themselves).
pub fn own_tree(
    root: &Path,
    spec: &dataset::DatasetSpec,
    manifest: &Manifest,
    threads: usize,
) -> Result<(), WorkloadError> {
    tree_of(root, spec.shared, manifest, threads, true)
}

fn tree_of(
    root: &Path,
    shared: Option<dataset::spec::SharedTree>,
    manifest: &Manifest,
    threads: usize,
    hash: bool,
) -> Result<(), WorkloadError> {
    let mut snap = dataset::snapshot(root, threads, hash)?;
    if let Some(s) = shared {
        snap.manifest.files.retain(|f| s.owns(&f.path));
    }
    let diff = manifest.diff(&snap.manifest, hash);
    let mut problems = diff;
    problems.extend(snap.skipped.iter().map(|s| format!("unexpected entry {s}")));
    if problems.is_empty() {
        Ok(())
    } else {
        Err(WorkloadError::Verify(format!(
            "tree under {} differs from the data set: {}",
            root.display(),
            Manifest::diff_summary(&problems)
        )))
    }
}

/// What [`copy_within`] looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WithinChecked {
    /// Files found on their source's blocks (FIEMAP), not read.
    pub shared: usize,
    /// Files hashed: those that were not.
    pub hashed: usize,
}

/// [`tree`] for a copy `dst` made within one file system from `src`, whose bytes were
/// already read and checked against `manifest` (`prepare::warm` hashes every file): `dst`
/// holds exactly the manifest's paths, sizes and directories, and each file either sits on
/// its source's blocks (`fsops::extents::same_blocks`: a reflink, so it holds the bytes
/// that were checked) or is hashed. A reflinked copy shares none of its source's cached
/// pages, so reading it back reads the whole tree from the device again (3.8 GiB, ~14 s
/// per cell at the studies' scale) to learn what its block map already says.
pub fn copy_within(
    src: &Path,
    dst: &Path,
    manifest: &Manifest,
    threads: usize,
) -> Result<WithinChecked, WorkloadError> {
    structure(dst, manifest, threads)?;
    let one = |buf: &mut Vec<u8>, f: &dataset::FileEntry| -> Result<bool, String> {
        // Read unseen: the check writes no access time to the tree it checks.
        let open = |root: &Path| {
            fsops::open_unseen(&root.join(&f.path)).map_err(|e| format!("{}: {e}", f.path))
        };
        let copy = open(dst)?;
        if fsops::extents::same_blocks(&open(src)?, &copy)
            .map_err(|e| format!("{}: {e}", f.path))?
        {
            return Ok(true);
        }
        match content_problem(f, fsops::hash_fd(copy.as_fd(), buf)) {
            None => Ok(false),
            Some(wrong) => Err(wrong),
        }
    };
    let pool = fsops::pool(threads)?;
    let results: Vec<Result<bool, String>> = pool.install(|| {
        manifest
            .files
            .par_iter()
            .map_init(|| vec![0u8; fsops::HASH_BUF], one)
            .collect()
    });
    let shared = results.iter().filter(|r| matches!(r, Ok(true))).count();
    let wrong: Vec<String> = results.into_iter().filter_map(Result::err).collect();
    if !wrong.is_empty() {
        return Err(WorkloadError::Verify(format!(
            "{} copied files are wrong: {}",
            wrong.len(),
            examples(&wrong)
        )));
    }
    Ok(WithinChecked {
        shared,
        hashed: manifest.files.len() - shared,
    })
}

/// Whether `files` (sorted by path bytes, as [`fsops::list`] returns them) are exactly the
/// manifest's files; a description of the first difference if not.
pub fn file_set_problem(manifest: &Manifest, files: &[&fsops::Entry]) -> Option<String> {
    if files.len() != manifest.files.len() {
        return Some(format!(
            "{} files instead of {}",
            files.len(),
            manifest.files.len()
        ));
    }
    files
        .iter()
        .zip(&manifest.files)
        .find(|(e, m)| e.path.to_str() != Some(m.path.as_str()))
        .map(|(e, m)| format!("found {} where {} was expected", e.path.display(), m.path))
}

/// Checks that every regular file under `dst` carries the modification time of its
/// counterpart under `src` (within [`MTIME_TOLERANCE_NS`]).
pub fn mtimes(src: &Path, dst: &Path, threads: usize) -> Result<(), WorkloadError> {
    let a = fsops::list(src, threads, Need::MTIME)?;
    let b = fsops::list(dst, threads, Need::MTIME)?;
    let ns = |t: (i64, u32)| i128::from(t.0) * 1_000_000_000 + i128::from(t.1);
    let theirs: BTreeMap<&Path, (i64, u32)> = b
        .iter()
        .filter(|e| e.kind == Kind::File)
        .map(|e| (e.path.as_path(), e.mtime))
        .collect();
    let wrong: Vec<String> = a
        .iter()
        .filter(|e| e.kind == Kind::File)
        .filter(|e| {
            theirs
                .get(e.path.as_path())
                .map_or(true, |t| (ns(*t) - ns(e.mtime)).abs() > MTIME_TOLERANCE_NS)
        })
        .map(|e| e.path.display().to_string())
        .collect();
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(WorkloadError::Verify(format!(
            "{} copied files lack their source's modification time: {}",
            wrong.len(),
            examples(&wrong)
        )))
    }
}

/// Lists up to five examples after a count, for verification messages that stay readable
/// when a million files are wrong.
pub fn examples<T: std::fmt::Display>(items: &[T]) -> String {
    let shown: Vec<String> = items.iter().take(5).map(|s| s.to_string()).collect();
    let more = items.len().saturating_sub(5);
    if more > 0 {
        format!("{} (and {more} more)", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    /// Every file's access time under `root`, by path.
    fn atimes(root: &Path, manifest: &Manifest) -> BTreeMap<String, (i64, i64)> {
        let at = |p: &str| {
            let m = std::fs::metadata(root.join(p)).unwrap();
            (m.atime(), m.atime_nsec())
        };
        manifest
            .files
            .iter()
            .map(|f| (f.path.clone(), at(&f.path)))
            .collect()
    }

    /// The files whose access time differs from `before`'s.
    fn touched(root: &Path, manifest: &Manifest, before: &BTreeMap<String, (i64, i64)>) -> usize {
        let now = atimes(root, manifest);
        now.iter()
            .filter(|(p, t)| before.get(*p) != Some(*t))
            .count()
    }

    /// Regression: a workload's check read its tree back as a measured phase reads, so under
    /// `relatime` (a first read after a write updates the access time) it dirtied every inode
    /// it checked: 50,000 of them after `create` at scale 0.2, which the unmount then wrote
    /// back and a clone's restore copied home. The checks now read unseen (`O_NOATIME`): every
    /// access time is as the check found it. The control read shows the host's mount would
    /// have updated them (the test refuses to pass on a `noatime` work directory).
    #[test]
    fn a_check_reads_the_tree_back_without_writing_its_access_times() {
        let dir = tempfile::Builder::new()
            .prefix("fsarena-verify-")
            .tempdir_in("/var/tmp")
            .unwrap();
        let spec = dataset::DatasetSpec {
            scale: 0.0004,
            ..dataset::DatasetSpec::default()
        };
        let m = spec.plan().unwrap();
        dataset::materialize(&spec, &m, dir.path(), 2).unwrap();
        // Access times older than the modification times: what relatime updates on a read.
        let old = rustix::fs::Timestamps {
            last_access: rustix::fs::Timespec {
                tv_sec: 1_546_300_800,
                tv_nsec: 0,
            },
            last_modification: rustix::fs::Timespec {
                tv_sec: 1_600_000_000,
                tv_nsec: 0,
            },
        };
        for f in &m.files {
            let p = dir.path().join(&f.path);
            rustix::fs::utimensat(rustix::fs::CWD, &p, &old, rustix::fs::AtFlags::empty()).unwrap();
        }
        let before = atimes(dir.path(), &m);
        tree(dir.path(), &m, 2).unwrap();
        let n = touched(dir.path(), &m, &before);
        assert_eq!(n, 0, "the tree check wrote the access times of {n} files");
        copy_within(dir.path(), dir.path(), &m, 2).unwrap();
        let n = touched(dir.path(), &m, &before);
        assert_eq!(n, 0, "the copy check wrote the access times of {n} files");
        // The control: a plain read of one file updates its access time on this mount.
        let first = &m.files.iter().find(|f| f.size > 0).unwrap().path;
        std::fs::read(dir.path().join(first)).unwrap();
        assert_ne!(
            atimes(dir.path(), &m)[first],
            before[first],
            "a plain read left the access time alone: this work directory cannot show the defect"
        );
    }
}
