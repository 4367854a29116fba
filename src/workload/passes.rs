//! Phases long enough to measure. A warm `scan` of a small tree takes a few milliseconds,
//! where the timer, the scheduler and one page fault are a large share of the figure. Such a
//! pass changes nothing, so it can be run again and again inside one measured phase until
//! the phase lasts at least the run's floor ([`super::harness::Harness::phase_floor`]); the phase's
//! figures are then totals over the passes (rates stay per second), and the per-pass figures
//! are reported beside them.
//!
//! A cold read-only pass (a cold walk, a cold load) can repeat too, if the caches are dropped
//! before each pass: every pass then starts as cold as the first ([`measure_cold_passes`]).
//! One cold pass of a small tree is a few tens of milliseconds of device latency, whose
//! run-to-run spread (20 % here) no number of cells averages away cheaply; twenty passes in
//! one phase do. A mutating pass cannot repeat: it would not do the same work twice.
//! A cold pass is read-only but not write-free: under `relatime` its first walk gives every
//! directory (and a read, every file) a new access time, which the file system writes back
//! later (btrfs: ~470 metadata writes for 800 directories). Those writes are the pass's
//! work, as `du` then `sync` pays for them: each pass but the last is followed by `syncfs`
//! inside the measured time ([`Harness::pass_writeback`]), and the last by the harness's own.
//! Between passes, outside the measured time, every access time under the root is reset
//! ([`forget_reads`]), so each later pass is a first walk that writes them again, as `du`
//! of a fresh tree does; without it they walked a tree read moments before and wrote nothing.

use std::path::Path;
use std::time::Instant;

use rustix::fs::{AtFlags, Timespec, Timestamps, UTIME_NOW, UTIME_OMIT};

use super::error::WorkloadError;
use super::harness::{Harness, WriteBack};
use super::outcome::Outcome;
use crate::fsops::{self, Dir, Kind, Need};

/// Warm passes never exceed this, whatever the floor: a pass so fast that this many do not
/// reach it is measured over this many.
pub const MAX_PASSES: u64 = 100_000;

/// Cold passes never exceed this many per phase, whatever the floor.
pub const MAX_COLD_PASSES: u64 = 64;

/// A phase stops repeating once its wall time (passes plus what runs between them: cache
/// drops for cold passes) reaches this many floors, so a machine whose cache drop is slow (a
/// large page cache to free) does not spend minutes on one point; the phase is then flagged
/// as below the floor, like any short one.
pub const COLD_WALL_FLOORS: u32 = 6;

/// Runs `pass` inside one measured phase, once, then again until the passes' own seconds
/// reach the harness's floor (or the wall clock [`COLD_WALL_FLOORS`] floors). Each pass
/// returns its own [`Outcome`]; the phase's outcome sums their seconds, files and bytes,
/// keeps the last pass's other metrics (the same every pass for a read-only walk: matches,
/// dirs, …), and adds `passes`, `seconds_per_pass` and `files_per_pass`.
pub fn measure_passes(
    harness: &mut dyn Harness,
    pass: &mut dyn FnMut() -> Result<Outcome, WorkloadError>,
) -> Result<Outcome, WorkloadError> {
    repeat(harness, pass, None)
}

/// [`measure_passes`] with the caches dropped ([`Harness::pass_dropper`]) before every pass
/// after the first, so each starts as cold as the first; the caller drops them before the
/// first, as for a single cold pass. Before each drop, what the pass left dirty is written
/// back ([`Harness::pass_writeback`]), timed as part of the pass. The passes' own time (the
/// drops not counted) must reach the floor. The drops are set aside ([`Harness::aside`]): the monitor's seconds, device
/// counters and CPU figures leave them out. Adds `between_passes_seconds`: the time they
/// took.
pub fn measure_cold_passes(
    harness: &mut dyn Harness,
    pass: &mut dyn FnMut() -> Result<Outcome, WorkloadError>,
) -> Result<Outcome, WorkloadError> {
    let drop_caches = harness.pass_dropper();
    repeat(harness, pass, Some(drop_caches))
}

