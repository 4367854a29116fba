//! What each system call is, before its names are placed: its operation, what it names (a
//! path against a directory descriptor, a descriptor, two paths, nothing) and the arguments
//! a replay needs. Kept apart from the converter, which places the names against the root
//! and the processes' descriptors, so that reading strace's argument shapes stays in one
//! place.

use crate::trace::format::Op;
use crate::trace::strace::{Arg, Fd, Ret, Syscall};

/// What a call names.
pub(super) enum Target {
    Path(Option<Fd>, String),
    Fd(Fd),
    TwoPaths(Option<Fd>, String, Option<Fd>, String),
    /// Nothing: `sync`, which writes back every file system.
    Nothing,
}

/// A call's operation and arguments, before its names are placed.
pub(super) struct Shape {
    pub(super) op: Op,
    pub(super) target: Target,
    pub(super) flags: Vec<String>,
    pub(super) mode: Option<u32>,
    pub(super) size: Option<u64>,
    pub(super) offset: Option<u64>,
    pub(super) link_text: Option<String>,
    pub(super) owner: Option<[i64; 2]>,
    /// A clone's source descriptor, and the range's offset in it.
    pub(super) source: Option<(Fd, Option<u64>)>,
}

impl Shape {
    pub(super) fn new(op: Op, target: Target) -> Shape {
        Shape {
            op,
            target,
            flags: Vec::new(),
            mode: None,
            size: None,
            offset: None,
            link_text: None,
            owner: None,
            source: None,
        }
    }
}

/// A clone's flags: `flags=…` of clone, the struct's `flags` of clone3.
pub(super) fn clone_flags(sc: &Syscall) -> Vec<String> {
    let from_clone = sc
        .args
        .iter()
        .find_map(|a| a.0.strip_prefix("flags=").map(|f| Arg(f.to_string())));
    let from_clone3 = || sc.args.first().and_then(|a| a.field("flags"));
    from_clone
        .or_else(from_clone3)
        .map(|a| a.flags())
        .unwrap_or_default()
}

/// The records a call makes: none for a call the trace does not hold, two for a copy
/// between descriptors (its read and its write).
pub(super) fn describe(sc: &Syscall) -> Vec<Shape> {
    let name = sc.name.as_str();
    let shape = match name {
        "open" | "openat" | "openat2" | "creat" => describe_open(sc),
        "copy_file_range" | "sendfile" | "sendfile64" | "splice" => return describe_copy(sc),
        "sync" => Some(Shape::new(Op::Sync, Target::Nothing)),
        "dup" | "dup2" | "dup3" => describe_dup(sc),
        "chmod" | "fchmod" | "fchmodat" | "fchmodat2" | "chown" | "lchown" | "fchown"
        | "fchownat" | "utime" | "utimes" | "futimesat" | "utimensat" => describe_setattr(sc),
        // fcntl both copies descriptors (F_DUPFD*) and takes record locks (F_SETLK*).
        "fcntl" | "fcntl64" => describe_dup(sc).or_else(|| describe_attrs(sc)),
        "ioctl" => describe_clone(sc),
        _ => describe_io(sc)
            .or_else(|| describe_names(sc))
            .or_else(|| describe_attrs(sc)),
    };
    shape.into_iter().collect()
}

fn fd_at(sc: &Syscall, i: usize) -> Option<Fd> {
    sc.args.get(i)?.fd()
}

fn string_at(sc: &Syscall, i: usize) -> Option<String> {
    sc.args.get(i)?.string()
}

pub(super) fn u64_at(sc: &Syscall, i: usize) -> Option<u64> {
    sc.args.get(i)?.int()?.try_into().ok()
}

/// The bytes a vector call moved (strace's `-s 0` hides its iovec lengths).
fn moved(sc: &Syscall) -> Option<u64> {
    match sc.ret {
        Ret::Value(v, _) => v.try_into().ok(),
        _ => None,
    }
}

/// A copy of a descriptor, kept so that a replay knows the new number names the file the
/// old one does; an `fcntl` that does not copy one is not a trace's.
fn describe_dup(sc: &Syscall) -> Option<Shape> {
    let copies =
        sc.name.starts_with("dup") || sc.args.get(1).is_some_and(|a| a.0.starts_with("F_DUPFD"));
    if !copies {
        return None;
    }
    Some(Shape::new(Op::Dup, Target::Fd(fd_at(sc, 0)?)))
}

