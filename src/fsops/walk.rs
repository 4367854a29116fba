//! The parallel directory walker, built the way the fastest tools build theirs.
//!
//! * One task per directory on a rayon pool of exactly `threads` threads; a task opens its
//!   directory with `openat(root_fd, relative_path)` (so no descriptor is held while the
//!   task waits in a queue, and wide trees cannot exhaust the descriptor limit).
//! * Each pool thread owns one worker (the caller's per-worker state plus reading buffers,
//!   see [`super::dir`]); work stealing moves tasks, never buffers.
//! * The visitor sees a whole directory at once ([`Dir`]): its descriptor (so callers can
//!   `utimensat`/`fchmodat`/`unlinkat` relative to it, never resolving full paths) and all of
//!   its entries.

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use rustix::fs::{Mode, OFlags};

use super::dir::{Dir, DirBuf, Need, ReadHow, WalkStats};
use super::error::FsError;
use super::pool::pool;
use super::totals::Totals;

/// How to walk.
#[derive(Debug, Clone, Copy)]
pub struct WalkOptions {
    /// Worker threads (the pool has exactly this many; 0 is treated as 1).
    pub threads: usize,
    pub need: Need,
    /// Time every `statx` (one `Instant` pair each) into [`WalkStats::stat_ns`].
    pub time_stats: bool,
    /// Treat every `d_type` as `DT_UNKNOWN`, as some FUSE and network file systems report
    /// it, so the `statx` fallback can be exercised (and its cost seen) anywhere.
    pub force_type_lookup: bool,
}

impl WalkOptions {
    /// `threads` workers fetching `need`, without the diagnostics switches.
    pub fn new(threads: usize, need: Need) -> Self {
        WalkOptions {
            threads,
            need,
            time_stats: false,
            force_type_lookup: false,
        }
    }
}

/// Walks `root` with `threads` workers and calls `visit` once per directory (root
/// included). The first error (from the walker or the visitor) stops the walk and is returned.
pub fn walk<E, F>(root: &Path, threads: usize, need: Need, visit: F) -> Result<WalkStats, E>
where
    E: From<FsError> + Send,
    F: Fn(&Dir) -> Result<(), E> + Sync,
{
    let opts = WalkOptions::new(threads, need);
    walk_with(root, &opts, || (), |_, d| visit(d)).map(|(stats, _)| stats)
}

/// Like [`walk`], with per-worker state: `init` makes one `S` per worker thread, `visit`
/// gets that worker's `&mut S` (no locking in the visitor), and all states are returned at
/// the end for merging (e.g. per-thread latency vectors or totals).
pub fn walk_with<S, E, I, F>(
    root: &Path,
    opts: &WalkOptions,
    init: I,
    visit: F,
) -> Result<(WalkStats, Vec<S>), E>
where
    S: Send,
    E: From<FsError> + Send,
    I: Fn() -> S + Sync,
    F: Fn(&mut S, &Dir) -> Result<(), E> + Sync,
{
    let root_fd = rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| E::from(FsError::new("open directory", root, e.into())))?;
    let pool = pool(opts.threads).map_err(E::from)?;
    let shared = Shared {
        root: root.to_path_buf(),
        root_fd,
        opts: *opts,
        init: &init,
        visit: &visit,
        slots: (0..pool.current_num_threads())
            .map(|_| Mutex::new(None))
            .collect(),
        spare: Mutex::new(Vec::new()),
        error: Mutex::new(None),
        stop: AtomicBool::new(false),
    };
    pool.scope(|s| {
        let shared = &shared;
        s.spawn(move |s| process(shared, s, PathBuf::new(), 0));
    });
    let Shared {
        slots,
        spare,
        error,
        ..
    } = shared;
    if let Some(e) = error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    let workers = slots
        .into_iter()
        .filter_map(|m| m.into_inner().unwrap_or_else(|p| p.into_inner()))
        .chain(spare.into_inner().unwrap_or_else(|p| p.into_inner()));
    let mut states = Vec::new();
    let stats = WalkStats::sum_all(workers.map(|w| {
        states.push(w.state);
        w.stats
    }));
    Ok((stats, states))
}

/// One worker's state: the caller's `S`, the reading buffers and the totals so far.
struct Worker<S> {
    state: S,
    buf: DirBuf,
    stats: WalkStats,
}

