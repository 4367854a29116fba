//! Turns a workload's outcome and what the harness observed into the metrics of one
//! measurement: rates, device figures, amplification.

use std::collections::BTreeMap;

use super::phase::Observed;
use crate::plan::size::human_bytes;
use crate::workload::Outcome;

/// Metrics of a successful measurement. The workload's own numbers win over derived ones.
pub fn metrics(outcome: &Outcome, seen: &Observed) -> BTreeMap<String, f64> {
    let mut m = BTreeMap::new();
    let work_s = if outcome.seconds > 0.0 {
        outcome.seconds
    } else {
        seen.wall_seconds
    };
    // The phase ends when its data is on the device, so `seconds` includes the final syncfs.
    let seconds = work_s + seen.syncfs_seconds;
    m.insert("seconds".into(), seconds);
    m.insert("workload_seconds".into(), work_s);
    m.insert("syncfs_seconds".into(), seen.syncfs_seconds);
    if outcome.files > 0 {
        m.insert("files".into(), outcome.files as f64);
        if seconds > 0.0 {
            m.insert("files_per_s".into(), outcome.files as f64 / seconds);
        }
    }
    let bytes = outcome.logical_write_bytes.max(outcome.logical_read_bytes);
    if bytes > 0 && seconds > 0.0 {
        m.insert("mb_per_s".into(), bytes as f64 / seconds / 1e6);
    }
    m.insert(
        "logical_write_bytes".into(),
        outcome.logical_write_bytes as f64,
    );
    m.insert(
        "logical_read_bytes".into(),
        outcome.logical_read_bytes as f64,
    );
    if outcome.fsyncs > 0 {
        m.insert("fsyncs".into(), outcome.fsyncs as f64);
    }
    if let Some(report) = &seen.monitor {
        // Spans the workload set aside (cache drops between cold passes, per-pass checks)
        // are already out of the report's seconds, counters and CPU figures.
        report.add_metrics(&mut m);
        if let Some(d) = seen.log_device.as_ref().filter(|d| d.seen) {
            d.add_metrics("log_device_", "log_", report.seconds, &mut m);
        }
    }
    if let Some(dev_w) = m.get("device_write_bytes").copied() {
        if outcome.logical_write_bytes > 0 {
            m.insert(
                "write_amplification".into(),
                dev_w / outcome.logical_write_bytes as f64,
            );
        }
    }
    if let (Some(before), Some(after)) = (seen.used_before, seen.used_after) {
        let delta = after as f64 - before as f64;
        m.insert("space_used_delta_bytes".into(), delta);
        if outcome.logical_write_bytes > 0 && delta > 0.0 {
            m.insert(
                "space_amplification".into(),
                delta / outcome.logical_write_bytes as f64,
            );
        }
    }
    for (k, v) in &outcome.metrics {
        if v.is_finite() {
            m.insert(k.clone(), *v);
        }
    }
    m
}

/// Flags a phase shorter than the floor: sets `below_floor` = 1 (the statistics turn it into
/// a warning a reader sees beside the figure) and returns the note that says so. A phase
/// that repeated warm passes reached the floor by construction; a cold or mutating one can
/// only reach it with a larger data set (`--scale`).
pub fn below_floor(m: &mut BTreeMap<String, f64>, floor: std::time::Duration) -> Option<String> {
    let secs = *m.get("seconds")?;
    let floor = floor.as_secs_f64();
    (secs < floor).then(|| {
        m.insert("below_floor".into(), 1.0);
        format!(
            "measured phase {secs:.3} s is shorter than the {floor:.2} s floor: its figure is \
             noisy (a larger --scale lengthens it)"
        )
    })
}

/// The least share of a direct-I/O phase's reads its device must read for the figure to be
/// the device's: a loop device under ext4 or btrfs read 1.0–1.5× what fio read in the fio
/// study (2026-11-28), under ntfs-3g and exFAT 0 of 170 GB.
const DIRECT_READS_SEEN: f64 = 0.1;

/// Below this many bytes read with O_DIRECT, what the device read says nothing: a few reads
/// may all be served by the device's own cache.
const DIRECT_READS_MIN_BYTES: u64 = 16 << 20;

