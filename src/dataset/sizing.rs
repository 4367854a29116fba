//! What a [`DatasetSpec`] amounts to without generating it — its shape (with every file one
//! size under `--file-size`), its file count and bytes — and the reverse: the scale at which
//! a profile holds a stated number of files (`--files`) or bytes (`--data`). A user states
//! the size they care about; the data set stays a (profile, scale) pair, so every other
//! stage keeps working from the spec.

use super::error::DatasetError;
use super::profile::{scaled_shape, Shape, SizeDist, MIN_FILE_SIZE};
use super::spec::{DatasetSpec, Profile};

/// The smallest and largest scale a stated size may resolve to (the `--scale` range).
const SCALE_RANGE: (f64, f64) = (1e-6, 100.0);

/// The shape `spec` generates: its profile at its scale, every class drawn at exactly
/// `file_size` bytes when one is set (a log-normal of σ 0 clamped to that size is that size).
pub fn shape(spec: &DatasetSpec) -> Result<Shape, DatasetError> {
    let mut shape = scaled_shape(spec.profile, spec.scale)?;
    if let Some(size) = spec.file_size {
        let s = size.max(MIN_FILE_SIZE) as f64;
        for class in &mut shape.classes {
            class.size = SizeDist::LogNormal {
                mean: s,
                sigma: 0.0,
                min: s,
                max: s,
            };
        }
    }
    Ok(shape)
}

/// The files `spec` generates (exact: counts are rounded, not drawn).
pub fn files(spec: &DatasetSpec) -> Result<u64, DatasetError> {
    Ok(shape(spec)?.classes.iter().map(|c| c.count).sum())
}

/// The bytes `spec` is expected to hold (the mean size of each class times its count).
pub fn bytes(spec: &DatasetSpec) -> Result<f64, DatasetError> {
    Ok(shape(spec)?
        .classes
        .iter()
        .map(|c| c.count as f64 * c.size.mean())
        .sum())
}

/// The scale at which `base` (its profile and file size) holds about `want` of what
/// `measure` counts: a bisection in log scale, since both files and bytes grow with the
/// scale (counts have floors, so the smallest data sets cannot go below them).
fn solve(
    base: &DatasetSpec,
    want: f64,
    measure: fn(&DatasetSpec) -> Result<f64, DatasetError>,
) -> Result<f64, DatasetError> {
    let at = |scale: f64| {
        measure(&DatasetSpec {
            scale,
            ..base.clone()
        })
    };
    let (mut lo, mut hi) = (SCALE_RANGE.0.ln(), SCALE_RANGE.1.ln());
    if at(SCALE_RANGE.1)? < want {
        return Err(DatasetError::Invalid(format!(
            "the {} data set holds at most {:.0} at scale {}",
            super::profile_name(base.profile),
            at(SCALE_RANGE.1)?,
            SCALE_RANGE.1
        )));
    }
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if at(mid.exp())? < want {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    // Four significant digits: a scale a reader can type back, holding the same size.
    let s = hi.exp();
    let digits = 3 - s.log10().floor() as i32;
    let p = 10f64.powi(digits);
    Ok(((s * p).round() / p).clamp(SCALE_RANGE.0, SCALE_RANGE.1))
}

/// The scale at which `base` holds about `n` files.
pub fn scale_for_files(base: &DatasetSpec, n: u64) -> Result<f64, DatasetError> {
    solve(base, n as f64, |s| files(s).map(|f| f as f64))
}

/// The scale at which `base` holds about `total` bytes.
pub fn scale_for_bytes(base: &DatasetSpec, total: u64) -> Result<f64, DatasetError> {
    solve(base, total as f64, bytes)
}

/// Files of `profile` at scale 1 (what `--files` is measured against).
pub fn full_files(profile: Profile) -> u64 {
    scaled_shape(profile, 1.0)
        .map(|s| s.classes.iter().map(|c| c.count).sum())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stated_file_count_or_total_resolves_to_a_scale_that_holds_it() {
        let base = DatasetSpec::default();
        let s = scale_for_files(&base, 2_500).unwrap();
        assert!((s - 0.01).abs() < 1e-4, "{s}");
        let s = scale_for_bytes(&base, 4_000_000_000).unwrap();
        let b = bytes(&DatasetSpec {
            scale: s,
            ..base.clone()
        })
        .unwrap();
        assert!((b / 4e9 - 1.0).abs() < 0.01, "{s}: {b}");
        assert_eq!(full_files(Profile::Small), 250_000);
        assert!(scale_for_files(&base, 10_000_000_000).is_err());
    }

    #[test]
    fn a_file_size_makes_every_file_that_size() {
        let spec = DatasetSpec {
            file_size: Some(4096),
            ..DatasetSpec::default()
        };
        let m = spec.plan().unwrap();
        assert!(m.files.iter().all(|f| f.size == 4096), "sizes differ");
        assert_eq!(m.files.len() as u64, files(&spec).unwrap());
        assert_eq!(bytes(&spec).unwrap(), 4096.0 * m.files.len() as f64);
    }
}
