//! The numbers one measured fio job becomes: the metrics the report and statistics read.
//!
//! Latencies are completion latencies (`clat`) over both directions, from fio's `json+`
//! histogram; a mixed job also gets each direction's own, which the merged figures hide.

use std::collections::BTreeMap;

use crate::fio::{self, ClientReport, FioReport, Server};
use crate::workload::outcome::Outcome;

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
        ..Outcome::default()
    }
}

/// The metrics of one job run through fio's client mode: the consolidated figures (fio's
/// "All clients" sum) as the usual metrics, plus each host's share as
/// `host_iops.HOST`, `host_mb_per_s.HOST`, `host_lat_p99_us.HOST`, `host_io_bytes.HOST`
/// and `host_total_ios.HOST`, and `hosts`.
pub(super) fn clients_outcome(r: &ClientReport, hosts: &[Server]) -> Outcome {
    let mut outcome = outcome_of(&r.all);
    let m = &mut outcome.metrics;
    m.insert("hosts".to_string(), r.hosts.len() as f64);
    for h in &r.hosts {
        let label = hosts
            .iter()
            .find(|s| s.is(&h.hostname, h.port))
            .map(ToString::to_string)
            .unwrap_or_else(|| format!("{}:{}", h.hostname, h.port));
        m.insert(format!("host_iops.{label}"), h.report.iops());
        m.insert(
            format!("host_mb_per_s.{label}"),
            h.report.bw_bytes() as f64 / 1e6,
        );
        if let Some(ns) = h.report.clat_percentile_ns(99.0) {
            m.insert(format!("host_lat_p99_us.{label}"), ns as f64 / 1e3);
        }
        m.insert(
            format!("host_io_bytes.{label}"),
            (h.report.read.io_bytes + h.report.write.io_bytes) as f64,
        );
        m.insert(
            format!("host_total_ios.{label}"),
            h.report.total_ios() as f64,
        );
    }
    outcome
}
