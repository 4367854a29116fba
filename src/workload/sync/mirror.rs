//! The mirror algorithm of `sync` (and `fsarena op sync`): bring a target tree in line with
//! a source the way `rsync -a --delete` does locally.
//!
//! The target is listed first (one task per directory, `getdents` + `statx` for size and
//! mtime), then the source is walked; per source directory, entries are compared with the
//! target's by size and modification time (within a window). A changed or new file is
//! copied to a temporary name and renamed over the old one (rsync's default, so a reader
//! never sees half a file); a target entry the source lacks is deleted. Directory times
//! are not synchronised.

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rustix::fs::{AtFlags, Mode};

use crate::fsops::copy::{copy_file_at, CopyStrategy};
use crate::fsops::{self, Dir, Dirent, Kind, LatencyLog, Need, Totals, WalkOptions};
use crate::workload::ctx::Ctx;
use crate::workload::dirfd::{open_dir, open_rel_dir};
use crate::workload::error::{IoContext, WorkloadError};
use crate::workload::tree_copy::COPY_BUF;

/// One target directory as listed before the comparison: names in one arena, entries
/// sorted by name for binary search.
#[derive(Debug, Default)]
struct Listing {
    names: Vec<u8>,
    ents: Vec<ListEnt>,
}

#[derive(Debug, Clone, Copy)]
struct ListEnt {
    start: u32,
    end: u32,
    kind: Kind,
    size: u64,
    mtime: (i64, u32),
}

impl Listing {
    fn name(&self, e: &ListEnt) -> &[u8] {
        &self.names[e.start as usize..e.end as usize]
    }
    fn find(&self, name: &[u8]) -> Option<usize> {
        self.ents.binary_search_by(|e| self.name(e).cmp(name)).ok()
    }
}

/// Lists every directory of the target (one task per directory) with sizes and mtimes.
fn list_target(
    ctx: &Ctx,
    root: &Path,
    threads: usize,
) -> Result<HashMap<PathBuf, Listing>, WorkloadError> {
    let opts = WalkOptions::new(threads, Need::SIZE | Need::MTIME);
    let (_, parts) = fsops::walk_with(
        root,
        &opts,
        Vec::new,
        |out: &mut Vec<(PathBuf, Listing)>, d: &Dir| {
            ctx.check()?;
            let mut l = Listing {
                names: Vec::new(),
                ents: Vec::with_capacity(d.len()),
            };
            for e in d.entries() {
                let start = l.names.len() as u32;
                l.names.extend_from_slice(e.name.to_bytes());
                l.ents.push(ListEnt {
                    start,
                    end: l.names.len() as u32,
                    kind: e.kind,
                    size: e.meta.size,
                    mtime: e.meta.mtime,
                });
            }
            let Listing { names, mut ents } = l;
            ents.sort_unstable_by(|a, b| {
                names[a.start as usize..a.end as usize]
                    .cmp(&names[b.start as usize..b.end as usize])
            });
            out.push((d.rel().to_path_buf(), Listing { names, ents }));
            Ok::<(), WorkloadError>(())
        },
    )?;
    Ok(parts.into_iter().flatten().collect())
}

/// Removes the directory `rel` under `dst_fd` with everything in it; returns files removed.
fn remove_tree(dst: &Path, rel: &Path) -> Result<(u64, u64), WorkloadError> {
    let top = dst.join(rel);
    let opts = WalkOptions::new(1, Need::NONE);
    let (_, parts) = fsops::walk_with(
        &top,
        &opts,
        || (0u64, Vec::<PathBuf>::new()),
        |acc: &mut (u64, Vec<PathBuf>), d: &Dir| {
            for e in d.entries() {
                if e.kind == Kind::Dir {
                    acc.1.push(d.path_of(e.name));
                } else {
                    rustix::fs::unlinkat(d.fd(), e.name, AtFlags::empty())
                        .map_err(std::io::Error::from)
                        .ctx(|| format!("deleting {}", top.join(d.path_of(e.name)).display()))?;
                    if e.kind == Kind::File {
                        acc.0 += 1;
                    }
                }
            }
            Ok::<(), WorkloadError>(())
        },
    )?;
    let (files, mut dirs) = <(u64, Vec<PathBuf>)>::sum_all(parts);
    dirs.sort_unstable_by_key(|d| std::cmp::Reverse(d.components().count()));
    for d in dirs
        .iter()
        .map(|d| top.join(d))
        .chain(std::iter::once(top.clone()))
    {
        std::fs::remove_dir(&d).ctx(|| format!("deleting directory {}", d.display()))?;
    }
    Ok((files, dirs.len() as u64 + 1))
}