struct Shared<'f, S, E, I, F> {
    root: PathBuf,
    root_fd: OwnedFd,
    opts: WalkOptions,
    init: &'f I,
    visit: &'f F,
    /// One worker (state and buffers) per pool thread, taken out while a task runs.
    slots: Vec<Mutex<Option<Worker<S>>>>,
    /// Workers made when a slot was busy (a visitor that itself ran rayon work).
    spare: Mutex<Vec<Worker<S>>>,
    error: Mutex<Option<E>>,
    stop: AtomicBool,
}

impl<S, E, I, F> Shared<'_, S, E, I, F>
where
    I: Fn() -> S,
{
    fn take_worker(&self) -> Worker<S> {
        let slot = rayon::current_thread_index().and_then(|i| self.slots.get(i));
        if let Some(w) = slot.and_then(|m| m.lock().ok().and_then(|mut g| g.take())) {
            return w;
        }
        if let Some(w) = self.spare.lock().ok().and_then(|mut v| v.pop()) {
            return w;
        }
        Worker {
            state: (self.init)(),
            buf: DirBuf::new(),
            stats: WalkStats::default(),
        }
    }

    fn put_worker(&self, w: Worker<S>) {
        let slot = rayon::current_thread_index().and_then(|i| self.slots.get(i));
        let mut w = Some(w);
        if let Some(m) = slot {
            if let Ok(mut g) = m.lock() {
                if g.is_none() {
                    *g = w.take();
                }
            }
        }
        if let Some(w) = w {
            if let Ok(mut v) = self.spare.lock() {
                v.push(w);
            }
        }
    }

    fn fail(&self, e: E) {
        self.stop.store(true, Ordering::Relaxed);
        if let Ok(mut g) = self.error.lock() {
            if g.is_none() {
                *g = Some(e);
            }
        }
    }
}

fn process<'s, S, E, I, F>(
    shared: &'s Shared<'s, S, E, I, F>,
    scope: &rayon::Scope<'s>,
    rel: PathBuf,
    depth: u32,
) where
    S: Send,
    E: From<FsError> + Send,
    I: Fn() -> S + Sync,
    F: Fn(&mut S, &Dir) -> Result<(), E> + Sync,
{
    if shared.stop.load(Ordering::Relaxed) {
        return;
    }
    let mut w = shared.take_worker();
    let result = read_and_visit(shared, &mut w, &rel, depth);
    // Children are spawned after the visit, from the names read into the arena.
    if result.is_ok() {
        for name in w.buf.subdirs() {
            let child = rel.join(name);
            scope.spawn(move |s| process(shared, s, child, depth + 1));
        }
    }
    shared.put_worker(w);
    if let Err(e) = result {
        shared.fail(e);
    }
}

