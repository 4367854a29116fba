//! How large the file systems of a run are: sized like a device, not like the data set.
//!
//! A file system's behaviour follows its device's size: btrfs on a ~2 GB volume flushes
//! delalloc under metadata-space pressure (one write I/O per small file: fs_mark made 11.5k
//! files/s on 1.86 GB, 24.3k on 16 GB), xfs's allocation-group count and ext4's flex_bg
//! layout and journal size are derived from it. A user's disk is large against their data,
//! so every loop target of a run gets the same large sparse image ([`DEFAULT_FS_SIZE`]),
//! which costs only what is written into it. A target's own `size` wins; a named device
//! keeps its own size; tmpfs, a RAM reference whose size is only a cap, keeps a size
//! derived from the data set ([`memory_size`]).

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// The size of every loop image a run makes unless `--fs-size` or a target's own `size`
/// says otherwise: 64 GiB, the order of a small real disk or partition, large enough that
/// no file system is near a size-dependent regime (metadata-space pressure, few allocation
/// groups, a small journal) for data sets up to scale 1 (~4 GiB), and free to make: the
/// image is a sparse file, mkfs is told the storage reads as zeros, and its copies copy
/// only what was written.
pub const DEFAULT_FS_SIZE: u64 = 64 * GIB;

/// An aged plan's default device is this many times the data set, ...
pub const AGED_DATA_FACTOR: u64 = 8;

/// ... and at least this large: aging fills PCT % of the device, so aging 64 GiB to 60 %
/// would write 38 GiB for a 40 MB data set; 4 GiB is the smallest size at which btrfs
/// made fs_mark's small files at near its large-volume rate (22.4k/s against 24.3k/s on
/// 16 GB, issue 41), so an aged plan stays out of the small-volume regime at a cost in
/// proportion to the data set.
pub const AGED_MIN_FS_SIZE: u64 = 4 * GIB;

/// Room a file system needs beside the data set for its own metadata, journal and log.
const OVERHEAD: u64 = 128 * MIB;

/// The smallest file system a data set of `data_bytes` may be given: the data set twice
/// (`copy` within the target writes a second copy) and room for the file system's own
/// metadata. A smaller `--fs-size` is refused before anything is made.
pub fn min_fs_size(data_bytes: u64) -> u64 {
    round_up(data_bytes.saturating_mul(2).saturating_add(OVERHEAD))
}

/// The smallest file system an aged plan may be given: after aging to `pct` % it must
/// still hold what [`min_fs_size`] asks for.
pub fn min_aged_fs_size(data_bytes: u64, pct: f64) -> u64 {
    round_up((min_fs_size(data_bytes) as f64 / (1.0 - pct / 100.0)).ceil() as u64)
}

/// The size of the run's loop images: `given` (`--fs-size`), else for an aged plan
/// [`AGED_DATA_FACTOR`] × the data set (at least [`AGED_MIN_FS_SIZE`], and at least what
/// still holds the data set after aging), else [`DEFAULT_FS_SIZE`].
pub fn loop_size(given: Option<u64>, age_pct: Option<f64>, data_bytes: u64) -> u64 {
    match (given, age_pct) {
        (Some(size), _) => size,
        (None, Some(pct)) => data_bytes
            .saturating_mul(AGED_DATA_FACTOR)
            .max(AGED_MIN_FS_SIZE)
            .max(min_aged_fs_size(data_bytes, pct)),
        (None, None) => DEFAULT_FS_SIZE,
    }
    .div_ceil(MIB)
        * MIB
}

/// What an image of `size` bytes aged to `pct` % holds in the work directory once aged:
/// the churn stops once the file system is that full, and the free space the carriers
/// filled is discarded (FITRIM punches it out of the sparse image).
pub fn aged_fill(size: u64, pct: f64) -> u64 {
    (size as f64 * pct / 100.0) as u64
}

/// What aging an image of `size` bytes to `pct` % writes in one round of cutting its free
/// space (`provision::aging`): the churn to half the level writes about the level (it
/// writes twice what it keeps), the carriers fill the rest of the device, and the churn
/// tops the level back up. Measured on 1 GiB ext4 at 60 %: 1.23 × the size (this says
/// 1.3 ×). While it runs the image holds the whole device, `size`, on the host.
pub fn aged_written(size: u64, pct: f64) -> u64 {
    (size as f64 * (1.0 + pct / 200.0)) as u64
}

/// The size of a tmpfs target: the data set four times (a copy within, a workload's own
/// files) plus 512 MiB, at least 1 GiB. A cap, not an allocation: tmpfs holds in memory only
/// what is written, and the run is refused when that may exceed the memory available.
pub fn memory_size(data_bytes: u64) -> u64 {
    round_up(data_bytes.saturating_mul(4).saturating_add(512 * MIB)).max(GIB)
}

/// The size target `t` is made with: its own `size`, else `memory` for a memory file
/// system, else the run's loop-image size `image` (a device and a directory ignore it).
pub fn for_target(t: &super::TargetConfig, image: u64, memory: u64) -> u64 {
    t.size.unwrap_or(if t.location == super::Location::Memory {
        memory
    } else {
        image
    })
}

fn round_up(bytes: u64) -> u64 {
    bytes.div_ceil(MIB) * MIB
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_plan_gets_the_default_whatever_the_data_set() {
        assert_eq!(loop_size(None, None, 40 << 20), 64 << 30);
        assert_eq!(loop_size(None, None, 4 << 30), 64 << 30);
        assert_eq!(loop_size(Some(3 << 30), None, 40 << 20), 3 << 30);
        assert_eq!(loop_size(Some(3 << 30), Some(60.0), 40 << 20), 3 << 30);
    }

    #[test]
    fn an_aged_plan_gets_eight_times_the_data_set_and_room_after_aging() {
        // 40 MiB: the 4 GiB floor.
        assert_eq!(loop_size(None, Some(60.0), 40 << 20), 4 << 30);
        // 1 GiB: 8 GiB.
        assert_eq!(loop_size(None, Some(60.0), 1 << 30), 8 << 30);
        // 90 % full: 10 × (2 GiB + 128 MiB) beats 8 GiB.
        let aged = loop_size(None, Some(90.0), 1 << 30);
        assert!(
            aged >= min_aged_fs_size(1 << 30, 90.0) && aged > 8 << 30,
            "{aged}"
        );
        let left = aged - aged_fill(aged, 90.0);
        assert!(left >= min_fs_size(1 << 30), "{left}");
    }

    #[test]
    fn the_minimum_holds_the_data_set_twice() {
        assert_eq!(min_fs_size(100 << 20), 328 << 20);
        assert!(min_aged_fs_size(100 << 20, 50.0) >= 656 << 20);
        assert_eq!(memory_size(10 << 20), 1 << 30);
        assert_eq!(memory_size(316 << 20), (4 * 316 + 512) << 20);
    }
}
