//! A target: one file-system configuration, and everything fsarena must know to make it.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use super::fs_kind::FsKind;

/// Where a target lives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Location {
    /// A sparse image in fsarena's work directory, attached as a loop device (the default).
    Loop,
    /// A block device the user named; destructive, guarded.
    Device(PathBuf),
    /// An existing directory; fsarena works in a fresh subdirectory of it.
    Dir(PathBuf),
    /// Memory (tmpfs).
    Memory,
}

impl Location {
    /// Where a target of kind `fs` lives unless it says otherwise: memory for a file system
    /// that lives there, a loop image for every other.
    pub fn default_for(fs: FsKind) -> Location {
        if fs.is_memory() {
            Location::Memory
        } else {
            Location::Loop
        }
    }
}

/// One file-system configuration, as asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetConfig {
    /// Unique name in a run: rows of every table, keys of every result.
    pub name: String,
    pub fs: FsKind,
    /// Extra mkfs arguments (block/cluster size, features).
    pub mkfs_args: Vec<String>,
    /// Mount options (`noatime`, `data=journal`, `compress=zstd`, …).
    pub mount_options: Vec<String>,
    pub location: Location,
    /// Image (or tmpfs) size in bytes; `None`: the run's size (`--fs-size`, `plan::fs_size`).
    pub size: Option<u64>,
    /// One line for listings.
    pub description: String,
}
