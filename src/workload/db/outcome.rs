//! What the measured phase counted, and how it becomes an [`Outcome`]: per-thread
//! statistics, the syscall bytes each thread asked of the file system, latency percentiles
//! and the notes that say how the numbers were taken.

use std::collections::BTreeMap;
use std::fs;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::options::{Config, Op};
use super::schema::Built;
use crate::fsops;
use crate::workload::outcome::Outcome;

/// Read and write syscall bytes of the calling thread (`/proc/thread-self/io`): what SQLite
/// asked of the file system, whether or not the page cache absorbed it.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct ThreadIo {
    rchar: u64,
    wchar: u64,
    /// Bytes this read of the io file itself added to `rchar`.
    own_read: u64,
}

impl ThreadIo {
    pub(super) fn now() -> Option<ThreadIo> {
        let text = fs::read_to_string("/proc/thread-self/io").ok()?;
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().parse::<u64>().ok())
        };
        Some(ThreadIo {
            rchar: field("rchar:")?,
            wchar: field("wchar:")?,
            own_read: text.len() as u64,
        })
    }

    /// Bytes read and written since `self` (the first read of the io file is excluded).
    pub(super) fn since(self, later: ThreadIo) -> (u64, u64) {
        (
            later
                .rchar
                .saturating_sub(self.rchar)
                .saturating_sub(self.own_read),
            later.wchar.saturating_sub(self.wchar),
        )
    }
}

/// What one worker thread did.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct WorkerStats {
    /// Latencies in nanoseconds per transaction type (committed transactions only).
    pub(super) lat: [Vec<u64>; 4],
    /// Deletes, replaces and reads that found no row.
    pub(super) misses: [u64; 4],
    pub(super) inserted: u64,
    pub(super) deleted: u64,
    pub(super) lazy: Vec<u64>,
    pub(super) durable: Vec<u64>,
    pub(super) busy_retries: u64,
    pub(super) read_bytes: u64,
    pub(super) write_bytes: u64,
    pub(super) io_counted: bool,
    /// CPU time of the worker's thread over the phase (`None`: the clock was unreadable).
    pub(super) cpu_ns: Option<u64>,
}

/// What the maintenance thread of the `maintenance` variant did.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct MaintenanceStats {
    /// `wal_checkpoint(PASSIVE)` calls that completed, and `incremental_vacuum`s run.
    pub(super) checkpoints: u64,
    pub(super) vacuums: u64,
    /// Pages the vacuums returned to the file system (the free list before each).
    pub(super) freed_pages: u64,
    /// Passes that found the database busy.
    pub(super) busy: u64,
}

/// What the checkpoint thread did.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct CheckpointStats {
    pub(super) done: u64,
    pub(super) busy: u64,
    /// Time spent inside checkpoints, and the longest one (writers wait on RESTART/FULL).
    pub(super) total: Duration,
    pub(super) longest: Duration,
    pub(super) read_bytes: u64,
    pub(super) write_bytes: u64,
    /// CPU time of the checkpoint thread over the phase.
    pub(super) cpu_ns: Option<u64>,
}

/// Nearest-rank percentile of nanosecond samples, in milliseconds; `None` without samples.
fn percentile_ms(sorted: &[u64], pct: f64) -> Option<f64> {
    (!sorted.is_empty()).then(|| fsops::percentile(sorted, pct / 100.0) as f64 / 1e6)
}

/// The outcome of the measured phase: counts, rates and percentiles per transaction type,
/// commits by durability, WAL and checkpoint bytes, and notes on how they were measured.
pub(super) fn outcome_of(
    cfg: &Config,
    built: &Built,
    stats: &[WorkerStats],
    ckpt: &CheckpointStats,
    seconds: f64,
    wal_file_bytes: u64,
) -> Outcome {
    let mut m = BTreeMap::new();
    let total = per_op(stats, &mut m);
    per_commit_kind(stats, &mut m);
    let mut put = |k: &str, v: f64| {
        m.insert(k.to_string(), v);
    };
    put("transactions", total as f64);
    put("transactions_per_s", total as f64 / seconds.max(1e-9));
    put(
        "busy_retries",
        stats.iter().map(|s| s.busy_retries).sum::<u64>() as f64,
    );
    let io_counted = stats.iter().all(|s| s.io_counted);
    let wal_bytes: u64 = stats.iter().map(|s| s.write_bytes).sum();
    if io_counted {
        put("wal_bytes_written", wal_bytes as f64);
        put("checkpoint_bytes_written", ckpt.write_bytes as f64);
    }
    put("wal_file_bytes", wal_file_bytes as f64);
    put("checkpoints", ckpt.done as f64);
    put("checkpoints_busy", ckpt.busy as f64);
    put("checkpoint_seconds", ckpt.total.as_secs_f64());
    put("checkpoint_max_ms", ckpt.longest.as_secs_f64() * 1e3);
    put("initial_rows", built.rows as f64);
    put("db_initial_bytes", built.bytes as f64);
    put("threads", cfg.threads as f64);
    let read_bytes: u64 = stats.iter().map(|s| s.read_bytes).sum::<u64>() + ckpt.read_bytes;
    Outcome {
        seconds,
        files: total,
        logical_read_bytes: if io_counted { read_bytes } else { 0 },
        logical_write_bytes: if io_counted {
            wal_bytes + ckpt.write_bytes
        } else {
            0
        },
        metrics: m,
        notes: notes(cfg, io_counted),
        ..Outcome::default()
    }
}

