//! [`FioError`], the one error of the driver, below every file that returns it.

use std::io;

/// The Debian package that provides the `fio` binary, named in "not installed" errors.
pub const PACKAGE: &str = "fio";

/// Why driving fio did not give a trustworthy report. Typed so the caller can map each case
/// to its own status (a missing tool, a full disk, a lie, a cancel).
#[derive(Debug, thiserror::Error)]
pub enum FioError {
    /// No `fio` binary: say which package provides it.
    #[error(
        "fio is not installed (no `fio` in PATH); install the Debian package `{PACKAGE}` \
         (apt-get install {PACKAGE})"
    )]
    NotInstalled,
    /// An OS error: starting or reading fio, or the errno fio reported for a job (so ENOSPC
    /// and EIO keep their meaning).
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
    /// fio ran but said something we cannot read (no report, a broken report, a crash).
    #[error("{0}")]
    Tool(String),
    /// fio's own accounting disagrees with the job it was given: the numbers would lie.
    #[error("{0}")]
    Verify(String),
    /// The caller's cancel hook asked to stop; fio was killed and reaped.
    #[error("stopped by the caller")]
    Cancelled,
}

impl FioError {
    /// Wraps an I/O error with what was being done.
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        FioError::Io {
            context: context.into(),
            source,
        }
    }
}
