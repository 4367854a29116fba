//! Why a data set could not be planned or written: one error type for every dataset module.

use std::path::PathBuf;

/// Why a data set could not be planned or written.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid data set: {0}")]
    Invalid(String),
}
