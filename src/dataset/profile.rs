//! What each [`Profile`] looks like, and how `--scale` shrinks it.
//!
//! A profile is a mixture of size classes. Each class has a file count at `--scale 1`, a
//! size distribution, and the extensions its files carry (a 40 MB video is not called
//! `notes.txt`). The directory shape (files per directory, depth) belongs to the profile.
//!
//! # The scale rule
//! * **Counts** scale linearly: `max(floor, round(count × scale))`. The floor keeps every
//!   class present at tiny scales, so a tiny `bigfolder` still has big files *and* tiny ones.
//! * **Sizes** shrink only for classes whose average is ≥ 1 MiB, and only by `√scale`
//!   (never grown above the `--scale 1` size): at the default 0.01 a 4 MiB file becomes
//!   ~410 KiB, still far above `small`'s 16 KiB, so "large" stays large relative to
//!   "small", while the total stays small enough to run in seconds. Classes below 1 MiB keep
//!   their sizes, because small-file behaviour is exactly what they measure. A shrunk class
//!   keeps an average of at least 256 KiB.

use super::draw::log2_det;
use super::error::DatasetError;
use super::spec::Profile;

const KIB: f64 = 1024.0;
const MIB: f64 = 1024.0 * 1024.0;
const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// Every profile name, as accepted on the command line.
pub const PROFILE_NAMES: &[&str] = &[
    "small",
    "medium",
    "large",
    "huge",
    "bigfolder",
    "smallfolder",
];

/// Parses a profile name (`small`, `medium`, …); the error lists the valid names.
pub fn parse_profile(name: &str) -> Result<Profile, DatasetError> {
    Ok(match name.trim().to_ascii_lowercase().as_str() {
        "small" => Profile::Small,
        "medium" => Profile::Medium,
        "large" => Profile::Large,
        "huge" => Profile::Huge,
        "bigfolder" => Profile::Bigfolder,
        "smallfolder" => Profile::Smallfolder,
        other => {
            return Err(DatasetError::Invalid(format!(
                "unknown profile {other:?}; valid profiles: {}",
                PROFILE_NAMES.join(", ")
            )))
        }
    })
}

/// The lowercase name used on the command line and in results (a free function rather than
/// a method, so that it cannot clash with impls others add to the shared `Profile` type).
pub fn profile_name(profile: Profile) -> &'static str {
    match profile {
        Profile::Small => "small",
        Profile::Medium => "medium",
        Profile::Large => "large",
        Profile::Huge => "huge",
        Profile::Bigfolder => "bigfolder",
        Profile::Smallfolder => "smallfolder",
    }
}

/// How sizes of a class spread.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SizeDist {
    /// Log-normal with the given arithmetic mean (bytes) and σ of the underlying normal,
    /// clamped to `[min, max]`. Most real file-size distributions look like this.
    LogNormal {
        mean: f64,
        sigma: f64,
        min: f64,
        max: f64,
    },
    /// Uniform in log space between `min` and `max` (media/VM folders: 0.5–4 GiB).
    LogUniform { min: f64, max: f64 },
}

impl SizeDist {
    /// The expected size. Computed without the platform's libm, because the scale rule
    /// uses it and the layout must not depend on the machine.
    pub fn mean(&self) -> f64 {
        match *self {
            SizeDist::LogNormal { mean, .. } => mean,
            // ln(x) = log2(x) · ln 2, with the portable log2 the generator uses.
            SizeDist::LogUniform { min, max } => {
                (max - min) / (log2_det(max / min) * std::f64::consts::LN_2)
            }
        }
    }

    fn scaled(&self, f: f64) -> SizeDist {
        match *self {
            SizeDist::LogNormal {
                mean,
                sigma,
                min,
                max,
            } => SizeDist::LogNormal {
                mean: mean * f,
                sigma,
                min: (min * f).max(MIN_FILE_SIZE as f64),
                max: max * f,
            },
            SizeDist::LogUniform { min, max } => SizeDist::LogUniform {
                min: (min * f).max(MIN_FILE_SIZE as f64),
                max: max * f,
            },
        }
    }
}

/// The smallest file a generator makes. Below ~16 bytes, two random files of equal size
/// could collide by chance and become unplanned duplicates; 32 bytes rules that out.
pub const MIN_FILE_SIZE: u64 = 32;

/// One size class of a profile.
#[derive(Debug, Clone, PartialEq)]
pub struct SizeClass {
    /// Files at `--scale 1`.
    pub count: u64,
    /// Files at any scale, at least.
    pub floor: u64,
    pub size: SizeDist,
    /// Extensions with weights; `""` means no extension (README, Makefile).
    pub exts: &'static [(&'static str, u32)],
}

/// The whole shape of a profile.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    pub classes: Vec<SizeClass>,
    /// Average files per directory (the directory count is derived from it).
    pub files_per_dir: f64,
    /// Deepest directory level below the root.
    pub max_depth: u32,
    /// Default name pattern for the `search` workload.
    pub search_pattern: &'static str,
}

