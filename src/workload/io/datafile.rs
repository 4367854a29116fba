//! The data file an io point reads and writes: laid out with real writes, marked pristine
//! while only read, and removed once a write point has aged it.
//!
//! The file is written before any read so that no read ever hits a hole or a preallocated
//! extent, which file systems answer with zeros without touching the device (fio #719); and
//! every point sees a freshly laid-out file, so results do not depend on point order.

use std::fs;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Duration;

use super::job::run_fio;
use super::options::MIB;
use crate::fio::{self, FioJob, IoEngine, Rw};
use crate::workload::ctx::Ctx;
use crate::workload::error::{IoContext, WorkloadError};

/// Blocks sampled to prove a laid-out file holds written data.
const LAYOUT_SAMPLES: u64 = 64;

/// The marker that says a data file is exactly as laid out: no point has written to it.
pub(super) fn pristine_marker(name: &str) -> String {
    format!("{name}.pristine")
}

/// Gives the point a data file as freshly laid out: every point sees the same file, never
/// one aged by an earlier random-write point (fragmented on copy-on-write file systems),
/// so results do not depend on point order. A file only read since its lay-out (marked
/// pristine) is reused after re-checking it; otherwise it is laid out again.
pub(super) fn prepare_file(ctx: &Ctx, name: &str, size: u64) -> Result<String, WorkloadError> {
    let marker = ctx.root.join(pristine_marker(name));
    if marker.exists() {
        if let Ok(sampled) = verify_written(&ctx.root.join(name), size) {
            return Ok(format!(
                "reused the data file laid out for an earlier point (only read since); \
                 no holes, {sampled} sampled blocks hold non-zero data"
            ));
        }
    }
    let note = lay_out(ctx, name, size)?;
    fs::write(&marker, size.to_string()).ctx(|| format!("writing {}", marker.display()))?;
    Ok(note)
}

/// Removes `path`; one that is already gone is fine.
pub(super) fn remove_if_present(path: &Path) -> Result<(), WorkloadError> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(WorkloadError::io(format!("removing {}", path.display()), e))
        }
        _ => Ok(()),
    }
}

/// Writes `size` bytes of fio's (non-zero, pseudo-random) buffer data into `name` with plain
/// buffered writes and an fsync, then proves the file holds written data. Any other data
/// file in the directory is removed first so at most one occupies the target.
fn lay_out(ctx: &Ctx, name: &str, size: u64) -> Result<String, WorkloadError> {
    remove_data_files(ctx.root)?;
    let bs = [MIB, 64 << 10, 4096, 512]
        .into_iter()
        .find(|b| size % b == 0)
        .unwrap_or(1);
    let job = FioJob {
        name: "layout".into(),
        filename: name.into(),
        rw: Rw::Write,
        rwmixread: 50,
        bs,
        size,
        numjobs: 1,
        iodepth: 1,
        direct: false,
        ioengine: IoEngine::Psync,
        runtime: None,
        ramp_time: Duration::ZERO,
        end_fsync: true,
    };
    let run = run_fio(ctx, &job)?;
    fio::verify(&job, &run)?;
    let sampled = verify_written(&ctx.root.join(name), size)?;
    Ok(format!(
        "laid out {size} bytes with real writes (fio, fallocate=none, fsync); no holes, \
         {sampled} sampled blocks hold non-zero data"
    ))
}

/// Removes every io data file and pristine marker in `root`.
fn remove_data_files(root: &Path) -> Result<(), WorkloadError> {
    let entries = fs::read_dir(root).ctx(|| format!("reading {}", root.display()))?;
    for entry in entries {
        let entry = entry.ctx(|| format!("reading {}", root.display()))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("fsarena-io-")
            && (name.ends_with(".dat") || name.ends_with(".dat.pristine"))
        {
            fs::remove_file(entry.path()).ctx(|| format!("removing {}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// Proves a laid-out file holds written data: its length is `size`, `SEEK_HOLE` finds no hole
/// before the end (where the file system supports it), and evenly spaced 4 KiB blocks are not
/// all zeros — holes and unwritten extents read as zeros, fio's write buffers do not.
/// Returns how many blocks were sampled.
pub(super) fn verify_written(path: &Path, size: u64) -> Result<u64, WorkloadError> {
    let file = fs::File::open(path).ctx(|| format!("opening {}", path.display()))?;
    let len = file
        .metadata()
        .ctx(|| format!("stat {}", path.display()))?
        .len();
    if len != size {
        return Err(WorkloadError::Verify(format!(
            "{} is {len} bytes after lay-out, expected {size}",
            path.display()
        )));
    }
    match rustix::fs::seek(&file, rustix::fs::SeekFrom::Hole(0)) {
        Ok(hole) if hole < size => {
            return Err(WorkloadError::Verify(format!(
                "{} has a hole at byte {hole}: reads there would not touch written data",
                path.display()
            )))
        }
        _ => {} // No hole, or SEEK_HOLE unsupported (then the samples below still check).
    }
    let mut buf = vec![0u8; 4096];
    let step = (size / LAYOUT_SAMPLES).max(4096) / 4096 * 4096;
    let mut sampled = 0;
    let mut off = 0;
    while off < size {
        let n = (size - off).min(buf.len() as u64) as usize;
        file.read_exact_at(&mut buf[..n], off)
            .ctx(|| format!("reading {} at {off}", path.display()))?;
        if buf[..n].iter().all(|&b| b == 0) {
            return Err(WorkloadError::Verify(format!(
                "{} reads zeros at byte {off}: not written data",
                path.display()
            )));
        }
        sampled += 1;
        off += step;
    }
    Ok(sampled)
}
