//! Aging a mounted file system: the seeded churn of [`crate::dataset::churn`] applied
//! under one directory until the file system reports the fill level asked for, and the
//! fragmentation it leaves, measured the same way before and after (extents per file from
//! FIEMAP; free-space extents from the file system's own tool where it has one).
//!
//! The fill level is `df`'s: used ÷ (used + available), from `statvfs` after a `syncfs`
//! (delayed allocation must have placed the data, or a file system reports reservations).
//! It is read at points the churn itself decides: halfway to the remaining distance each
//! time, never more often than every 1/512 of capacity, so the stop point — and with it the
//! tree — is the same for two agings of one spec on one file system.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use super::ProvisionError;
use crate::dataset::churn::{Churn, ChurnSpec, Op};
use crate::dataset::{fill_content, DatasetSpec};
use crate::fsops::extents::{extents, fragments};
use crate::plan::FsKind;
use crate::results::Fragmentation;

/// The directory (at the file system's root) the churn's tree lives in, apart from the
/// workloads' own directory.
pub const AGED_DIR: &str = "fsarena-aged";

/// What applying the churn did.
#[derive(Debug, Clone, PartialEq)]
pub struct Churned {
    pub reached_pct: f64,
    pub operations: u64,
    pub written_bytes: u64,
    pub seconds: f64,
    pub files: usize,
}

/// The fill level of the file system holding `p`, in % (`df`'s Use%), after a syncfs.
pub fn fill_pct(p: &Path) -> io::Result<f64> {
    let f = File::open(p)?;
    rustix::fs::syncfs(&f)?;
    let s = rustix::fs::fstatvfs(&f)?;
    let used = s.f_blocks.saturating_sub(s.f_bfree);
    let total = used + s.f_bavail;
    if total == 0 {
        return Err(io::Error::other("statvfs reports no capacity"));
    }
    Ok(100.0 * used as f64 / total as f64)
}

/// Bytes the file system holding `p` can hold (used + available).
fn capacity(p: &Path) -> io::Result<u64> {
    let s = rustix::fs::statvfs(p)?;
    Ok((s.f_blocks.saturating_sub(s.f_bfree) + s.f_bavail) * s.f_frsize)
}

/// Ages the file system mounted at `mount` to `pct` % full with the churn of `seed`
/// (contents drawn as the data set `content` draws them), under `mount/`[`AGED_DIR`].
/// Stops early, with an error, when `cancel` is raised; a file system that fills up
/// before the level (ENOSPC) is an error too.
pub fn age(
    mount: &Path,
    pct: f64,
    content: &DatasetSpec,
    cancel: &AtomicBool,
) -> Result<Churned, ProvisionError> {
    let t0 = Instant::now();
    let root = mount.join(AGED_DIR);
    let io_err = |what: String, e: io::Error| ProvisionError::io(what, e);
    fs::create_dir(&root).map_err(|e| io_err(format!("cannot create {}", root.display()), e))?;
    let cap = capacity(mount).map_err(|e| io_err(format!("statvfs {}", mount.display()), e))?;
    let random = content.content == crate::dataset::spec::ContentMix::Random;
    let mut churn = Churn::new(ChurnSpec::for_capacity(content.seed, cap, random));
    let mut buf = vec![0u8; 1 << 20];
    let min_step = (cap / 512).max(1) as i64;
    let mut reached =
        fill_pct(mount).map_err(|e| io_err(format!("statvfs {}", mount.display()), e))?;
    let mut since: i64 = 0;
    let mut step = step_for(pct, reached, cap, min_step);
    let (mut ops, mut written) = (0u64, 0u64);
    while reached < pct {
        if cancel.load(Ordering::SeqCst) {
            return Err(ProvisionError::Unsupported(
                "interrupted while aging the image".into(),
            ));
        }
        let op = churn.next_op();
        apply(&root, &op, content, &mut buf)
            .map_err(|e| io_err(format!("aging {}: {op:?}", root.display()), e))?;
        ops += 1;
        written += op.written();
        since += op.growth();
        if since >= step {
            reached =
                fill_pct(mount).map_err(|e| io_err(format!("statvfs {}", mount.display()), e))?;
            since = 0;
            step = step_for(pct, reached, cap, min_step);
        }
    }
    Ok(Churned {
        reached_pct: reached,
        operations: ops,
        written_bytes: written,
        seconds: t0.elapsed().as_secs_f64(),
        files: churn.live_files(),
    })
}

