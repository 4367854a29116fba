//! The `.fstrace` format, version 1: JSON Lines. The first line is the [`Header`]; then one
//! [`Entry`] per line, the program's initial state first (`{"initial": …}`), then its calls in
//! the order they started (`{"call": …}`). Lines, not one document, so a trace of millions of
//! calls streams, and a cut trace is told from a whole one by the header's counts.
//! `docs/trace-format.md` is the reference; a field added there is added here.

use std::io::{BufRead, Write};
use std::path::{Component, Path};

use serde::{Deserialize, Serialize};

pub use super::bounds::TraceError;
use super::bounds::{Limits, Lines, MAX_OFFSET, MAX_RW_COUNT};
use super::header::{bound_error, check_header_bounds, seconds};
pub use super::header::{Header, StraceOverhead};
use super::holes::DataRange;
pub use super::program_time::ProgramTime;

/// The one format version this build reads and writes.
pub const VERSION: u32 = 1;

/// The path that names the root itself: a program that opens the directory it works in to
/// sync it (SQLite syncs the database's directory after creating its journal) or lists it.
pub const ROOT: &str = ".";

/// One line after the header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Entry {
    /// A file, directory or symlink the program used but did not create.
    Initial(Initial),
    /// One recorded system call.
    Call(Call),
}

/// What kind of thing a path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    File,
    Dir,
    Symlink,
}

/// One piece of the initial state, laid down before the measured phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Initial {
    /// Relative to the root, `/`-separated, never absolute, never `..`.
    pub path: String,
    pub kind: Kind,
    /// Bytes, for a file (its size when the program first used it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// A symlink's target, as stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// A file with holes: its pieces of data, `[offset, length]` in order (`super::holes`);
    /// absent, the whole file is data (a file without holes, and every trace recorded
    /// before holes were kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Vec<DataRange>>,
}

