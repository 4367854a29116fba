//! Facts about the machine recorded once per run, so results can be read years later.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::provision::{guard, host};
use crate::results::HostFacts;
use crate::sys::DevId;

/// The host facts recorded at the top of a new results file.
pub fn gather(work_root: &Path, command_line: Vec<String>, plan: serde_json::Value) -> HostFacts {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default();
    let mem_total_bytes = fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024);
    HostFacts {
        fsarena_version: env!("CARGO_PKG_VERSION").to_string(),
        kernel: host::kernel_release(),
        cpu_model,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        mem_total_bytes,
        work_device: device_model(work_root),
        command_line,
        started_unix: now_unix(),
        plan,
        skipped_targets: Vec::new(),
        skipped_workloads: Vec::new(),
        dataset_zstd_ratio: None,
    }
}

/// Seconds since the Unix epoch, as recorded in measurements.
pub fn now_unix() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// "vda (virtio, 252:0)" style description of the disk under `p`, when sysfs knows it.
fn device_model(p: &Path) -> Option<String> {
    let probe = p.ancestors().find(|a| a.exists())?;
    let dev = DevId::from_dev_t(fs::metadata(probe).ok()?.dev());
    let disk = guard::whole_disk(dev).unwrap_or(dev);
    let name = guard::sysfs_name(disk)?;
    let model = fs::read_to_string(format!("/sys/block/{name}/device/model"))
        .map(|m| m.trim().to_string())
        .ok()
        .filter(|m| !m.is_empty());
    let rotational = fs::read_to_string(format!("/sys/block/{name}/queue/rotational"))
        .map(|r| {
            if r.trim() == "1" {
                "rotational"
            } else {
                "non-rotational"
            }
        })
        .unwrap_or("unknown");
    Some(match model {
        Some(m) => format!("{name} ({m}, {rotational}, {disk})"),
        None => format!("{name} ({rotational}, {disk})"),
    })
}