/// Count, median, 99th percentile and misses per transaction type: the engine's latency
/// profile is per type, since a read and a replace cost different things. Returns the
/// transactions in all.
fn per_op(stats: &[WorkerStats], m: &mut BTreeMap<String, f64>) -> u64 {
    let mut put = |k: &str, v: f64| {
        m.insert(k.to_string(), v);
    };
    let mut total = 0u64;
    for op in Op::ALL {
        let mut lat: Vec<u64> = stats
            .iter()
            .flat_map(|s| s.lat[op as usize].iter().copied())
            .collect();
        lat.sort_unstable();
        total += lat.len() as u64;
        let name = op.name();
        put(&format!("{name}_count"), lat.len() as f64);
        if let Some(p) = percentile_ms(&lat, 50.0) {
            put(&format!("{name}_p50_ms"), p);
        }
        if let Some(p) = percentile_ms(&lat, 99.0) {
            put(&format!("{name}_p99_ms"), p);
        }
        if op != Op::Insert {
            put(
                &format!("{name}_misses"),
                stats.iter().map(|s| s.misses[op as usize]).sum::<u64>() as f64,
            );
        }
    }
    total
}

/// Commits and their 99th percentile by durability: a lazy commit skips the fsync a
/// durable one waits for, which is the file system's part of the cost.
fn per_commit_kind(stats: &[WorkerStats], m: &mut BTreeMap<String, f64>) {
    for (name, pick) in [("lazy", 0), ("durable", 1)] {
        let mut lat: Vec<u64> = stats
            .iter()
            .flat_map(|s| if pick == 0 { &s.lazy } else { &s.durable }.iter().copied())
            .collect();
        lat.sort_unstable();
        m.insert(format!("{name}_commits"), lat.len() as f64);
        if let Some(p) = percentile_ms(&lat, 99.0) {
            m.insert(format!("{name}_commit_p99_ms"), p);
        }
    }
}

/// The notes that say what ran and how the byte counts were taken (or why they were not).
fn notes(cfg: &Config, io_counted: bool) -> Vec<String> {
    let mut notes = vec![format!(
        "{} threads for {:.1} s, mix insert/delete/replace/read = {:?}, {}% lazy commits, checkpoint {}",
        cfg.threads,
        cfg.duration.as_secs_f64(),
        cfg.mix,
        cfg.lazy_commit_pct,
        cfg.checkpoint_interval
            .map_or("off".to_string(), |d| format!(
                "{} every {} ms",
                cfg.checkpoint_mode,
                d.as_millis()
            ))
    )];
    notes.push(if io_counted {
        "wal_bytes_written: write() bytes of the worker threads (/proc/thread-self/io); \
         auto-checkpoint is off, so workers write only the WAL (the -shm index is mmapped; \
         SQLite writes 1 byte per new 4 KiB page of it as it grows); \
         checkpoint_bytes_written: the checkpoint thread's writes into the database file"
            .to_string()
    } else {
        "/proc/thread-self/io unavailable: WAL and logical byte counts not measured".to_string()
    });
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<u64> = (1..=100).map(|i| i * 1_000_000).collect();
        assert_eq!(percentile_ms(&v, 50.0), Some(50.0));
        assert_eq!(percentile_ms(&v, 99.0), Some(99.0));
        assert_eq!(percentile_ms(&v[..1], 99.0), Some(1.0));
        assert_eq!(percentile_ms(&[], 50.0), None);
    }
}
