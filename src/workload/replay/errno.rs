//! errno names, as a trace records a failed call's result (`"ENOENT"`), for comparing the
//! replay's own failures with the recorded ones.

/// The errnos a file-system call returns, by name. `EWOULDBLOCK` and `ENOTSUP` are the same
/// numbers as `EAGAIN` and `EOPNOTSUPP` on Linux and listed after them.
const NAMES: &[(i32, &str)] = &[
    (libc::EPERM, "EPERM"),
    (libc::ENOENT, "ENOENT"),
    (libc::EINTR, "EINTR"),
    (libc::EIO, "EIO"),
    (libc::ENXIO, "ENXIO"),
    (libc::E2BIG, "E2BIG"),
    (libc::EBADF, "EBADF"),
    (libc::EAGAIN, "EAGAIN"),
    (libc::ENOMEM, "ENOMEM"),
    (libc::EACCES, "EACCES"),
    (libc::EFAULT, "EFAULT"),
    (libc::EBUSY, "EBUSY"),
    (libc::EEXIST, "EEXIST"),
    (libc::EXDEV, "EXDEV"),
    (libc::ENODEV, "ENODEV"),
    (libc::ENOTDIR, "ENOTDIR"),
    (libc::EISDIR, "EISDIR"),
    (libc::EINVAL, "EINVAL"),
    (libc::ENFILE, "ENFILE"),
    (libc::EMFILE, "EMFILE"),
    (libc::ETXTBSY, "ETXTBSY"),
    (libc::EFBIG, "EFBIG"),
    (libc::ENOSPC, "ENOSPC"),
    (libc::ESPIPE, "ESPIPE"),
    (libc::EROFS, "EROFS"),
    (libc::EMLINK, "EMLINK"),
    (libc::ERANGE, "ERANGE"),
    (libc::ENAMETOOLONG, "ENAMETOOLONG"),
    (libc::ENOSYS, "ENOSYS"),
    (libc::ENOTEMPTY, "ENOTEMPTY"),
    (libc::ELOOP, "ELOOP"),
    (libc::ENODATA, "ENODATA"),
    (libc::EOVERFLOW, "EOVERFLOW"),
    (libc::EOPNOTSUPP, "EOPNOTSUPP"),
    (libc::EDQUOT, "EDQUOT"),
    (libc::ESTALE, "ESTALE"),
    (libc::EWOULDBLOCK, "EWOULDBLOCK"),
    (libc::ENOTSUP, "ENOTSUP"),
];

/// The name of errno `code` (`E123` for one not listed).
pub fn name(code: i32) -> String {
    NAMES
        .iter()
        .find(|(c, _)| *c == code)
        .map_or_else(|| format!("E{code}"), |(_, n)| (*n).to_string())
}

/// Whether the replay's errno `code` is the recorded `name` (aliases count as equal).
pub fn matches(code: i32, name: &str) -> bool {
    NAMES.iter().any(|(c, n)| *c == code && *n == name) || format!("E{code}") == name
}

/// Whether errno `code` says the file system does not do the call at all (EOPNOTSUPP, which
/// is ENOTSUP; ENOSYS): ntfs-3g's and exfat-fuse's answer to fallocate.
pub fn unsupported(code: i32) -> bool {
    code == libc::EOPNOTSUPP || code == libc::ENOSYS
}
