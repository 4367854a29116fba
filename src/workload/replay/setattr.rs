//! Changes of a file's mode, owner or times, replayed on the path or the descriptor the
//! trace names. The mode and the ids are the recorded ones; times are set to the replay's
//! now, as the kernel's work (an inode change, journaled like the program's) does not
//! depend on them and no later call's result does either.

use std::os::fd::OwnedFd;

use rustix::fs::{AtFlags, Gid, Mode, Timespec, Timestamps, Uid, UTIME_NOW};

use crate::trace::format::Call;

/// What a call returned: 0, or the errno (`super::call::Returned`'s shape).
type Returned = Result<i64, i32>;

/// What the call changes, by the system call's name.
enum Change {
    Mode(Mode),
    Owner(Option<Uid>, Option<Gid>),
    Times,
}

fn change(call: &Call) -> Change {
    if call.syscall.contains("chmod") {
        Change::Mode(Mode::from_raw_mode(call.mode.unwrap_or(0o644)))
    } else if call.syscall.contains("chown") {
        // -1 leaves an id as it is; so does an id the trace does not hold.
        let id = |i: usize| {
            call.owner
                .and_then(|o| u32::try_from(o[i]).ok())
                .filter(|&n| n != u32::MAX)
        };
        Change::Owner(id(0).map(Uid::from_raw), id(1).map(Gid::from_raw))
    } else {
        Change::Times
    }
}

fn now() -> Timestamps {
    let now = Timespec {
        tv_sec: 0,
        tv_nsec: UTIME_NOW,
    };
    Timestamps {
        last_access: now,
        last_modification: now,
    }
}

fn done(r: rustix::io::Result<()>) -> Returned {
    r.map(|_| 0).map_err(|e| e.raw_os_error())
}

/// The change on `path`, relative to `root`; a recorded `AT_SYMLINK_NOFOLLOW` (or `lchown`)
/// changes a symlink itself.
pub fn on_path(root: &OwnedFd, call: &Call, path: &str) -> Returned {
    let flags = if call.flags.iter().any(|f| f == "AT_SYMLINK_NOFOLLOW") {
        AtFlags::SYMLINK_NOFOLLOW
    } else {
        AtFlags::empty()
    };
    done(match change(call) {
        Change::Mode(mode) => rustix::fs::chmodat(root, path, mode, flags),
        Change::Owner(uid, gid) => rustix::fs::chownat(root, path, uid, gid, flags),
        Change::Times => rustix::fs::utimensat(root, path, &now(), flags),
    })
}

/// The change on an open file.
pub fn on_fd(fd: &OwnedFd, call: &Call) -> Returned {
    done(match change(call) {
        Change::Mode(mode) => rustix::fs::fchmod(fd, mode),
        Change::Owner(uid, gid) => rustix::fs::fchown(fd, uid, gid),
        Change::Times => rustix::fs::futimens(fd, &now()),
    })
}
