//! Source trees outside the target (`copy`, `copy-verify`, `sync` read from them), made once
//! per run instead of once per cell.
//!
//! Every such cell used to generate the whole data set in its scratch area, date it, write it
//! back and delete it afterwards: at the studies' scale (250,000 files, 3.8 GiB) that is most
//! of a cell's wall time and none of its measurement. A source is never written by the
//! workloads that read it, so one copy serves every cell of the run: it lives in the run's
//! `sources` directory ([`Ctx::sources`]), under a name made from what it holds (the
//! manifest digest, plus what was done to it), and is finished by a rename, so a half-made
//! tree is never taken for a made one. Without a `sources` directory (a workload run
//! outside the runner) the tree is made in the point's scratch area, as before.
//!
//! A cell of another workload may have dropped the page cache since the tree was written;
//! the cells that read a source expect it warm (a copy *from* a cached tree), so
//! [`keep_warm`] reads back what left the cache before the measured phase, which is what a
//! freshly written tree would be.

use std::path::{Path, PathBuf};

pub use super::prepare::warm;
use std::os::fd::AsFd;

use rayon::prelude::*;
use rustix::fs::{Mode, OFlags};

use super::ctx::Ctx;
use super::error::{IoContext, WorkloadError};
use super::prepare::{age_files, generate, prep_threads};
use crate::dataset::{FileEntry, Manifest};
use crate::fsops::cached::wholly_cached;

/// The data set generated and dated (old, seed-determined times, as a user's files have) in
/// a directory outside the target, written back, and warm in the page cache. Read-only for
/// the caller: other cells of the run read the same tree.
pub fn dated(ctx: &Ctx) -> Result<(PathBuf, Manifest), WorkloadError> {
    let (path, manifest) = dated_made(ctx)?;
    keep_warm(&path, &manifest, prep_threads(ctx))?;
    Ok((path, manifest))
}

/// [`dated`]'s tree, made once per run, but not read back into the page cache: for a
/// workload whose cells never read it (`sync` makes its changed source from it, once per
/// run, and reads only that one). Reading it back after each cache drop of a cold pass cost
/// `sync` a cell's worth of disk reads (2,500 files, 39 MiB at the default scale) for
/// pages its phase never touches.
pub fn dated_made(ctx: &Ctx) -> Result<(PathBuf, Manifest), WorkloadError> {
    let prep = prep_threads(ctx);
    let manifest = super::prepare::plan(ctx)?;
    let path = made_once(ctx, &dated_name(&manifest), |dir| {
        let m = generate(ctx, ctx.dataset, dir, prep)?;
        age_files(dir, &m, ctx.dataset.seed, prep)
    })?;
    Ok((path, manifest))
}

/// Makes sure the tree of `manifest` under `root` is in the page cache, as a tree just
/// written is. A file `cachestat` finds wholly cached is not read again: a source stays
/// cached from cell to cell, and reading 250,000 cached files back cost ~4 s per cell at
/// the studies' scale, one system call each instead. The rest are read and checked
/// ([`warm`]). Only for trees the workloads read and never check themselves (they check
/// what they made of them), so a file that needs no reading needs no check either.
pub fn keep_warm(root: &Path, manifest: &Manifest, threads: usize) -> Result<(), WorkloadError> {
    let root_fd = super::dirfd::open_dir(root)?;
    let pool = crate::fsops::pool(threads)?;
    let cold: Vec<FileEntry> = pool.install(|| {
        manifest
            .files
            .par_iter()
            .filter(|f| {
                let open = rustix::fs::openat(
                    &root_fd,
                    f.path.as_str(),
                    OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
                    Mode::empty(),
                );
                // Anything but a clear "cached" (no cachestat, an error) means: read it.
                !open.is_ok_and(|fd| wholly_cached(fd.as_fd(), f.size).unwrap_or(false))
            })
            .cloned()
            .collect()
    });
    if cold.is_empty() {
        return Ok(());
    }
    let some = Manifest {
        files: cold,
        ..Manifest::default()
    };
    warm(root, &some, threads)
}

/// The name of [`dated`]'s tree for the data set of `manifest`.
pub fn dated_name(manifest: &Manifest) -> String {
    format!("dated-{}", manifest.digest())
}

/// The name of `sync`'s changed source for the data set of `before` and `fraction`.
pub fn changed_name(before: &Manifest, fraction: f64) -> String {
    format!("sync-{}-{fraction}", before.digest())
}