/// The loop behind both: `between`, when given, runs before every pass after the first and
/// its time is kept apart from the passes'.
fn repeat(
    harness: &mut dyn Harness,
    pass: &mut dyn FnMut() -> Result<Outcome, WorkloadError>,
    between: Option<fn() -> std::io::Result<()>>,
) -> Result<Outcome, WorkloadError> {
    let floor = harness.phase_floor();
    // What runs between passes is not the phase's work: the monitor leaves it out. What a
    // cold pass left dirty is its work: written back before the drop, and timed.
    let aside = harness.aside();
    let writeback = between.and(harness.pass_writeback());
    let max = if between.is_some() {
        MAX_COLD_PASSES
    } else {
        MAX_PASSES
    };
    harness.measure(&mut || {
        let t0 = Instant::now();
        let mut total = pass()?;
        let mut passes = 1u64;
        let mut between_s = 0.0;
        // The passes' own seconds must reach the floor, not the wall clock: the phase's
        // `seconds` is their sum, and what runs between them is not in it.
        while total.seconds < floor.as_secs_f64()
            && t0.elapsed() < floor * COLD_WALL_FLOORS
            && passes < max
        {
            if let Some(wb) = &writeback {
                let w = Instant::now();
                crate::sys::syncfs(&wb.root)
                    .map_err(|e| WorkloadError::io("syncfs after a cold pass", e))?;
                total.seconds += w.elapsed().as_secs_f64();
            }
            if let Some(drop_caches) = between {
                let d = Instant::now();
                aside.run(|| forget_reads_and_drop(writeback.as_ref(), drop_caches))?;
                between_s += d.elapsed().as_secs_f64();
            }
            let next = pass()?;
            total.seconds += next.seconds;
            total.files += next.files;
            total.logical_read_bytes += next.logical_read_bytes;
            total.logical_write_bytes += next.logical_write_bytes;
            total.metrics.extend(next.metrics);
            passes += 1;
        }
        let n = passes as f64;
        let m = &mut total.metrics;
        m.insert("passes".into(), n);
        m.insert("seconds_per_pass".into(), total.seconds / n);
        m.insert("files_per_pass".into(), total.files as f64 / n);
        if between.is_some() {
            m.insert("between_passes_seconds".into(), between_s);
        }
        if passes > 1 {
            let (kind, drops) = match between {
                Some(_) => (
                    "cold",
                    format!(
                        "; each written back and counted, caches dropped before the next, \
                         {between_s:.2} s not counted"
                    ),
                ),
                None => ("warm", String::new()),
            };
            total.notes.push(format!(
                "{passes} {kind} passes in one phase of {:.2} s (floor {:.2} s{drops})",
                total.seconds,
                floor.as_secs_f64()
            ));
        }
        Ok(total)
    })
}

/// What runs between two cold passes, outside the measured time: the tree under the
/// written-back file system made unread again ([`forget_reads`]), that file system written
/// back whole (the reset's own inode writes, which a drop cannot evict while dirty), then
/// the caches dropped. Only the target is written back, not the machine (`sync(2)`, which
/// waits on every other program's dirty pages too and makes the target no colder); on a
/// target whose drop does nothing (tmpfs) the write-back does nothing either.
fn forget_reads_and_drop(
    writeback: Option<&WriteBack>,
    drop_caches: fn() -> std::io::Result<()>,
) -> Result<(), WorkloadError> {
    if let Some(wb) = writeback {
        forget_reads(&wb.root)?;
        wb.run()
            .map_err(|e| WorkloadError::io("writing the target back between cold passes", e))?;
    }
    drop_caches().map_err(|e| WorkloadError::io("dropping caches between cold passes", e))
}

