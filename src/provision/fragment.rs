//! Cutting a file system's free space into small pieces: the half of aging that makes it
//! *age*. A churn alone leaves most of the free space in a few long runs at any fill level
//! (issue 39: 60 % full, the data set still in 1.0 extents per file), because an allocator
//! that finds a long run uses it. Real aged file systems have their free space scattered
//! (Geriatrix, Kadekodi et al., ATC '18, ages to a fragmentation profile; Smith & Seltzer's
//! layout score falls with age), so a file written into one lands in many pieces.
//!
//! How: *carrier* files fill every free block of the file system (to ENOSPC, so no long run
//! survives anywhere), written as a seeded alternation of kept pieces and hole pieces, each
//! piece handed to writeback on its own (`sync_file_range`) so it is its own extent — btrfs
//! frees an extent only when none of it is referenced, so a hole punched into a longer one
//! would free nothing. Then a seeded random subset of the hole pieces is punched out
//! (`FALLOC_FL_PUNCH_HOLE`) until the file system is back below the fill level asked for:
//! the free space is now holes of about the target size, spread over the whole device.
//!
//! What it leaves is measured the way a new file meets it: a [`probe`] file written into
//! the file system, its fragments counted by FIEMAP, its mean fragment size reported (and
//! the file removed). The same probe on the fresh file system is the "before".

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::dataset::draw::{below, shuffle};
use crate::dataset::seed::key;
use crate::dataset::typed::Kind;
use crate::dataset::{fill_content, ContentId, DatasetSpec};
use crate::fsops::extents::{extents, fragments};

/// The free-space extent aging leaves by default (`--age-free-extent`): 64 KiB, so a 1 MiB
/// file written afterwards lands in about 16 pieces and a sequential read of it becomes
/// small scattered reads.
pub const DEFAULT_FREE_EXTENT: u64 = 64 << 10;
/// The directory (at the file system's root) the carrier files live in, apart from the
/// churn's tree, whose determinism they would spoil (how much fits before ENOSPC varies by
/// a few blocks with where the allocator put its metadata).
pub const CARRIER_DIR: &str = "fsarena-aged-carriers";
/// Pieces are whole blocks of this many bytes.
const BLOCK: u64 = 4096;
/// A carrier file holds at most this much (logical bytes).
const CARRIER_BYTES: u64 = 64 << 20;
/// The probe file's size, at most (a quarter of the free space at most).
pub const PROBE_BYTES: u64 = 16 << 20;
/// The probe's name at the file system's root; removed after each probe.
const PROBE_NAME: &str = "fsarena-free-space-probe";
/// The stream's key domain (the churn's is 4).
const DOMAIN_HOLES: u64 = 5;
/// Content numbers of carriers: apart from the data set's and the churn's.
const CONTENT_BASE: u64 = 1 << 41;
/// `_IOWR('X', 121, struct fstrim_range)`.
const FITRIM: u64 = 0xC018_5879;

/// One piece of a carrier: `len` bytes, a hole to punch when `hole`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    pub len: u64,
    pub hole: bool,
}

/// The seeded alternation of kept and hole pieces: holes of `extent` bytes on average,
/// kept runs sized so that holes are `share` of the bytes (each drawn uniformly from half
/// to one and a half times its mean, rounded to the nearest whole block, at least one).
pub struct Pattern {
    rng: ChaCha8Rng,
    hole_mean: u64,
    keep_mean: u64,
    next_is_hole: bool,
}

impl Pattern {
    pub fn new(seed: u64, round: u32, extent: u64, share: f64) -> Pattern {
        let share = share.clamp(0.02, 0.98);
        let hole_mean = extent.max(BLOCK);
        let keep_mean = ((hole_mean as f64) * (1.0 - share) / share) as u64;
        Pattern {
            rng: ChaCha8Rng::from_seed(key(seed, u64::from(round), DOMAIN_HOLES)),
            hole_mean,
            keep_mean: keep_mean.max(BLOCK),
            next_is_hole: false,
        }
    }

    /// The share of bytes the pattern really makes holes (a kept run is at least a block).
    pub fn hole_share(&self) -> f64 {
        self.hole_mean as f64 / (self.hole_mean + self.keep_mean) as f64
    }

    pub fn next_piece(&mut self) -> Piece {
        let hole = self.next_is_hole;
        self.next_is_hole = !hole;
        let mean = if hole { self.hole_mean } else { self.keep_mean };
        let drawn = mean / 2 + below(&mut self.rng, mean + 1);
        Piece {
            len: ((drawn + BLOCK / 2) / BLOCK).max(1) * BLOCK,
            hole,
        }
    }
}

/// A piece laid in carrier `file` at `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placed {
    pub file: usize,
    pub offset: u64,
    pub len: u64,
    pub hole: bool,
}

/// What [`lay_carriers`] wrote.
#[derive(Debug, Default)]
pub struct Laid {
    pub files: Vec<PathBuf>,
    pub pieces: Vec<Placed>,
    pub written: u64,
}

