//! Unmeasured preparation shared by the tree workloads: planning the data set, laying it
//! down on disk (or in the scratch area), and dating its files the way copied files are
//! dated.
//!
//! Kept apart from any one workload so that a workload file holds its own measured phase
//! and nothing its siblings borrow; every workload prepares through the same code, so a
//! difference between two workloads' numbers is never a difference in how the tree was made.

use std::os::fd::AsFd;
use std::path::Path;

use rayon::prelude::*;
use rustix::fs::{AtFlags, Timespec, Timestamps};

use super::ctx::Ctx;
use super::dirfd::open_dir;
use super::error::{IoContext, WorkloadError};
use crate::dataset::{self, DatasetError, DatasetSpec, Manifest};
use crate::fsops::HASH_BUF;

/// Threads for unmeasured preparation: at least the measured count, at least the CPUs, so a
/// single-threaded workload does not prepare its data set on one core.
pub fn prep_threads(ctx: &Ctx) -> usize {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    ctx.threads.max(cpus).max(1)
}

/// Threads a workload's check of its own work reads with ([`super::verify`]): as many as
/// [`warm`] uses. The check reads back every file the phase wrote, one open, read and close
/// each; under cache pressure from the device, where more reads in flight finish sooner
/// (50,000 files of the scale-0.2 data set read back cold through a loop device: 16.8 s
/// with one reader, 5.3 s with eight; cached: 1.8 s and 1.1 s). A single-threaded point
/// checked its 50,000 files on one thread.
pub fn check_threads(ctx: &Ctx) -> usize {
    prep_threads(ctx).max(WARM_MIN_THREADS)
}

/// Plans the context's data set (unmeasured).
pub fn plan(ctx: &Ctx) -> Result<Manifest, WorkloadError> {
    ctx.dataset.plan().map_err(dataset_error)
}

/// Plans `spec` and writes it under `root` (unmeasured preparation); stops early when the
/// run is cancelled or past its deadline, with the runner's own reason.
pub fn generate(
    ctx: &Ctx,
    spec: &DatasetSpec,
    root: &Path,
    threads: usize,
) -> Result<Manifest, WorkloadError> {
    let manifest = spec.plan().map_err(dataset_error)?;
    ctx.check()?;
    let stop = || ctx.check().is_err();
    dataset::materialize_timed(spec, &manifest, root, threads, false, &stop)
        .map_err(|e| ctx.check().err().unwrap_or_else(|| dataset_error(e)))?;
    Ok(manifest)
}

/// Plans the data set and writes it into `ctx.root`, then `syncfs`, so that the next
/// measured phase does not pay for this one's writeback. Unmeasured preparation for the
/// workloads that operate on an existing tree. When the runner says the data set is
/// already there (`ctx.populated`: a copy of an image this same function filled), only
/// the plan is made; the workload's own verification then checks the tree against it.
pub fn prepare(ctx: &Ctx) -> Result<Manifest, WorkloadError> {
    if ctx.populated {
        ctx.check()?;
        return plan(ctx);
    }
    let manifest = generate(ctx, ctx.dataset, ctx.root, ctx.threads)?;
    crate::sys::syncfs(ctx.root).ctx(|| format!("syncfs {}", ctx.root.display()))?;
    Ok(manifest)
}

/// Where a workload that wants the data set *dated* on the target (`copy`'s `within`
/// point, `sync`'s mirror) finds it under the root: the populated image of that layout
/// holds it there, and the workload lays it down there itself on any other target.
pub const DATED_DIR: &str = "dated";

/// The data set, dated as [`age_files`] dates it, in [`DATED_DIR`] under `ctx.root`, and its
/// manifest, written back and in the page cache. On a copy of the dated populated image
/// (`ctx.populated`) it is there already: it is planned and read once (the clone arrives
/// cold, and a tree just laid down is cached); otherwise it is generated, dated and written
/// back (`syncfs`) now, unmeasured. Either way every file's bytes were read and checked
/// against the manifest ([`warm`]). The same files and times as `source::dated`'s tree
/// outside the target.
pub fn dated_on_target(ctx: &Ctx) -> Result<(std::path::PathBuf, Manifest), WorkloadError> {
    dated_on_target_with(ctx, true)
}

/// [`dated_on_target`], where a copy of the populated image is read back into the cache only
/// with `warm_data`: a workload whose measured phase reads none of the tree's data (`sync`'s
/// mirror) warms what it does read itself.
pub fn dated_on_target_with(
    ctx: &Ctx,
    warm_data: bool,
) -> Result<(std::path::PathBuf, Manifest), WorkloadError> {
    let dir = ctx.root.join(DATED_DIR);
    if ctx.populated {
        ctx.check()?;
        let manifest = plan(ctx)?;
        if warm_data {
            warm(&dir, &manifest, prep_threads(ctx))?;
        }
        return Ok((dir, manifest));
    }
    std::fs::create_dir(&dir).ctx(|| format!("creating {}", dir.display()))?;
    let prep = prep_threads(ctx);
    // Written by the context's threads, as [`prepare`] writes the data set: the tree's
    // layout is the same on every host (a populated image's writers are
    // `golden::layout::IMAGE_WRITERS`), and only the dating and the read-back use the CPUs.
    let manifest = generate(ctx, ctx.dataset, &dir, ctx.threads.max(1))?;
    age_files(&dir, &manifest, ctx.dataset.seed, prep)?;
    crate::sys::syncfs(&dir).ctx(|| format!("syncfs {}", dir.display()))?;
    if warm_data {
        // Cached already: this only checks the bytes, as on a clone.
        warm(&dir, &manifest, prep)?;
    }
    Ok((dir, manifest))
}