fn describe_open(sc: &Syscall) -> Option<Shape> {
    let (dir, path, flags, mode) = match sc.name.as_str() {
        "open" => (
            None,
            string_at(sc, 0)?,
            sc.args.get(1)?.flags(),
            sc.args.get(2),
        ),
        "creat" => {
            let flags = ["O_WRONLY", "O_CREAT", "O_TRUNC"]
                .map(String::from)
                .to_vec();
            (None, string_at(sc, 0)?, flags, sc.args.get(1))
        }
        "openat" => (
            Some(fd_at(sc, 0)?),
            string_at(sc, 1)?,
            sc.args.get(2)?.flags(),
            sc.args.get(3),
        ),
        _ => {
            let how = sc.args.get(2)?;
            let flags = how.field("flags")?.flags();
            let mode = how.field("mode").filter(|m| m.int() != Some(0));
            let mut shape = Shape::new(
                Op::Open,
                Target::Path(Some(fd_at(sc, 0)?), string_at(sc, 1)?),
            );
            shape.flags = flags;
            shape.mode = mode.and_then(|m| m.int()).and_then(|m| m.try_into().ok());
            return Some(shape);
        }
    };
    let mut shape = Shape::new(Op::Open, Target::Path(dir, path));
    shape.flags = flags;
    shape.mode = mode.and_then(Arg::int).and_then(|m| m.try_into().ok());
    Some(shape)
}

/// copy_file_range, sendfile and splice: a read of one descriptor and a write of another
/// (a pipe's end, never a file, is left out as not a file), the read first, so the replay
/// can issue a copy between two files as one call again (`workload::replay::script::copies`).
/// The size is the bytes the call moved: the length asked for may be anything (`cp` asks
/// copy_file_range for 2^62).
fn describe_copy(sc: &Syscall) -> Vec<Shape> {
    let len = moved(sc);
    let (input, in_off, output, out_off) = if sc.name == "sendfile" || sc.name == "sendfile64" {
        (fd_at(sc, 1), sc.args.get(2), fd_at(sc, 0), None)
    } else {
        (fd_at(sc, 0), sc.args.get(1), fd_at(sc, 2), sc.args.get(3))
    };
    let mut shapes = Vec::new();
    for (op, fd, offset) in [(Op::Read, input, in_off), (Op::Write, output, out_off)] {
        if let Some(fd) = fd {
            let mut shape = Shape::new(op, Target::Fd(fd));
            shape.size = len;
            shape.offset = offset.and_then(Arg::offset);
            shapes.push(shape);
        }
    }
    shapes
}

/// The request of an ioctl as strace names it: `FICLONE` where it prints the alias
/// `BTRFS_IOC_CLONE or FICLONE`, the number where it knows no name.
pub(super) fn ioctl_request(sc: &Syscall) -> Option<String> {
    let text = &sc.args.get(1)?.0;
    Some(text.rsplit(" or ").next().unwrap_or(text).to_string())
}

/// An ioctl that shares a file's extents with another's: `FICLONE` (the whole source, its
/// descriptor the third argument) and `FICLONERANGE` (a struct naming the source, its
/// range and where it goes). Other ioctls are no trace's calls (`Converter` counts those
/// on files under the root). `FIDEDUPERANGE` is not among them: strace's `-s 0` prints its
/// destinations as `info=[...]`, so the file it shares extents with is not in the line.
fn describe_clone(sc: &Syscall) -> Option<Shape> {
    let dst = fd_at(sc, 0)?;
    let mut shape = Shape::new(Op::Clone, Target::Fd(dst));
    match ioctl_request(sc)?.as_str() {
        "FICLONE" => shape.source = Some((fd_at(sc, 2)?, None)),
        "FICLONERANGE" => {
            let range = sc.args.get(2)?;
            let field = |name: &str| -> Option<u64> { range.field(name)?.int()?.try_into().ok() };
            shape.source = Some((range.field("src_fd")?.fd()?, Some(field("src_offset")?)));
            shape.size = Some(field("src_length")?);
            shape.offset = Some(field("dest_offset")?);
        }
        _ => return None,
    }
    Some(shape)
}

