//! Removing a whole tree with several threads at once.

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use rustix::fs::{AtFlags, Mode, OFlags};

use super::dir::{Kind, Need};
use super::error::FsError;
use super::pool::pool;
use super::walk::{walk_with, WalkOptions};

/// Removes `root` and everything under it (symbolic links are removed, never followed),
/// `threads` at a time: every non-directory by the parallel walker, then the directories,
/// deepest level first (a level's directories are independent). `std::fs::remove_dir_all`
/// unlinks one entry at a time, waiting on each: a run's two source trees at the studies'
/// scale (500,000 files) took 45 s that way after the last measurement. The caller makes
/// sure nothing is mounted inside.
pub fn remove_tree(root: &Path, threads: usize) -> Result<(), FsError> {
    let opts = WalkOptions::new(threads, Need::NONE);
    let (_, parts) = walk_with(
        root,
        &opts,
        Vec::new,
        |dirs: &mut Vec<(u32, PathBuf)>, d| {
            for e in d.entries() {
                if e.kind == Kind::Dir {
                    dirs.push((d.depth() + 1, d.path_of(e.name)));
                    continue;
                }
                rustix::fs::unlinkat(d.fd(), e.name, AtFlags::empty()).map_err(|err| {
                    FsError::new("unlink", &root.join(d.path_of(e.name)), err.into())
                })?;
            }
            Ok::<(), FsError>(())
        },
    )?;
    let mut dirs: Vec<(u32, PathBuf)> = parts.into_iter().flatten().collect();
    dirs.sort_unstable_by_key(|d| std::cmp::Reverse(d.0));
    let root_fd = rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| FsError::new("open directory", root, e.into()))?;
    let pool = pool(threads)?;
    for level in dirs.chunk_by(|a, b| a.0 == b.0) {
        pool.install(|| {
            level.par_iter().try_for_each(|(_, rel)| {
                rustix::fs::unlinkat(&root_fd, rel, AtFlags::REMOVEDIR)
                    .map_err(|e| FsError::new("rmdir", &root.join(rel), e.into()))
            })
        })?;
    }
    drop(root_fd);
    std::fs::remove_dir(root).map_err(|e| FsError::new("rmdir", root, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_a_tree_with_files_links_and_empty_directories() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("tree");
        for d in ["a/b/c", "a/e", "f", "empty/deeper"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        for (i, f) in ["a/x", "a/b/y", "a/b/c/z", "f/w", "top"].iter().enumerate() {
            std::fs::write(root.join(f), vec![i as u8; 5000 * i]).unwrap();
        }
        // A link out of the tree is removed, and what it points to is not.
        let outside = t.path().join("kept");
        std::fs::write(&outside, b"stays").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("a/e/link")).unwrap();
        std::os::unix::fs::symlink(t.path(), root.join("dirlink")).unwrap();
        remove_tree(&root, 4).unwrap();
        assert!(!root.exists());
        assert_eq!(std::fs::read(&outside).unwrap(), b"stays");
    }

    #[test]
    fn a_missing_tree_is_an_error_naming_it() {
        let t = tempfile::tempdir().unwrap();
        let e = remove_tree(&t.path().join("nothing"), 2).unwrap_err();
        assert!(e.to_string().contains("nothing"), "{e}");
    }
}