/// Opens `rel` under the walk root, reads it into the worker's buffers and runs the visitor.
fn read_and_visit<S, E, I, F>(
    shared: &Shared<'_, S, E, I, F>,
    w: &mut Worker<S>,
    rel: &Path,
    depth: u32,
) -> Result<(), E>
where
    E: From<FsError>,
    I: Fn() -> S,
    F: Fn(&mut S, &Dir) -> Result<(), E>,
{
    let owned;
    let fd = if rel.as_os_str().is_empty() {
        shared.root_fd.as_fd()
    } else {
        owned = rustix::fs::openat(
            &shared.root_fd,
            rel,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            Mode::empty(),
        )
        .map_err(|e| {
            E::from(FsError::new(
                "open directory",
                &shared.root.join(rel),
                e.into(),
            ))
        })?;
        owned.as_fd()
    };
    let how = ReadHow {
        need: shared.opts.need,
        time_stats: shared.opts.time_stats,
        force_type_lookup: shared.opts.force_type_lookup,
    };
    w.buf
        .read(fd, &shared.root, rel, how, &mut w.stats)
        .map_err(E::from)?;
    (shared.visit)(&mut w.state, &w.buf.view(fd, rel, depth))
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;

    use super::*;
    use crate::fsops::dir::{ext_of, is_empty_dir, Kind, Meta};
    use crate::fsops::list::list;
    use rustix::io::Errno;

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::Builder::new()
            .prefix("fsarena-walk-")
            .tempdir_in("/var/tmp")
            .unwrap();
        let p = dir.path();
        for d in ["a", "a/b", "a/b/c", "d", "a-x"] {
            std::fs::create_dir(p.join(d)).unwrap();
        }
        for (f, n) in [
            ("top.txt", 10),
            ("a/one.jpg", 2000),
            ("a/b/c/deep", 5),
            ("d/.hidden", 1),
        ] {
            std::fs::write(p.join(f), vec![1u8; n]).unwrap();
        }
        std::os::unix::fs::symlink("top.txt", p.join("d/link")).unwrap();
        dir
    }

    #[test]
    fn walk_counts_kinds_and_skips_stat_when_not_needed() {
        let t = tree();
        for threads in [1, 3] {
            let s = walk::<FsError, _>(t.path(), threads, Need::NONE, |_| Ok(())).unwrap();
            assert_eq!((s.dirs, s.files, s.symlinks, s.other), (6, 4, 1, 0));
            assert_eq!(s.stat_calls, s.unknown_types);
            let mut o = WalkOptions::new(threads, Need::SIZE | Need::BLOCKS);
            o.time_stats = true;
            let (s, states) = walk_with(
                t.path(),
                &o,
                || 0u64,
                |n: &mut u64, d: &Dir| {
                    *n += d
                        .entries()
                        .filter(|e| e.kind == Kind::File)
                        .map(|e| e.meta.size)
                        .sum::<u64>();
                    Ok::<(), FsError>(())
                },
            )
            .unwrap();
            assert_eq!(s.stat_calls, 10);
            assert_eq!(s.stat_ns.len(), 10);
            assert!(states.len() <= threads);
            assert_eq!(states.iter().sum::<u64>(), 2016);
        }
    }

    #[test]
    fn unknown_d_type_falls_back_to_statx_for_the_kind() {
        let t = tree();
        let mut o = WalkOptions::new(2, Need::NONE);
        o.force_type_lookup = true;
        let (s, kinds) = walk_with(
            t.path(),
            &o,
            Vec::new,
            |v: &mut Vec<(PathBuf, Kind, Meta)>, d: &Dir| {
                v.extend(d.entries().map(|e| (d.path_of(e.name), e.kind, e.meta)));
                Ok::<(), FsError>(())
            },
        )
        .unwrap();
        assert_eq!((s.dirs, s.files, s.symlinks), (6, 4, 1));
        assert_eq!((s.stat_calls, s.unknown_types), (10, 10));
        let mut kinds: Vec<_> = kinds.into_iter().flatten().collect();
        kinds.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(kinds[0].0, Path::new("a"));
        assert_eq!(kinds[0].1, Kind::Dir);
        // Need::NONE: the type lookup fills no metadata.
        assert!(kinds.iter().all(|k| k.2 == Meta::default()));
        // With metadata asked for, one statx serves both.
        o.need = Need::SIZE;
        let l = walk::<FsError, _>(t.path(), 2, Need::SIZE, |_| Ok(())).unwrap();
        let (s, _) = walk_with(t.path(), &o, || (), |_, _: &Dir| Ok::<(), FsError>(())).unwrap();
        assert_eq!(s.stat_calls, l.stat_calls);
    }

    #[test]
    fn list_is_sorted_by_bytes_like_the_manifest() {
        let t = tree();
        let l = list(t.path(), 2, Need::SIZE).unwrap();
        let names: Vec<String> = l
            .iter()
            .map(|e| e.path.to_string_lossy().into_owned())
            .collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        assert!(names.iter().position(|n| n == "a-x") < names.iter().position(|n| n == "a/b"));
        let one = l.iter().find(|e| e.path == Path::new("a/one.jpg")).unwrap();
        assert_eq!(
            (one.size, one.kind, one.ext()),
            (2000, Kind::File, Some(OsStr::new("jpg")))
        );
        assert_eq!(ext_of(b".hidden"), None);
        assert_eq!(ext_of(b"x.tar.gz"), Some(&b"gz"[..]));
    }

    #[test]
    fn errors_keep_their_os_code_and_a_visitor_error_stops_the_walk() {
        let err = walk::<FsError, _>(
            Path::new("/var/tmp/does-not-exist-fsarena"),
            2,
            Need::NONE,
            |_| Ok(()),
        )
        .unwrap_err();
        assert_eq!(err.source.raw_os_error(), Some(Errno::NOENT.raw_os_error()));
        let t = tree();
        let err = walk::<FsError, _>(t.path(), 2, Need::NONE, |d| {
            if d.depth() == 1 {
                Err(FsError::new(
                    "visit",
                    d.rel(),
                    std::io::Error::from_raw_os_error(Errno::IO.raw_os_error()),
                ))
            } else {
                Ok(())
            }
        })
        .unwrap_err();
        assert_eq!(err.source.raw_os_error(), Some(Errno::IO.raw_os_error()));
        assert!(!is_empty_dir(t.path()).unwrap());
        assert!(is_empty_dir(&t.path().join("a-x")).unwrap());
    }
}