/// Flags a phase that read with O_DIRECT while its device read under a tenth of that: sets
/// `reads_from_memory` = 1 (the statistics turn it into a warning beside the figure) and
/// returns the note that says so. O_DIRECT only skips the file's own cache; a FUSE daemon
/// reads its block device through the page cache, so its "direct" reads come from memory.
pub fn reads_from_memory(m: &mut BTreeMap<String, f64>, outcome: &Outcome) -> Option<String> {
    let asked = outcome.direct_reads.then_some(outcome.logical_read_bytes);
    unseen(
        m,
        asked,
        "device_read_bytes",
        DIRECT_READS_SEEN,
        "reads_from_memory",
    )
    .map(|(read, device)| {
        format!(
            "read {read} with direct I/O, yet the device read {device}: the reads came from \
             memory beneath the file system (a FUSE daemon's cache of its device), not from the \
             device"
        )
    })
}

/// The one rule of [`reads_from_memory`] and [`writes_absorbed`]: when the phase `asked`
/// its device for that many bytes with direct I/O (at least [`DIRECT_READS_MIN_BYTES`]) and
/// the device's `device_metric` shows under `least_share` of them, sets `flag` = 1 and
/// returns both amounts in words.
fn unseen(
    m: &mut BTreeMap<String, f64>,
    asked: Option<u64>,
    device_metric: &str,
    least_share: f64,
    flag: &str,
) -> Option<(String, String)> {
    let asked = asked.filter(|&b| b >= DIRECT_READS_MIN_BYTES)?;
    let device = *m.get(device_metric)?;
    (device < least_share * asked as f64).then(|| {
        m.insert(flag.into(), 1.0);
        (human_bytes(asked), human_bytes(device.max(0.0) as u64))
    })
}

/// The least share of a direct-I/O phase's writes its device must write for the figure to
/// be the device's. In the five-target fio study (2026-11-28) the loop device under ext4,
/// xfs and btrfs wrote 1.13–1.50× what fio wrote (a journal and metadata on top), under
/// ntfs-3g 0.29–1.49× and under exFAT 0.11–1.32×: a device that wrote under nine tenths of
/// the data has not seen all of it (docs/statistics.md).
pub const DIRECT_WRITES_SEEN: f64 = 0.9;

/// Flags a phase that wrote with O_DIRECT while its device wrote under
/// [`DIRECT_WRITES_SEEN`] of it: sets `writes_absorbed` = 1 (the statistics turn it into a
/// warning, and the ranking leaves the result out) and returns the note that says so. A
/// FUSE daemon writes its block device through the page cache, so its "direct" writes and
/// its syncs can end in memory; the note says that the syncs did not reach the device.
pub fn writes_absorbed(m: &mut BTreeMap<String, f64>, outcome: &Outcome) -> Option<String> {
    let asked = outcome.synced_writes.then_some(outcome.logical_write_bytes);
    unseen(
        m,
        asked,
        "device_write_bytes",
        DIRECT_WRITES_SEEN,
        "writes_absorbed",
    )
    .map(|(wrote, device)| {
        format!(
            "wrote {wrote} with direct I/O, yet the device wrote {device}: the writes were \
             absorbed by a cache beneath the file system (a FUSE daemon's cache of its device), \
             and its syncs did not reach the device either"
        )
    })
}

/// Below this many fsyncs a phase's flush count says little: a handful of flushes can come
/// from the file system's own housekeeping, or be merged by the block layer.
const FSYNCS_MIN: u64 = 16;

/// The least cache flushes per fsync a FUSE phase's device must complete for its fsyncs to
/// count as having reached it. Measured on loop devices (kernel 6.18, 2026-11-29; 300
/// fsyncs of 16 KiB files, then 640 from 16 threads): ntfs-3g and exfat-fuse 0.99–1.00
/// flush per fsync alone and with 16 threads; ext4 2.0 alone and 0.28 with 16 threads, its
/// journal committing many threads' fsyncs with one flush; a FUSE phase with no fsync 0. A
/// tenth leaves room for that merging and still tells "every fsync" from "none"
/// (docs/statistics.md, "Writes the device never saw").
pub const FLUSHES_PER_FSYNC: f64 = 0.1;