/// Whether `e` says the file system is full.
fn is_full(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT))
}

/// Fills the file system with carrier files under `dir` (made if missing), pieces drawn
/// from `pattern`, until it is full (ENOSPC ends the filling; any other error is one).
/// `round` names the files apart from an earlier round's.
pub fn lay_carriers(
    dir: &Path,
    round: u32,
    pattern: &mut Pattern,
    spec: &DatasetSpec,
    cancel: &AtomicBool,
) -> io::Result<Laid> {
    fs::create_dir_all(dir)?;
    let mut buf = vec![0u8; 1 << 20];
    let content = ContentId::plain(CONTENT_BASE + u64::from(round), Kind::Compressed);
    fill_content(spec, content, 0, &mut buf);
    let mut laid = Laid::default();
    loop {
        if cancel.load(Ordering::SeqCst) {
            return Err(io::Error::other("interrupted while aging the image"));
        }
        let path = dir.join(format!("r{round}-{:05}", laid.files.len()));
        let f = match OpenOptions::new().write(true).create_new(true).open(&path) {
            Err(e) if is_full(&e) => return Ok(laid),
            r => r?,
        };
        laid.files.push(path);
        let file = laid.files.len() - 1;
        let mut offset = 0u64;
        while offset < CARRIER_BYTES {
            let piece = pattern.next_piece();
            match write_piece(&f, offset, piece.len, &buf) {
                Err(e) if is_full(&e) => return Ok(laid),
                r => r?,
            }
            laid.pieces.push(Placed {
                file,
                offset,
                len: piece.len,
                hole: piece.hole,
            });
            offset += piece.len;
            laid.written += piece.len;
        }
    }
}

