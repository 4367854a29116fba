//! Aging a mounted file system: the seeded churn of [`crate::dataset::churn`] applied
//! under one directory until the file system reports the fill level asked for, its free
//! space cut into small pieces on the way ([`super::fragment`]: a churn alone leaves it in
//! long runs, and files written afterwards unfragmented), and the fragmentation it leaves, measured the same way before and after (extents per file from
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
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use super::error::ProvisionError;
use super::fragment::{lay_carriers, probe, punch, Pattern, CARRIER_DIR};
use crate::dataset::churn::{Churn, ChurnSpec, Op};
use crate::dataset::{fill_content, DatasetSpec};
use crate::fsops::extents::{extents, fragments};
use crate::plan::FsKind;
use crate::results::{Aging, Fragmentation, Fragmenting};

/// The directory (at the file system's root) the churn's tree lives in, apart from the
/// workloads' own directory.
pub const AGED_DIR: &str = "fsarena-aged";
/// The churn runs to this share of the fill level before the free space is cut: the
/// carriers' kept pieces hold the rest, so a hole has kept data on both sides.
const CHURN_SHARE: f64 = 0.5;
/// Holes are punched until the file system is this many points below the level; the
/// resumed churn fills them back, its files landing in the pieces as a user's would.
const TOPUP_PCT: f64 = 2.0;
/// The pattern plans this much more hole than needed, so that a seeded random subset of
/// its holes (spread over the device) is what gets punched.
const SHARE_SLACK: f64 = 1.1;
/// Rounds of cutting at most: a round whose probe still finds long runs (space the
/// allocator's reservations held back while the carriers filled) cuts again.
pub const MAX_ROUNDS: u32 = 3;
/// The free space is cut to its target when a probe file's mean fragment is at most this
/// many times the target extent (holes are drawn from half to 1.5 × the target, and a new
/// file's allocator picks the largest pieces first).
pub const PROBE_TOLERANCE: f64 = 2.0;

/// What applying the churn did.
#[derive(Debug, Clone, PartialEq)]
pub struct Churned {
    pub reached_pct: f64,
    pub operations: u64,
    pub written_bytes: u64,
    pub seconds: f64,
    pub files: usize,
    /// How the free space was cut into pieces, and what a new file met before and after.
    pub fragmenting: Fragmenting,
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

/// The churn as it is applied: the stream, where it writes, and what it has done.
struct Applied<'a> {
    mount: &'a Path,
    root: PathBuf,
    content: &'a DatasetSpec,
    churn: Churn,
    buf: Vec<u8>,
    cap: u64,
    ops: u64,
    written: u64,
    reached: f64,
}

impl Applied<'_> {
    fn statvfs_err(&self, e: io::Error) -> ProvisionError {
        ProvisionError::io(format!("statvfs {}", self.mount.display()), e)
    }

    /// Applies the churn until the file system is `pct` % full (from wherever it is).
    fn churn_to(&mut self, pct: f64, cancel: &AtomicBool) -> Result<(), ProvisionError> {
        let min_step = (self.cap / 512).max(1) as i64;
        self.reached = fill_pct(self.mount).map_err(|e| self.statvfs_err(e))?;
        let mut since: i64 = 0;
        let mut step = step_for(pct, self.reached, self.cap, min_step);
        while self.reached < pct {
            if cancel.load(Ordering::SeqCst) {
                return Err(interrupted());
            }
            let op = self.churn.next_op();
            apply(&self.root, &op, self.content, &mut self.buf).map_err(|e| {
                ProvisionError::io(format!("aging {}: {op:?}", self.root.display()), e)
            })?;
            self.ops += 1;
            self.written += op.written();
            since += op.growth();
            if since >= step {
                self.reached = fill_pct(self.mount).map_err(|e| self.statvfs_err(e))?;
                since = 0;
                step = step_for(pct, self.reached, self.cap, min_step);
            }
        }
        Ok(())
    }
}

fn interrupted() -> ProvisionError {
    ProvisionError::Unsupported("interrupted while aging the image".into())
}