/// The operations a trace holds; `Call::syscall` keeps the exact call (`pread64`, `openat`…).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// open, openat, openat2, creat: `path`, `flags`, `mode`; `ret` is the new descriptor.
    Open,
    /// close: `fd`.
    Close,
    /// read, pread64, readv, preadv, preadv2: `fd`, `size`, `offset` when positional.
    Read,
    /// write, pwrite64, writev, pwritev, pwritev2: `fd`, `size`, `offset` when positional.
    Write,
    /// fsync: `fd`.
    Fsync,
    /// fdatasync: `fd`.
    Fdatasync,
    /// sync_file_range: `fd`, `offset`, `size`.
    SyncFileRange,
    /// stat, lstat, newfstatat, statx, access, faccessat: `path`; fstat: `fd`.
    Stat,
    /// getdents64, getdents: `fd`, `size` (buffer bytes); `ret` bytes returned.
    Getdents,
    /// mkdir, mkdirat: `path`, `mode`.
    Mkdir,
    /// rmdir, unlinkat with AT_REMOVEDIR: `path`.
    Rmdir,
    /// unlink, unlinkat: `path`.
    Unlink,
    /// rename, renameat, renameat2: `path` → `path2`.
    Rename,
    /// link, linkat: existing `path`, new `path2`.
    Link,
    /// symlink, symlinkat: the link is `path`, its stored text `target`.
    Symlink,
    /// truncate (`path`), ftruncate (`fd`): `size` is the new length.
    Truncate,
    /// fallocate: `fd`, `offset`, `size`, `mode`.
    Fallocate,
    /// lseek: `fd`, the recorded `offset` argument where it is not negative, the whence in
    /// `flags` (`SEEK_SET`, `SEEK_CUR`, `SEEK_END`, `SEEK_DATA`, `SEEK_HOLE`), and the
    /// position it returned in `ret`. Replayed as a seek to that position from the start, so
    /// a later `read` or `write` (which carry no offset) moves the bytes the program moved
    /// there: an assembler reading back the object file it wrote read 0 bytes at its end.
    Seek,
    /// syncfs: `fd` (the file system holding it is written back).
    Syncfs,
    /// sync: no argument; replayed as a syncfs of the target, the only file system it has.
    Sync,
    /// msync of a shared, writable mapping of a file: `path` (the file mapped), `offset`
    /// and `size` of the range in the file, `flags` (`MS_SYNC`, `MS_ASYNC`…). Replayed as a
    /// write of the range (as far as the file reaches) and, for `MS_SYNC`, an fdatasync.
    Msync,
    /// mmap of a file under the root that no store of the program can reach (read-only, or
    /// private): `fd`, `offset` and `size` of the range mapped, `flags` (`PROT_*` and
    /// `MAP_*`), `ret` the bytes of the file in that range as far as the recording knew the
    /// file's size (the last stat the program made of it; else `size`). Its loads are page
    /// faults strace cannot see (git inflates every object it reads through one); replayed
    /// as a mapping of the range with every page faulted in, then unmapped (reads of the
    /// range where it cannot be mapped or the file ends inside it), at the mmap, in the
    /// thread that mapped it.
    MapRead,
    /// setxattr, lsetxattr, fsetxattr: `path` or `fd`, the attribute's name in `target`,
    /// the value's bytes in `size`.
    Setxattr,
    /// getxattr, lgetxattr, fgetxattr, listxattr, llistxattr, flistxattr: `path` or `fd`,
    /// the name in `target` (get only), the buffer's bytes in `size`; `ret` bytes.
    Getxattr,
    /// removexattr, lremovexattr, fremovexattr: `path` or `fd`, the name in `target`.
    Removexattr,
    /// flock, and fcntl's `F_SETLK`, `F_SETLKW`, `F_OFD_SETLK*`: `fd`, the lock asked for
    /// in `flags` (`LOCK_EX`, `LOCK_UN`; `F_SETLKW`, `F_WRLCK`, `SEEK_SET`…), an fcntl
    /// lock's `l_start` in `offset` and `l_len` in `size`. Issued on the replayed descriptor,
    /// never blocking, the recorded order around it kept (`workload::replay::lock`).
    Lock,
    /// dup, dup2, dup3, fcntl with `F_DUPFD`/`F_DUPFD_CLOEXEC`: `fd` the descriptor copied,
    /// `ret` the new number, another name of the same open file (`dd of=F` writes to
    /// descriptor 1 after `dup2`).
    Dup,
    /// chmod, fchmod, fchmodat, fchmodat2, chown, lchown, fchown, fchownat, utime, utimes,
    /// futimesat, utimensat: a change of a file's attributes, on `path` or `fd`; `mode` for a
    /// chmod, `owner` for a chown, `flags` (`AT_SYMLINK_NOFOLLOW`). A change of times is
    /// replayed as setting both to the replay's now: the file system's work (an inode
    /// change) is the same, and no later call's result depends on the times.
    Setattr,
    /// ioctl `FICLONE` (whole file) and `FICLONERANGE`: the destination `fd` shares the
    /// extents of `source` (its descriptor, and for a range its offset); for a range,
    /// `offset` in the destination and `size` (0: to the source's end). `cp` on btrfs and
    /// xfs copies a file this way, without a read or a write. Replayed as a clone where the
    /// file system can share extents, else as a copy of the same bytes, what such a program
    /// does next (`workload::replay::reflink`).
    Clone,
}

/// The second descriptor of a call on two files: a clone's source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// The descriptor, as numbered in the recorded process.
    pub fd: i32,
    /// Where the range starts in the source (`FICLONERANGE`); absent: the whole file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
}

