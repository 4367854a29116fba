//! Human sizes (`512M`, `4GiB`, `65536`) for plan files and flags.

/// Parses a byte size: a number with an optional binary suffix (K, M, G, T; `KiB` and `KB`
/// are read as binary too, as mkfs tools do). A fraction of a byte is dropped.
pub fn parse_size(s: &str) -> Result<u64, String> {
    parse_bytes(s).map(|b| b as u64)
}

/// Parses a byte size that must come out a whole number of bytes (`1.5g` yes, `1.3` no), for
/// sizes handed to tools as exact byte counts (fio block and file sizes, SQLite pages), where
/// a fractional byte is a typo rather than something to round.
pub fn parse_whole_size(s: &str) -> Result<u64, String> {
    let bytes = parse_bytes(s)?;
    if bytes.fract() != 0.0 {
        return Err(format!("size `{s}` is not a whole number of bytes"));
    }
    Ok(bytes as u64)
}

/// The size `s` spells, in bytes, before any rounding; at least one byte.
fn parse_bytes(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a size (examples: 4096, 512M, 4G)"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        other => {
            return Err(format!(
                "unknown size unit `{other}` in `{s}` (use K, M, G or T)"
            ))
        }
    };
    let bytes = value * mult as f64;
    if !bytes.is_finite() || bytes < 1.0 || bytes > u64::MAX as f64 {
        return Err(format!("size `{s}` is out of range"));
    }
    Ok(bytes)
}

/// Formats bytes with a binary unit for messages and tables.
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// The short label fio users expect, which [`parse_whole_size`] reads back: `4k`, `1m`,
/// `2g`, or plain bytes.
pub fn short_label(bytes: u64) -> String {
    const UNITS: [(u64, &str); 4] = [
        (1 << 40, "t"),
        (1 << 30, "g"),
        (1 << 20, "m"),
        (1 << 10, "k"),
    ];
    for (mult, suffix) in UNITS {
        if bytes >= mult && bytes % mult == 0 {
            return format!("{}{suffix}", bytes / mult);
        }
    }
    bytes.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_suffixes() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("64K").unwrap(), 65536);
        assert_eq!(parse_size("1.5G").unwrap(), 3 << 29);
        assert_eq!(parse_size("2GiB").unwrap(), 2 << 30);
        assert!(parse_size("").is_err());
        assert!(parse_size("12Q").is_err());
        assert!(parse_size("-5M").is_err());
        assert!(parse_size("0").is_err());
    }

    #[test]
    fn whole_sizes_refuse_fractions_of_a_byte() {
        assert_eq!(parse_whole_size("4k"), Ok(4096));
        assert_eq!(parse_whole_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_whole_size(" 1.5g "), Ok(3 << 29));
        assert_eq!(parse_whole_size("512"), Ok(512));
        assert!(parse_whole_size("1.3").is_err());
        assert!(parse_whole_size("4x").is_err());
        assert!(parse_whole_size("").is_err());
    }

    #[test]
    fn formats() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(3 << 30), "3.0 GiB");
    }
}
