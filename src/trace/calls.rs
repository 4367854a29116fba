//! strace's calls into trace records: which operation each system call is, what it names
//! (a path against its directory descriptor, or a descriptor), and whether that lies under
//! the root. Calls under the root are kept with their paths made relative, and so are calls
//! on the root directory itself (as [`ROOT`]: SQLite syncs the directory holding its
//! database, the root, after creating each journal, which costs btrfs real writes). Calls
//! outside it are counted, as are changes of the root's own name, calls on pipes and
//! sockets, and `mmap`s of files under the root. A mapping of a file under the root that the
//! program's stores cannot reach (read-only, or private) is kept as a read of the range it
//! maps ([`Op::MapRead`]): git reads its objects through such mappings, and the page faults
//! that read them are invisible to strace. The
//! descriptor and directory bookkeeping (`dup`, `chdir`, forks) feeds [`Procs`].

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::format::{Call, Op, Source, ROOT};
use super::procs::Procs;
use super::strace::{Arg, Fd, Ret, Syscall};
use describe::{
    clone_flags, describe, describe_mmap, ioctl_request, maps_shared_writable, stat_size, u64_at,
    Shape, Target,
};
use maps::{Mapping, Maps};

mod describe;
mod maps;

/// What record left out, for the header and the summary.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Counts {
    /// File-system calls on paths or descriptors outside the root.
    pub outside_root: u64,
    /// Calls that would change the root directory's own name (make, remove or rename it):
    /// the replay's root is not the program's to change. Other calls on the root are kept.
    pub on_root: u64,
    /// Calls on pipes, sockets, or descriptors no line named.
    pub not_files: u64,
    /// Calls whose thread ended inside them (`= ?`): no result to replay.
    pub no_result: u64,
    /// `mmap`s of files under the root.
    pub file_mmaps: u64,
    /// `io_uring_enter` calls: what they submit is invisible to strace.
    pub io_uring_enters: u64,
    /// `io_submit` calls (Linux AIO): likewise.
    pub aio_submits: u64,
    /// ioctls on files under the root that the trace does not hold (all but the clones),
    /// by request name: what they do to a file (set its flags, dedupe its extents…) the
    /// replay does not do.
    pub ioctls: BTreeMap<String, u64>,
}

/// Whether `op` makes, removes or renames the name it is given.
fn changes_names(op: Op) -> bool {
    matches!(
        op,
        Op::Mkdir | Op::Rmdir | Op::Unlink | Op::Rename | Op::Link | Op::Symlink
    )
}

/// Where a name lies.
enum Place {
    Inside(String),
    Root,
    Outside,
    NotFile,
}

/// Turns a recorded run's calls into trace records, in the order they arrive.
pub struct Converter {
    /// The root, absolute, without a trailing `/`.
    root: String,
    procs: Procs,
    thread_of: HashMap<u32, u32>,
    /// Each kept call with its absolute start.
    pub calls: Vec<(f64, Call)>,
    pub counts: Counts,
    /// Every name under the root a kept call used (paths, descriptors' files).
    pub used: BTreeSet<String>,
    /// Directories under the root the program listed.
    pub listed: BTreeSet<String>,
    /// Shared, writable mappings of files under the root.
    maps: Maps,
    /// Per file under the root (relative), its size as the program's last stat of it
    /// printed, forgotten once a call may have changed it: what clips a mapping's read to
    /// the file (a mapping may reach past a file's end; its loads there read nothing).
    sizes: HashMap<String, u64>,
}

impl Converter {
    /// `root` and `cwd` absolute and canonical (`cwd` is where the command starts).
    pub fn new(root: &str, cwd: &str) -> Converter {
        Converter {
            root: root.trim_end_matches('/').to_string(),
            procs: Procs::new(cwd),
            thread_of: HashMap::new(),
            calls: Vec::new(),
            counts: Counts::default(),
            used: BTreeSet::new(),
            listed: BTreeSet::new(),
            maps: Maps::default(),
            sizes: HashMap::new(),
        }
    }

