//! Extended attributes, replayed. strace's `-s 0` hides an attribute's name, so every
//! replayed attribute of a file is one name, [`NAME`]: a set writes a value of the recorded
//! size, a get or list asks with a buffer of the recorded size, a remove removes it. The
//! cost (a metadata update, a lookup) is the file system's as for the program; which name
//! a get finds is not, so [`super::check`] takes a get's, list's or remove's success or
//! `ENODATA` alike (the initial state carries no attributes either).

use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::XattrFlags;

use crate::trace::format::{Call, Op};

/// What a call returned: bytes, or the errno (`super::call::Returned`'s shape).
type Returned = Result<i64, i32>;

/// The one attribute name a replay uses, in the namespace every user may write.
pub const NAME: &str = "user.fsarena";

/// The largest value or list the kernel takes (`XATTR_SIZE_MAX`): a trace's size is cut
/// to it, so no buffer is sized by a number the kernel would refuse anyway.
const MAX: usize = 65536;

fn returned(r: rustix::io::Result<usize>) -> Returned {
    r.map(|n| n as i64).map_err(|e| e.raw_os_error())
}

/// The value or buffer length of `call`, within what the kernel takes: the caller hands
/// the functions below a buffer at least this long.
pub fn len(call: &Call) -> usize {
    (call.size.unwrap_or(0) as usize).min(MAX)
}

/// setxattr, getxattr, listxattr, removexattr and their `l` forms on `call.path`.
pub fn on_path(root: &Path, call: &Call, buf: &mut [u8]) -> Returned {
    let path = root.join(call.path.as_deref().unwrap_or_default());
    let n = len(call).min(buf.len());
    let nofollow = call.syscall.starts_with('l');
    let list = call.syscall.contains("list");
    let r = match (call.op, nofollow, list, n) {
        (Op::Setxattr, false, ..) => {
            rustix::fs::setxattr(&path, NAME, &buf[..n], XattrFlags::empty()).map(|_| 0)
        }
        (Op::Setxattr, true, ..) => {
            rustix::fs::lsetxattr(&path, NAME, &buf[..n], XattrFlags::empty()).map(|_| 0)
        }
        (Op::Getxattr, false, true, 0) => rustix::fs::listxattr_query(&path),
        (Op::Getxattr, true, true, 0) => rustix::fs::llistxattr_query(&path),
        (Op::Getxattr, false, true, _) => rustix::fs::listxattr(&path, &mut buf[..n]),
        (Op::Getxattr, true, true, _) => rustix::fs::llistxattr(&path, &mut buf[..n]),
        (Op::Getxattr, false, false, 0) => rustix::fs::getxattr_query(&path, NAME),
        (Op::Getxattr, true, false, 0) => rustix::fs::lgetxattr_query(&path, NAME),
        (Op::Getxattr, false, false, _) => rustix::fs::getxattr(&path, NAME, &mut buf[..n]),
        (Op::Getxattr, true, false, _) => rustix::fs::lgetxattr(&path, NAME, &mut buf[..n]),
        (_, false, ..) => rustix::fs::removexattr(&path, NAME).map(|_| 0),
        (_, true, ..) => rustix::fs::lremovexattr(&path, NAME).map(|_| 0),
    };
    returned(r)
}

/// fsetxattr, fgetxattr, flistxattr, fremovexattr.
pub fn on_fd(fd: &OwnedFd, call: &Call, buf: &mut [u8]) -> Returned {
    let n = len(call).min(buf.len());
    let list = call.syscall.contains("list");
    let r = match (call.op, list, n) {
        (Op::Setxattr, ..) => {
            rustix::fs::fsetxattr(fd, NAME, &buf[..n], XattrFlags::empty()).map(|_| 0)
        }
        (Op::Getxattr, true, 0) => rustix::fs::flistxattr_query(fd),
        (Op::Getxattr, true, _) => rustix::fs::flistxattr(fd, &mut buf[..n]),
        (Op::Getxattr, false, 0) => rustix::fs::fgetxattr_query(fd, NAME),
        (Op::Getxattr, false, _) => rustix::fs::fgetxattr(fd, NAME, &mut buf[..n]),
        _ => rustix::fs::fremovexattr(fd, NAME).map(|_| 0),
    };
    returned(r)
}