const DOCS: &[(&str, u32)] = &[
    ("txt", 12),
    ("md", 6),
    ("json", 8),
    ("jpg", 14),
    ("png", 8),
    ("pdf", 6),
    ("html", 6),
    ("js", 8),
    ("css", 4),
    ("xml", 4),
    ("log", 6),
    ("csv", 5),
    ("", 3),
];
const OFFICE: &[(&str, u32)] = &[
    ("jpg", 20),
    ("png", 10),
    ("pdf", 14),
    ("docx", 10),
    ("xlsx", 6),
    ("mp3", 10),
    ("zip", 5),
    ("svg", 5),
];
const MEDIA: &[(&str, u32)] = &[
    ("flac", 12),
    ("mp3", 10),
    ("cr2", 10),
    ("tif", 6),
    ("pdf", 4),
    ("zip", 6),
];
const VIDEO: &[(&str, u32)] = &[("mkv", 10), ("mp4", 10), ("iso", 4), ("img", 3), ("vdi", 2)];
const SIDECAR: &[(&str, u32)] = &[
    ("nfo", 10),
    ("txt", 8),
    ("srt", 12),
    ("jpg", 6),
    ("json", 4),
    ("sha256", 3),
];
const SOURCE: &[(&str, u32)] = &[
    ("rs", 10),
    ("c", 10),
    ("h", 12),
    ("py", 8),
    ("js", 8),
    ("json", 6),
    ("toml", 3),
    ("md", 4),
    ("txt", 4),
    ("xml", 4),
    ("lua", 4),
    ("cfg", 3),
    ("", 2),
];
const ASSETS: &[(&str, u32)] = &[
    ("pak", 6),
    ("dll", 8),
    ("so", 4),
    ("png", 8),
    ("ogg", 6),
    ("bin", 4),
];

fn lognormal(mean: f64, sigma: f64, min: f64, max: f64) -> SizeDist {
    SizeDist::LogNormal {
        mean,
        sigma,
        min,
        max,
    }
}

/// The shape of `profile` at `--scale 1`.
pub fn base_shape(profile: Profile) -> Shape {
    match profile {
        Profile::Small => small(),
        Profile::Medium => medium(),
        Profile::Large => large(),
        Profile::Huge => huge(),
        Profile::Bigfolder => bigfolder(),
        Profile::Smallfolder => smallfolder(),
    }
}

/// A shape from its size classes, the average files per directory, the deepest level and
/// the `search` workload's default pattern (in [`Shape`]'s field order).
fn shape(
    classes: Vec<SizeClass>,
    files_per_dir: f64,
    max_depth: u32,
    search_pattern: &'static str,
) -> Shape {
    Shape {
        classes,
        files_per_dir,
        max_depth,
        search_pattern,
    }
}

/// A size class: `count` files at `--scale 1`, at least `floor` at any scale (in
/// [`SizeClass`]'s field order).
fn class(
    count: u64,
    floor: u64,
    size: SizeDist,
    exts: &'static [(&'static str, u32)],
) -> SizeClass {
    SizeClass {
        count,
        floor,
        size,
        exts,
    }
}

/// The tiny files (1.5 KiB on average) that sit beside big ones: subtitles, checksums,
/// covers. A folder of big files has them too, and they behave like small files.
fn tiny(count: u64, floor: u64, exts: &'static [(&'static str, u32)]) -> SizeClass {
    class(
        count,
        floor,
        lognormal(1.5 * KIB, 1.0, 32.0, 64.0 * KIB),
        exts,
    )
}

/// `small`: a quarter million small documents in a deep tree, where per-file costs
/// (metadata, directory lookups) dominate.
fn small() -> Shape {
    let docs = lognormal(16.0 * KIB, 1.2, 32.0, 16.0 * MIB);
    shape(vec![class(250_000, 20, docs, DOCS)], 25.0, 6, "*.jpg")
}

/// `medium`: office files and photos, between the per-file and the per-byte regime.
fn medium() -> Shape {
    let office = lognormal(64.0 * KIB, 1.3, 32.0, 64.0 * MIB);
    shape(vec![class(50_000, 20, office, OFFICE)], 40.0, 5, "*.pdf")
}

/// `large`: a media library of multi-MiB files, with a few sidecars.
fn large() -> Shape {
    let size = lognormal(4.0 * MIB, 0.6, 256.0 * KIB, 64.0 * MIB);
    let media = class(980, 8, size, MEDIA);
    shape(vec![media, tiny(20, 2, SIDECAR)], 50.0, 3, "*.flac")
}

