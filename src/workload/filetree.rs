//! Shared plumbing of the tree workloads (`copy`, `sync`, `dupes`, `copy-verify`,
//! `cold-read`): data-set generation with errors mapped to [`WorkloadError`], directory
//! fds, old file dates, and readable lists of examples for verification messages.

use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::path::Path;

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use rustix::fs::{AtFlags, Mode, OFlags, Timespec, Timestamps};

use super::create::dataset_error;
use crate::dataset::{DatasetSpec, Manifest};
use crate::workload::{Ctx, WorkloadError};

/// Threads for unmeasured preparation: at least the measured count, at least the CPUs, so a
/// single-threaded workload does not prepare its data set on one core.
pub(crate) fn prep_threads(ctx: &Ctx) -> usize {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    ctx.threads.max(cpus).max(1)
}

/// Plans `spec` and writes it under `root` (unmeasured preparation); stops early when the
/// run is cancelled.
pub(crate) fn generate(
    ctx: &Ctx,
    spec: &DatasetSpec,
    root: &Path,
    threads: usize,
) -> Result<Manifest, WorkloadError> {
    let manifest = spec.plan().map_err(dataset_error)?;
    ctx.check()?;
    let stop = || ctx.check().is_err();
    crate::dataset::materialize_timed(spec, &manifest, root, threads, false, &stop)
        .map_err(|e| ctx.check().err().unwrap_or_else(|| dataset_error(e)))?;
    Ok(manifest)
}

/// Opens a directory for `*at` calls.
pub(crate) fn open_dir(path: &Path) -> Result<OwnedFd, WorkloadError> {
    rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| WorkloadError::io(format!("opening {}", path.display()), e.into()))
}

/// A relative path as a C string for `openat`; manifest paths never hold NUL.
pub(crate) fn c_path(rel: &str) -> Result<CString, WorkloadError> {
    CString::new(rel).map_err(|_| WorkloadError::Verify(format!("path with NUL byte: {rel:?}")))
}

/// Lists up to five examples after a count, for verification messages that stay readable
/// when a million files are wrong.
pub(crate) fn examples<T: std::fmt::Display>(items: &[T]) -> String {
    let shown: Vec<String> = items.iter().take(5).map(|s| s.to_string()).collect();
    let more = items.len().saturating_sub(5);
    if more > 0 {
        format!("{} (and {more} more)", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

/// 2019-01-01T00:00:00Z: generated files are dated within the four years after it.
const AGE_BASE: i64 = 1_546_300_800;
const AGE_SPAN_2S: u64 = 4 * 365 * 24 * 3600 / 2;

/// Gives every file of `manifest` under `root` an old, seed-determined modification (and
/// access) time on an even second, as files a user copies have. Two reasons: a copy that
/// fails to keep times then shows a difference of years, not milliseconds; and even seconds
/// are stored exactly by every file system (FAT-family keep 2 s), so an unchanged file looks
/// unchanged to `sync` everywhere.
pub(crate) fn age_files(
    root: &Path,
    manifest: &Manifest,
    seed: u64,
    threads: usize,
) -> Result<(), WorkloadError> {
    let root_fd = open_dir(root)?;
    let pool = crate::fsops::pool(threads)?;
    pool.install(|| {
        manifest.files.par_iter().try_for_each(|f| {
            let h = xxhash_rust::xxh3::xxh3_64_with_seed(f.path.as_bytes(), seed);
            let t = Timespec {
                tv_sec: AGE_BASE + 2 * (h % AGE_SPAN_2S) as i64,
                tv_nsec: 0,
            };
            let times = Timestamps {
                last_access: t,
                last_modification: t,
            };
            rustix::fs::utimensat(&root_fd, f.path.as_str(), &times, AtFlags::SYMLINK_NOFOLLOW)
                .map_err(|e| {
                    WorkloadError::io(format!("dating {}", root.join(&f.path).display()), e.into())
                })
        })
    })
}

/// A uniform draw in `0..n` (`n` ≥ 1) from the raw stream. Written out rather than taken
/// from `rand`, whose algorithms may change between versions: a seed must pick the same
/// files on every build.
pub(crate) fn below(rng: &mut impl RngCore, n: u64) -> u64 {
    // Modulo bias is below 2^-40 for the sizes used here; irrelevant for picking files.
    rng.next_u64() % n.max(1)
}

/// Fisher–Yates shuffle driven by [`below`].
pub(crate) fn shuffle<T>(rng: &mut impl RngCore, items: &mut [T]) {
    for i in (1..items.len()).rev() {
        let j = below(rng, i as u64 + 1) as usize;
        items.swap(i, j);
    }
}

/// A ChaCha8 stream keyed by the data-set seed and a per-purpose salt, so each workload's
/// choices are fixed by the seed yet independent of the generator's streams.
pub(crate) fn rng_for(seed: u64, salt: u64) -> ChaCha8Rng {
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    key[8..16].copy_from_slice(&salt.to_le_bytes());
    key[16..24].copy_from_slice(b"fsarena!");
    ChaCha8Rng::from_seed(key)
}
