//! What a data set is asked to be: a [`Profile`] (its shape) and a [`DatasetSpec`] (profile,
//! scale, seed and the knobs that change the bytes). Plain data, so every stage can carry it.

use std::path::PathBuf;

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

/// The mix of content kinds in a generated data set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ContentMix {
    /// Each file's bytes by its extension: text for documents, logs and source,
    /// structured binary for databases and images of disks, random for media and archives.
    #[default]
    Typed,
    /// Random bytes in every file (only `compressibility` makes them compress).
    Random,
}

impl ContentMix {
    /// What a plan recorded before the field existed generated: random bytes.
    fn recorded_before_typed() -> ContentMix {
        ContentMix::Random
    }

    pub fn parse(s: &str) -> Option<ContentMix> {
        match s {
            "typed" => Some(ContentMix::Typed),
            "random" => Some(ContentMix::Random),
            _ => None,
        }
    }
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
    /// What the bytes look like: by file type (text, structured binary, already
    /// compressed) or random throughout.
    #[serde(default = "ContentMix::recorded_before_typed")]
    pub content: ContentMix,
    /// For already-compressed (random) content: 0.0 = incompressible; 0.5 = about half
    /// the bytes compress away.
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
            content: ContentMix::Typed,
            compressibility: 0.0,
            source_dir: None,
        }
    }
}