/// One recorded call and how it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Call {
    /// The recorded thread, 0-based in order of first appearance.
    pub thread: u32,
    /// Seconds from the trace's first call to this call's start.
    pub start: f64,
    /// Seconds the call took when recorded.
    pub dur: f64,
    pub op: Op,
    /// The system call's own name as strace printed it.
    pub syscall: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path2: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The descriptor the call used, as numbered in the recorded process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fd: Option<i32>,
    /// A clone's source descriptor (and offset); `fd` is its destination. Boxed: it is rare,
    /// and a call is held for every line of a trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Box<Source>>,
    /// Open flags by their names (`O_WRONLY`, `O_CREAT`…).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<u32>,
    /// A chown's user and group ids; -1 leaves one as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<[i64; 2]>,
    /// Bytes asked for (read/write/getdents), the new length (truncate), or a range's length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// The result on success: bytes moved, the new descriptor, or 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ret: Option<i64>,
    /// The errno's name on failure (`ENOENT`…); exactly one of `ret` and `err` is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub err: Option<String>,
}

impl Call {
    /// A call on `path` that succeeded, with no descriptor, flags or size: what the replay's
    /// unit tests of ordering and pacing build their traces from.
    #[cfg(test)]
    pub fn on_path(thread: u32, start: f64, dur: f64, op: Op, path: &str) -> Call {
        Call {
            thread,
            start,
            dur,
            op,
            syscall: format!("{op:?}").to_lowercase(),
            path: Some(path.into()),
            path2: None,
            target: None,
            fd: None,
            source: None,
            flags: vec![],
            mode: None,
            owner: None,
            size: None,
            offset: None,
            ret: Some(0),
            err: None,
        }
    }
}

/// A whole trace in memory.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    pub header: Header,
    pub initial: Vec<Initial>,
    pub calls: Vec<Call>,
}

impl Trace {
    /// A trace of `initial` and `calls` by `threads` threads of `command`, whose header's
    /// counts are those of the entries (so it reads back whole) and says nothing else yet:
    /// not anonymized, no calls outside the root, no mapped files. The one place a header is
    /// made, so a field added to the format is filled in once; the recorder sets the rest
    /// once it knows them, and tests build their traces with it.
    pub fn new(
        command: Vec<String>,
        threads: u32,
        duration_s: f64,
        initial: Vec<Initial>,
        calls: Vec<Call>,
    ) -> Trace {
        Trace {
            header: Header {
                fstrace: VERSION,
                command,
                anonymized: false,
                threads,
                duration_s,
                initial: initial.len() as u64,
                calls: calls.len() as u64,
                outside_root: 0,
                file_mmaps: 0,
                strace_overhead: None,
                fs_type: None,
                user_cpu_s: None,
                program_time: None,
                unseen: std::collections::BTreeMap::new(),
            },
            initial,
            calls,
        }
    }
}

/// Reads a trace and checks it: the version, every line, the counts the header announces,
/// initial entries before calls, threads in range, one result per call, every path
/// relative and inside the root (no absolute path, no `..`), so a replay can never reach
/// outside the file system it is given, and every number within what a recording can hold
/// (`super::bounds`). Lines are bounded by [`bounds::MAX_LINE`]; a trace of any length is
/// taken, for one this build wrote itself.
pub fn read(input: impl BufRead) -> Result<Trace, TraceError> {
    read_with(input, &Limits::default())
}

/// The lines of a trace file, as written or compressed with zstd (the shipped traces of
/// more than a MB are: JSON lines shrink about tenfold), told apart by zstd's magic number
/// rather than the name. [`read_with`]'s limits then bound the decompressed text.
pub fn lines_of(mut file: std::fs::File) -> std::io::Result<Box<dyn BufRead>> {
    use std::io::{Read, Seek};
    const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
    let mut magic = [0u8; 4];
    let n = file.read(&mut magic)?;
    file.rewind()?;
    if n == 4 && magic == ZSTD_MAGIC {
        Ok(Box::new(std::io::BufReader::new(
            zstd::stream::read::Decoder::new(file)?,
        )))
    } else {
        Ok(Box::new(std::io::BufReader::new(file)))
    }
}

