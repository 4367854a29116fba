//! A parallel directory walker built the way the fastest tools build theirs.
//!
//! * One task per directory on a rayon pool of exactly `threads` threads; a task opens its
//!   directory with `openat(root_fd, relative_path)` (so no descriptor is held while the
//!   task waits in a queue, and wide trees cannot exhaust the descriptor limit).
//! * Entries come from `getdents64` into a 64 KiB buffer (rustix `RawDir`) that each worker
//!   reuses, and names are packed into one reusable byte arena per worker: no allocation per
//!   entry.
//! * `d_type` gives the kind for free; `statx` runs only when the caller needs metadata
//!   ([`Need`]) and asks only for those fields, or when `d_type` is `DT_UNKNOWN` (some FUSE
//!   and network file systems), in which case it asks for the type alone.
//! * The visitor sees a whole directory at once ([`Dir`]): its descriptor (so callers can
//!   `utimensat`/`fchmodat`/`unlinkat` relative to it, never resolving full paths) and all of
//!   its entries, read completely before the visitor runs, so a visitor may remove entries
//!   without disturbing the `getdents` offsets of FUSE file systems.

use std::ffi::{CStr, OsStr};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir, StatxFlags};

use super::FsError;

/// Size of each worker's `getdents64` buffer.
const DENTS_BUF: usize = 64 * 1024;

/// What kind of entry a directory entry is. Symbolic links are never followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    File,
    Dir,
    Symlink,
    /// FIFOs, sockets, device nodes.
    Other,
}

impl Kind {
    fn from_file_type(t: FileType) -> Option<Kind> {
        match t {
            FileType::RegularFile => Some(Kind::File),
            FileType::Directory => Some(Kind::Dir),
            FileType::Symlink => Some(Kind::Symlink),
            FileType::Unknown => None,
            _ => Some(Kind::Other),
        }
    }

    fn from_mode(mode: u32) -> Kind {
        Kind::from_file_type(FileType::from_raw_mode(mode)).unwrap_or(Kind::Other)
    }
}

/// Which metadata the caller needs; [`Need::NONE`] means names and kinds only (no `statx`
/// unless `d_type` is unknown). Combine with `|`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Need(u8);

impl Need {
    pub const NONE: Need = Need(0);
    /// Logical size in bytes.
    pub const SIZE: Need = Need(1);
    /// Allocated 512-byte blocks.
    pub const BLOCKS: Need = Need(2);
    pub const MTIME: Need = Need(4);
    /// Permission bits and file type.
    pub const MODE: Need = Need(8);
    pub const ALL: Need = Need(15);

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn contains(self, other: Need) -> bool {
        self.0 & other.0 == other.0
    }

    fn statx_mask(self) -> StatxFlags {
        let mut m = StatxFlags::TYPE;
        if self.contains(Need::SIZE) {
            m |= StatxFlags::SIZE;
        }
        if self.contains(Need::BLOCKS) {
            m |= StatxFlags::BLOCKS;
        }
        if self.contains(Need::MTIME) {
            m |= StatxFlags::MTIME;
        }
        if self.contains(Need::MODE) {
            m |= StatxFlags::MODE;
        }
        m
    }
}

impl std::ops::BitOr for Need {
    type Output = Need;
    fn bitor(self, rhs: Need) -> Need {
        Need(self.0 | rhs.0)
    }
}

/// Metadata of an entry; only the fields asked for through [`Need`] are filled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Meta {
    pub size: u64,
    /// Allocated space in 512-byte units, as `st_blocks`.
    pub blocks: u64,
    /// Seconds and nanoseconds since the epoch.
    pub mtime: (i64, u32),
    /// `st_mode`: file type and permission bits.
    pub mode: u32,
}

impl Meta {
    fn from_statx(x: &rustix::fs::Statx) -> Meta {
        Meta {
            size: x.stx_size,
            blocks: x.stx_blocks,
            mtime: (x.stx_mtime.tv_sec, x.stx_mtime.tv_nsec),
            mode: u32::from(x.stx_mode),
        }
    }
}

/// One entry of a directory, borrowed from the walker's buffers.
#[derive(Debug, Clone, Copy)]
pub struct Dirent<'a> {
    pub name: &'a CStr,
    pub kind: Kind,
    pub meta: Meta,
}

impl<'a> Dirent<'a> {
    pub fn name_bytes(&self) -> &'a [u8] {
        self.name.to_bytes()
    }

    /// The extension (after the last `.` that is not the first character), if any.
    pub fn ext(&self) -> Option<&'a [u8]> {
        ext_of(self.name.to_bytes())
    }
}

/// The extension of a file name, as `Path::extension` defines it.
pub fn ext_of(name: &[u8]) -> Option<&[u8]> {
    let dot = name.iter().rposition(|&b| b == b'.')?;
    (dot > 0).then(|| &name[dot + 1..])
}