/// Calls on a descriptor.
fn describe_io(sc: &Syscall) -> Option<Shape> {
    let name = sc.name.as_str();
    let (op, size, offset) = match name {
        "read" | "write" => (rw(name), u64_at(sc, 2), None),
        "pread64" | "pwrite64" => (rw(name), u64_at(sc, 2), u64_at(sc, 3)),
        "readv" | "writev" => (rw(name), moved(sc), None),
        "preadv" | "pwritev" => (rw(name), moved(sc), u64_at(sc, 3)),
        // RWF_DSYNC, RWF_SYNC, RWF_APPEND… change what the call does: kept as its flags.
        "preadv2" | "pwritev2" => {
            let mut shape = Shape::new(rw(name), Target::Fd(fd_at(sc, 0)?));
            shape.size = moved(sc);
            shape.offset = u64_at(sc, 3);
            shape.flags = sc.args.get(4).map(Arg::flags).unwrap_or_default();
            shape.flags.retain(|f| f != "0");
            return Some(shape);
        }
        "close" => (Op::Close, None, None),
        "fsync" => (Op::Fsync, None, None),
        "fdatasync" => (Op::Fdatasync, None, None),
        "sync_file_range" => {
            let mut shape = Shape::new(Op::SyncFileRange, Target::Fd(fd_at(sc, 0)?));
            shape.offset = u64_at(sc, 1);
            shape.size = u64_at(sc, 2);
            shape.flags = sc.args.get(3).map(Arg::flags).unwrap_or_default();
            return Some(shape);
        }
        "syncfs" => (Op::Syncfs, None, None),
        "lseek" => {
            let mut shape = Shape::new(Op::Seek, Target::Fd(fd_at(sc, 0)?));
            shape.offset = u64_at(sc, 1);
            shape.flags = sc.args.get(2).map(Arg::flags).unwrap_or_default();
            return Some(shape);
        }
        "fstat" | "fstat64" => (Op::Stat, None, None),
        "getdents" | "getdents64" => (Op::Getdents, u64_at(sc, 2), None),
        "ftruncate" | "ftruncate64" => (Op::Truncate, u64_at(sc, 1), None),
        "fallocate" => {
            let mut shape = Shape::new(Op::Fallocate, Target::Fd(fd_at(sc, 0)?));
            shape.mode = sc.args.get(1).map(falloc_mode);
            shape.offset = u64_at(sc, 2);
            shape.size = u64_at(sc, 3);
            return Some(shape);
        }
        _ => return None,
    };
    let mut shape = Shape::new(op, Target::Fd(fd_at(sc, 0)?));
    shape.size = size;
    shape.offset = offset;
    Some(shape)
}

fn rw(name: &str) -> Op {
    if name.contains("read") {
        Op::Read
    } else {
        Op::Write
    }
}

/// fallocate's mode: `0`, or `FALLOC_FL_…` names joined by `|`.
fn falloc_mode(arg: &Arg) -> u32 {
    arg.flags()
        .iter()
        .map(|f| match f.as_str() {
            "FALLOC_FL_KEEP_SIZE" => 0x01,
            "FALLOC_FL_PUNCH_HOLE" => 0x02,
            "FALLOC_FL_NO_HIDE_STALE" => 0x04,
            "FALLOC_FL_COLLAPSE_RANGE" => 0x08,
            "FALLOC_FL_ZERO_RANGE" => 0x10,
            "FALLOC_FL_INSERT_RANGE" => 0x20,
            "FALLOC_FL_UNSHARE_RANGE" => 0x40,
            other => Arg(other.to_string()).int().unwrap_or(0) as u32,
        })
        .fold(0, |a, b| a | b)
}