/// Says whether a FUSE phase's fsyncs reached its device: a FUSE daemon writes its block
/// device through the page cache, so an fsync reaches the device only if the daemon passes
/// it on. For a phase on a FUSE file system (`fuse`) that made at least [`FSYNCS_MIN`]
/// fsyncs on a device whose flushes the kernel counts, returns the note that says whether
/// they did, and when the device completed under [`FLUSHES_PER_FSYNC`] flush per fsync
/// sets `fsyncs_unflushed` = 1 (the statistics turn it into a warning beside the figure).
/// A kernel file system's fsync is the kernel's own, so it is not judged.
pub fn fsyncs_on_device(
    m: &mut BTreeMap<String, f64>,
    outcome: &Outcome,
    fuse: bool,
) -> Option<String> {
    let fsyncs = outcome.fsyncs;
    if !fuse || fsyncs < FSYNCS_MIN {
        return None;
    }
    let flushes = *m.get("device_flushes")?;
    if flushes < FLUSHES_PER_FSYNC * fsyncs as f64 {
        m.insert("fsyncs_unflushed".into(), 1.0);
        Some(format!(
            "made {fsyncs} fsyncs, yet the device completed {flushes:.0} cache flushes: the \
             FUSE daemon did not pass the fsyncs on, so the synced data may still sit in a \
             cache beneath the file system"
        ))
    } else {
        Some(format!(
            "its {fsyncs} fsyncs reached the device: it completed {flushes:.0} cache flushes"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derives_rates_and_amplification() {
        let o = Outcome {
            seconds: 1.5,
            files: 100,
            logical_write_bytes: 2_000_000,
            ..Default::default()
        };
        let seen = Observed {
            syncfs_seconds: 0.5,
            used_before: Some(1_000_000),
            used_after: Some(4_000_000),
            ..Default::default()
        };
        let m = metrics(&o, &seen);
        assert_eq!(m["seconds"], 2.0);
        assert_eq!(m["files_per_s"], 50.0);
        assert_eq!(m["mb_per_s"], 1.0);
        assert_eq!(m["space_amplification"], 1.5);
        // No monitor: no device figures and no write amplification invented.
        assert!(!m.contains_key("write_amplification"));
        assert!(!m.contains_key("device_write_bytes"));
    }

    #[test]
    fn a_phase_under_the_floor_is_flagged_and_one_over_it_is_not() {
        let floor = std::time::Duration::from_millis(500);
        let mut short: BTreeMap<String, f64> = [("seconds".to_string(), 0.2)].into();
        assert!(below_floor(&mut short, floor).is_some_and(|n| n.contains("0.50 s floor")));
        assert_eq!(short["below_floor"], 1.0);
        let mut long: BTreeMap<String, f64> = [("seconds".to_string(), 0.7)].into();
        assert_eq!(below_floor(&mut long, floor), None);
        assert!(!long.contains_key("below_floor"));
    }

    /// The fio study on ntfs-3g and exFAT (2026-11-28) read 170 GB with `--direct=1` while
    /// the device read 0 bytes, and nothing said so.
    #[test]
    fn direct_reads_the_device_never_saw_are_flagged() {
        let direct = |read: u64| Outcome {
            logical_read_bytes: read,
            direct_reads: true,
            ..Default::default()
        };
        let device = |bytes: f64| -> BTreeMap<String, f64> {
            [("device_read_bytes".to_string(), bytes)].into()
        };
        let mut fuse = device(0.0);
        let note = reads_from_memory(&mut fuse, &direct(1 << 30));
        assert!(note
            .is_some_and(|n| n.contains("read 1.0 GiB with direct I/O, yet the device read 0 B")));
        assert_eq!(fuse["reads_from_memory"], 1.0);
        // A loop device under ext4 reads what was read; a few reads may all be cached; a
        // buffered phase's cached reads are its own business; no device figure, no claim.
        let mut ext4 = device(1.2 * (1u64 << 30) as f64);
        assert_eq!(reads_from_memory(&mut ext4, &direct(1 << 30)), None);
        assert_eq!(reads_from_memory(&mut device(0.0), &direct(1 << 20)), None);
        let buffered = Outcome {
            direct_reads: false,
            ..direct(1 << 30)
        };
        assert_eq!(reads_from_memory(&mut device(0.0), &buffered), None);
        assert_eq!(
            reads_from_memory(&mut BTreeMap::new(), &direct(1 << 30)),
            None
        );
        assert!(!ext4.contains_key("reads_from_memory"));
    }
}
