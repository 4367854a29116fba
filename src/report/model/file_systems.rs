//! How large the measured file systems were, in one phrase for the report's header: a
//! file system's behaviour follows its device's size (see `plan::fs_size`), so a verdict
//! is stated with the size it was measured at. Read from the records' provenance
//! (`image_bytes`), so it says what ran, not what was asked.

use std::collections::BTreeMap;

use crate::plan::size::human_bytes;
use crate::results::Measurement;

/// "file systems: 64.0 GiB each, sparse loop images" (one size), or each target's size
/// when they differ, with named devices and tmpfs caps said as such; `None` for records
/// that carry no size.
pub fn describe(measurements: &[Measurement]) -> Option<String> {
    // Per location, per target: the size of its first record that has one.
    let mut sizes: BTreeMap<&str, BTreeMap<&str, u64>> = BTreeMap::new();
    for m in measurements {
        let Some(bytes) = m.provenance.image_bytes else {
            continue;
        };
        sizes
            .entry(m.provenance.location.as_str())
            .or_default()
            .entry(m.target.as_str())
            .or_insert(bytes);
    }
    let parts: Vec<String> = [
        ("loop", "sparse loop images"),
        ("device", "block devices"),
        ("tmpfs", "tmpfs (memory) capped at"),
    ]
    .into_iter()
    .filter_map(|(location, what)| Some(phrase(sizes.get(location)?, location, what)))
    .collect();
    (!parts.is_empty()).then(|| format!("file systems: {}", parts.join("; ")))
}

/// One location's targets: one size for all of them, or each target's own.
fn phrase(targets: &BTreeMap<&str, u64>, location: &str, what: &str) -> String {
    let mut distinct: Vec<u64> = targets.values().copied().collect();
    distinct.sort_unstable();
    distinct.dedup();
    match (distinct.as_slice(), location) {
        ([one], "tmpfs") => format!("{what} {}", human_bytes(*one)),
        ([one], _) if targets.len() > 1 => format!("{} each, {what}", human_bytes(*one)),
        ([one], _) => format!("{}, {what}", human_bytes(*one)),
        _ => {
            let each: Vec<String> = targets
                .iter()
                .map(|(t, b)| format!("{t} {}", human_bytes(*b)))
                .collect();
            format!("{what}: {}", each.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(target: &str, location: &str, bytes: Option<u64>) -> Measurement {
        let mut m: Measurement = serde_json::from_value(serde_json::json!({
            "record": "measurement", "target": target, "fs": target, "workload": "create",
            "repetition": 0, "threads": 1, "status": "ok", "error": null, "metrics": {},
            "provenance": {"location": location, "fs_type": target, "mkfs_command": null,
                "mkfs_version": null, "mount_command": null, "mount_options": null,
                "image_bytes": null, "loop_device": null, "loop_direct_io": null,
                "block_device": null, "backing_device": null, "kernel": "k"},
            "started_unix": 0.0
        }))
        .unwrap();
        m.provenance.image_bytes = bytes;
        m
    }

    /// Issue 41: the header states the size the verdicts were measured at.
    #[test]
    fn the_header_states_the_file_system_size() {
        let same = [
            record("ext4", "loop", Some(64 << 30)),
            record("xfs", "loop", Some(64 << 30)),
            record("tmpfs", "tmpfs", Some(1 << 30)),
        ];
        assert_eq!(
            describe(&same).unwrap(),
            "file systems: 64.0 GiB each, sparse loop images; tmpfs (memory) capped at 1.0 GiB"
        );
        let differ = [
            record("ext4", "loop", Some(64 << 30)),
            record("xfs", "loop", Some(2 << 30)),
        ];
        assert_eq!(
            describe(&differ).unwrap(),
            "file systems: sparse loop images: ext4 64.0 GiB, xfs 2.0 GiB"
        );
        assert_eq!(describe(&[record("d", "dir", None)]), None);
    }
}