/// Gives every directory and file under `root` an access time no later than its change
/// time, as a tree nobody has read since it was written has, so that under `relatime`
/// the next pass's reads write new ones again and every cold pass is a first walk. Without
/// it the passes after the first walked a tree read moments before and wrote nothing:
/// btrfs's cold scan of 20,000 files measured −5 % against ext4 where `du -s` of a fresh
/// tree, which pays for the writes, measured −27 % (issue 41, `bench/agree.sh`).
/// `utimensat` sets the change time to now, and the access time is set to now as well
/// (`UTIME_NOW`, valid on every file system's timestamp grain); the modification time is
/// left alone. A directory is reset after the walk has read it, through its own descriptor,
/// so the walk's own read does not count as the next pass's.
pub fn forget_reads(root: &Path) -> Result<(), WorkloadError> {
    let times = Timestamps {
        last_access: Timespec {
            tv_sec: 0,
            tv_nsec: UTIME_NOW,
        },
        last_modification: Timespec {
            tv_sec: 0,
            tv_nsec: UTIME_OMIT,
        },
    };
    let reset = |d: &Dir, name: &std::ffi::CStr| {
        rustix::fs::utimensat(d.fd(), name, &times, AtFlags::SYMLINK_NOFOLLOW).map_err(|e| {
            WorkloadError::io(
                format!("resetting the access time of {}", d.path_of(name).display()),
                e.into(),
            )
        })
    };
    fsops::walk(root, 1, Need::NONE, |d: &Dir| {
        for e in d.entries().filter(|e| e.kind == Kind::File) {
            reset(d, e.name)?;
        }
        reset(d, c".")
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// A harness with a phase floor, counting its measured phases, and naming the file system
    /// cold passes write back (a run's harness names its target's root).
    struct Floor(Duration, usize, Option<std::path::PathBuf>);
    impl Harness for Floor {
        fn drop_caches(&mut self) -> std::io::Result<()> {
            Ok(())
        }
        fn measure(
            &mut self,
            work: &mut crate::workload::harness::Phase<'_>,
        ) -> Result<Outcome, WorkloadError> {
            self.1 += 1;
            work()
        }
        fn phase_floor(&self) -> Duration {
            self.0
        }
        fn pass_dropper(&self) -> fn() -> std::io::Result<()> {
            || {
                DROPS.with(|d| d.set(d.get() + 1));
                Ok(())
            }
        }
        fn pass_writeback(&self) -> Option<WriteBack> {
            self.2.clone().map(|root| WriteBack { root, device: None })
        }
    }

    thread_local! {
        /// Cache drops the test harness was asked for between cold passes, per test thread.
        static DROPS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    fn pass(sleep: Duration) -> impl FnMut() -> Result<Outcome, WorkloadError> {
        move || {
            let t = Instant::now();
            std::thread::sleep(sleep);
            Ok(Outcome {
                seconds: t.elapsed().as_secs_f64(),
                files: 10,
                ..Default::default()
            })
        }
    }

    #[test]
    fn passes_repeat_until_the_floor_and_sum_their_work() {
        let mut h = Floor(Duration::from_millis(50), 0, None);
        let o = measure_passes(&mut h, &mut pass(Duration::from_millis(4))).unwrap();
        assert_eq!(h.1, 1, "one measured phase");
        let n = o.metrics["passes"];
        assert!(n >= 2.0, "{n} passes");
        assert!(o.seconds >= 0.05, "{}", o.seconds);
        assert_eq!(o.files as f64, 10.0 * n);
        assert_eq!(o.metrics["files_per_pass"], 10.0);
        assert!((o.metrics["seconds_per_pass"] - o.seconds / n).abs() < 1e-12);
    }

    #[test]
    fn without_a_floor_one_pass_is_the_phase() {
        let mut h = Floor(Duration::ZERO, 0, None);
        let o = measure_passes(&mut h, &mut pass(Duration::from_millis(1))).unwrap();
        assert_eq!(o.metrics["passes"], 1.0);
        assert!(o.notes.is_empty());
    }

    #[test]
    fn a_failing_pass_fails_the_phase() {
        let mut h = Floor(Duration::from_secs(5), 0, None);
        let mut k = 0;
        let r = measure_passes(&mut h, &mut || {
            k += 1;
            if k == 3 {
                Err(WorkloadError::Option("third pass broke".into()))
            } else {
                Ok(Outcome::default())
            }
        });
        assert!(r.is_err());
    }

    #[test]
    fn cold_passes_drop_the_caches_before_each_pass_after_the_first() {
        let mut h = Floor(Duration::from_millis(40), 0, None);
        let before = DROPS.with(|d| d.get());
        let o = measure_cold_passes(&mut h, &mut pass(Duration::from_millis(5))).unwrap();
        let drops = DROPS.with(|d| d.get()) - before;
        assert_eq!(h.1, 1, "one measured phase");
        let n = o.metrics["passes"];
        assert!(n >= 2.0, "{n} passes");
        assert_eq!(drops as f64, n - 1.0, "a drop between every two passes");
        assert!(
            o.seconds >= 0.04,
            "the passes' own time reaches the floor: {}",
            o.seconds
        );
        assert_eq!(o.files as f64, 10.0 * n);
        assert!((o.metrics["seconds_per_pass"] - o.seconds / n).abs() < 1e-12);
        assert!(o.metrics.contains_key("between_passes_seconds"));
    }

    /// Defect: the cold passes after the first walked a tree the first had just read, so
    /// under `relatime` they gave no directory a new access time and wrote nothing (btrfs's
    /// cold scan: −5 % against ext4 where `du -s` of a fresh tree said −27 %). After
    /// [`forget_reads`] a read of each directory and file writes a new access time again.
    #[test]
    fn every_cold_pass_after_the_first_is_a_first_walk_again() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("d");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(sub.join("f"), b"x").unwrap();
        let atime = |p: &Path| {
            let m = std::fs::metadata(p).unwrap();
            (m.atime(), m.atime_nsec())
        };
        let read_all = || {
            std::fs::read_dir(&sub).unwrap().for_each(drop);
            std::fs::read(sub.join("f")).unwrap();
        };
        read_all();
        std::thread::sleep(Duration::from_millis(20));
        read_all();
        let (d0, f0) = (atime(&sub), atime(&sub.join("f")));
        forget_reads(dir.path()).unwrap();
        let (d1, f1) = (atime(&sub), atime(&sub.join("f")));
        std::thread::sleep(Duration::from_millis(20));
        read_all();
        let (d2, f2) = (atime(&sub), atime(&sub.join("f")));
        assert!(
            d1 > d0 && f1 > f0,
            "reset to now: {d0:?} -> {d1:?}, {f0:?} -> {f1:?}"
        );
        assert!(
            d2 > d1,
            "the directory's read wrote a new access time: {d1:?} -> {d2:?}"
        );
        assert!(
            f2 > f1,
            "the file's read wrote a new access time: {f1:?} -> {f2:?}"
        );
    }

    /// Defect: a cold pass's access-time updates were written back by the cache drop before
    /// the next pass, outside the measured time and the monitor, so a cold scan of several
    /// passes (a small tree) paid nothing for them and one of a single pass (a large tree)
    /// paid in its final `syncfs`: btrfs cold scans wrote 0 device I/Os at 199 directories
    /// and 471 at 799. Now each pass but the last is followed by `syncfs`, timed with it; a
    /// single pass leaves that to the harness, and a warm one never syncs.
    #[test]
    fn a_cold_pass_writes_back_what_it_dirtied_before_the_next_drop() {
        let dir = tempfile::tempdir().unwrap();
        let mut h = Floor(Duration::from_millis(30), 0, Some(dir.path().into()));
        let o = measure_cold_passes(&mut h, &mut pass(Duration::from_millis(2))).unwrap();
        assert!(o.metrics["passes"] >= 2.0, "{:?}", o.metrics);
        let gone = dir.path().join("gone");
        let mut h = Floor(Duration::from_millis(30), 0, Some(gone.clone()));
        let e = measure_cold_passes(&mut h, &mut pass(Duration::from_millis(2))).unwrap_err();
        assert!(e.to_string().contains("syncfs after a cold pass"), "{e}");
        let mut h = Floor(Duration::ZERO, 0, Some(gone.clone()));
        let one = measure_cold_passes(&mut h, &mut pass(Duration::from_millis(2))).unwrap();
        assert_eq!(one.metrics["passes"], 1.0, "one pass: the harness syncs");
        let mut h = Floor(Duration::from_millis(30), 0, Some(gone));
        let warm = measure_passes(&mut h, &mut pass(Duration::from_millis(2))).unwrap();
        assert!(warm.metrics["passes"] >= 2.0, "warm passes never sync");
    }

    #[test]
    fn cold_passes_stop_at_their_cap() {
        let mut h = Floor(Duration::from_secs(3600), 0, None);
        let o = measure_cold_passes(&mut h, &mut || {
            Ok(Outcome {
                seconds: 1e-6,
                ..Default::default()
            })
        })
        .unwrap();
        assert_eq!(o.metrics["passes"], MAX_COLD_PASSES as f64);
    }
}
