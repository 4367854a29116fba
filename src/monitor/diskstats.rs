//! Parser for `/proc/diskstats` and wrap-safe counter deltas.
//!
//! Each line is `major minor name` followed by counters. The count depends on the kernel
//! (Documentation/ABI/testing/procfs-diskstats, admin-guide/iostats.rst):
//!
//! * 14 fields (all kernels): reads, reads merged, sectors read, ms reading, writes, writes
//!   merged, sectors written, ms writing, I/Os in flight, ms doing I/O, weighted ms.
//! * 18 fields (4.18+): plus discards, discards merged, sectors discarded, ms discarding.
//! * 20 fields (5.5+): plus flushes, ms flushing.
//!
//! Devices are keyed by major:minor, never by name: names are reused (a detached loop device
//! and its successor share `loop0`) and renamed (dm), while the monitor already knows the
//! device number from `stat`. Sectors are always 512 bytes here, whatever the device's
//! logical block size.

use crate::sys::DevId;

/// `/proc/diskstats` counts in 512-byte sectors regardless of the device's block size.
pub const SECTOR_BYTES: u64 = 512;

/// The counters of one block device at one instant. Fields missing on older kernels
/// (discards before 4.18, flushes before 5.5) are zero; `fields` says which format the line had.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskCounters {
    pub reads: u64,
    pub read_sectors: u64,
    pub read_ms: u64,
    pub writes: u64,
    pub write_sectors: u64,
    pub write_ms: u64,
    /// A gauge, not a counter: I/Os issued to the driver and not yet completed.
    pub in_flight: u64,
    /// Milliseconds during which at least one I/O was in flight ("busy" time).
    pub io_ms: u64,
    pub weighted_ms: u64,
    pub discards: u64,
    pub discard_sectors: u64,
    pub discard_ms: u64,
    pub flushes: u64,
    pub flush_ms: u64,
    /// How many whitespace-separated fields the line had (14, 18, 20 or more).
    pub fields: u8,
}

/// Why a `/proc/diskstats` line could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiskStatsError {
    #[error("diskstats line has {found} fields; expected 14, 18, 20 or more")]
    FieldCount { found: usize },
    #[error("diskstats field {index} is not an unsigned 64-bit number")]
    BadNumber { index: usize },
}

/// Fewest fields a modern line has: major, minor, name and 11 counters.
const BASE_FIELDS: usize = 14;
/// With the four discard counters (kernel 4.18+).
const DISCARD_FIELDS: usize = 18;
/// With the two flush counters (kernel 5.5+).
const FLUSH_FIELDS: usize = 20;
/// Fields this parser reads; later kernels may append more, which are ignored.
const KNOWN_FIELDS: usize = FLUSH_FIELDS;

/// Parses one line into its device number and counters.
///
/// Accepts 14, 18, 20 or more fields (more: a future kernel appended counters we do not know).
/// Rejects 15–17 and 19 fields because a half-present group means the line is not what we
/// think it is. Never panics.
pub fn parse_line(line: &str) -> Result<(DevId, DiskCounters), DiskStatsError> {
    let mut fields = [0u64; KNOWN_FIELDS];
    let mut count = 0usize;
    for (index, token) in line.split_ascii_whitespace().enumerate() {
        count += 1;
        // Field 2 (0-based) is the device name; fields past the known ones are only counted.
        if index == 2 || index >= KNOWN_FIELDS {
            continue;
        }
        fields[index] = parse_u64(token).ok_or(DiskStatsError::BadNumber { index })?;
    }
    if !(count == BASE_FIELDS || count == DISCARD_FIELDS || count >= FLUSH_FIELDS) {
        return Err(DiskStatsError::FieldCount { found: count });
    }
    let dev = DevId {
        major: u32::try_from(fields[0]).map_err(|_| DiskStatsError::BadNumber { index: 0 })?,
        minor: u32::try_from(fields[1]).map_err(|_| DiskStatsError::BadNumber { index: 1 })?,
    };
    let c = DiskCounters {
        reads: fields[3],
        read_sectors: fields[5],
        read_ms: fields[6],
        writes: fields[7],
        write_sectors: fields[9],
        write_ms: fields[10],
        in_flight: fields[11],
        io_ms: fields[12],
        weighted_ms: fields[13],
        // Absent groups were never written into `fields`, so they stay zero.
        discards: fields[14],
        discard_sectors: fields[16],
        discard_ms: fields[17],
        flushes: fields[18],
        flush_ms: fields[19],
        fields: u8::try_from(count).unwrap_or(u8::MAX),
    };
    Ok((dev, c))
}

