//! Laying down a trace's initial state, unmeasured: its directories, its files with
//! generated content of the recorded size, its symlinks — then `syncfs`, so the measured
//! phase does not pay for this writeback. The same function fills the golden image cells
//! copy, so a cell on a copy and a cell that laid the state down itself start alike.

use std::io::Write;
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;

use rayon::prelude::*;

use super::content::content_id;
use crate::dataset::content::CHUNK;
use crate::dataset::{fill_content, DatasetSpec};
use crate::trace::format::{Initial, Kind, Op, Trace};
use crate::workload::ctx::Ctx;
use crate::workload::error::{IoContext, WorkloadError};
use crate::workload::initial::OwnState;
use crate::workload::prepare::prep_threads;

/// Writes `trace`'s initial state under `ctx.root` and writes it back.
pub fn lay_down(ctx: &Ctx, trace: &Trace) -> Result<(), WorkloadError> {
    let root = ctx.root;
    for e in trace.initial.iter().filter(|e| e.kind != Kind::File) {
        let path = root.join(&e.path);
        match e.kind {
            Kind::Dir => std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o755)
                .create(&path)
                .ctx(|| format!("creating {}", path.display()))?,
            _ => {
                make_parent(&path)?;
                let target = e.target.as_deref().unwrap_or_default();
                std::os::unix::fs::symlink(target, &path)
                    .ctx(|| format!("creating the symlink {}", path.display()))?;
            }
        }
    }
    ctx.check()?;
    let files: Vec<&Initial> = trace
        .initial
        .iter()
        .filter(|e| e.kind == Kind::File)
        .collect();
    let pool = crate::fsops::pool(prep_threads(ctx))?;
    pool.install(|| {
        files.par_iter().try_for_each(|e| {
            ctx.check()?;
            write_file(ctx.dataset, root, e)
        })
    })?;
    crate::sys::syncfs(root).ctx(|| format!("syncfs {}", root.display()))
}

fn make_parent(path: &Path) -> Result<(), WorkloadError> {
    match path.parent() {
        Some(p) => std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(p)
            .ctx(|| format!("creating {}", p.display())),
        None => Ok(()),
    }
}

/// One initial file: generated content of its recorded size.
fn write_file(spec: &DatasetSpec, root: &Path, e: &Initial) -> Result<(), WorkloadError> {
    let path = root.join(&e.path);
    make_parent(&path)?;
    let size = e.size.unwrap_or(0);
    let id = content_id(&e.path);
    let io = |err| WorkloadError::io(format!("writing {}", path.display()), err);
    let mut f = std::fs::File::create(&path).map_err(io)?;
    let mut buf = vec![0u8; (size as usize).min(CHUNK)];
    let mut off = 0u64;
    while off < size {
        let n = ((size - off) as usize).min(CHUNK);
        fill_content(spec, id, off, &mut buf[..n]);
        f.write_all(&buf[..n]).map_err(io)?;
        off += n as u64;
    }
    Ok(())
}

/// The size of `trace`'s initial state (read from `path`), and the most its tree may hold
/// during the replay: the state and every byte its writes, truncates and fallocates may
/// add (an upper bound: overwrites and removals are not subtracted).
pub fn initial_state(trace: &Trace, path: &Path) -> OwnState {
    let files: Vec<&Initial> = trace
        .initial
        .iter()
        .filter(|e| e.kind == Kind::File)
        .collect();
    let bytes: u64 = files.iter().filter_map(|e| e.size).sum();
    let added: u64 = trace
        .calls
        .iter()
        .filter_map(|c| match c.op {
            Op::Write => c.ret.map(|n| n.max(0) as u64),
            Op::Truncate | Op::Fallocate => c.size,
            _ => None,
        })
        .sum();
    OwnState {
        files: Some(files.len() as u64),
        bytes,
        peak_bytes: bytes.saturating_add(added),
        what: format!("from {}", path.display()),
        cache: None,
    }
}
