//! Parser for the few `/proc/meminfo` lines the monitor needs.
//!
//! The page cache and dirty/writeback figures show what a buffered workload really did: how
//! much it cached, how much it left for writeback to do after it "finished".

/// Memory figures in bytes (the kernel prints kB, meaning KiB).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemInfo {
    pub total: u64,
    pub free: u64,
    pub available: u64,
    /// Page cache of files (`Cached`), not counting `Buffers` (block-device metadata).
    pub cached: u64,
    pub buffers: u64,
    /// Modified pages not yet handed to the device.
    pub dirty: u64,
    /// Pages being written to the device right now.
    pub writeback: u64,
}

/// Why `/proc/meminfo` text could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemInfoError {
    #[error("/proc/meminfo has no {0} line")]
    Missing(&'static str),
    #[error("/proc/meminfo line {key} has no readable value")]
    BadValue { key: &'static str },
}

/// The keys read, in the order of `MemInfo`'s fields.
const KEYS: [&str; 7] = [
    "MemTotal",
    "MemFree",
    "MemAvailable",
    "Cached",
    "Buffers",
    "Dirty",
    "Writeback",
];

/// Parses a whole `/proc/meminfo` text. Every key of [`MemInfo`] must be present (all are on
/// kernels since 3.14); other lines are ignored. Never panics, allocates nothing.
pub fn parse(text: &str) -> Result<MemInfo, MemInfoError> {
    let mut values: [Option<u64>; KEYS.len()] = [None; KEYS.len()];
    let mut found = 0;
    for line in text.lines() {
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        // Exact match: `Writeback` must not pick up `WritebackTmp`.
        let Some(i) = KEYS.iter().position(|k| *k == key) else {
            continue;
        };
        if values[i].is_some() {
            continue;
        }
        values[i] = Some(parse_value(rest).ok_or(MemInfoError::BadValue { key: KEYS[i] })?);
        found += 1;
        if found == KEYS.len() {
            break;
        }
    }
    let get = |i: usize| values[i].ok_or(MemInfoError::Missing(KEYS[i]));
    Ok(MemInfo {
        total: get(0)?,
        free: get(1)?,
        available: get(2)?,
        cached: get(3)?,
        buffers: get(4)?,
        dirty: get(5)?,
        writeback: get(6)?,
    })
}

/// `"   1234 kB"` → 1234 × 1024. A bare number (no unit) is taken as it is.
fn parse_value(rest: &str) -> Option<u64> {
    let mut it = rest.split_ascii_whitespace();
    let number = it.next()?;
    if !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = number.parse().ok()?;
    match (it.next(), it.next()) {
        (None, None) => Some(n),
        (Some("kB"), None) => n.checked_mul(1024),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const REAL: &str = include_str!("testdata/meminfo_6.18.txt");

    #[test]
    fn captured_file() {
        let m = parse(REAL).unwrap();
        assert_eq!(m.total, 24684084 * 1024);
        assert_eq!(m.free, 22930840 * 1024);
        assert_eq!(m.available, 24257928 * 1024);
        assert_eq!(m.cached, 1479732 * 1024);
        assert_eq!(m.buffers, 7644 * 1024);
        assert_eq!(m.dirty, 168 * 1024);
        assert_eq!(m.writeback, 0);
    }

    #[test]
    fn writeback_tmp_is_not_writeback() {
        let text = "MemTotal: 4 kB\nMemFree: 3 kB\nMemAvailable: 3 kB\nCached: 1 kB\n\
                    Buffers: 0 kB\nDirty: 0 kB\nWritebackTmp: 99 kB\nWriteback: 2 kB\n";
        assert_eq!(parse(text).unwrap().writeback, 2048);
    }

    #[test]
    fn missing_and_bad_values_are_errors() {
        assert_eq!(parse(""), Err(MemInfoError::Missing("MemTotal")));
        let no_avail = "MemTotal: 4 kB\nMemFree: 3 kB\nCached: 1 kB\nBuffers: 0 kB\n\
                        Dirty: 0 kB\nWriteback: 0 kB\n";
        assert_eq!(parse(no_avail), Err(MemInfoError::Missing("MemAvailable")));
        assert_eq!(
            parse("MemTotal: lots kB\n"),
            Err(MemInfoError::BadValue { key: "MemTotal" })
        );
        assert_eq!(
            parse("MemTotal: 99999999999999999999 kB\n"),
            Err(MemInfoError::BadValue { key: "MemTotal" })
        );
        assert_eq!(
            parse("MemTotal: 18014398509481984 kB\n"),
            Err(MemInfoError::BadValue { key: "MemTotal" }),
            "kB to bytes overflows"
        );
        assert_eq!(
            parse("MemTotal: 5 MB\n"),
            Err(MemInfoError::BadValue { key: "MemTotal" })
        );
    }

    proptest! {
        #[test]
        fn never_panics(s in "(\\PC{0,60}\n){0,12}") {
            let _ = parse(&s);
        }

        #[test]
        fn keyed_lines_never_panic(lines in proptest::collection::vec(
            ("(MemTotal|MemFree|MemAvailable|Cached|Buffers|Dirty|Writeback|Other)",
             "[ ]{0,8}", "[0-9]{0,25}|-[0-9]{1,3}|x", "( kB| MB|)"), 0..12)) {
            let text: String = lines
                .iter()
                .map(|(k, sp, v, u)| format!("{k}:{sp}{v}{u}\n"))
                .collect();
            let _ = parse(&text);
        }
    }
}
