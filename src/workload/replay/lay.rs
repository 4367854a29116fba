//! Laying down a trace's initial state, unmeasured: its directories, its files with
//! generated content of the recorded size (a sparse file's data only where the program's
//! lay, its holes left as holes), its symlinks — then `syncfs`, so the measured
//! phase does not pay for this writeback. The same function fills the golden image cells
//! copy, so a cell on a copy and a cell that laid the state down itself start alike.

use std::io::{Seek, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;

use super::content::content_id;
use crate::dataset::content::CHUNK;
use crate::dataset::{fill_content, DatasetSpec};
use crate::trace::format::{Initial, Kind, Op, Trace};
use crate::trace::holes::DataRange;
use crate::workload::ctx::Ctx;
use crate::workload::error::{IoContext, WorkloadError};
use crate::workload::initial::OwnState;

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
    // One at a time, in the order the program met them: see `in_first_use_order`.
    for (n, e) in in_first_use_order(trace).into_iter().enumerate() {
        if n % 64 == 0 {
            ctx.check()?;
        }
        write_file(ctx.dataset, root, e)?;
    }
    crate::sys::syncfs(root).ctx(|| format!("syncfs {}", root.display()))
}

/// The trace's initial files in the order the program first named them, those it never
/// named last in the trace's order. A program that walks a tree (cp, tar, rsync, du) reads
/// it in the order its files lie on the device (GNU cp and fts sort a directory's entries
/// by inode number), which is the order they were made in; laid down one at a time in that
/// order, the replay's tree lies as the program's did. Laid down by parallel threads, the
/// files of different directories interleave: on ntfs-3g, which hands out MFT records and
/// clusters in creation order, `cp -a`'s replay read the device in 717 to 806 requests
/// where the program read it in 590 (ext4, which places a directory's files together
/// whatever the order, read alike: 657 to 689 against 659).
fn in_first_use_order(trace: &Trace) -> Vec<&Initial> {
    let mut first: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (i, c) in trace.calls.iter().enumerate() {
        for p in [c.path.as_deref(), c.path2.as_deref()]
            .into_iter()
            .flatten()
        {
            first.entry(p).or_insert(i);
        }
    }
    let mut files: Vec<(usize, usize, &Initial)> = (trace.initial.iter())
        .filter(|e| e.kind == Kind::File)
        .enumerate()
        .map(|(n, e)| {
            (
                first.get(e.path.as_str()).copied().unwrap_or(usize::MAX),
                n,
                e,
            )
        })
        .collect();
    files.sort_by_key(|&(used, n, _)| (used, n));
    files.into_iter().map(|(_, _, e)| e).collect()
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

/// One initial file: generated content of its recorded size; a file with holes sized
/// first, then only its pieces of data written, each where it lay. Sized first, a piece
/// written lies inside the file: writes that extend a file can leave blocks allocated past
/// them (xfs preallocates past the end it grows), which the new size would then cover.
/// A file system that keeps no holes fills them with zeros: the file holds what the
/// program's read there (`holes_not_kept` counts these files).
fn write_file(spec: &DatasetSpec, root: &Path, e: &Initial) -> Result<(), WorkloadError> {
    let path = root.join(&e.path);
    make_parent(&path)?;
    let size = e.size.unwrap_or(0);
    let id = content_id(&e.path);
    let io = |err| WorkloadError::io(format!("writing {}", path.display()), err);
    let mut f = std::fs::File::create(&path).map_err(io)?;
    let whole = [[0, size]];
    let data: &[DataRange] = match &e.data {
        Some(d) => {
            f.set_len(size).map_err(io)?;
            d
        }
        None => &whole,
    };
    let mut buf = vec![0u8; (size as usize).min(CHUNK)];
    for &[start, len] in data {
        // Bounded by the file's size when the trace was read (`trace::holes::check`).
        let end = start.saturating_add(len).min(size);
        f.seek(std::io::SeekFrom::Start(start)).map_err(io)?;
        let mut off = start;
        while off < end {
            let n = ((end - off) as usize).min(CHUNK);
            fill_content(spec, id, off, &mut buf[..n]);
            f.write_all(&buf[..n]).map_err(io)?;
            off += n as u64;
        }
    }
    Ok(())
}

/// How many of `trace`'s initial files with holes have none under `root`: the file system
/// keeps no holes (exfat-fuse; ntfs-3g, which answers `SEEK_DATA` and `SEEK_HOLE` as if
/// every byte were data). Asked of the files as they lie before the measured phase, laid
/// down here or copied from the golden image.
pub fn holes_not_kept(root: &Path, trace: &Trace) -> u64 {
    let has_hole = |e: &&Initial| {
        let size = e.size.unwrap_or(0);
        e.data.as_ref().is_some_and(|d| {
            let data: u64 = d.iter().map(|r| r[1]).sum();
            data < size
        })
    };
    let lost = |e: &Initial| {
        let Ok(f) = std::fs::File::open(root.join(&e.path)) else {
            return false;
        };
        let size = e.size.unwrap_or(0);
        // The first byte that is no data, by the file system's own answer.
        !matches!(rustix::fs::seek(&f, rustix::fs::SeekFrom::Hole(0)), Ok(h) if h < size)
    };
    (trace.initial.iter())
        .filter(|e| e.kind == Kind::File)
        .filter(has_hole)
        .filter(|e| lost(e))
        .count() as u64
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::format::Call;

    fn file(path: &str) -> Initial {
        serde_json::from_value(serde_json::json!({"path": path, "kind": "file", "size": 1}))
            .unwrap()
    }

    fn stat(path: &str) -> Call {
        serde_json::from_value(serde_json::json!({"thread": 0, "start": 0.0, "dur": 0.0,
            "op": "stat", "syscall": "newfstatat", "path": path, "ret": 0}))
        .unwrap()
    }

    /// Defect (issue 56): the initial files were laid down by parallel threads in the
    /// trace's order, so on ntfs-3g the tree `cp -a`'s replay read lay otherwise than the
    /// program's (717-806 device reads against 590). They are laid in first-use order.
    #[test]
    fn initial_files_are_laid_down_in_the_order_the_program_first_used_them() {
        let initial = ["d/a", "d/b", "e/c", "never"].map(file).to_vec();
        let calls = ["e/c", "d/b", "e/c", "d/a"].map(stat).to_vec();
        let trace = Trace::new(vec!["t".into()], 1, 1.0, initial, calls);
        let order: Vec<&str> = (in_first_use_order(&trace).iter())
            .map(|e| e.path.as_str())
            .collect();
        assert_eq!(order, ["e/c", "d/b", "d/a", "never"]);
    }
}