/// Ages the file system mounted at `mount` to `pct` % full with its free space in pieces
/// of about `free_extent` bytes: the churn of `seed` (contents drawn as the data set
/// `content` draws them) under `mount/`[`AGED_DIR`] to half the level, the free space then
/// cut into pieces ([`cut_free_space`]) and the churn resumed to the level, its files
/// landing in the pieces — repeated, at most [`MAX_ROUNDS`] times, until a probe file
/// written into the file system lands in pieces of at most [`PROBE_TOLERANCE`] ×
/// `free_extent`. Stops early, with an error, when `cancel` is raised; a churn operation
/// that meets a full file system (ENOSPC) is an error too.
pub fn age(
    mount: &Path,
    pct: f64,
    free_extent: u64,
    content: &DatasetSpec,
    cancel: &AtomicBool,
) -> Result<Churned, ProvisionError> {
    let t0 = Instant::now();
    let root = mount.join(AGED_DIR);
    let io_err = |what: String, e: io::Error| ProvisionError::io(what, e);
    fs::create_dir(&root).map_err(|e| io_err(format!("cannot create {}", root.display()), e))?;
    let cap = capacity(mount).map_err(|e| io_err(format!("statvfs {}", mount.display()), e))?;
    let random = content.content == crate::dataset::spec::ContentMix::Random;
    let probe_err = |e| io_err(format!("probing the free space of {}", mount.display()), e);
    let probe_before = probe(mount, content).map_err(probe_err)?;
    let mut a = Applied {
        mount,
        root,
        content,
        churn: Churn::new(ChurnSpec::for_capacity(content.seed, cap, random)),
        buf: vec![0u8; 1 << 20],
        cap,
        ops: 0,
        written: 0,
        reached: 0.0,
    };
    a.churn_to(pct * CHURN_SHARE, cancel)?;
    let mut frag = Fragmenting {
        target_extent_bytes: free_extent,
        churn_pct: a.reached,
        probe_before_bytes: probe_before,
        ..Fragmenting::default()
    };
    for round in 1..=MAX_ROUNDS {
        cut_free_space(&mut frag, mount, pct, content, round, cancel)?;
        a.churn_to(pct, cancel)?;
        frag.rounds = round;
        frag.probe_after_bytes = probe(mount, content).map_err(probe_err)?;
        frag.reached = frag
            .probe_after_bytes
            .is_some_and(|p| p as f64 <= PROBE_TOLERANCE * free_extent as f64);
        if frag.reached || frag.probe_after_bytes.is_none() {
            break;
        }
    }
    Ok(Churned {
        reached_pct: a.reached,
        operations: a.ops,
        written_bytes: a.written + frag.carrier_bytes,
        seconds: t0.elapsed().as_secs_f64(),
        files: a.churn.live_files(),
        fragmenting: frag,
    })
}

/// One round of cutting: carriers fill the file system to ENOSPC, then holes are punched
/// until it is [`TOPUP_PCT`] below `pct` (the churn tops it up into the holes).
fn cut_free_space(
    frag: &mut Fragmenting,
    mount: &Path,
    pct: f64,
    content: &DatasetSpec,
    round: u32,
    cancel: &AtomicBool,
) -> Result<(), ProvisionError> {
    let io_err =
        |what: &str, e: io::Error| ProvisionError::io(format!("{what} {}", mount.display()), e);
    let s = rustix::fs::statvfs(mount).map_err(|e| io_err("statvfs", e.into()))?;
    let goal = goal_used_bytes(
        (s.f_blocks, s.f_bfree, s.f_bavail, s.f_frsize),
        pct - TOPUP_PCT,
    );
    let free = s.f_bfree * s.f_frsize;
    let used = (s.f_blocks - s.f_bfree) * s.f_frsize;
    let share = (used + free).saturating_sub(goal) as f64 / free.max(1) as f64;
    let extent = frag.target_extent_bytes;
    let mut pattern = Pattern::new(content.seed, round, extent, (share * SHARE_SLACK).min(0.98));
    let laid = lay_carriers(
        &mount.join(CARRIER_DIR),
        round,
        &mut pattern,
        content,
        cancel,
    )
    .map_err(|e| {
        if cancel.load(Ordering::SeqCst) {
            interrupted()
        } else {
            io_err("filling the free space of", e)
        }
    })?;
    let full = fill_used_bytes(mount).map_err(|e| io_err("statvfs", e))?;
    let (bytes, holes) = punch(&laid, full.saturating_sub(goal), content.seed, round)
        .map_err(|e| io_err("punching holes in", e))?;
    frag.carrier_bytes += laid.written;
    frag.punched_bytes += bytes;
    frag.holes += holes;
    Ok(())
}

