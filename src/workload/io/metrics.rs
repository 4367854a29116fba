//! The numbers one measured fio job becomes: the metrics the report and statistics read.
//!
//! Latencies are completion latencies (`clat`) over both directions, from fio's `json+`
//! histogram; a mixed job also gets each direction's own, which the merged figures hide.

use std::collections::BTreeMap;

use crate::fio::{self, FioReport};
use crate::workload::Outcome;

/// The metrics of one measured fio job. Latencies are completion latencies (`clat`) over
/// both directions; `files` counts I/Os; MB are 10^6 bytes.
pub(super) fn outcome_of(r: &FioReport) -> Outcome {
    let mut m = BTreeMap::new();
    m.insert("iops".to_string(), r.iops());
    m.insert("mb_per_s".to_string(), r.bw_bytes() as f64 / 1e6);
    m.insert("read_iops".to_string(), r.read.iops);
    m.insert("write_iops".to_string(), r.write.iops);
    m.insert("read_mb_per_s".to_string(), r.read.bw_bytes as f64 / 1e6);
    m.insert("write_mb_per_s".to_string(), r.write.bw_bytes as f64 / 1e6);
    if let Some(mean) = r.clat_mean_ns() {
        m.insert("lat_mean_us".to_string(), mean / 1e3);
    }
    for (name, pct) in [
        ("lat_p50_us", 50.0),
        ("lat_p90_us", 90.0),
        ("lat_p99_us", 99.0),
        ("lat_p99_9_us", 99.9),
        ("lat_p99_99_us", 99.99),
    ] {
        if let Some(ns) = r.clat_percentile_ns(pct) {
            m.insert(name.to_string(), ns as f64 / 1e3);
        }
    }
    // A mixed job also gets each direction's own latency, which the merged figures hide.
    if r.read.clat.samples > 0 && r.write.clat.samples > 0 {
        for (dir, d) in [("read", &r.read), ("write", &r.write)] {
            m.insert(format!("{dir}_lat_mean_us"), d.clat.mean_ns / 1e3);
            if let Some(ns) = fio::percentile_from_bins(&d.clat.bins, 99.0) {
                m.insert(format!("{dir}_lat_p99_us"), ns as f64 / 1e3);
            }
        }
    }
    m.insert("fio_cpu_usr_pct".to_string(), r.usr_cpu_pct);
    m.insert("fio_cpu_sys_pct".to_string(), r.sys_cpu_pct);
    m.insert("total_ios".to_string(), r.total_ios() as f64);
    Outcome {
        seconds: r.runtime_s(),
        files: r.total_ios(),
        logical_read_bytes: r.read.io_bytes,
        logical_write_bytes: r.write.io_bytes,
        metrics: m,
        notes: Vec::new(),
    }
}
