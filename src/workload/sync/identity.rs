//! The mirror's files as they were before the sync (inode number, change time, size,
//! modification time), so that the check after it tells the files the sync left alone from
//! the ones it wrote without reading every byte of the mirror.
//!
//! A sync reads none of the mirror's data: it lists the mirror, compares sizes and times,
//! writes the changed files under a temporary name and renames them in place, and deletes
//! the rest. A cell on a copy of the populated image used to read the whole mirror back into
//! the cache before the phase (as the no-image path leaves it) and hash all of it after:
//! 3.8 GiB per cell at the studies' scale, ~9 s from a cold clone, for data the measured
//! phase never touches. Walking the mirror for this record loads what the phase does read,
//! its directories and inodes; after the phase, a file whose identity is unchanged was not
//! written (the change time moves with every write, rename or `utimensat` and cannot be set
//! back), and the files the sync wrote are hashed.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use rayon::prelude::*;
use rustix::fs::{AtFlags, StatxFlags};
use xxhash_rust::xxh3::xxh3_64_with_seed;

use super::super::error::WorkloadError;
use super::super::verify::{content_problem, examples, structure};
use super::changes::ChangeSet;
use crate::dataset::Manifest;
use crate::fsops::{self, hash_unseen_path, Kind, Need, WalkOptions, HASH_BUF};

/// What a file is, as far as a write or a replacement would change it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    pub ino: u64,
    pub ctime: (i64, u32),
    pub size: u64,
    pub mtime: (i64, u32),
}

/// Every regular file under `root` by relative path, read with `threads` threads (a cold
/// tree waits on the device: more lookups in flight finish it sooner).
pub fn identities(root: &Path, threads: usize) -> Result<HashMap<String, Identity>, WorkloadError> {
    let opts = WalkOptions::new(threads, Need::NONE);
    let mask = StatxFlags::INO | StatxFlags::CTIME | StatxFlags::SIZE | StatxFlags::MTIME;
    let (_, parts) = fsops::walk_with(root, &opts, Vec::new, |out: &mut Vec<_>, d| {
        for e in d.entries().filter(|e| e.kind == Kind::File) {
            let rel = d.path_of(e.name);
            let x = rustix::fs::statx(d.fd(), e.name, AtFlags::SYMLINK_NOFOLLOW, mask).map_err(
                |err| WorkloadError::io(format!("statx {}", root.join(&rel).display()), err.into()),
            )?;
            let Some(path) = rel.to_str() else {
                return Err(WorkloadError::Verify(format!(
                    "{}: a name that is not UTF-8",
                    rel.to_string_lossy()
                )));
            };
            out.push((
                path.to_owned(),
                Identity {
                    ino: x.stx_ino,
                    ctime: (x.stx_ctime.tv_sec, x.stx_ctime.tv_nsec),
                    size: x.stx_size,
                    mtime: (x.stx_mtime.tv_sec, x.stx_mtime.tv_nsec),
                },
            ));
        }
        Ok::<(), WorkloadError>(())
    })?;
    Ok(parts.into_iter().flatten().collect())
}

/// One untouched file in this many is hashed all the same: a check, from the bytes, that
/// the mirror the sync started from held the data set.
pub const SAMPLE_ONE_IN: u64 = 64;

/// What [`check`] looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checked {
    /// Files the sync must have left alone, found with the identity they had before.
    pub untouched: usize,
    /// Files hashed: every one the sync wrote, and the untouched sample.
    pub hashed: usize,
}

/// Checks the mirror `dst` after a sync against `after` (the changed source's manifest)
/// without reading what the sync did not write: the tree has exactly `after`'s paths, sizes
/// and directories; every file `changes` made the sync write (modified, added, renamed)
/// holds `after`'s bytes (hashed); every other file still has the identity it had in
/// `before` (not written, not replaced); one untouched file in [`SAMPLE_ONE_IN`], picked by
/// `seed`, is hashed too.
pub fn check(
    dst: &Path,
    after: &Manifest,
    changes: &ChangeSet,
    before: &HashMap<String, Identity>,
    seed: u64,
    threads: usize,
) -> Result<Checked, WorkloadError> {
    structure(dst, after, threads)?;
    let now = identities(dst, threads)?;
    let written: HashSet<&str> = changes
        .modified
        .iter()
        .chain(&changes.added)
        .map(|f| f.path.as_str())
        .chain(changes.renamed.iter().map(|(_, new)| new.as_str()))
        .collect();
    let sampled = |p: &str| xxh3_64_with_seed(p.as_bytes(), seed) % SAMPLE_ONE_IN == 0;
    let pool = crate::fsops::pool(threads)?;
    let (wrong, hashed) = pool.install(|| {
        after
            .files
            .par_iter()
            .map_init(
                || vec![0u8; HASH_BUF],
                |buf, f| {
                    let p = f.path.as_str();
                    let wrote = written.contains(p);
                    if !wrote && before.get(p) != now.get(p) {
                        return (
                            Some(format!(
                                "{p} was written or replaced, and the source did not change it"
                            )),
                            0,
                        );
                    }
                    if !(wrote || sampled(p)) {
                        return (None, 0);
                    }
                    (content_problem(f, hash_unseen_path(&dst.join(p), buf)), 1)
                },
            )
            .fold(
                || (Vec::new(), 0usize),
                |(mut wrong, n), (w, h)| {
                    wrong.extend(w);
                    (wrong, n + h)
                },
            )
            .reduce(
                || (Vec::new(), 0),
                |(mut a, n), (b, m)| {
                    a.extend(b);
                    (a, n + m)
                },
            )
    });
    if !wrong.is_empty() {
        return Err(WorkloadError::Verify(format!(
            "{} files of the mirror are wrong after the sync: {}",
            wrong.len(),
            examples(&wrong)
        )));
    }
    Ok(Checked {
        untouched: after.files.len() - written.len(),
        hashed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_a_replacement_or_new_times_change_the_identity_and_reading_does_not() {
        let t = crate::workload::sync::testenv::var_tmp_dir();
        let root = t.path();
        std::fs::create_dir(root.join("d")).unwrap();
        for n in ["a", "b", "c", "d/e"] {
            std::fs::write(root.join(n), b"0123456789").unwrap();
        }
        let before = identities(root, 2).unwrap();
        assert_eq!(before.len(), 4);
        // The change time has the file system's resolution: let it move.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let _ = std::fs::read(root.join("a")).unwrap();
        // Written in place, same size and bytes count, and its old time put back.
        let mtime = std::fs::metadata(root.join("b"))
            .unwrap()
            .modified()
            .unwrap();
        std::fs::write(root.join("b"), b"9876543210").unwrap();
        let f = std::fs::File::options()
            .write(true)
            .open(root.join("b"))
            .unwrap();
        f.set_modified(mtime).unwrap();
        // Replaced by a rename, as a sync does.
        std::fs::write(root.join("d/.e.tmp"), b"0123456789").unwrap();
        std::fs::rename(root.join("d/.e.tmp"), root.join("d/e")).unwrap();
        let after = identities(root, 2).unwrap();
        assert_eq!(before["a"], after["a"], "reading changes nothing");
        assert_eq!(before["c"], after["c"]);
        assert_ne!(
            before["b"], after["b"],
            "a write shows, times put back or not"
        );
        assert_eq!(before["b"].mtime, after["b"].mtime);
        assert_ne!(before["d/e"], after["d/e"], "a replacement shows");
    }
}