/// Bytes in use once `pct` % of the file system is (df's Use%: used ÷ (used + available),
/// the reserved blocks left out of both).
/// `statvfs` is (blocks, free, available, fragment size).
fn goal_used_bytes((blocks, bfree, bavail, frsize): (u64, u64, u64, u64), pct: f64) -> u64 {
    let reserved = bfree.saturating_sub(bavail);
    let capacity = blocks.saturating_sub(reserved) * frsize;
    (capacity as f64 * pct.max(0.0) / 100.0) as u64
}

/// Bytes in use on the file system at `mount`, after a syncfs.
fn fill_used_bytes(mount: &Path) -> io::Result<u64> {
    let f = File::open(mount)?;
    rustix::fs::syncfs(&f)?;
    let s = rustix::fs::fstatvfs(&f)?;
    Ok(s.f_blocks.saturating_sub(s.f_bfree) * s.f_frsize)
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
    // A helper of its own group (a terminal's Ctrl-C must not kill it mid-aging).
    let out = crate::sys::helper_command(program)
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

/// One line on what aging did to an image, for the progress output and the report: the
/// level, the cost, and the layout before → after (a probe file's mean fragment, the free
/// space's extents where the file system counts them, the data set's extents per file).
pub fn summary(a: &Aging) -> String {
    let kib = |b: Option<u64>| b.map_or("—".into(), |b| format!("{:.0} KiB", b as f64 / 1024.0));
    let num = |x: Option<u64>| x.map_or("—".into(), |v| v.to_string());
    let per = |x: Option<f64>| x.map_or("—".into(), |v| format!("{v:.2}"));
    let mut line = format!(
        "aged to {:.1} % (asked {} %){} in {:.1} s, {} churn operations, {:.0} MB written",
        a.reached_pct,
        a.target_pct,
        a.with_dataset_pct
            .map_or(String::new(), |p| format!(", {p:.1} % with the data set")),
        a.seconds,
        a.operations,
        a.written_bytes as f64 / 1e6,
    );
    if let Some(f) = &a.fragmenting {
        line.push_str(&format!(
            "; free space cut to {} pieces in {} round(s){}: a new file's extent {} → {}",
            kib(Some(f.target_extent_bytes)),
            f.rounds,
            if f.reached {
                ""
            } else {
                " (target not reached)"
            },
            kib(f.probe_before_bytes),
            kib(f.probe_after_bytes),
        ));
    }
    line.push_str(&format!(
        "; free-space extents {} → {}{}",
        num(a.before.free_extents),
        num(a.after.free_extents),
        a.after
            .free_extents_note
            .as_ref()
            .map_or(String::new(), |n| format!(" ({n})")),
    ));
    line.push_str(&format!(
        "; churn tree {} files at {} extents per file",
        a.after.files,
        per(a.after.extents_per_file)
    ));
    if let Some(d) = &a.dataset {
        line.push_str(&format!(
            "; data set {} files at {} extents per file",
            d.files,
            per(d.extents_per_file)
        ));
    }
    line
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

    /// ext4 keeps 5 % for root: df's Use% leaves it out of both sides, and so must the
    /// punching's goal, or an aged ext4 ends 5 % off the level asked.
    #[test]
    fn the_goal_counts_the_fill_as_df_does() {
        // 1000 blocks of 4 KiB, 50 reserved, 400 free of which 350 available.
        let goal = goal_used_bytes((1000, 400, 350, 4096), 60.0);
        assert_eq!(goal, (950.0 * 0.6) as u64 * 4096);
        // Everything but the reserve in use: the same goal.
        assert_eq!(goal_used_bytes((1000, 50, 0, 4096), 60.0), goal);
        // A full file system hides its reserve (free = available = 0), which is why the
        // goal is taken before the carriers fill it.
        assert_eq!(goal_used_bytes((1000, 0, 0, 4096), 60.0), 600 * 4096);
        assert_eq!(goal_used_bytes((1000, 400, 350, 4096), -1.0), 0);
    }

    #[test]
    fn the_step_halves_the_distance_and_has_a_floor() {
        let cap = 1 << 30;
        assert_eq!(step_for(50.0, 10.0, cap, 100), (0.2 * cap as f64) as i64);
        assert_eq!(step_for(50.0, 50.0, cap, 100), 100);
        assert_eq!(step_for(50.0, 60.0, cap, 100), 100);
    }
}