/// Fills `out[i]` with the counters of `devices[i]` found in a whole `/proc/diskstats` text,
/// or `None` when the device has no (well-formed) line. Malformed lines are skipped: one odd
/// line must not blind the monitor to the device it is watching. Allocates nothing.
///
/// Only lines whose major:minor matches are parsed in full, so a machine with hundreds of
/// devices costs little per sample.
pub fn find_devices(text: &str, devices: &[DevId], out: &mut [Option<DiskCounters>]) {
    for slot in out.iter_mut() {
        *slot = None;
    }
    for line in text.lines() {
        let Some(dev) = line_dev(line) else { continue };
        let Some(i) = devices.iter().position(|d| *d == dev) else {
            continue;
        };
        if let (Some(slot), Ok((_, counters))) = (out.get_mut(i), parse_line(line)) {
            *slot = Some(counters);
        }
    }
}

/// Reads only the major:minor of a line, for a cheap match before the full parse.
fn line_dev(line: &str) -> Option<DevId> {
    let mut it = line.split_ascii_whitespace();
    let major = u32::try_from(parse_u64(it.next()?)?).ok()?;
    let minor = u32::try_from(parse_u64(it.next()?)?).ok()?;
    Some(DevId { major, minor })
}

/// Decimal digits only: `str::parse` would also accept a leading `+`, which the kernel never
/// prints, so accepting it would hide a corrupt line.
fn parse_u64(token: &str) -> Option<u64> {
    if token.is_empty() || !token.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    token.parse().ok()
}

/// How much a monotonically increasing kernel counter advanced from `old` to `new`.
///
/// A counter that went backwards wrapped. Where it wrapped depends on how wide the kernel
/// keeps it: `unsigned long` counters are 32-bit on 32-bit kernels, and the millisecond fields
/// are printed as 32-bit values even on 64-bit kernels. So if the old value still fits in
/// 32 bits the counter is taken to be 32 bits wide and to have wrapped at 2^32; otherwise it
/// is 64 bits wide and wrapped at 2^64. This assumes at most one wrap between two readings,
/// which holds for readings a fraction of a second apart (a 32-bit sector counter needs
/// 2 TiB of I/O to wrap).
pub fn counter_delta(old: u64, new: u64) -> u64 {
    if new >= old {
        new - old
    } else if old <= u64::from(u32::MAX) {
        // `new < old <= u32::MAX`, so neither step can overflow.
        (1u64 << 32) - old + new
    } else {
        new.wrapping_sub(old)
    }
}

impl DiskCounters {
    /// Counter-by-counter advance from `earlier` to `self`, wrap-safe. `in_flight` is a gauge,
    /// so the result carries `self`'s current value instead of a difference.
    pub fn since(&self, earlier: &DiskCounters) -> DiskCounters {
        DiskCounters {
            reads: counter_delta(earlier.reads, self.reads),
            read_sectors: counter_delta(earlier.read_sectors, self.read_sectors),
            read_ms: counter_delta(earlier.read_ms, self.read_ms),
            writes: counter_delta(earlier.writes, self.writes),
            write_sectors: counter_delta(earlier.write_sectors, self.write_sectors),
            write_ms: counter_delta(earlier.write_ms, self.write_ms),
            in_flight: self.in_flight,
            io_ms: counter_delta(earlier.io_ms, self.io_ms),
            weighted_ms: counter_delta(earlier.weighted_ms, self.weighted_ms),
            discards: counter_delta(earlier.discards, self.discards),
            discard_sectors: counter_delta(earlier.discard_sectors, self.discard_sectors),
            discard_ms: counter_delta(earlier.discard_ms, self.discard_ms),
            flushes: counter_delta(earlier.flushes, self.flushes),
            flush_ms: counter_delta(earlier.flush_ms, self.flush_ms),
            fields: self.fields,
        }
    }

