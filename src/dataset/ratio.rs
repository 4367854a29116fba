//! How compressible a generated data set is, measured rather than assumed: a sample of its
//! bytes through zstd (level 3, the level btrfs's `compress=zstd` uses), recorded with the
//! run so a compression comparison can be read against what the data allowed.

use super::content::{fill_content, CHUNK};
use super::manifest::Manifest;
use super::spec::DatasetSpec;

/// Bytes sampled at most: enough to be stable, little enough to cost milliseconds.
const SAMPLE: u64 = 16 << 20;
/// Bytes taken from the start of one file at most, so the sample spans many files.
const PER_FILE: u64 = 256 << 10;

/// Logical bytes ÷ zstd-3 bytes over a sample spread across the data set (every file's
/// head, files taken at an even stride). `None` for a user's own directory (its bytes are
/// not generated) or an empty data set.
pub fn zstd_ratio(spec: &DatasetSpec, manifest: &Manifest) -> Option<f64> {
    if spec.source_dir.is_some() || manifest.files.is_empty() {
        return None;
    }
    let total: u64 = manifest.files.iter().map(|f| f.size.min(PER_FILE)).sum();
    let stride = total.div_ceil(SAMPLE).max(1) as usize;
    let mut sample = Vec::new();
    let mut buf = vec![0u8; CHUNK];
    for f in manifest.files.iter().step_by(stride) {
        let n = f.size.min(PER_FILE) as usize;
        fill_content(spec, f.content, 0, &mut buf[..n]);
        sample.extend_from_slice(&buf[..n]);
    }
    if sample.is_empty() {
        return None;
    }
    let packed = zstd::bulk::compress(&sample, 3).ok()?;
    Some(sample.len() as f64 / packed.len().max(1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::spec::ContentMix;

    #[test]
    fn typed_content_compresses_and_random_does_not() {
        let typed = DatasetSpec::default();
        let random = DatasetSpec {
            content: ContentMix::Random,
            ..DatasetSpec::default()
        };
        let t = zstd_ratio(&typed, &typed.plan().unwrap()).unwrap();
        let r = zstd_ratio(&random, &random.plan().unwrap()).unwrap();
        assert!(t > 1.5, "typed default compresses: {t}");
        assert!(r < 1.05, "random does not: {r}");
    }
}