    /// The file I/O strace could not see, by kind, for the trace's header: only kinds
    /// that occurred.
    pub fn unseen(&self) -> BTreeMap<String, u64> {
        let ioctls = self.counts.ioctls.iter();
        [
            ("io_uring_enter", self.counts.io_uring_enters),
            ("io_submit", self.counts.aio_submits),
            ("shared_mappings_unsynced", self.maps.never_synced()),
        ]
        .into_iter()
        .map(|(k, n)| (k.to_string(), n))
        .chain(ioctls.map(|(req, n)| (format!("{IOCTL}{req}"), *n)))
        .filter(|(_, n)| *n > 0)
        .collect()
    }

    /// Recorded threads, numbered in order of their first kept call.
    pub fn threads(&self) -> u32 {
        self.thread_of.len() as u32
    }

    /// One call of the recorded run.
    pub fn push(&mut self, sc: &Syscall) {
        let shapes = match sc.name.as_str() {
            "msync" => self.describe_msync(sc).into_iter().collect(),
            "mmap" | "mmap2" => self.describe_map_read(sc).into_iter().collect(),
            _ => describe(sc),
        };
        if sc.name == "ioctl" && shapes.is_empty() {
            self.count_ioctl(sc);
        } else if !shapes.is_empty() && sc.ret == Ret::Unknown {
            self.counts.no_result += 1;
        } else {
            for shape in shapes {
                self.keep(sc, shape);
            }
        }
        self.bookkeep(sc);
    }

    /// An ioctl the trace does not hold, counted by request when its descriptor is a file
    /// under the root: a terminal's or a socket's is no file-system call. One the file
    /// refused as not its kind (`ENOTTY`) did nothing to it: python's `open` asks every
    /// file it opens whether it is a terminal (`TCGETS`), 2,064 times in the corpus's
    /// python writer, which are no I/O the replay misses.
    fn count_ioctl(&mut self, sc: &Syscall) {
        if matches!(&sc.ret, Ret::Err(e) if e == "ENOTTY") {
            return;
        }
        if ioctl_request(sc).is_some_and(|r| VFS_ONLY_IOCTLS.contains(&r.as_str())) {
            return;
        }
        let Some(fd) = sc.args.first().and_then(Arg::fd) else {
            return;
        };
        let abs = self.procs.fd_path(sc.tid, &fd);
        if let (Place::Inside(_) | Place::Root, Some(request)) =
            (self.place(abs.as_deref()), ioctl_request(sc))
        {
            *self.counts.ioctls.entry(request).or_default() += 1;
        }
    }

    /// Where an absolute name (or a descriptor's `-y` text) lies.
    fn place(&self, abs: Option<&str>) -> Place {
        match abs {
            Some(p) if p == self.root || (self.root.is_empty() && p == "/") => Place::Root,
            Some(p) if p.starts_with('/') => match p.strip_prefix(&self.root) {
                Some(rest) if rest.starts_with('/') => Place::Inside(rest[1..].to_string()),
                _ => Place::Outside,
            },
            _ => Place::NotFile,
        }
    }

    fn place_path(&mut self, tid: u32, dir: Option<&Fd>, path: &str) -> Place {
        let abs = self.procs.absolute(tid, dir, path);
        self.place(abs.as_deref())
    }

    /// An `msync` of a shared file mapping: the file range it wrote back.
    fn describe_msync(&mut self, sc: &Syscall) -> Option<Shape> {
        let addr = sc.args.first()?.int()? as u64;
        let len = u64_at(sc, 1)?;
        let synced = self.maps.msync(addr, len)?;
        let mut shape = Shape::new(Op::Msync, Target::Path(None, synced.path));
        shape.offset = Some(synced.offset);
        shape.size = Some(synced.len);
        shape.flags = sc.args.get(2).map(Arg::flags).unwrap_or_default();
        Some(shape)
    }

    /// A mapping the program's stores cannot reach, of a file under the root: the range it
    /// maps, as a read. One of a file outside the root (a library) is not a call the trace
    /// counts, as before mappings were kept.
    fn describe_map_read(&mut self, sc: &Syscall) -> Option<Shape> {
        let shape = describe_mmap(sc)?;
        let Target::Fd(fd) = &shape.target else {
            return None;
        };
        let abs = self.procs.fd_path(sc.tid, fd);
        matches!(self.place(abs.as_deref()), Place::Inside(_)).then_some(shape)
    }