    /// Adds a delta (from [`DiskCounters::since`]) into a running total, saturating so that a
    /// bogus delta can make a figure wrong but never crash the sampler.
    pub fn accumulate(&mut self, delta: &DiskCounters) {
        self.reads = self.reads.saturating_add(delta.reads);
        self.read_sectors = self.read_sectors.saturating_add(delta.read_sectors);
        self.read_ms = self.read_ms.saturating_add(delta.read_ms);
        self.writes = self.writes.saturating_add(delta.writes);
        self.write_sectors = self.write_sectors.saturating_add(delta.write_sectors);
        self.write_ms = self.write_ms.saturating_add(delta.write_ms);
        self.in_flight = self.in_flight.max(delta.in_flight);
        self.io_ms = self.io_ms.saturating_add(delta.io_ms);
        self.weighted_ms = self.weighted_ms.saturating_add(delta.weighted_ms);
        self.discards = self.discards.saturating_add(delta.discards);
        self.discard_sectors = self.discard_sectors.saturating_add(delta.discard_sectors);
        self.discard_ms = self.discard_ms.saturating_add(delta.discard_ms);
        self.flushes = self.flushes.saturating_add(delta.flushes);
        self.flush_ms = self.flush_ms.saturating_add(delta.flush_ms);
        self.fields = delta.fields;
    }

    /// Whether the line had the flush counters (kernel 5.5+): before, `flushes` is a 0 that
    /// was never counted.
    pub fn counts_flushes(&self) -> bool {
        usize::from(self.fields) >= FLUSH_FIELDS
    }