/// Net growth (bytes) before the next look at the fill level: half the remaining distance,
/// at least `min_step`.
fn step_for(pct: f64, reached: f64, cap: u64, min_step: i64) -> i64 {
    let remaining = ((pct - reached) / 100.0 * cap as f64).max(0.0);
    ((remaining / 2.0) as i64).max(min_step)
}

/// Performs one churn operation under `root`.
fn apply(root: &Path, op: &Op, spec: &DatasetSpec, buf: &mut [u8]) -> io::Result<()> {
    match op {
        Op::Mkdir { path } => fs::create_dir(root.join(path)),
        Op::Create {
            path,
            size,
            content,
        } => {
            let f = OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(root.join(path))?;
            write_range(&f, spec, *content, 0, 0, *size, buf)
        }
        Op::Append {
            path,
            offset,
            bytes,
            content,
        } => {
            let f = OpenOptions::new().write(true).open(root.join(path))?;
            write_range(&f, spec, *content, 0, *offset, *bytes, buf)
        }
        Op::Overwrite {
            path,
            offset,
            bytes,
            content,
        } => {
            let f = OpenOptions::new().write(true).open(root.join(path))?;
            write_range(&f, spec, *content, 0, *offset, *bytes, buf)
        }
        Op::Rename { from, to } => fs::rename(root.join(from), root.join(to)),
        Op::Delete { path, .. } => fs::remove_file(root.join(path)),
    }
}

/// Writes `len` bytes of `content` (from its offset `from`) at `at` of `f`.
fn write_range(
    f: &File,
    spec: &DatasetSpec,
    content: u64,
    from: u64,
    at: u64,
    len: u64,
    buf: &mut [u8],
) -> io::Result<()> {
    let mut done = 0u64;
    while done < len {
        let n = (len - done).min(buf.len() as u64) as usize;
        fill_content(spec, content, from + done, &mut buf[..n]);
        f.write_all_at(&buf[..n], at + done)?;
        done += n as u64;
    }
    Ok(())
}

/// Extents and fragments per file over every regular file under `dir` (none: zeros and
/// `None`s). Files FIEMAP cannot map are left out of the means.
pub fn file_fragmentation(dir: &Path) -> io::Result<Fragmentation> {
    let (mut files, mut mapped, mut ext, mut frag) = (0u64, 0u64, 0u64, 0u64);
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d)? {
            let e = e?;
            let t = e.file_type()?;
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_file() {
                files += 1;
                let f = File::open(e.path())?;
                match extents(&f) {
                    Ok(x) if !x.is_empty() => {
                        mapped += 1;
                        ext += x.len() as u64;
                        frag += fragments(&x) as u64;
                    }
                    Ok(_) => {}
                    Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {}
                    Err(e) => return Err(e),
                }
            }
        }
    }
    let mean = |n: u64| (mapped > 0).then(|| n as f64 / mapped as f64);
    Ok(Fragmentation {
        files,
        extents_per_file: mean(ext),
        fragments_per_file: mean(frag),
        free_extents: None,
        free_extents_note: None,
    })
}