    /// What the trace knows of file sizes after a kept call on `names`: a stat's printed
    /// size is kept; a call that may change a file's size or name forgets it.
    fn note_sizes(&mut self, sc: &Syscall, shape: &Shape, names: &[String]) {
        let forgets = match shape.op {
            Op::Stat => {
                if let (Some(size), Some(name)) = (stat_size(sc), names.first()) {
                    self.sizes.insert(name.clone(), size);
                }
                false
            }
            Op::Open => shape.flags.iter().any(|f| f == "O_TRUNC" || f == "O_CREAT"),
            Op::Write
            | Op::Truncate
            | Op::Fallocate
            | Op::Msync
            | Op::Clone
            | Op::Unlink
            | Op::Rename
            | Op::Link => true,
            _ => false,
        };
        if forgets {
            for name in names {
                self.sizes.remove(name);
            }
        }
    }

    /// The bytes a mapping's read covers: the range mapped, clipped to the file's size
    /// where the program's last stat of it says it.
    fn map_read_bytes(&self, shape: &Shape, name: Option<&String>) -> i64 {
        let len = shape.size.unwrap_or(0);
        let known = name.and_then(|n| self.sizes.get(n));
        let bytes = known.map_or(len, |&size| {
            len.min(size.saturating_sub(shape.offset.unwrap_or(0)))
        });
        i64::try_from(bytes).unwrap_or(i64::MAX)
    }

    fn keep(&mut self, sc: &Syscall, shape: Shape) {
        let tid = sc.tid;
        let (path, path2, fd) = match &shape.target {
            Target::Nothing => return self.keep_named(sc, shape, Vec::new(), None),
            Target::Path(dir, p) => (self.place_path(tid, dir.as_ref(), p), None, None),
            Target::Fd(fd) => {
                let abs = self.procs.fd_path(tid, fd);
                (self.place(abs.as_deref()), None, Some(fd.num))
            }
            Target::TwoPaths(d1, p1, d2, p2) => {
                let first = self.place_path(tid, d1.as_ref(), p1);
                (first, Some(self.place_path(tid, d2.as_ref(), p2)), None)
            }
        };
        // A clone's source: a descriptor too, its file named with the destination's.
        let source = shape.source.as_ref().map(|(fd, _)| {
            let abs = self.procs.fd_path(tid, fd);
            self.place(abs.as_deref())
        });
        let mut names = Vec::new();
        for place in std::iter::once(path).chain(path2).chain(source) {
            match place {
                Place::Inside(rel) => names.push(rel),
                Place::Outside => return self.counts.outside_root += 1,
                Place::Root if changes_names(shape.op) => return self.counts.on_root += 1,
                Place::Root => names.push(ROOT.to_string()),
                Place::NotFile => return self.counts.not_files += 1,
            }
        }
        self.keep_named(sc, shape, names, fd)
    }