/// [`read`] taking at most `limits` of `input`: what a replay does with a trace it is
/// given, so a file larger than the host's memory, or one endless line, is refused after a
/// bounded read.
pub fn read_with(input: impl BufRead, limits: &Limits) -> Result<Trace, TraceError> {
    let mut lines = Lines::new(input, *limits);
    let first = lines.next_line()?.ok_or(TraceError::Empty)?;
    let header = read_header(&first)?;
    check_header_bounds(&header, limits)?;
    let mut trace = Trace {
        header,
        initial: Vec::new(),
        calls: Vec::new(),
    };
    while let Some(line) = lines.next_line()? {
        let line_no = lines.line_no;
        let entry: Entry = serde_json::from_str(&line).map_err(|e| TraceError::Syntax {
            line: line_no,
            message: e.to_string(),
        })?;
        match entry {
            Entry::Initial(_) if !trace.calls.is_empty() => {
                return Err(invalid(line_no, "an initial entry after the calls began"));
            }
            Entry::Initial(initial) => {
                check_path(line_no, &initial.path)?;
                check_initial_size(line_no, initial.size)?;
                if let Some(data) = &initial.data {
                    super::holes::check(initial.size, data)
                        .map_err(|what| bound_error(line_no, what))?;
                }
                trace.initial.push(initial);
            }
            Entry::Call(call) => {
                check_call(line_no, &call, trace.header.threads)?;
                trace.calls.push(call);
            }
        }
    }
    check_counts(&trace)?;
    Ok(trace)
}

/// A trace's header alone, checked and bounded as [`read_with`] checks it: what a caller
/// that needs only the header's figures (the recorded threads) reads, without the calls.
pub fn read_header_only(input: impl BufRead) -> Result<Header, TraceError> {
    let limits = Limits::default();
    let mut lines = Lines::new(input, limits);
    let first = lines.next_line()?.ok_or(TraceError::Empty)?;
    let header = read_header(&first)?;
    check_header_bounds(&header, &limits)?;
    Ok(header)
}

/// Writes a trace: the header, then its entries, one per line.
pub fn write(trace: &Trace, mut out: impl Write) -> std::io::Result<()> {
    writeln!(out, "{}", serde_json::to_string(&trace.header)?)?;
    for initial in &trace.initial {
        writeln!(
            out,
            "{}",
            serde_json::to_string(&Entry::Initial(initial.clone()))?
        )?;
    }
    for call in &trace.calls {
        writeln!(
            out,
            "{}",
            serde_json::to_string(&Entry::Call(call.clone()))?
        )?;
    }
    out.flush()
}

/// The header, its version read before the rest so a newer trace gets the version message,
/// not a field's.
fn read_header(line: &str) -> Result<Header, TraceError> {
    #[derive(Deserialize)]
    struct Version {
        fstrace: u32,
    }
    let syntax = |e: serde_json::Error| TraceError::Syntax {
        line: 1,
        message: e.to_string(),
    };
    let version: Version = serde_json::from_str(line).map_err(syntax)?;
    if version.fstrace != VERSION {
        return Err(TraceError::Version {
            found: version.fstrace,
            reads: VERSION,
        });
    }
    let header: Header = serde_json::from_str(line).map_err(syntax)?;
    if let Some(o) = header.strace_overhead {
        if !(o.call_s.is_finite() && o.call_s >= 0.0 && o.gap_s.is_finite() && o.gap_s >= 0.0) {
            return Err(invalid(
                1,
                "strace_overhead: seconds must be finite and not negative",
            ));
        }
    }
    Ok(header)
}

fn check_call(line: u64, call: &Call, threads: u32) -> Result<(), TraceError> {
    if call.thread >= threads {
        return Err(invalid(
            line,
            &format!("thread {} of a trace of {threads}", call.thread),
        ));
    }
    if call.ret.is_some() == call.err.is_some() {
        return Err(invalid(line, "a call needs exactly one of `ret` and `err`"));
    }
    check_call_bounds(line, call)?;
    for path in [&call.path, &call.path2].into_iter().flatten() {
        check_path(line, path)?;
    }
    Ok(())
}

