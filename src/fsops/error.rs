//! [`FsError`], the one error of the primitives, below every file that returns it.

use std::io;
use std::path::{Path, PathBuf};

/// An OS error with the operation and path it happened on. The `source` keeps its raw OS
/// error, so ENOSPC and EIO are still recognisable after wrapping.
#[derive(Debug, thiserror::Error)]
#[error("{op} {}: {source}", path.display())]
pub struct FsError {
    pub op: &'static str,
    pub path: PathBuf,
    #[source]
    pub source: io::Error,
}

impl FsError {
    /// `op` failed on `path` with `source`.
    pub fn new(op: &'static str, path: &Path, source: io::Error) -> Self {
        FsError {
            op,
            path: path.to_path_buf(),
            source,
        }
    }
}