/// What the measured sync did.
#[derive(Debug, Default)]
pub struct SyncStats {
    /// Source files compared.
    pub files: u64,
    pub files_copied: u64,
    pub bytes_copied: u64,
    pub files_deleted: u64,
    pub dirs_created: u64,
    pub dirs_deleted: u64,
    pub latency: LatencyLog,
}

impl Totals for SyncStats {
    fn add(&mut self, o: SyncStats) {
        self.files += o.files;
        self.files_copied += o.files_copied;
        self.bytes_copied += o.bytes_copied;
        self.files_deleted += o.files_deleted;
        self.dirs_created += o.dirs_created;
        self.dirs_deleted += o.dirs_deleted;
        self.latency.add(o.latency);
    }
}

struct Worker {
    buf: Vec<u8>,
    seen: Vec<bool>,
    stats: SyncStats,
}

struct SyncCtx<'a> {
    ctx: &'a Ctx<'a>,
    dst: &'a Path,
    dst_root: OwnedFd,
    listings: HashMap<PathBuf, Listing>,
    strategy: CopyStrategy,
    window_ns: i128,
}

/// Brings `dst` in line with `src`: copies what is new or differs in size or mtime,
/// deletes what the source lacks. One task per source directory.
pub fn sync_tree(
    ctx: &Ctx,
    src: &Path,
    dst: &Path,
    threads: usize,
    window_s: f64,
) -> Result<SyncStats, WorkloadError> {
    let sc = SyncCtx {
        ctx,
        dst,
        dst_root: open_dir(dst)?,
        listings: list_target(ctx, dst, threads)?,
        strategy: CopyStrategy::new(false, true),
        window_ns: (window_s * 1e9) as i128,
    };
    let opts = WalkOptions::new(threads, Need::SIZE | Need::MTIME | Need::MODE);
    let (_, workers) = fsops::walk_with(
        src,
        &opts,
        || Worker {
            buf: vec![0u8; COPY_BUF],
            seen: Vec::new(),
            stats: SyncStats::default(),
        },
        |w: &mut Worker, d: &Dir| sync_dir(&sc, w, d),
    )?;
    Ok(SyncStats::sum_all(workers.into_iter().map(|w| w.stats)))
}

fn ns(t: (i64, u32)) -> i128 {
    i128::from(t.0) * 1_000_000_000 + i128::from(t.1)
}

/// Removes whatever the target has under `name` (file, link or whole directory).
fn remove_entry(
    sc: &SyncCtx,
    w: &mut Worker,
    dst_fd: BorrowedFd<'_>,
    rel_dir: &Path,
    name: &CStr,
    kind: Kind,
) -> Result<(), WorkloadError> {
    let rel = rel_dir.join(std::ffi::OsStr::from_bytes(name.to_bytes()));
    if kind == Kind::Dir {
        let (files, dirs) = remove_tree(sc.dst, &rel)?;
        w.stats.files_deleted += files;
        w.stats.dirs_deleted += dirs;
    } else {
        rustix::fs::unlinkat(dst_fd, name, AtFlags::empty())
            .map_err(std::io::Error::from)
            .ctx(|| format!("deleting {}", sc.dst.join(&rel).display()))?;
        if kind == Kind::File {
            w.stats.files_deleted += 1;
        }
    }
    Ok(())
}

/// One source entry of directory `d` and what the target has under its name (`theirs`).
struct Pair<'p> {
    d: &'p Dir<'p>,
    /// The target's counterpart of `d`.
    dst_fd: BorrowedFd<'p>,
    e: Dirent<'p>,
    theirs: Option<ListEnt>,
}