/// A path a replay may use: relative, `/`-separated, without `..` or `.` parts; or the root
/// itself ([`ROOT`]).
fn check_path(line: u64, path: &str) -> Result<(), TraceError> {
    let fine = path == ROOT
        || !path.is_empty()
            && Path::new(path)
                .components()
                .all(|c| matches!(c, Component::Normal(_)));
    if fine {
        Ok(())
    } else {
        Err(invalid(
            line,
            &format!("path {path:?} is not inside the root (absolute, empty or with ..)"),
        ))
    }
}

fn check_counts(trace: &Trace) -> Result<(), TraceError> {
    let pairs = [
        (
            "initial entries",
            trace.header.initial,
            trace.initial.len() as u64,
        ),
        ("calls", trace.header.calls, trace.calls.len() as u64),
    ];
    for (what, expected, found) in pairs {
        if expected != found {
            return Err(TraceError::Truncated {
                what,
                expected,
                found,
            });
        }
    }
    Ok(())
}

fn invalid(line: u64, what: &str) -> TraceError {
    TraceError::Invalid {
        line,
        what: what.to_string(),
    }
}

/// A file's size in the initial state: at most [`MAX_OFFSET`] (the file system's own size
/// is checked against the whole state before provisioning).
fn check_initial_size(line: u64, size: Option<u64>) -> Result<(), TraceError> {
    match size {
        Some(s) if s > MAX_OFFSET => Err(bound_error(
            line,
            format!("`size` {s}: larger than any file Linux can hold (2^63 - 1)"),
        )),
        _ => Ok(()),
    }
}

/// A call's times and numbers. A request (`size` of a read or write) may be anything the
/// kernel accepts — `cp` asks copy_file_range for 2^63 bytes and gets what the file holds
/// — but what a call moved (`ret`) is at most [`MAX_RW_COUNT`], ranges end within
/// [`MAX_OFFSET`], and a descriptor is a non-negative `int`.
fn check_call_bounds(line: u64, call: &Call) -> Result<(), TraceError> {
    seconds(line, "start", call.start)?;
    seconds(line, "dur", call.dur)?;
    for (field, v) in [("size", call.size), ("offset", call.offset)] {
        if let Some(v) = v.filter(|v| *v > MAX_OFFSET) {
            return Err(bound_error(
                line,
                format!("`{field}` {v}: larger than any file offset Linux takes (2^63 - 1)"),
            ));
        }
    }
    if let Some(fd) = call.fd.filter(|fd| *fd < 0) {
        return Err(bound_error(line, format!("`fd` {fd}: not a descriptor")));
    }
    if let Some(source) = &call.source {
        check_source(line, source, call.size.unwrap_or(0))?;
    }
    let Some(ret) = call.ret else { return Ok(()) };
    let most = match call.op {
        Op::Read | Op::Write | Op::Getdents => MAX_RW_COUNT,
        Op::Open => i32::MAX as u64,
        _ => MAX_OFFSET,
    };
    if ret < 0 || ret as u64 > most {
        return Err(bound_error(
            line,
            format!(
                "`ret` {ret} of {}: a successful call returns 0 to {most}",
                call.syscall
            ),
        ));
    }
    let moved = match call.op {
        Op::Read | Op::Write => ret as u64,
        _ => call.size.unwrap_or(0),
    };
    if let Some(off) = call.offset {
        if !matches!(off.checked_add(moved), Some(end) if end <= MAX_OFFSET) {
            return Err(bound_error(
                line,
                format!("`offset` {off} + {moved} bytes: past the largest file offset (2^63 - 1)"),
            ));
        }
    }
    Ok(())
}

/// A clone's source: a descriptor, and a range that ends within [`MAX_OFFSET`].
fn check_source(line: u64, source: &Source, len: u64) -> Result<(), TraceError> {
    if source.fd < 0 {
        return Err(bound_error(
            line,
            format!("`source.fd` {}: not a descriptor", source.fd),
        ));
    }
    if let Some(off) = source.offset {
        if !matches!(off.checked_add(len), Some(end) if end <= MAX_OFFSET) {
            return Err(bound_error(
                line,
                format!(
                    "`source.offset` {off} + {len} bytes: past the largest file offset (2^63 - 1)"
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
