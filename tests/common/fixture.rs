//! A fixed, hand-built results directory for report tests: three targets, a file workload
//! at two thread counts, and an io sweep over queue depths, with monitor series.

use std::collections::BTreeMap;
use std::path::Path;

use fsarena::monitor::Sample;
use fsarena::results::store::Store;
use fsarena::results::{HostFacts, Measurement, Provenance, Status};

fn prov(fs: &str) -> Provenance {
    Provenance {
        location: "loop".into(),
        fs_type: fs.into(),
        mkfs_command: Some(vec![format!("mkfs.{fs}"), "/dev/loop9".into()]),
        mkfs_version: Some(format!("mkfs.{fs} 1.0")),
        mount_command: Some(vec!["mount".into(), "/dev/loop9".into(), "/mnt".into()]),
        mount_options: Some("rw,relatime".into()),
        image_bytes: Some(1 << 30),
        loop_device: Some("/dev/loop9".into()),
        loop_direct_io: Some(true),
        block_device: Some("7:9".into()),
        backing_device: Some("254:0".into()),
        kernel: "6.1.0-test".into(),
        notes: vec![],
        clone: None,
        encryption: None,
        aging: None,
        log: None,
        cpus: None,
    }
}

fn series(scale: f64) -> Vec<Sample> {
    (0..12)
        .map(|i| Sample {
            t: i as f64 * 0.2,
            device_write_bytes: (i as f64 * scale * 1e6) as u64,
            device_read_bytes: (i as f64 * scale * 2e5) as u64,
            cached_bytes: (100 + i * 5) << 20,
            dirty_bytes: ((i % 4) * 3) << 20,
            ..Default::default()
        })
        .collect()
}

/// Writes the fixture; `complete = false` leaves out the last repetition of one target and
/// records an interrupted measurement, as an interrupted run would.
pub fn write(dir: &Path, complete: bool) {
    let plan = serde_json::json!({
        "targets": [
            {"name": "ext4", "fs": "ext4", "mkfs_args": [], "mount_options": [], "location": "loop", "size": null, "description": ""},
            {"name": "xfs", "fs": "xfs", "mkfs_args": [], "mount_options": [], "location": "loop", "size": null, "description": ""},
            {"name": "btrfs", "fs": "btrfs", "mkfs_args": [], "mount_options": [], "location": "loop", "size": null, "description": ""}
        ],
        "workloads": ["create", "io-sweep"],
        "threads": [1, 2],
        "runs": {"fixed": 3},
        "dataset": {"profile": "small", "scale": 0.01, "seed": 42, "duplicate_fraction": 0.1, "compressibility": 0.0, "source_dir": null},
        "baseline": "ext4",
        "timeout": 600.0,
        "workload_options": {}
    });
    let host = HostFacts {
        fsarena_version: "0.1.0".into(),
        kernel: "6.1.0-test".into(),
        cpu_model: "Test CPU".into(),
        cpus: 2,
        mem_total_bytes: 24 << 30,
        work_device: Some("vda (non-rotational, 254:0)".into()),
        command_line: vec!["fsarena".into(), "run".into()],
        started_unix: 1_800_000_000.0,
        plan,
        skipped_targets: vec![("f2fs".into(), "the kernel has no f2fs file system".into())],
        skipped_workloads: Vec::new(),
        dataset_zstd_ratio: None,
    };
    let mut store = Store::create(dir, &host).unwrap();
    // files/s per target (ext4 fastest, btrfs clearly slowest, xfs ≈ ext4), tiny jitter.
    let base = [("ext4", 20000.0), ("xfs", 19800.0), ("btrfs", 5000.0)];
    for rep in 0..3u32 {
        for (ti, (t, fps)) in base.iter().enumerate() {
            for threads in [1u32, 2] {
                if !complete && *t == "btrfs" && rep == 2 {
                    continue;
                }
                let jitter = [1.0, 1.03, 0.97][rep as usize] * [1.0, 0.99, 1.01][ti];
                let f = fps * jitter * if threads == 2 { 1.6 } else { 1.0 };
                let mut metrics = BTreeMap::new();
                metrics.insert("files_per_s".to_string(), f);
                metrics.insert("seconds".to_string(), 2500.0 / f);
                metrics.insert("mb_per_s".to_string(), f * 16384.0 / 1e6);
                metrics.insert("write_amplification".to_string(), 1.1 + 0.05 * ti as f64);
                metrics.insert("space_amplification".to_string(), 1.15 + 0.01 * ti as f64);
                metrics.insert("peak_cached_bytes".to_string(), (200u64 << 20) as f64);
                metrics.insert("cpu_system_pct".to_string(), 30.0 + ti as f64);
                store
                    .append(&Measurement {
                        target: t.to_string(),
                        fs: t.to_string(),
                        workload: "create".into(),
                        repetition: rep,
                        threads,
                        status: Status::Ok,
                        metrics,
                        provenance: prov(t),
                        series: series(f / 1000.0),
                        started_unix: 1_800_000_000.0 + rep as f64,
                        ..Default::default()
                    })
                    .unwrap();
            }
            for qd in [1u64, 4, 16] {
                let mut metrics = BTreeMap::new();
                let iops = (10000.0 + 8000.0 * (qd as f64).log2()) / (ti as f64 + 1.0)
                    * [1.0, 1.02, 0.98][rep as usize];
                metrics.insert("iops".to_string(), iops);
                metrics.insert(
                    "lat_p99_us".to_string(),
                    50.0 * qd as f64 * (ti as f64 + 1.0),
                );
                metrics.insert("mb_per_s".to_string(), iops * 4096.0 / 1e6);
                let mut params = BTreeMap::new();
                params.insert("rw".to_string(), serde_json::json!("randread"));
                params.insert("bs".to_string(), serde_json::json!(4096));
                params.insert("iodepth".to_string(), serde_json::json!(qd));
                params.insert("numjobs".to_string(), serde_json::json!(1));
                params.insert("size_label".to_string(), serde_json::json!("small"));
                store
                    .append(&Measurement {
                        target: t.to_string(),
                        fs: t.to_string(),
                        workload: "io-sweep".into(),
                        variant: format!("randread-bs4k-j1-qd{qd}-small-direct"),
                        params,
                        repetition: rep,
                        threads: 1,
                        status: Status::Ok,
                        metrics,
                        provenance: prov(t),
                        started_unix: 1_800_000_000.0 + rep as f64,
                        ..Default::default()
                    })
                    .unwrap();
            }
        }
    }
    if !complete {
        store
            .append(&Measurement {
                target: "btrfs".into(),
                fs: "btrfs".into(),
                workload: "create".into(),
                repetition: 2,
                threads: 1,
                status: Status::Interrupted,
                error: Some("interrupted".into()),
                ..Default::default()
            })
            .unwrap();
    }
}

/// Rewrites the measurement records of `dir`: `f(record)` may change each one, or drop it
/// by returning false.
pub fn edit(dir: &Path, f: impl Fn(&mut serde_json::Value) -> bool) {
    let path = dir.join(fsarena::results::store::FILE_NAME);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["record"] == "measurement" && !f(&mut v) {
            continue;
        }
        out.push_str(&serde_json::to_string(&v).unwrap());
        out.push('\n');
    }
    std::fs::write(path, out).unwrap();
}
