//! A recorded advisory lock (flock, fcntl's record and open-file-description locks) issued
//! again on the replayed descriptor, with the recorded kind and range, never waiting.
//!
//! The program's locks cost it calls, and on a FUSE file system or NFS a round trip each
//! (sqlite in WAL mode makes 1,247 of them); an ordering point alone cost nothing. Every lock
//! is issued non-blocking (`LOCK_NB`, `F_SETLK`, `F_OFD_SETLK`), so the replay never hangs on
//! one: the waits between threads (`super::deps`) already keep the recorded order around it.
//! The replay's threads are one process, where POSIX (`F_SETLK`) locks never conflict; flock
//! and OFD locks belong to an open file and can conflict between two of the replay's
//! descriptors as they did between the program's. A lock the target refuses (EAGAIN, or
//! EACCES, where another holds it; ENOLCK, EINVAL or EOPNOTSUPP where the file system keeps
//! no locks) is the call's result there: counted by the self-check, never a divergence.

use std::os::fd::{AsRawFd, OwnedFd};

use crate::trace::format::Call;

/// What a lock returned: 0, or the errno (`super::call::Returned`'s shape, which is issued
/// from there: this file sits below `call`).
type Returned = Result<i64, i32>;

/// Issues the lock `call` recorded on `fd`: 0, or the errno.
pub fn issue(fd: &OwnedFd, call: &Call) -> Returned {
    let has = |name: &str| call.flags.iter().any(|f| f == name);
    if call.syscall == "flock" {
        let op = if has("LOCK_UN") {
            libc::LOCK_UN
        } else if has("LOCK_SH") {
            libc::LOCK_SH | libc::LOCK_NB
        } else {
            libc::LOCK_EX | libc::LOCK_NB
        };
        // SAFETY: a valid descriptor and a plain integer.
        return result(unsafe { libc::flock(fd.as_raw_fd(), op) });
    }
    let cmd = if has("F_OFD_SETLK") || has("F_OFD_SETLKW") {
        libc::F_OFD_SETLK
    } else {
        libc::F_SETLK
    };
    let l_type = if has("F_UNLCK") {
        libc::F_UNLCK
    } else if has("F_RDLCK") {
        libc::F_RDLCK
    } else {
        libc::F_WRLCK
    };
    let whence = if has("SEEK_CUR") {
        libc::SEEK_CUR
    } else if has("SEEK_END") {
        libc::SEEK_END
    } else {
        libc::SEEK_SET
    };
    // The trace's numbers are bounded by a signed 64-bit offset when it is read.
    let signed = |n: Option<u64>| i64::try_from(n.unwrap_or(0)).unwrap_or(i64::MAX);
    // SAFETY: all-zero is a valid `flock` (and the `l_pid` an OFD lock must leave 0).
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = l_type as libc::c_short;
    lock.l_whence = whence as libc::c_short;
    lock.l_start = signed(call.offset) as libc::off_t;
    lock.l_len = signed(call.size) as libc::off_t;
    // SAFETY: a valid descriptor and a `flock` the kernel reads for the command's duration.
    result(unsafe { libc::fcntl(fd.as_raw_fd(), cmd, &lock) })
}

fn result(r: libc::c_int) -> Returned {
    if r < 0 {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    } else {
        Ok(0)
    }
}

/// Whether errno `code` is a lock refused, not a lock misissued: held by another open file
/// (EAGAIN, which is EWOULDBLOCK; fcntl may say EACCES), or no locks on this file system
/// (ENOLCK, EINVAL, EOPNOTSUPP).
pub fn refused(code: i32) -> bool {
    [
        libc::EAGAIN,
        libc::EACCES,
        libc::ENOLCK,
        libc::EINVAL,
        libc::EOPNOTSUPP,
    ]
    .contains(&code)
}

/// Whether the replay's lock ended as the program's may have here: taken or refused (a lock
/// the program was refused, by a process outside the trace, may be free here; one it took may
/// be held here by another of the replay's open files, or the file system may keep none), or
/// failing with the recorded errno.
pub fn alike(call: &Call, r: &Returned) -> bool {
    let refused_name = |name: &str| {
        [
            "EAGAIN",
            "EWOULDBLOCK",
            "EACCES",
            "ENOLCK",
            "EINVAL",
            "EOPNOTSUPP",
        ]
        .contains(&name)
    };
    match (&call.err, r) {
        (None, _) => r.is_ok() || r.is_err_and(refused),
        (Some(name), Ok(_)) => refused_name(name),
        (Some(name), Err(code)) => refused(*code) || super::errno::matches(*code, name),
    }
}