/// `huge`: a few GiB-sized videos in a flat folder, where only bandwidth counts.
fn huge() -> Shape {
    let size = lognormal(1.0 * GIB, 0.3, 256.0 * MIB, 4.0 * GIB);
    let video = class(30, 3, size, VIDEO);
    shape(vec![video, tiny(2, 1, SIDECAR)], 16.0, 1, "*.mkv")
}

/// `bigfolder`: a media or VM folder, 0.5–4 GiB files spread evenly in log space, plus a
/// few thousand tiny ones.
fn bigfolder() -> Shape {
    let size = SizeDist::LogUniform {
        min: 0.5 * GIB,
        max: 4.0 * GIB,
    };
    let video = class(40, 3, size, VIDEO);
    shape(vec![video, tiny(3_000, 20, SIDECAR)], 30.0, 3, "*.srt")
}

/// `smallfolder`: a source tree or game install, mostly small files in a deep tree plus
/// some MiB assets.
fn smallfolder() -> Shape {
    let small = lognormal(6.0 * KIB, 1.5, 32.0, 4.0 * MIB);
    let big = lognormal(3.0 * MIB, 0.8, 1.0 * MIB, 256.0 * MIB);
    let classes = vec![
        class(19_000, 40, small, SOURCE),
        class(1_000, 3, big, ASSETS),
    ];
    shape(classes, 12.0, 8, "*.rs")
}

/// A class of big files is never shrunk below this average (it must stay "big").
const MIN_SCALED_MEAN: f64 = 256.0 * KIB;

/// The size factor applied to classes whose average is ≥ 1 MiB (before the floor).
pub fn size_factor(scale: f64) -> f64 {
    scale.sqrt().min(1.0)
}

/// The shape of `profile` at `scale` (see the module docs for the rule).
pub fn scaled_shape(profile: Profile, scale: f64) -> Result<Shape, DatasetError> {
    if !(scale.is_finite() && scale > 0.0) {
        return Err(DatasetError::Invalid(format!(
            "scale must be a positive number, got {scale}"
        )));
    }
    let mut shape = base_shape(profile);
    let f = size_factor(scale);
    for class in &mut shape.classes {
        class.count = ((class.count as f64 * scale).round() as u64).max(class.floor);
        let mean = class.size.mean();
        if mean >= MIB {
            class.size = class.size.scaled(f.max(MIN_SCALED_MEAN / mean));
        }
    }
    Ok(shape)
}

/// The default size range for `search`: files between 2× and 16× the average of the
/// profile's first (main) class, after scaling.
pub fn default_search_sizes(profile: Profile, scale: f64) -> Result<(u64, u64), DatasetError> {
    let shape = scaled_shape(profile, scale)?;
    let mean = shape.classes[0].size.mean();
    Ok(((2.0 * mean) as u64, (16.0 * mean) as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_accepts_every_name_and_lists_them_on_error() {
        for n in PROFILE_NAMES {
            assert_eq!(profile_name(parse_profile(n).unwrap()), *n);
        }
        let err = parse_profile("tiny").unwrap_err().to_string();
        assert!(err.contains("smallfolder") && err.contains("tiny"), "{err}");
    }

    #[test]
    fn scale_keeps_large_larger_than_small() {
        for scale in [1.0, 0.01, 0.0001] {
            let small = scaled_shape(Profile::Small, scale).unwrap();
            let large = scaled_shape(Profile::Large, scale).unwrap();
            assert!(large.classes[0].size.mean() > 4.0 * small.classes[0].size.mean());
        }
        assert!(scaled_shape(Profile::Small, 0.0).is_err());
        assert!(scaled_shape(Profile::Small, f64::NAN).is_err());
    }
}

/// The expected bytes of a generated data set, without generating it. Planning hashes every
/// byte, so free space is checked against this first: a scale that cannot fit is refused in
/// a moment instead of after generating terabytes.
pub fn estimated_bytes(profile: Profile, scale: f64) -> Result<f64, DatasetError> {
    let shape = scaled_shape(profile, scale)?;
    Ok(shape
        .classes
        .iter()
        .map(|c| c.count as f64 * c.size.mean())
        .sum())
}

#[cfg(test)]
mod estimate_tests {
    use super::*;

    #[test]
    fn estimate_is_close_to_the_planned_size() {
        for (p, scale) in [
            (Profile::Small, 0.01),
            (Profile::Medium, 0.02),
            (Profile::Smallfolder, 0.01),
        ] {
            let est = estimated_bytes(p, scale).unwrap();
            let spec = crate::dataset::DatasetSpec {
                profile: p,
                scale,
                ..Default::default()
            };
            let real = spec.plan().unwrap().total_bytes() as f64;
            assert!(
                (est / real - 1.0).abs() < 0.35,
                "{p:?}: estimate {est} vs {real}"
            );
        }
        // Full-size `huge` is 32 GiB and must be estimated instantly.
        let huge = estimated_bytes(Profile::Huge, 1.0).unwrap();
        assert!(huge > 20e9 && huge < 60e9, "{huge}");
    }
}