/// Calls on names: the stat family, directories, unlink, rename, links, truncate.
fn describe_names(sc: &Syscall) -> Option<Shape> {
    let path = |i| string_at(sc, i);
    let at = |d, p| Some(Target::Path(Some(fd_at(sc, d)?), path(p)?));
    let flags_at = |i: usize| sc.args.get(i).map(Arg::flags).unwrap_or_default();
    let (op, target) = match sc.name.as_str() {
        "stat" | "lstat" | "stat64" | "lstat64" | "access" => {
            (Op::Stat, Target::Path(None, path(0)?))
        }
        "newfstatat" | "fstatat64" | "statx" => {
            let flag_arg = if sc.name == "statx" { 2 } else { 3 };
            let empty =
                path(1)?.is_empty() && flags_at(flag_arg).iter().any(|f| f == "AT_EMPTY_PATH");
            let target = if empty {
                Target::Fd(fd_at(sc, 0)?)
            } else {
                at(0, 1)?
            };
            (Op::Stat, target)
        }
        "faccessat" | "faccessat2" => (Op::Stat, at(0, 1)?),
        "mkdir" => (Op::Mkdir, Target::Path(None, path(0)?)),
        "mkdirat" => (Op::Mkdir, at(0, 1)?),
        "rmdir" => (Op::Rmdir, Target::Path(None, path(0)?)),
        "unlink" => (Op::Unlink, Target::Path(None, path(0)?)),
        "unlinkat" if flags_at(2).iter().any(|f| f == "AT_REMOVEDIR") => (Op::Rmdir, at(0, 1)?),
        "unlinkat" => (Op::Unlink, at(0, 1)?),
        "truncate" | "truncate64" => (Op::Truncate, Target::Path(None, path(0)?)),
        "rename" | "link" => (two_op(sc), Target::TwoPaths(None, path(0)?, None, path(1)?)),
        "renameat" | "renameat2" | "linkat" => {
            let target =
                Target::TwoPaths(Some(fd_at(sc, 0)?), path(1)?, Some(fd_at(sc, 2)?), path(3)?);
            let mut shape = Shape::new(two_op(sc), target);
            // RENAME_NOREPLACE, RENAME_EXCHANGE, RENAME_WHITEOUT change the rename's effect.
            if sc.name == "renameat2" {
                shape.flags = flags_at(4);
                shape.flags.retain(|f| f != "0");
            }
            return Some(shape);
        }
        "symlink" | "symlinkat" => {
            let target = if sc.name == "symlink" {
                Target::Path(None, path(1)?)
            } else {
                at(1, 2)?
            };
            let mut shape = Shape::new(Op::Symlink, target);
            shape.link_text = Some(path(0)?);
            return Some(shape);
        }
        _ => return None,
    };
    let mut shape = Shape::new(op, target);
    match op {
        Op::Mkdir => {
            let i = if sc.name == "mkdir" { 1 } else { 2 };
            shape.mode = sc
                .args
                .get(i)
                .and_then(Arg::int)
                .and_then(|m| m.try_into().ok());
        }
        Op::Truncate => shape.size = u64_at(sc, 1),
        // Whether a stat follows a symlink decides its result on a dangling one (git probes
        // symlink support with one), so a replay must make the same choice.
        Op::Stat => {
            let i = if sc.name == "statx" { 2 } else { 3 };
            shape.flags = flags_at(i)
                .into_iter()
                .filter(|f| f == "AT_SYMLINK_NOFOLLOW")
                .collect();
        }
        _ => {}
    }
    Some(shape)
}

/// Extended attributes and advisory locks. strace's `-s 0` hides an attribute's name (it
/// prints it as a string, not a path), so a trace holds its value's size and not its name.
fn describe_attrs(sc: &Syscall) -> Option<Shape> {
    let name = sc.name.as_str();
    let on = |i: usize| -> Option<Target> {
        if name.starts_with('f') {
            Some(Target::Fd(fd_at(sc, i)?))
        } else {
            Some(Target::Path(None, string_at(sc, i)?))
        }
    };
    let (op, size) = match name {
        "setxattr" | "lsetxattr" | "fsetxattr" => (Op::Setxattr, u64_at(sc, 3)),
        "getxattr" | "lgetxattr" | "fgetxattr" => (Op::Getxattr, u64_at(sc, 3)),
        "listxattr" | "llistxattr" | "flistxattr" => (Op::Getxattr, u64_at(sc, 2)),
        "removexattr" | "lremovexattr" | "fremovexattr" => (Op::Removexattr, None),
        "flock" => {
            let mut shape = Shape::new(Op::Lock, Target::Fd(fd_at(sc, 0)?));
            shape.flags = sc.args.get(1)?.flags();
            return Some(shape);
        }
        "fcntl" | "fcntl64" => return describe_fcntl_lock(sc),
        _ => return None,
    };
    let mut shape = Shape::new(op, on(0)?);
    shape.size = size;
    Some(shape)
}

/// fcntl's record locks (`F_SETLK`, `F_SETLKW`, `F_OFD_SETLK*`): the command, the lock's
/// type (`F_WRLCK`, `F_RDLCK`, `F_UNLCK`) and whence (`SEEK_SET`…) in `flags`, its start in
/// `offset` and its length in `size` (0: to the file's end), so the replay locks the range
/// the program locked. A negative start or length (a range before the whence's point) is
/// not kept: the replay's lock then runs from that point. Other fcntl commands are no file
/// I/O.
fn describe_fcntl_lock(sc: &Syscall) -> Option<Shape> {
    let cmd = sc.args.get(1)?.0.clone();
    if !matches!(
        cmd.as_str(),
        "F_SETLK" | "F_SETLKW" | "F_SETLK64" | "F_SETLKW64" | "F_OFD_SETLK" | "F_OFD_SETLKW"
    ) {
        return None;
    }
    let mut shape = Shape::new(Op::Lock, Target::Fd(fd_at(sc, 0)?));
    let field = |name: &str| sc.args.get(2).and_then(|a| a.field(name));
    let named = ["l_type", "l_whence"].into_iter().filter_map(&field);
    shape.flags = std::iter::once(cmd).chain(named.map(|k| k.0)).collect();
    let number = |name: &str| field(name).and_then(|a| a.int());
    shape.offset = number("l_start").and_then(|n| u64::try_from(n).ok());
    shape.size = number("l_len").and_then(|n| u64::try_from(n).ok());
    Some(shape)
}