/// `ctx.sources/NAME` when it is already made; else made by `make` in a temporary
/// directory beside it, written back (`syncfs`), and renamed into place. Without a
/// `sources` directory, made under the point's scratch area (removed with it).
pub fn made_once(
    ctx: &Ctx,
    name: &str,
    make: impl FnOnce(&Path) -> Result<(), WorkloadError>,
) -> Result<PathBuf, WorkloadError> {
    let base = ctx.sources.unwrap_or(ctx.scratch);
    let done = base.join(name);
    if ctx.sources.is_some() && done.is_dir() {
        return Ok(done);
    }
    let tmp = base.join(format!("{name}.making"));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).ctx(|| format!("removing {}", tmp.display()))?;
    }
    std::fs::create_dir_all(&tmp).ctx(|| format!("creating {}", tmp.display()))?;
    make(&tmp)?;
    // Written back now: its writeback must not land in a later cell's measured phase.
    crate::sys::syncfs(&tmp).ctx(|| format!("syncfs {}", tmp.display()))?;
    std::fs::rename(&tmp, &done).ctx(|| format!("renaming {}", tmp.display()))?;
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::contract::Workload;
    use crate::workload::copy;
    use crate::workload::harness::PlainHarness;
    use crate::workload::point::Point;
    use crate::workload::sync::testenv::{var_tmp_dir, Env};

    #[test]
    fn a_runs_sources_are_made_once_and_a_half_made_one_is_remade() {
        let env = Env::new();
        let sources = var_tmp_dir();
        let mut ctx = env.ctx();
        ctx.sources = Some(sources.path());
        let manifest = crate::workload::prepare::plan(&ctx).unwrap();
        // A tree left half made by a killed run is not taken for a made one.
        let making = sources
            .path()
            .join(format!("{}.making", dated_name(&manifest)));
        std::fs::create_dir_all(&making).unwrap();
        std::fs::write(making.join("stray"), b"x").unwrap();

        let (first, m1) = dated(&ctx).unwrap();
        assert_eq!(m1, manifest);
        assert!(!making.exists(), "the half-made tree is still there");
        crate::workload::verify::tree(&first, &manifest, 2).unwrap();
        // A second cell finds it made: nothing is generated again (a planted file survives).
        std::fs::write(first.join("planted"), b"kept").unwrap();
        let (second, _) = dated(&ctx).unwrap();
        assert_eq!(first, second);
        assert!(second.join("planted").exists(), "the source was made again");
        std::fs::remove_file(second.join("planted")).unwrap();

        // Two copy cells read the same source and leave it as it was.
        for _ in 0..2 {
            let root = var_tmp_dir();
            let mut c = env.ctx();
            c.sources = Some(sources.path());
            c.root = root.path();
            let point = Point {
                variant: "from-outside".into(),
                ..Point::default()
            };
            copy::CopyTree
                .run(&c, &point, &mut PlainHarness::default())
                .unwrap();
            crate::workload::verify::tree(root.path(), &manifest, 2).unwrap();
        }
        crate::workload::verify::tree(&first, &manifest, 2).unwrap();
    }

    #[test]
    fn warming_a_source_that_lost_bytes_is_an_error() {
        let env = Env::new();
        let ctx = env.ctx();
        let (dir, manifest) = dated(&ctx).unwrap();
        let victim = dir.join(&manifest.files[0].path);
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&victim)
            .unwrap();
        f.set_len(manifest.files[0].size / 2).unwrap();
        let e = warm(&dir, &manifest, 2).unwrap_err();
        assert!(e.to_string().contains("holds"), "{e}");
    }

    /// A copy that shares its source's blocks is checked by where they are, so the
    /// source's own bytes must be right: the warm hashes them.
    #[test]
    fn warming_a_source_with_a_changed_byte_is_an_error() {
        let env = Env::new();
        let ctx = env.ctx();
        let (dir, manifest) = dated(&ctx).unwrap();
        let f = manifest.files.iter().find(|f| f.size > 0).unwrap();
        let victim = dir.join(&f.path);
        let mut bytes = std::fs::read(&victim).unwrap();
        bytes[0] ^= 0xff;
        std::fs::write(&victim, &bytes).unwrap();
        let e = warm(&dir, &manifest, 2).unwrap_err();
        assert!(e.to_string().contains("other bytes"), "{e}");
    }

    /// A file that left the cache is read back; one still cached is not read at all (a
    /// changed byte in it goes unseen by this warm, and is caught by the full one).
    #[test]
    fn keeping_a_source_warm_reads_only_what_left_the_cache() {
        let env = Env::new();
        let ctx = env.ctx();
        let (dir, manifest) = dated(&ctx).unwrap();
        let mut files = manifest.files.iter().filter(|f| f.size > 0);
        let (gone, kept) = (files.next().unwrap(), files.next().unwrap());
        let evicted = std::fs::File::open(dir.join(&gone.path)).unwrap();
        let cached = |f: &std::fs::File, len| wholly_cached(f.as_fd(), len);
        if cached(&evicted, gone.size).is_err() {
            eprintln!("skipped: no cachestat on this kernel");
            return;
        }
        rustix::fs::fadvise(&evicted, 0, None, rustix::fs::Advice::DontNeed).unwrap();
        assert!(!cached(&evicted, gone.size).unwrap());

        let victim = dir.join(&kept.path);
        let mut bytes = std::fs::read(&victim).unwrap();
        bytes[0] ^= 0xff;
        std::fs::write(&victim, &bytes).unwrap();
        keep_warm(&dir, &manifest, 2).unwrap();
        assert!(cached(&evicted, gone.size).unwrap());
        let e = warm(&dir, &manifest, 2).unwrap_err();
        assert!(e.to_string().contains("other bytes"), "{e}");
    }
}
