//! Directory file descriptors for the `*at` system calls the tree workloads use: opening a
//! directory once and resolving names relative to it keeps path lookups out of the
//! measured loops, as the fast peer tools do.

use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{Mode, OFlags};

use super::error::WorkloadError;

/// Opens a directory for `*at` calls.
pub fn open_dir(path: &Path) -> Result<OwnedFd, WorkloadError> {
    rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| WorkloadError::io(format!("opening {}", path.display()), e.into()))
}

/// Opens `rel` (empty = the root itself, `None`) under `root_fd` as a directory, without
/// following a symbolic link in its last component.
pub fn open_rel_dir(root_fd: &OwnedFd, rel: &Path) -> std::io::Result<Option<OwnedFd>> {
    if rel.as_os_str().is_empty() {
        return Ok(None);
    }
    rustix::fs::openat(
        root_fd,
        rel,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::empty(),
    )
    .map(Some)
    .map_err(Into::into)
}

/// A relative path as a C string for `openat`; manifest paths never hold NUL.
pub fn c_path(rel: &str) -> Result<CString, WorkloadError> {
    CString::new(rel).map_err(|_| WorkloadError::Verify(format!("path with NUL byte: {rel:?}")))
}