/// What the whole tree under `ctx.root` holds once every rank has prepared: `own` (this
/// process's manifest) when the tree is its alone, every rank's files when MPI ranks share
/// it (`ctx.dataset.shared`), for workloads that walk all of it.
pub fn whole_tree(ctx: &Ctx, own: Manifest) -> Result<Manifest, WorkloadError> {
    match ctx.dataset.shared {
        None => Ok(own),
        Some(_) => ctx.dataset.plan_all_ranks().map_err(dataset_error),
    }
}

/// Maps a data-set error to a workload error, keeping the OS error (ENOSPC, EIO).
pub fn dataset_error(e: DatasetError) -> WorkloadError {
    match e {
        DatasetError::Io { path, source } => {
            WorkloadError::io(format!("writing data set at {}", path.display()), source)
        }
        DatasetError::Invalid(msg) => WorkloadError::Option(msg),
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
pub fn age_files(
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

/// Threads [`warm`] reads with at least: reading a tree back from a cold device waits on
/// the device far more than it computes, and more reads in flight finish it sooner.
pub const WARM_MIN_THREADS: usize = 8;

/// Reads every file of `manifest` under `root` once, so the tree is in the page cache as a
/// tree just written is; checks each length and hash on the way (a source that lost or
/// changed bytes would make every copy of it wrong, and a copy that shares its source's
/// blocks is then checked by where its blocks are: `verify::copy_within`). Unmeasured,
/// so it reads with more threads than `threads` where that helps ([`WARM_MIN_THREADS`]).
pub fn warm(root: &Path, manifest: &Manifest, threads: usize) -> Result<(), WorkloadError> {
    let root_fd = open_dir(root)?;
    let pool = crate::fsops::pool(threads.max(WARM_MIN_THREADS))?;
    pool.install(|| {
        // One buffer per worker, not per file: a zeroed 1 MiB allocation per file cost a
        // 1 MiB memset each (250,000 files: ~10 s of a cell at scale 1, the tree in cache).
        let buffer = || vec![0u8; HASH_BUF];
        manifest
            .files
            .par_iter()
            .try_for_each_init(buffer, |buf, f| {
                let path = || root.join(&f.path);
                let h = crate::fsops::hash_at(root_fd.as_fd(), &c_name(&f.path)?, buf)
                    .ctx(|| format!("reading {}", path().display()))?;
                if h.len != f.size {
                    return Err(WorkloadError::Verify(format!(
                        "source {} holds {} bytes, the data set says {}",
                        path().display(),
                        h.len,
                        f.size
                    )));
                }
                if h.hash != f.hash {
                    return Err(WorkloadError::Verify(format!(
                        "source {} holds other bytes than the data set (xxh3 {:016x}, not {:016x})",
                        path().display(),
                        h.hash,
                        f.hash
                    )));
                }
                Ok(())
            })
    })
}

/// A manifest path as the C string `openat` takes.
fn c_name(path: &str) -> Result<std::ffi::CString, WorkloadError> {
    std::ffi::CString::new(path)
        .map_err(|_| WorkloadError::Verify(format!("{path:?}: a name with a NUL byte")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::sync::testenv::Env;

    /// A dated tree is written by the context's threads, not by one thread per CPU: a
    /// populated image's dated tree was written by as many threads as the host has CPUs,
    /// a layout that depended on the machine. With one thread, every file is born after the
    /// one before it in the order the writer takes them, directory by directory (two writers
    /// start the second half at once).
    #[test]
    fn a_dated_tree_is_written_by_the_context_s_threads_not_the_host_s_cpus() {
        let mut env = Env::new();
        env.spec.scale = 0.01;
        let mut ctx = env.ctx();
        ctx.threads = 1;
        let (dir, manifest) = dated_on_target_with(&ctx, false).unwrap();
        let mut files: Vec<_> = manifest.files.iter().collect();
        files.sort_by_key(|f| f.path.rsplit_once('/').map_or("", |(d, _)| d));
        let born: Vec<_> = files
            .iter()
            .map(|f| {
                std::fs::metadata(dir.join(&f.path))
                    .unwrap()
                    .created()
                    .unwrap()
            })
            .collect();
        let out_of_order = born.windows(2).filter(|w| w[1] < w[0]).count();
        assert_eq!(out_of_order, 0, "of {} files", born.len());
    }
}
