//! Reading one directory the fast way, and what the reader hands out.
//!
//! * Entries come from `getdents64` into a 64 KiB buffer (rustix `RawDir`) that each worker
//!   reuses, and names are packed into one reusable byte arena ([`DirBuf`]): no allocation
//!   per entry.
//! * `d_type` gives the kind for free; `statx` runs only when the caller needs metadata
//!   ([`Need`]) and asks only for those fields, or when `d_type` is `DT_UNKNOWN` (some FUSE
//!   and network file systems), in which case it asks for the type alone.
//! * A directory is read completely before anyone looks at it ([`Dir`]), so a visitor may
//!   remove entries without disturbing the `getdents` offsets of FUSE file systems.

use std::ffi::{CStr, OsStr};
use std::mem::MaybeUninit;
use std::os::fd::BorrowedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir, StatxFlags};

use super::error::FsError;
use super::totals::Totals;

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
    /// Names and kinds only.
    pub const NONE: Need = Need(0);
    /// Logical size in bytes.
    pub const SIZE: Need = Need(1);
    /// Allocated 512-byte blocks.
    pub const BLOCKS: Need = Need(2);
    /// Modification time.
    pub const MTIME: Need = Need(4);
    /// Permission bits and file type.
    pub const MODE: Need = Need(8);
    /// Everything above.
    pub const ALL: Need = Need(15);

    /// No metadata asked for: no `statx` unless a kind is unknown.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether every field of `other` is asked for.
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
    /// The name without its NUL, for byte comparisons.
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

/// An entry as read into a worker's buffers: its name's span in the arena.
pub(super) struct RawEnt {
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
    pub(super) fd: BorrowedFd<'a>,
    pub(super) rel: &'a Path,
    pub(super) depth: u32,
    pub(super) names: &'a [u8],
    pub(super) ents: &'a [RawEnt],
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
    /// Entries, not counting `.` and `..`.
    pub fn len(&self) -> usize {
        self.ents.len()
    }
    /// Whether the directory has no entries besides `.` and `..`.
    pub fn is_empty(&self) -> bool {
        self.ents.is_empty()
    }
    /// Every entry, in `getdents` order.
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

impl Totals for WalkStats {
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

/// How a directory is read: which metadata to fetch, and the walker's diagnostics switches
/// (see [`super::WalkOptions`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct ReadHow {
    pub need: Need,
    pub time_stats: bool,
    pub force_type_lookup: bool,
}

/// One worker's reusable buffers: the `getdents64` buffer, the name arena and the entries of
/// the directory read last. Reused for every directory, so reading allocates nothing once
/// the buffers have grown to the widest directory seen.
pub(super) struct DirBuf {
    dents: Vec<u8>,
    names: Vec<u8>,
    ents: Vec<RawEnt>,
}

impl DirBuf {
    pub(super) fn new() -> Self {
        DirBuf {
            dents: Vec::with_capacity(DENTS_BUF),
            names: Vec::with_capacity(16 * 1024),
            ents: Vec::with_capacity(256),
        }
    }

    /// Reads every entry of the open directory `fd` (at `rel` under `root`, for error
    /// messages) completely, then runs `statx` where `how` needs it, counting into `stats`.
    pub(super) fn read(
        &mut self,
        fd: BorrowedFd<'_>,
        root: &Path,
        rel: &Path,
        how: ReadHow,
        stats: &mut WalkStats,
    ) -> Result<(), FsError> {
        let io_err = |op: &'static str, path: &Path, e: rustix::io::Errno| {
            FsError::new(op, &root.join(path), e.into())
        };
        self.names.clear();
        self.ents.clear();
        stats.dirs += 1;
        let need = how.need;
        let mut dir = RawDir::new(fd, self.dents.spare_capacity_mut());
        while let Some(entry) = dir.next() {
            let entry = entry.map_err(|e| io_err("read directory", rel, e))?;
            let name = entry.file_name().to_bytes_with_nul();
            if name == b".\0" || name == b"..\0" {
                continue;
            }
            let name_start = self.names.len();
            self.names.extend_from_slice(name);
            self.ents.push(RawEnt {
                name_start,
                name_end: self.names.len(),
                kind: Kind::from_file_type(entry.file_type()).unwrap_or(Kind::Other),
                unknown: how.force_type_lookup || entry.file_type() == FileType::Unknown,
                meta: Meta::default(),
            });
        }
        for e in self.ents.iter_mut() {
            let unknown = e.unknown;
            if unknown || !need.is_empty() {
                let name = CStr::from_bytes_with_nul(&self.names[e.name_start..e.name_end])
                    .map_err(|_| io_err("read directory", rel, rustix::io::Errno::INVAL))?;
                let mask = if need.is_empty() {
                    StatxFlags::TYPE
                } else {
                    need.statx_mask()
                };
                let t0 = how.time_stats.then(Instant::now);
                let x = rustix::fs::statx(
                    fd,
                    name,
                    AtFlags::SYMLINK_NOFOLLOW | AtFlags::STATX_DONT_SYNC,
                    mask,
                )
                .map_err(|err| {
                    io_err("statx", &rel.join(OsStr::from_bytes(name.to_bytes())), err)
                })?;
                if let Some(t0) = t0 {
                    stats.stat_ns.push(t0.elapsed().as_nanos() as u64);
                }
                stats.stat_calls += 1;
                if unknown {
                    stats.unknown_types += 1;
                    e.kind = Kind::from_mode(u32::from(x.stx_mode));
                }
                e.meta = if need.is_empty() {
                    Meta::default()
                } else {
                    Meta::from_statx(&x)
                };
            }
            match e.kind {
                Kind::File => stats.files += 1,
                Kind::Symlink => stats.symlinks += 1,
                Kind::Other => stats.other += 1,
                Kind::Dir => {}
            }
        }
        Ok(())
    }

    /// The directory read last, as the visitor sees it.
    pub(super) fn view<'a>(&'a self, fd: BorrowedFd<'a>, rel: &'a Path, depth: u32) -> Dir<'a> {
        Dir {
            fd,
            rel,
            depth,
            names: &self.names,
            ents: &self.ents,
        }
    }

    /// Names of the subdirectories of the directory read last.
    pub(super) fn subdirs(&self) -> impl Iterator<Item = &OsStr> + '_ {
        self.ents
            .iter()
            .filter(|e| e.kind == Kind::Dir)
            .map(|e| OsStr::from_bytes(&self.names[e.name_start..e.name_end - 1]))
    }
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