    /// Keeps a call whose names all lie under the root (`names`, relative; for a call on
    /// a descriptor, the descriptor's file).
    fn keep_named(&mut self, sc: &Syscall, shape: Shape, names: Vec<String>, fd: Option<i32>) {
        let tid = sc.tid;
        self.note_sizes(sc, &shape, &names);
        let (ret, err) = match &sc.ret {
            // An mmap returns an address: the read it stands for moved the range's bytes.
            Ret::Value(..) if shape.op == Op::MapRead => {
                (Some(self.map_read_bytes(&shape, names.first())), None)
            }
            Ret::Value(v, real) => {
                if let Some(Place::Inside(rel)) = real.as_deref().map(|r| self.place(Some(r))) {
                    self.used.insert(rel);
                }
                (Some(*v), None)
            }
            Ret::Err(e) => (None, Some(e.clone())),
            Ret::Unknown => return,
        };
        let mut names = names.into_iter();
        let (path, path2) = if fd.is_some() {
            (None, None)
        } else {
            (names.next(), names.next())
        };
        // The root is there in every replay: it is neither initial state nor listed into it.
        let below = |n: &&String| n.as_str() != ROOT;
        if shape.op == Op::Getdents {
            self.listed.extend(names.clone().filter(|n| below(&n)));
        }
        self.used
            .extend(path.iter().chain(&path2).filter(below).cloned());
        if fd.is_some() {
            self.used.extend(names.filter(|n| below(&n)));
        }
        let next = self.thread_of.len() as u32;
        let thread = *self.thread_of.entry(tid).or_insert(next);
        let call = Call {
            thread,
            start: 0.0,
            dur: sc.dur.max(0.0),
            op: shape.op,
            syscall: sc.name.clone(),
            path,
            path2,
            target: shape.link_text,
            fd,
            source: shape
                .source
                .map(|(fd, offset)| Box::new(Source { fd: fd.num, offset })),
            flags: shape.flags,
            mode: shape.mode,
            owner: shape.owner,
            size: shape.size,
            offset: shape.offset,
            ret,
            err,
        };
        self.calls.push((sc.time, call));
    }

    /// Descriptors, directories and processes as the call changed them; `mmap`s counted.
    fn bookkeep(&mut self, sc: &Syscall) {
        let tid = sc.tid;
        let Ret::Value(ret, ret_path) = &sc.ret else {
            return;
        };
        let arg = |i: usize| sc.args.get(i);
        let fd = |i: usize| arg(i).and_then(Arg::fd);
        match sc.name.as_str() {
            "open" | "openat" | "openat2" | "creat" => {
                let (dir, path) = match sc.name.as_str() {
                    "open" | "creat" => (None, arg(0).and_then(Arg::string)),
                    _ => (fd(0), arg(1).and_then(Arg::string)),
                };
                let named = path.and_then(|p| self.procs.absolute(tid, dir.as_ref(), &p));
                if let Some(path) = ret_path.clone().or(named) {
                    self.procs.set_fd(tid, *ret as i32, path);
                }
            }
            "dup" | "dup2" | "dup3" | "fcntl" | "fcntl64" => {
                let dup = sc.name.starts_with("dup")
                    || arg(1).is_some_and(|a| a.0.starts_with("F_DUPFD"));
                let from = fd(0)
                    .filter(|_| dup)
                    .and_then(|f| self.procs.fd_path(tid, &f));
                if let Some(path) = ret_path.clone().or(from).filter(|_| dup) {
                    self.procs.set_fd(tid, *ret as i32, path);
                }
            }
            "close" => {
                if let Some(f) = fd(0) {
                    self.procs.close(tid, f.num);
                }
            }
            "chdir" => {
                let path = arg(0).and_then(Arg::string);
                if let Some(abs) = path.and_then(|p| self.procs.absolute(tid, None, &p)) {
                    self.procs.set_cwd(tid, abs);
                }
            }
            "fchdir" => {
                if let Some(path) = fd(0).and_then(|f| self.procs.fd_path(tid, &f)) {
                    self.procs.set_cwd(tid, path);
                }
            }
            "clone" | "clone3" | "fork" | "vfork" if *ret > 0 => {
                let flags = clone_flags(sc);
                let has = |f: &str| flags.iter().any(|x| x == f);
                let thread = has("CLONE_THREAD");
                let (fs, files) = (thread || has("CLONE_FS"), thread || has("CLONE_FILES"));
                self.procs.spawn(tid, *ret as u32, fs, files);
            }
            "mmap" | "mmap2" => {
                let file = fd(4).filter(|f| f.num >= 0);
                let abs = file.and_then(|f| self.procs.fd_path(tid, &f));
                if let (Place::Inside(_), Some(path)) = (self.place(abs.as_deref()), abs) {
                    self.counts.file_mmaps += 1;
                    self.map_shared(sc, *ret as u64, path);
                }
            }
            "munmap" => {
                if let (Some(addr), Some(len)) = (arg(0).and_then(Arg::int), u64_at(sc, 1)) {
                    self.maps.unmap(addr as u64, len);
                }
            }
            "io_uring_enter" => self.counts.io_uring_enters += 1,
            "io_submit" => self.counts.aio_submits += 1,
            _ => {}
        }
    }
}