/// Writes `len` bytes of `buf` (cycled) at `offset` and hands just them to writeback, so
/// the piece gets an allocation — and on btrfs an extent — of its own.
fn write_piece(f: &File, offset: u64, len: u64, buf: &[u8]) -> io::Result<()> {
    let mut done = 0u64;
    while done < len {
        let at = ((offset + done) % buf.len() as u64) as usize;
        let n = ((len - done) as usize).min(buf.len() - at);
        f.write_all_at(&buf[at..at + n], offset + done)?;
        done += n as u64;
    }
    // SAFETY: a plain syscall on an open descriptor; no memory is passed.
    let r = unsafe {
        libc::sync_file_range(
            f.as_raw_fd(),
            offset as libc::off64_t,
            len as libc::off64_t,
            libc::SYNC_FILE_RANGE_WRITE,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Punches out hole pieces of `laid`, in a seeded random order spread over every carrier,
/// until `need` bytes are freed or no hole is left. Kept pieces are never punched, even
/// when the holes free too little (a later round, whose carriers fill what the earlier
/// left free, needs nearly all of it back): punching them would join the holes into the
/// long runs the round is there to split, so the file system ends a little fuller than
/// asked instead (xfs: 2 points), and the record says how full. Returns (bytes punched,
/// holes punched).
pub fn punch(laid: &Laid, need: u64, seed: u64, round: u32) -> io::Result<(u64, u64)> {
    let files = laid
        .files
        .iter()
        .map(|p| OpenOptions::new().write(true).open(p))
        .collect::<io::Result<Vec<File>>>()?;
    let order = punch_order(&laid.pieces, seed, round);
    let (mut bytes, mut holes) = (0u64, 0u64);
    for i in order {
        if bytes >= need {
            break;
        }
        let h = laid.pieces[i];
        rustix::fs::fallocate(
            &files[h.file],
            rustix::fs::FallocateFlags::PUNCH_HOLE | rustix::fs::FallocateFlags::KEEP_SIZE,
            h.offset,
            h.len,
        )?;
        bytes += h.len;
        holes += 1;
    }
    Ok((bytes, holes))
}

/// The order holes are punched in: the hole pieces in a seeded shuffle, so stopping early
/// leaves the unpunched ones spread over the device rather than at its end.
fn punch_order(pieces: &[Placed], seed: u64, round: u32) -> Vec<usize> {
    let mut rng = ChaCha8Rng::from_seed(key(seed, 1 << 32 | u64::from(round), DOMAIN_HOLES));
    let mut order: Vec<usize> = (0..pieces.len()).filter(|&i| pieces[i].hole).collect();
    shuffle(&mut rng, &mut order);
    order
}

/// The free-space pieces a new file meets: a probe file of up to [`PROBE_BYTES`] (at most a
/// quarter of the free space) written at the root of `mount` and synced, its mean FIEMAP
/// fragment in bytes; the probe is removed. `None`: too little free space to probe (under
/// 1 MiB), or no FIEMAP here.
pub fn probe(mount: &Path, spec: &DatasetSpec) -> io::Result<Option<u64>> {
    let s = rustix::fs::statvfs(mount)?;
    let free = s.f_bavail * s.f_frsize;
    let bytes = (PROBE_BYTES.min(free / 4) / BLOCK) * BLOCK;
    if bytes < 1 << 20 {
        return Ok(None);
    }
    let path = mount.join(PROBE_NAME);
    let mut buf = vec![0u8; bytes as usize];
    fill_content(
        spec,
        ContentId::plain(CONTENT_BASE - 1, Kind::Compressed),
        0,
        &mut buf,
    );
    let measured = (|| {
        let mut f = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        f.write_all(&buf)?;
        f.sync_all()?;
        match extents(&f) {
            Ok(x) => Ok(Some(bytes / fragments(&x).max(1) as u64)),
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => Ok(None),
            Err(e) => Err(e),
        }
    })();
    let removed = fs::remove_file(&path);
    let f = File::open(mount)?;
    rustix::fs::syncfs(&f)?;
    let out = measured?;
    removed?;
    Ok(out)
}

/// Discards the free space of the file system at `mount` (FITRIM), so that its loop image
/// gives back to the host what aging wrote and freed: an aged image then holds about its
/// fill level, not the whole device the carriers once filled. `Ok(false)`: the file system
/// or device does not discard (nothing is lost but host space).
pub fn trim(mount: &Path) -> io::Result<bool> {
    #[repr(C)]
    struct Range {
        start: u64,
        len: u64,
        minlen: u64,
    }
    let f = File::open(mount)?;
    let mut range = Range {
        start: 0,
        len: u64::MAX,
        minlen: 0,
    };
    // SAFETY: `range` is a valid `struct fstrim_range`, which the kernel reads and writes.
    let r = unsafe { libc::ioctl(f.as_raw_fd(), FITRIM as _, &mut range as *mut Range) };
    if r < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EOPNOTSUPP) | Some(libc::ENOTTY) | Some(libc::EINVAL) => Ok(false),
            _ => Err(e),
        };
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(p: &mut Pattern, n: usize) -> Vec<Piece> {
        (0..n).map(|_| p.next_piece()).collect()
    }

    #[test]
    fn holes_and_kept_runs_alternate_in_whole_blocks_around_their_means() {
        let mut p = Pattern::new(7, 1, 64 << 10, 0.6);
        let all = pieces(&mut p, 20_000);
        for (i, x) in all.iter().enumerate() {
            assert_eq!(x.hole, i % 2 == 1, "piece {i}");
            assert!(x.len >= BLOCK && x.len % BLOCK == 0, "{x:?}");
            if x.hole {
                assert!((32 << 10..=96 << 10).contains(&x.len), "{x:?}");
            }
        }
        let holes: u64 = all.iter().filter(|x| x.hole).map(|x| x.len).sum();
        let total: u64 = all.iter().map(|x| x.len).sum();
        let share = holes as f64 / total as f64;
        assert!((share - 0.6).abs() < 0.01, "hole share {share}");
        assert!((p.hole_share() - 0.6).abs() < 0.01);
        let mean_hole = holes as f64 / 10_000.0;
        assert!(
            (mean_hole / (64 << 10) as f64 - 1.0).abs() < 0.03,
            "{mean_hole}"
        );
    }

    #[test]
    fn a_share_a_block_cannot_give_is_said_by_the_pattern() {
        // 98 % holes of 4 KiB would need kept runs of 80 bytes: they are a block.
        let p = Pattern::new(1, 1, 4096, 0.98);
        assert_eq!(p.hole_share(), 0.5);
        let p = Pattern::new(1, 1, 64 << 10, 0.5);
        assert!((p.hole_share() - 0.5).abs() < 1e-9);
    }

    #[test]
    fn the_same_seed_and_round_give_the_same_pieces_and_order() {
        let take = |seed, round| pieces(&mut Pattern::new(seed, round, 1 << 16, 0.5), 500);
        assert_eq!(take(3, 1), take(3, 1));
        assert_ne!(take(3, 1), take(3, 2));
        assert_ne!(take(3, 1), take(4, 1));
        let laid: Vec<Placed> = (0..2000)
            .map(|i| Placed {
                file: i / 100,
                offset: (i % 100) as u64 * BLOCK,
                len: BLOCK,
                hole: i % 2 == 1,
            })
            .collect();
        let o = punch_order(&laid, 3, 1);
        assert_eq!(o, punch_order(&laid, 3, 1));
        assert_ne!(o, punch_order(&laid, 3, 2));
        // Every hole once, and never a kept piece.
        let mut sorted = o.clone();
        sorted.sort();
        assert_eq!(sorted, (0..1000).map(|i| 2 * i + 1).collect::<Vec<_>>());
        // Spread: the first tenth punched reaches into every tenth of the carriers.
        let mut tenths = [false; 10];
        for &i in &o[..100] {
            tenths[laid[i].file / 2] = true;
        }
        assert!(tenths.iter().all(|&t| t), "{tenths:?}");
    }

    #[test]
    fn a_full_file_system_is_recognised() {
        assert!(is_full(&io::Error::from_raw_os_error(libc::ENOSPC)));
        assert!(!is_full(&io::Error::from_raw_os_error(libc::EIO)));
    }
}