    pub fn read_bytes(&self) -> u64 {
        self.read_sectors.saturating_mul(SECTOR_BYTES)
    }
    pub fn write_bytes(&self) -> u64 {
        self.write_sectors.saturating_mul(SECTOR_BYTES)
    }
    pub fn discard_bytes(&self) -> u64 {
        self.discard_sectors.saturating_mul(SECTOR_BYTES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const REAL: &str = include_str!("testdata/diskstats_6.18_vda.txt");
    const F14: &str = include_str!("testdata/diskstats_14fields.txt");
    const F18: &str = include_str!("testdata/diskstats_18fields.txt");
    const F20: &str = include_str!("testdata/diskstats_20fields.txt");
    const MALFORMED: &str = include_str!("testdata/diskstats_malformed.txt");

    fn dev(major: u32, minor: u32) -> DevId {
        DevId { major, minor }
    }

    fn find_one(text: &str, d: DevId) -> Option<DiskCounters> {
        let mut out = [None];
        find_devices(text, &[d], &mut out);
        out[0]
    }

    #[test]
    fn every_line_of_captured_file_parses() {
        let mut n = 0;
        for line in REAL.lines() {
            let (_, c) = parse_line(line).unwrap();
            assert_eq!(c.fields, 20, "{line}");
            n += 1;
        }
        assert!(n >= 1);
        let vda = find_one(REAL, dev(254, 0)).expect("vda captured");
        assert!(vda.reads > 0 && vda.read_sectors > 0 && vda.writes > 0);
    }

    #[test]
    fn fourteen_fields() {
        let (d, c) = parse_line(F14.lines().next().unwrap()).unwrap();
        assert_eq!(d, dev(8, 0));
        assert_eq!(
            c,
            DiskCounters {
                reads: 183460,
                read_sectors: 10483922,
                read_ms: 96120,
                writes: 402611,
                write_sectors: 28745336,
                write_ms: 1874402,
                in_flight: 0,
                io_ms: 412380,
                weighted_ms: 1973120,
                fields: 14,
                ..DiskCounters::default()
            }
        );
        assert_eq!(c.read_bytes(), 10483922 * 512);
        let dm = find_one(F14, dev(253, 0)).unwrap();
        assert_eq!(dm.in_flight, 2);
        assert_eq!(dm.write_ms, 5520636);
    }

    #[test]
    fn eighteen_fields_have_discards() {
        let c = find_one(F18, dev(259, 0)).unwrap();
        assert_eq!(c.fields, 18);
        assert_eq!(c.reads, 2204391);
        assert_eq!(c.discards, 40112);
        assert_eq!(c.discard_sectors, 498366464);
        assert_eq!(c.discard_ms, 9021);
        assert_eq!(c.discard_bytes(), 498366464 * 512);
        assert_eq!((c.flushes, c.flush_ms), (0, 0));
    }

    #[test]
    fn twenty_fields_have_flushes() {
        let c = find_one(F20, dev(254, 0)).unwrap();
        assert_eq!(c.fields, 20);
        assert_eq!(c.write_sectors, 11906360);
        assert_eq!(c.in_flight, 3);
        assert_eq!(c.discards, 5245);
        assert_eq!(c.discard_sectors, 730232);
        assert_eq!(c.flushes, 1461);
        assert_eq!(c.flush_ms, 105);
    }

    #[test]
    fn keyed_by_number_not_name() {
        // loop0 is 7:0 in two files with different counters; vda1 is a partition of vda.
        assert_eq!(find_one(F18, dev(7, 0)).unwrap().reads, 58);
        assert_eq!(find_one(F20, dev(7, 0)).unwrap().reads, 293);
        assert_eq!(find_one(F20, dev(254, 1)).unwrap().reads, 52001);
        assert_eq!(find_one(F20, dev(254, 2)), None);
    }

    #[test]
    fn several_devices_in_requested_order() {
        let devs = [dev(254, 16), dev(9, 9), dev(254, 0)];
        let mut out = [Some(DiskCounters::default()); 3];
        find_devices(F20, &devs, &mut out);
        assert_eq!(out[0].unwrap().reads, 4294967290);
        assert_eq!(out[1], None, "stale slot must be cleared");
        assert_eq!(out[2].unwrap().reads, 52912);
    }

    #[test]
    fn future_kernel_with_more_fields_is_accepted() {
        let line = " 8 0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19";
        let (_, c) = parse_line(line).unwrap();
        assert_eq!(c.fields, 22);
        assert_eq!(c.flush_ms, 17);
    }

    #[test]
    fn malformed_lines_are_typed_errors() {
        let errs: Vec<_> = MALFORMED.lines().map(parse_line).collect();
        assert_eq!(errs[0], Err(DiskStatsError::FieldCount { found: 0 }));
        assert_eq!(errs[1], Err(DiskStatsError::FieldCount { found: 3 }));
        assert_eq!(errs[2], Err(DiskStatsError::FieldCount { found: 7 }));
        assert_eq!(errs[3], Err(DiskStatsError::BadNumber { index: 13 }));
        assert_eq!(errs[4], Err(DiskStatsError::BadNumber { index: 3 }));
        assert_eq!(errs[5], Err(DiskStatsError::BadNumber { index: 13 }));
        assert_eq!(errs[6], Err(DiskStatsError::BadNumber { index: 0 }));
        assert_eq!(errs[7], Err(DiskStatsError::BadNumber { index: 1 }));
        assert!(errs[8].is_err());
        assert!(errs[9].is_ok());
        assert_eq!(
            parse_line("8 0 sda 1 2 3 4 5 6 7 8 9 10 11 12"),
            Err(DiskStatsError::FieldCount { found: 15 })
        );
        assert_eq!(
            parse_line("99999999999 0 sda 1 2 3 4 5 6 7 8 9 10 11"),
            Err(DiskStatsError::BadNumber { index: 0 })
        );
        assert_eq!(
            parse_line("8 0 sda +1 2 3 4 5 6 7 8 9 10 11"),
            Err(DiskStatsError::BadNumber { index: 3 })
        );
    }

    #[test]
    fn malformed_lines_are_skipped_when_scanning() {
        let devs = [dev(8, 1), dev(8, 2), dev(8, 16)];
        let mut out = [None; 3];
        find_devices(MALFORMED, &devs, &mut out);
        assert_eq!(out[0], None);
        assert_eq!(out[1], None);
        assert_eq!(out[2].unwrap().write_sectors, 160);
    }

    #[test]
    fn delta_without_wrap() {
        assert_eq!(counter_delta(5, 5), 0);
        assert_eq!(counter_delta(5, 12), 7);
        assert_eq!(
            counter_delta(u64::from(u32::MAX), 1 << 33),
            (1 << 33) - 0xFFFF_FFFF
        );
    }

    #[test]
    fn delta_wraps_at_32_bits() {
        assert_eq!(counter_delta(u64::from(u32::MAX), 0), 1);
        assert_eq!(counter_delta(4294967290, 10), 16);
        assert_eq!(
            counter_delta(u64::from(u32::MAX), u64::from(u32::MAX) - 1),
            u64::from(u32::MAX)
        );
    }

    #[test]
    fn delta_wraps_at_64_bits() {
        assert_eq!(counter_delta(u64::MAX, 0), 1);
        assert_eq!(counter_delta(u64::MAX - 5, 10), 16);
        // Above 32 bits, so the counter cannot be a 32-bit one.
        assert_eq!(counter_delta(1 << 32, 3), (u64::MAX - (1 << 32)) + 4);
    }

    #[test]
    fn since_applies_wrap_per_counter() {
        let before = find_one(F20, dev(254, 16)).unwrap();
        let after = DiskCounters {
            reads: 6,
            read_sectors: 24,
            read_ms: 3,
            writes: 2,
            write_sectors: 32,
            write_ms: 9,
            in_flight: 4,
            io_ms: 100,
            weighted_ms: 7,
            fields: 20,
            ..DiskCounters::default()
        };
        let d = after.since(&before);
        assert_eq!(d.reads, 12, "32-bit wrap: 4294967290 -> 6");
        assert_eq!(d.read_sectors, 16);
        assert_eq!(d.read_ms, 2);
        assert_eq!(d.writes, 8, "64-bit wrap: 2^64-6 -> 2");
        assert_eq!(d.write_sectors, 16);
        assert_eq!(d.write_ms, 10, "32-bit ms wrap: 2^32-1 -> 9");
        assert_eq!(d.io_ms, 196);
        assert_eq!(d.in_flight, 4, "gauge, not a difference");
        assert_eq!(d.weighted_ms, 0);
    }

    #[test]
    fn accumulate_sums_and_keeps_peak_in_flight() {
        let mut total = DiskCounters::default();
        let a = DiskCounters {
            write_sectors: 8,
            in_flight: 5,
            ..DiskCounters::default()
        };
        let b = DiskCounters {
            write_sectors: 16,
            in_flight: 2,
            ..DiskCounters::default()
        };
        total.accumulate(&a);
        total.accumulate(&b);
        assert_eq!(total.write_sectors, 24);
        assert_eq!(total.in_flight, 5);
        total.accumulate(&DiskCounters {
            write_sectors: u64::MAX,
            ..DiskCounters::default()
        });
        assert_eq!(total.write_sectors, u64::MAX);
    }

    proptest! {
        #[test]
        fn parse_line_never_panics(s in "\\PC{0,200}") {
            let _ = parse_line(&s);
        }

        #[test]
        fn numeric_lines_never_panic(fields in proptest::collection::vec("[0-9]{0,22}|[a-z0-9]{1,6}|-?[0-9]{1,5}", 0..26)) {
            let line = fields.join(" ");
            let _ = parse_line(&line);
            let mut out = [None, None];
            find_devices(&line, &[dev(8, 0), dev(0, 0)], &mut out);
        }

        #[test]
        fn whole_text_never_panics(s in "(\\PC{0,80}\n){0,10}") {
            let mut out = [None];
            find_devices(&s, &[dev(8, 0)], &mut out);
        }

        #[test]
        fn delta_adds_back_up(old: u64, step in 0u64..1 << 40) {
            // A 64-bit counter stepping forward (across 2^64 or not) gives back the exact step.
            let new = old.wrapping_add(step);
            prop_assert_eq!(counter_delta(old, new), step);
        }

        #[test]
        fn delta_32bit_wrap_is_exact(old in 0u64..=u64::from(u32::MAX), step in 0u64..=u64::from(u32::MAX)) {
            let new = (old + step) & u64::from(u32::MAX);
            prop_assert_eq!(counter_delta(old, new), step);
        }
    }
}