struct RawEnt {
    name_start: usize,
    name_end: usize, // includes the NUL
    kind: Kind,
    /// `d_type` was `DT_UNKNOWN`: the kind comes from a `statx`.
    unknown: bool,
    meta: Meta,
}

/// A directory as the visitor sees it: its descriptor, its path relative to the walk root
/// (empty for the root), and all of its entries except `.` and `..`.
pub struct Dir<'a> {
    fd: BorrowedFd<'a>,
    rel: &'a Path,
    depth: u32,
    names: &'a [u8],
    ents: &'a [RawEnt],
}

impl<'a> Dir<'a> {
    /// The open directory, for `*at` calls relative to it.
    pub fn fd(&self) -> BorrowedFd<'a> {
        self.fd
    }
    /// The directory's path relative to the walk root; empty for the root itself.
    pub fn rel(&self) -> &'a Path {
        self.rel
    }
    /// 0 for the root, 1 for its children, …
    pub fn depth(&self) -> u32 {
        self.depth
    }
    pub fn len(&self) -> usize {
        self.ents.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ents.is_empty()
    }
    pub fn entries(&self) -> impl Iterator<Item = Dirent<'a>> + 'a {
        let names = self.names;
        self.ents.iter().map(move |e| Dirent {
            name: CStr::from_bytes_with_nul(&names[e.name_start..e.name_end]).unwrap_or(c"?"),
            kind: e.kind,
            meta: e.meta,
        })
    }
    /// The relative path of an entry of this directory (allocates; for results, not loops).
    pub fn path_of(&self, name: &CStr) -> PathBuf {
        self.rel.join(OsStr::from_bytes(name.to_bytes()))
    }
}

/// Totals of a walk.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WalkStats {
    /// Directories visited, including the root.
    pub dirs: u64,
    pub files: u64,
    pub symlinks: u64,
    pub other: u64,
    /// `statx` calls made.
    pub stat_calls: u64,
    /// Entries whose `d_type` was `DT_UNKNOWN` and needed a `statx` for their kind.
    pub unknown_types: u64,
    /// Nanoseconds of each `statx` call, when [`WalkOptions::time_stats`] is set.
    pub stat_ns: Vec<u64>,
}

impl WalkStats {
    fn add(&mut self, o: WalkStats) {
        self.dirs += o.dirs;
        self.files += o.files;
        self.symlinks += o.symlinks;
        self.other += o.other;
        self.stat_calls += o.stat_calls;
        self.unknown_types += o.unknown_types;
        self.stat_ns.extend(o.stat_ns);
    }
}

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
    pub fn new(threads: usize, need: Need) -> Self {
        WalkOptions {
            threads,
            need,
            time_stats: false,
            force_type_lookup: false,
        }
    }
}

/// Builds a rayon pool of exactly `threads` threads (at least one).
pub fn pool(threads: usize) -> Result<rayon::ThreadPool, FsError> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .thread_name(|i| format!("fsarena-{i}"))
        .build()
        .map_err(|e| FsError::new("start thread pool", Path::new(""), std::io::Error::other(e)))
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
    let mut stats = WalkStats::default();
    let mut states = Vec::new();
    let workers = slots
        .into_iter()
        .filter_map(|m| m.into_inner().unwrap_or_else(|p| p.into_inner()))
        .chain(spare.into_inner().unwrap_or_else(|p| p.into_inner()));
    for w in workers {
        stats.add(w.stats);
        states.push(w.state);
    }
    Ok((stats, states))
}

