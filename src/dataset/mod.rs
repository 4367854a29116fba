//! Deterministic data sets: the same seed gives the same tree, names and bytes everywhere.

use std::path::PathBuf;

pub mod content;
pub mod generate;
pub mod manifest;
pub mod profile;

pub use content::{fill_content, materialize, materialize_timed, ContentId, Written};
pub use manifest::plan_source;
pub use profile::{parse_profile, profile_name};

use serde::{Deserialize, Serialize};

/// The shapes users compare file systems with (sizes at `--scale 1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// 250,000 files averaging 16 KiB in many directories.
    Small,
    /// 50,000 files averaging 64 KiB.
    Medium,
    /// 1,000 files averaging 4 MiB.
    Large,
    /// 32 files averaging 1 GiB.
    Huge,
    /// Mostly 0.5–4 GiB files plus a few thousand tiny ones (a media or VM folder).
    Bigfolder,
    /// Mostly B/KiB files plus some MiB files (a source tree or game install).
    Smallfolder,
}

/// What data set a workload generates or uses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatasetSpec {
    pub profile: Profile,
    /// Shrinks file counts and sizes together.
    pub scale: f64,
    pub seed: u64,
    /// Fraction of files that are planted duplicates (groups of 2–5).
    pub duplicate_fraction: f64,
    /// 0.0 = incompressible; 0.5 = about half the bytes compress away.
    pub compressibility: f64,
    /// A user's own directory used as the source instead of generated data.
    pub source_dir: Option<PathBuf>,
}

impl Default for DatasetSpec {
    fn default() -> Self {
        DatasetSpec {
            profile: Profile::Small,
            scale: 0.01,
            seed: 42,
            duplicate_fraction: 0.10,
            compressibility: 0.0,
            source_dir: None,
        }
    }
}

/// One file of a data set. Paths are relative, `/`-separated, and never start with `/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    pub path: String,
    pub size: u64,
    /// Content identity: two entries with the same `content` have the same bytes.
    pub content: u64,
    /// xxh3-64 of the file's bytes.
    pub hash: u64,
}

/// What a data set holds: the ground truth every workload verifies against.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub files: Vec<FileEntry>,
    /// Every directory (relative), parents before children; the root itself is not listed.
    pub dirs: Vec<String>,
    /// Planted duplicate groups: indices into `files`, each group ≥ 2 files of equal bytes,
    /// groups sorted and each group's indices sorted, so they compare with `==`.
    pub duplicate_groups: Vec<Vec<usize>>,
}

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