/// Free-space extents of the mounted file system (`device` mounted at `mount`), from the
/// file system's own tool, or why there is no such figure.
pub fn free_extents(fs: FsKind, device: Option<&Path>, mount: &Path) -> Result<u64, String> {
    let (program, args): (&str, Vec<String>) = match (fs, device) {
        // e2freefrag reads a mounted ext4 through GETFSMAP.
        (FsKind::Ext4, Some(d)) => ("e2freefrag", vec![d.display().to_string()]),
        // xfs_spaceman asks the mounted file system (GETFSMAP), never stale on-disk metadata.
        (FsKind::Xfs, _) => (
            "xfs_spaceman",
            vec!["-c".into(), "freesp".into(), mount.display().to_string()],
        ),
        (FsKind::Btrfs, _) => return Err("btrfs exposes no free-space extent map (skipped)".into()),
        (other, _) => return Err(format!("not exposed by {} here (skipped)", other.name())),
    };
    if let Ok(f) = File::open(mount) {
        let _ = rustix::fs::syncfs(&f);
    }
    let out = Command::new(program)
        .args(&args)
        .output()
        .map_err(|e| format!("{program}: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!("{program} failed: {}", err.trim()));
    }
    let parsed = match fs {
        FsKind::Ext4 => parse_e2freefrag(&text),
        _ => parse_freesp(&text),
    };
    parsed.ok_or_else(|| format!("{program}: no free-extent count in its output"))
}

/// `Num. free extent: N` of e2freefrag's summary.
fn parse_e2freefrag(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.trim().strip_prefix("Num. free extent:"))
        .and_then(|v| v.trim().parse().ok())
}

/// The sum of the `extents` column of a `freesp` histogram (xfs_spaceman, xfs_db).
fn parse_freesp(text: &str) -> Option<u64> {
    let mut sum = None;
    for l in text.lines() {
        let cols: Vec<&str> = l.split_whitespace().collect();
        if cols.len() >= 4 {
            if let (Ok(_), Ok(_), Ok(n)) = (
                cols[0].parse::<u64>(),
                cols[1].parse::<u64>(),
                cols[2].parse::<u64>(),
            ) {
                *sum.get_or_insert(0) += n;
            }
        }
    }
    sum
}

/// Writes the fragmentation's free-space figure (or why there is none) into `f`.
pub fn with_free_extents(
    mut f: Fragmentation,
    fs: FsKind,
    device: Option<&Path>,
    mount: &Path,
) -> Fragmentation {
    match free_extents(fs, device, mount) {
        Ok(n) => f.free_extents = Some(n),
        Err(why) => f.free_extents_note = Some(why),
    }
    f
}

/// One line for the progress output.
pub fn describe(c: &Churned, pct: f64) -> String {
    format!(
        "aged to {:.1} % (asked {pct} %): {} operations, {} files, {:.0} MB written in {:.1} s",
        c.reached_pct,
        c.operations,
        c.files,
        c.written_bytes as f64 / 1e6,
        c.seconds
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e2freefrag_summary_is_read() {
        let out = "Device: /dev/loop3\nBlocksize: 4096 bytes\nTotal blocks: 65536\nFree blocks: 40000 (61.0%)\n\nMin. free extent: 4 KB \nMax. free extent: 98304 KB\nAvg. free extent: 1200 KB\nNum. free extent: 133\n\nHISTOGRAM OF FREE EXTENT SIZES:\n";
        assert_eq!(parse_e2freefrag(out), Some(133));
        assert_eq!(parse_e2freefrag("Device: x\n"), None);
    }

    #[test]
    fn freesp_histogram_is_summed() {
        let out = "   from      to extents  blocks    pct\n      1       1      10      10   0.01\n      2       3       4      11   0.01\n  32768   65535       2  100000  99.98\n";
        assert_eq!(parse_freesp(out), Some(16));
        assert_eq!(parse_freesp("nothing here\n"), None);
    }

    #[test]
    fn the_step_halves_the_distance_and_has_a_floor() {
        let cap = 1 << 30;
        assert_eq!(step_for(50.0, 10.0, cap, 100), (0.2 * cap as f64) as i64);
        assert_eq!(step_for(50.0, 50.0, cap, 100), 100);
        assert_eq!(step_for(50.0, 60.0, cap, 100), 100);
    }
}