/// A change of a file's mode, owner or times. The `…at` calls name a path against a
/// directory descriptor, or (an empty path with `AT_EMPTY_PATH`, utimensat's `NULL`) the
/// descriptor's own file; `f…` calls a descriptor; the others a path.
fn describe_setattr(sc: &Syscall) -> Option<Shape> {
    let name = sc.name.as_str();
    let at = name.ends_with("at") || name == "fchmodat2";
    let (target, args) = if at {
        let path = sc.args.get(1)?;
        let on_fd = path.0 == "NULL" || path.string().is_some_and(|p| p.is_empty());
        let target = if on_fd {
            Target::Fd(fd_at(sc, 0)?)
        } else {
            Target::Path(Some(fd_at(sc, 0)?), path.string()?)
        };
        (target, 2)
    } else if name.starts_with('f') {
        (Target::Fd(fd_at(sc, 0)?), 1)
    } else {
        (Target::Path(None, string_at(sc, 0)?), 1)
    };
    let mut shape = Shape::new(Op::Setattr, target);
    if name.contains("chmod") {
        shape.mode = sc.args.get(args)?.int()?.try_into().ok();
    } else if name.contains("chown") {
        let id = |i: usize| sc.args.get(i).and_then(Arg::int);
        shape.owner = Some([id(args)?, id(args + 1)?]);
    }
    // The flags follow the mode (fchmodat2), the ids (fchownat) or the times (utimensat).
    let flag_at = match name {
        "fchmodat2" => Some(3),
        "fchownat" => Some(4),
        "utimensat" => Some(3),
        _ => None,
    };
    shape.flags = flag_at
        .and_then(|i| sc.args.get(i))
        .map(Arg::flags)
        .unwrap_or_default();
    shape.flags.retain(|f| f == "AT_SYMLINK_NOFOLLOW");
    if name == "lchown" {
        shape.flags.push("AT_SYMLINK_NOFOLLOW".into());
    }
    Some(shape)
}

fn two_op(sc: &Syscall) -> Op {
    if sc.name.starts_with("rename") {
        Op::Rename
    } else {
        Op::Link
    }
}

/// Whether an `mmap`'s protection and flags let the program's stores reach the file: a
/// shared, writable mapping (`super::maps` follows those to their `msync`s).
pub(super) fn maps_shared_writable(sc: &Syscall) -> bool {
    let has = |i: usize, f: &str| {
        sc.args
            .get(i)
            .is_some_and(|a| a.flags().iter().any(|x| x == f))
    };
    (has(3, "MAP_SHARED") || has(3, "MAP_SHARED_VALIDATE")) && has(2, "PROT_WRITE")
}

/// A successful `mmap` of a file that the program's stores cannot reach (read-only, or
/// private) and whose pages it can load: the range it maps, as a [`Op::MapRead`] of its
/// descriptor. A shared, writable mapping is not one (its `msync`s are the trace's), nor is
/// a `PROT_NONE` reservation, nor an anonymous mapping (no descriptor).
pub(super) fn describe_mmap(sc: &Syscall) -> Option<Shape> {
    let fd = fd_at(sc, 4).filter(|f| f.num >= 0)?;
    let prot = sc.args.get(2)?.flags();
    if matches!(sc.ret, Ret::Err(_)) || maps_shared_writable(sc) || prot == ["PROT_NONE"] {
        return None;
    }
    let mut shape = Shape::new(Op::MapRead, Target::Fd(fd));
    shape.size = u64_at(sc, 1);
    shape.offset = Some(u64_at(sc, 5).unwrap_or(0));
    shape.flags = prot
        .into_iter()
        .chain(sc.args.get(3).map(Arg::flags).unwrap_or_default())
        .collect();
    Some(shape)
}

/// The size a successful stat printed of a regular file: `st_size` of stat's struct,
/// `stx_size` of statx's (strace prints both abbreviated, these fields included).
pub(super) fn stat_size(sc: &Syscall) -> Option<u64> {
    if !matches!(sc.ret, Ret::Value(..)) {
        return None;
    }
    sc.args
        .iter()
        .filter(|a| a.0.starts_with('{'))
        .find_map(|a| {
            let mode = a.field("st_mode").or_else(|| a.field("stx_mode"))?;
            if !mode.0.starts_with("S_IFREG") {
                return None;
            }
            let size = a.field("st_size").or_else(|| a.field("stx_size"))?;
            size.int()?.try_into().ok()
        })
}