impl Converter {
    /// Notes a mapping of `path` at `addr` when it is shared and writable: its stores can
    /// reach the file.
    fn map_shared(&mut self, sc: &Syscall, addr: u64, path: String) {
        if maps_shared_writable(sc) {
            let mapping = Mapping {
                path,
                offset: u64_at(sc, 5).unwrap_or(0),
                len: u64_at(sc, 1).unwrap_or(0),
                synced: false,
            };
            self.maps.map(addr, mapping);
        }
    }
}

/// The prefix of an `unseen` kind that counts ioctls by request (`ioctl FS_IOC_SETFLAGS`).
const IOCTL: &str = "ioctl ";

/// ioctls the kernel's VFS answers from the descriptor or the inode without calling the file
/// system (`do_vfs_ioctl`): the close-on-exec and non-blocking flags (a python program's
/// `mmap` made one `FIOCLEX` on a file under the root), the block size, the bytes left to
/// read. They do no I/O a replay would miss, so they are not counted as unseen.
const VFS_ONLY_IOCTLS: [&str; 7] = [
    "FIOCLEX", "FIONCLEX", "FIONBIO", "FIOASYNC", "FIGETBSZ", "FIONREAD", "FIOQSIZE",
];

/// What a trace holds of the I/O through a program's file mappings, in words (`fsarena
/// record` and every replay of the trace say the same): each mapping its stores cannot reach
/// is replayed as a mapping of the range it maps with every page faulted in, where the
/// program's page faults read only the pages it touched; stores through shared mappings are invisible to strace, but each
/// `msync` of one is a call the replay makes, as a write of the whole range synced, while
/// the program wrote back only the pages it had dirtied in it. A trace recorded before
/// mappings were kept as reads holds none: its loads are said to be invisible too.
pub fn mapped_io_text(trace: &super::format::Trace) -> Option<String> {
    let mmaps = trace.header.file_mmaps;
    if mmaps == 0 {
        return None;
    }
    let count = |op: Op| trace.calls.iter().filter(|c| c.op == op).count();
    let (reads, msyncs) = (count(Op::MapRead), count(Op::Msync));
    let one =
        |n: usize, single: &'static str, many: &'static str| if n == 1 { single } else { many };
    let mut s = format!(
        "the program memory-mapped {mmaps} file{}: ",
        if mmaps == 1 { "" } else { "s" }
    );
    if reads > 0 {
        s.push_str(&format!(
            "{reads} read-only or private mapping{} replayed as {} range with every page faulted in (the program faulted in only the pages it touched); stores through shared mappings are invisible to the trace",
            one(reads, " is", "s are"),
            one(reads, "a mapping of its", "mappings of each"),
        ));
    } else {
        s.push_str("loads and stores through them are invisible to the trace");
    }
    if msyncs > 0 {
        s.push_str(&format!(
            ", except {msyncs} msync'd range{}, replayed as {} whole (the program wrote back only the pages it had dirtied in {})",
            one(msyncs, "", "s"),
            one(msyncs, "a write of the range", "writes of each range"),
            one(msyncs, "it", "them"),
        ));
    }
    Some(s)
}

/// A header's `unseen` in words: "12 io_uring_enter calls, 1 shared mapping never msync'd".
pub fn unseen_text(unseen: &BTreeMap<String, u64>) -> String {
    unseen
        .iter()
        .map(|(kind, n)| match kind.as_str() {
            "shared_mappings_unsynced" => format!(
                "{n} shared writable file mapping{} never msync'd (its stores reach the file unseen)",
                if *n == 1 { "" } else { "s" }
            ),
            ioctl if ioctl.starts_with(IOCTL) => format!(
                "{n} {ioctl} call{} the replay cannot do",
                if *n == 1 { "" } else { "s" }
            ),
            call => format!("{n} {call} call{}", if *n == 1 { "" } else { "s" }),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests;