impl Pair<'_> {
    /// The entry's path on the target, for errors.
    fn shown(&self, sc: &SyncCtx) -> String {
        sc.dst
            .join(self.d.path_of(self.e.name))
            .display()
            .to_string()
    }

    /// Removes the target's entry of kind `kind` to make way for the source's.
    fn remove_theirs(&self, sc: &SyncCtx, w: &mut Worker, kind: Kind) -> Result<(), WorkloadError> {
        remove_entry(sc, w, self.dst_fd, self.d.rel(), self.e.name, kind)
    }

    /// Brings a source file across when the target's entry differs in kind, size or
    /// modification time (beyond the window): copied to a temporary name and renamed over
    /// the old one, so a reader never sees half a file. Only the copies are timed.
    fn sync_file(&self, sc: &SyncCtx, w: &mut Worker) -> Result<(), WorkloadError> {
        let (d, dst_fd, e) = (self.d, self.dst_fd, &self.e);
        w.stats.files += 1;
        sc.ctx.check()?;
        let same = self.theirs.is_some_and(|t| {
            t.kind == Kind::File
                && t.size == e.meta.size
                && (ns(t.mtime) - ns(e.meta.mtime)).abs() <= sc.window_ns
        });
        if same {
            return Ok(());
        }
        if let Some(t) = self.theirs.filter(|t| t.kind != Kind::File) {
            self.remove_theirs(sc, w, t.kind)?;
        }
        let t0 = Instant::now();
        let mut tmp = Vec::with_capacity(e.name.to_bytes().len() + 16);
        tmp.push(b'.');
        tmp.extend_from_slice(e.name.to_bytes());
        tmp.extend_from_slice(b".fsarena-sync");
        let tmp =
            CString::new(tmp).map_err(|_| WorkloadError::Verify("NUL in a file name".into()))?;
        let r = copy_file_at(d.fd(), e.name, dst_fd, &tmp, &sc.strategy, &mut w.buf)
            .ctx(|| format!("copying to {}", self.shown(sc)))?;
        rustix::fs::renameat(dst_fd, &tmp, dst_fd, e.name)
            .map_err(std::io::Error::from)
            .ctx(|| format!("renaming into {}", self.shown(sc)))?;
        w.stats.latency.0.push(t0.elapsed().as_nanos() as u64);
        w.stats.files_copied += 1;
        w.stats.bytes_copied += r.bytes;
        Ok(())
    }

    /// Makes the target's entry a link to the source link's target, unless it is one.
    fn sync_link(&self, sc: &SyncCtx, w: &mut Worker) -> Result<(), WorkloadError> {
        let (name, dst_fd) = (self.e.name, self.dst_fd);
        let target = rustix::fs::readlinkat(self.d.fd(), name, Vec::new())
            .map_err(std::io::Error::from)
            .ctx(|| format!("reading link {}", self.shown(sc)))?;
        if let Some(t) = self.theirs {
            if t.kind == Kind::Symlink {
                let current = rustix::fs::readlinkat(dst_fd, name, Vec::new())
                    .map_err(std::io::Error::from)
                    .ctx(|| format!("reading link {}", self.shown(sc)))?;
                if current == target {
                    return Ok(());
                }
            }
            self.remove_theirs(sc, w, t.kind)?;
        }
        rustix::fs::symlinkat(target.as_c_str(), dst_fd, name)
            .map_err(std::io::Error::from)
            .ctx(|| format!("creating link {}", self.shown(sc)))?;
        Ok(())
    }
}