struct Worker<S> {
    state: S,
    dents: Vec<u8>,
    names: Vec<u8>,
    ents: Vec<RawEnt>,
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
            dents: Vec::with_capacity(DENTS_BUF),
            names: Vec::with_capacity(16 * 1024),
            ents: Vec::with_capacity(256),
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
        for e in &w.ents {
            if e.kind == Kind::Dir {
                let name = &w.names[e.name_start..e.name_end - 1];
                let child = rel.join(OsStr::from_bytes(name));
                scope.spawn(move |s| process(shared, s, child, depth + 1));
            }
        }
    }
    shared.put_worker(w);
    if let Err(e) = result {
        shared.fail(e);
    }
}

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
    let io_err = |op: &'static str, path: &Path, e: rustix::io::Errno| {
        E::from(FsError::new(op, &shared.root.join(path), e.into()))
    };
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
        .map_err(|e| io_err("open directory", rel, e))?;
        owned.as_fd()
    };
    w.names.clear();
    w.ents.clear();
    w.stats.dirs += 1;
    let need = shared.opts.need;
    let mut dir = RawDir::new(fd, w.dents.spare_capacity_mut());
    while let Some(entry) = dir.next() {
        let entry = entry.map_err(|e| io_err("read directory", rel, e))?;
        let name = entry.file_name().to_bytes_with_nul();
        if name == b".\0" || name == b"..\0" {
            continue;
        }
        let name_start = w.names.len();
        w.names.extend_from_slice(name);
        w.ents.push(RawEnt {
            name_start,
            name_end: w.names.len(),
            kind: Kind::from_file_type(entry.file_type()).unwrap_or(Kind::Other),
            unknown: shared.opts.force_type_lookup || entry.file_type() == FileType::Unknown,
            meta: Meta::default(),
        });
    }
    for e in w.ents.iter_mut() {
        let unknown = e.unknown;
        if unknown || !need.is_empty() {
            let name = CStr::from_bytes_with_nul(&w.names[e.name_start..e.name_end])
                .map_err(|_| io_err("read directory", rel, rustix::io::Errno::INVAL))?;
            let mask = if need.is_empty() {
                StatxFlags::TYPE
            } else {
                need.statx_mask()
            };
            let t0 = shared.opts.time_stats.then(Instant::now);
            let x = rustix::fs::statx(
                fd,
                name,
                AtFlags::SYMLINK_NOFOLLOW | AtFlags::STATX_DONT_SYNC,
                mask,
            )
            .map_err(|err| io_err("statx", &rel.join(OsStr::from_bytes(name.to_bytes())), err))?;
            if let Some(t0) = t0 {
                w.stats.stat_ns.push(t0.elapsed().as_nanos() as u64);
            }
            w.stats.stat_calls += 1;
            if unknown {
                w.stats.unknown_types += 1;
                e.kind = Kind::from_mode(u32::from(x.stx_mode));
            }
            e.meta = if need.is_empty() {
                Meta::default()
            } else {
                Meta::from_statx(&x)
            };
        }
        match e.kind {
            Kind::File => w.stats.files += 1,
            Kind::Symlink => w.stats.symlinks += 1,
            Kind::Other => w.stats.other += 1,
            Kind::Dir => {}
        }
    }
    let view = Dir {
        fd,
        rel,
        depth,
        names: &w.names,
        ents: &w.ents,
    };
    (shared.visit)(&mut w.state, &view)
}

/// An owned entry, for callers that want a sorted list rather than a visitor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Relative to the walk root.
    pub path: PathBuf,
    pub kind: Kind,
    pub size: u64,
    /// 512-byte units.
    pub blocks: u64,
    pub mtime: (i64, u32),
    pub mode: u32,
}

impl Entry {
    pub fn ext(&self) -> Option<&OsStr> {
        self.path.extension()
    }
}

/// Every entry under `root` (not the root itself), sorted by path bytes. Allocates per entry:
/// meant for verification and small trees, not for measured phases.
pub fn list(root: &Path, threads: usize, need: Need) -> Result<Vec<Entry>, FsError> {
    let opts = WalkOptions::new(threads, need);
    let (_, parts) = walk_with(root, &opts, Vec::new, |out: &mut Vec<Entry>, d: &Dir| {
        for e in d.entries() {
            out.push(Entry {
                path: d.path_of(e.name),
                kind: e.kind,
                size: e.meta.size,
                blocks: e.meta.blocks,
                mtime: e.meta.mtime,
                mode: e.meta.mode,
            });
        }
        Ok::<(), FsError>(())
    })?;
    let mut all: Vec<Entry> = parts.into_iter().flatten().collect();
    // Byte order, like the manifest (Path's own order is per component).
    all.sort_unstable_by(|a, b| {
        a.path
            .as_os_str()
            .as_bytes()
            .cmp(b.path.as_os_str().as_bytes())
    });
    Ok(all)
}

/// Whether `dir` has no entries besides `.` and `..`.
pub fn is_empty_dir(dir: &Path) -> Result<bool, FsError> {
    let fd = rustix::fs::open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| FsError::new("open directory", dir, e.into()))?;
    let mut buf = [MaybeUninit::<u8>::uninit(); 4096];
    let mut it = RawDir::new(&fd, &mut buf);
    while let Some(entry) = it.next() {
        let entry = entry.map_err(|e| FsError::new("read directory", dir, e.into()))?;
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            return Ok(false);
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(err.source.raw_os_error(), Some(libc::ENOENT));
        let t = tree();
        let err = walk::<FsError, _>(t.path(), 2, Need::NONE, |d| {
            if d.depth() == 1 {
                Err(FsError::new(
                    "visit",
                    d.rel(),
                    std::io::Error::from_raw_os_error(libc::EIO),
                ))
            } else {
                Ok(())
            }
        })
        .unwrap_err();
        assert_eq!(err.source.raw_os_error(), Some(libc::EIO));
        assert!(!is_empty_dir(t.path()).unwrap());
        assert!(is_empty_dir(&t.path().join("a-x")).unwrap());
    }
}
