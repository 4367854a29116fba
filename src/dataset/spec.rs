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
    /// Set on each rank of an MPI job whose ranks share one directory tree
    /// (`--rank-dirs shared`): the directories are common, every file name carries this
    /// rank's tag ([`SharedTree::tag`]) so no two ranks' files collide. `None`: the tree is
    /// this process's alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared: Option<SharedTree>,
    /// `--file-size`: every generated file is exactly this many bytes (the profile still
    /// gives the count and the tree); `None`: the profile's size distribution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_size: Option<u64>,
}

/// This rank's place in a directory tree all ranks of a job share. The one place that
/// decides how a rank's files are named, so generating, listing and verifying agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedTree {
    pub rank: u32,
    pub ranks: u32,
}

impl SharedTree {
    /// `name` as rank `rank` names it: `.rK` before the extension (`IMG_0042.r3.jpg`), or
    /// at the end of a name without one (`Makefile.r3`).
    pub fn tag(name: &str, rank: u32) -> String {
        match name.rsplit_once('.') {
            Some((stem, ext)) if !stem.is_empty() => format!("{stem}.r{rank}.{ext}"),
            _ => format!("{name}.r{rank}"),
        }
    }

    /// The rank whose tag the file name at `path` carries, if any: `.rK` just before
    /// the extension, or at the very end of a name without one.
    pub fn owner(path: &str) -> Option<u32> {
        let name = path.rsplit('/').next().unwrap_or(path);
        let rank = |part: &str| {
            let k = part.strip_prefix('r')?;
            (!k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
                .then(|| k.parse::<u32>().ok())
                .flatten()
        };
        let mut parts = name.rsplit('.');
        let last = parts.next()?;
        let before = parts.next()?;
        // `stem.rK.ext` (the stem is never empty), else `name.rK`.
        match (rank(before), parts.next()) {
            (Some(k), Some(_)) => Some(k),
            _ => rank(last).filter(|_| !before.is_empty()),
        }
    }

    /// Whether the file at `path` is this rank's.
    pub fn owns(&self, path: &str) -> bool {
        Self::owner(path) == Some(self.rank)
    }
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
            shared: None,
            file_size: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rank_tag_goes_before_the_extension_and_names_its_rank_back() {
        for (name, rank, tagged) in [
            ("IMG_0042.jpg", 3, "IMG_0042.r3.jpg"),
            ("Makefile", 0, "Makefile.r0"),
            (".bashrc", 12, ".bashrc.r12"),
            ("r2.txt", 5, "r2.r5.txt"),
            ("a.tar.gz", 1, "a.tar.r1.gz"),
        ] {
            let t = SharedTree::tag(name, rank);
            assert_eq!(t, tagged);
            assert_eq!(SharedTree::owner(&format!("dir/{t}")), Some(rank), "{t}");
            assert!(SharedTree { rank, ranks: 16 }.owns(&t));
            assert!(!SharedTree {
                rank: rank + 1,
                ranks: 16
            }
            .owns(&t));
        }
        // Untagged names belong to no rank, even those that look a little like a tag.
        for name in ["IMG_0042.jpg", "r2.txt", "Makefile", "x.r", "x.rr2.txt"] {
            assert_eq!(SharedTree::owner(name), None, "{name}");
        }
    }
}