/// Brings one target directory in line with source directory `d`: every source entry
/// compared with the target's listing and brought across where it differs, then every
/// target entry the source lacks deleted.
fn sync_dir(sc: &SyncCtx, w: &mut Worker, d: &Dir) -> Result<(), WorkloadError> {
    sc.ctx.check()?;
    let rel = d.rel();
    let where_ = |name: &CStr| sc.dst.join(d.path_of(name)).display().to_string();
    let owned = open_rel_dir(&sc.dst_root, rel)
        .ctx(|| format!("opening {}", sc.dst.join(rel).display()))?;
    let dst_fd = owned.as_ref().map_or(sc.dst_root.as_fd(), |o| o.as_fd());
    let empty = Listing::default();
    let listing = sc.listings.get(rel).unwrap_or(&empty);
    w.seen.clear();
    w.seen.resize(listing.ents.len(), false);

    for e in d.entries() {
        let found = listing.find(e.name.to_bytes());
        if let Some(i) = found {
            w.seen[i] = true;
        }
        let theirs = found.map(|i| listing.ents[i]);
        match e.kind {
            Kind::Dir => match theirs {
                Some(t) if t.kind == Kind::Dir => {}
                other => {
                    if let Some(t) = other {
                        remove_entry(sc, w, dst_fd, rel, e.name, t.kind)?;
                    }
                    rustix::fs::mkdirat(dst_fd, e.name, Mode::from_raw_mode(e.meta.mode & 0o7777))
                        .map_err(std::io::Error::from)
                        .ctx(|| format!("creating directory {}", where_(e.name)))?;
                    w.stats.dirs_created += 1;
                }
            },
            Kind::File => Pair {
                d,
                dst_fd,
                e,
                theirs,
            }
            .sync_file(sc, w)?,
            Kind::Symlink => Pair {
                d,
                dst_fd,
                e,
                theirs,
            }
            .sync_link(sc, w)?,
            Kind::Other => {}
        }
    }

    // What the target has and the source does not: gone.
    for i in 0..listing.ents.len() {
        if w.seen[i] {
            continue;
        }
        let t = listing.ents[i];
        let name = CString::new(listing.name(&t))
            .map_err(|_| WorkloadError::Verify("NUL in a file name".into()))?;
        remove_entry(sc, w, dst_fd, rel, &name, t.kind)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::MetadataExt;
    use std::time::{Duration, SystemTime};

    use super::*;
    use crate::workload::sync::testenv::{var_tmp_dir, Env};

    fn write_dated(path: &Path, bytes: &[u8], secs: u64) {
        if let Some(d) = path.parent() {
            fs::create_dir_all(d).unwrap();
        }
        fs::write(path, bytes).unwrap();
        let f = fs::File::options().write(true).open(path).unwrap();
        f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
            .unwrap();
    }

    const T: u64 = 1_600_000_000;

    #[test]
    fn sync_tree_copies_new_and_changed_deletes_extras_and_leaves_the_rest() {
        let env = Env::new();
        let (src, dst) = (var_tmp_dir(), var_tmp_dir());
        let (s, d) = (src.path(), dst.path());
        // Unchanged by size and mtime; the mirror's bytes differ so a copy would show.
        write_dated(&s.join("a/same.txt"), b"source", T);
        write_dated(&d.join("a/same.txt"), b"mirror", T);
        // Changed: same size, newer mtime.
        write_dated(&s.join("a/changed.txt"), b"new bytes", T + 100);
        write_dated(&d.join("a/changed.txt"), b"old bytes", T);
        // Changed: other size, same mtime.
        write_dated(&s.join("grown.txt"), b"longer now", T);
        write_dated(&d.join("grown.txt"), b"short", T);
        // New, in a new directory too.
        write_dated(&s.join("new.txt"), b"n", T);
        write_dated(&s.join("newdir/x.txt"), b"x", T);
        // Extras: a file and a whole directory.
        write_dated(&d.join("extra.txt"), b"e", T);
        write_dated(&d.join("extradir/y/z.txt"), b"z", T);
        let same_ino = fs::metadata(d.join("a/same.txt")).unwrap().ino();

        let st = sync_tree(&env.ctx(), s, d, 2, 0.0).unwrap();
        assert_eq!(st.files, 5);
        assert_eq!(st.files_copied, 4, "{st:?}");
        assert_eq!(st.bytes_copied, 9 + 10 + 1 + 1);
        assert_eq!(st.files_deleted, 2, "{st:?}");
        assert_eq!(st.dirs_created, 1);
        assert_eq!(st.dirs_deleted, 2);
        assert_eq!(st.latency.0.len(), 4);

        assert_eq!(fs::read(d.join("a/same.txt")).unwrap(), b"mirror");
        assert_eq!(fs::metadata(d.join("a/same.txt")).unwrap().ino(), same_ino);
        assert_eq!(fs::read(d.join("a/changed.txt")).unwrap(), b"new bytes");
        assert_eq!(fs::read(d.join("grown.txt")).unwrap(), b"longer now");
        assert_eq!(fs::read(d.join("new.txt")).unwrap(), b"n");
        assert_eq!(fs::read(d.join("newdir/x.txt")).unwrap(), b"x");
        assert!(!d.join("extra.txt").exists());
        assert!(!d.join("extradir").exists());

        // In line now: a second pass changes nothing.
        let again = sync_tree(&env.ctx(), s, d, 2, 0.0).unwrap();
        assert_eq!((again.files_copied, again.files_deleted), (0, 0));
    }

    #[test]
    fn the_modify_window_decides_what_counts_as_changed() {
        let env = Env::new();
        let (src, dst) = (var_tmp_dir(), var_tmp_dir());
        write_dated(&src.path().join("f"), b"abc", T + 1);
        write_dated(&dst.path().join("f"), b"xyz", T);
        let st = sync_tree(&env.ctx(), src.path(), dst.path(), 1, 2.0).unwrap();
        assert_eq!(st.files_copied, 0);
        assert_eq!(fs::read(dst.path().join("f")).unwrap(), b"xyz");
        let st = sync_tree(&env.ctx(), src.path(), dst.path(), 1, 0.0).unwrap();
        assert_eq!(st.files_copied, 1);
        assert_eq!(fs::read(dst.path().join("f")).unwrap(), b"abc");
    }

    #[test]
    fn a_file_where_the_source_has_a_directory_is_replaced() {
        let env = Env::new();
        let (src, dst) = (var_tmp_dir(), var_tmp_dir());
        write_dated(&src.path().join("thing/inner"), b"i", T);
        write_dated(&dst.path().join("thing"), b"was a file", T);
        let st = sync_tree(&env.ctx(), src.path(), dst.path(), 2, 0.0).unwrap();
        assert_eq!(
            (st.files_copied, st.files_deleted, st.dirs_created),
            (1, 1, 1)
        );
        assert_eq!(fs::read(dst.path().join("thing/inner")).unwrap(), b"i");
    }
}
