//! Fast file-system primitives shared by the data-set generator and the workloads, so that
//! workloads measure the file system and not fsarena: a parallel `getdents64`/`statx`
//! walker ([`walk`]), xxh3 hashing over large reusable buffers ([`hash`]), and cheap
//! per-operation latency logs ([`LatencyLog`]).

pub mod copy;
pub mod hash;
pub mod walk;

use std::io;
use std::path::{Path, PathBuf};
use std::time::Instant;

pub use hash::{hash_at, hash_fd, hash_path, Hashed, HASH_BUF};
pub use walk::{
    is_empty_dir, list, pool, walk, walk_with, Dir, Dirent, Entry, Kind, Meta, Need, WalkOptions,
    WalkStats,
};

/// An OS error with the operation and path it happened on. The `source` keeps its raw OS
/// error, so ENOSPC and EIO are still recognisable after wrapping.
#[derive(Debug, thiserror::Error)]
#[error("{op} {}: {source}", path.display())]
pub struct FsError {
    pub op: &'static str,
    pub path: PathBuf,
    #[source]
    pub source: io::Error,
}

impl FsError {
    pub fn new(op: &'static str, path: &Path, source: io::Error) -> Self {
        FsError {
            op,
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Per-operation latencies in nanoseconds, one per worker thread, merged afterwards.
/// Timing costs one `Instant` pair per operation (~50 ns), small next to any syscall that
/// touches a file system.
#[derive(Debug, Clone, Default)]
pub struct LatencyLog(pub Vec<u64>);

impl LatencyLog {
    /// Runs `op`, recording how long it took.
    #[inline]
    pub fn time<T>(&mut self, op: impl FnOnce() -> T) -> T {
        let t0 = Instant::now();
        let r = op();
        self.0.push(t0.elapsed().as_nanos() as u64);
        r
    }

    /// Merges several logs into one.
    pub fn merge(logs: impl IntoIterator<Item = LatencyLog>) -> LatencyLog {
        let mut all = Vec::new();
        for l in logs {
            all.extend(l.0);
        }
        LatencyLog(all)
    }

    /// Adds `{prefix}_p50_us`, `{prefix}_p99_us` and `{prefix}_max_us` to `metrics` (nothing
    /// if no operation was timed).
    pub fn add_metrics(
        mut self,
        prefix: &str,
        metrics: &mut std::collections::BTreeMap<String, f64>,
    ) {
        if self.0.is_empty() {
            return;
        }
        self.0.sort_unstable();
        for (name, q) in [("p50", 0.50), ("p99", 0.99)] {
            metrics.insert(
                format!("{prefix}_{name}_us"),
                percentile(&self.0, q) as f64 / 1000.0,
            );
        }
        let max = self.0.last().copied().unwrap_or(0);
        metrics.insert(format!("{prefix}_max_us"), max as f64 / 1000.0);
    }
}

/// The nearest-rank percentile of sorted values.
pub fn percentile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 0.5), 50);
        assert_eq!(percentile(&v, 0.99), 99);
        assert_eq!(percentile(&v, 1.0), 100);
        assert_eq!(percentile(&[7], 0.99), 7);
        let mut m = std::collections::BTreeMap::new();
        LatencyLog(vec![3000, 1000, 2000]).add_metrics("op", &mut m);
        assert_eq!(m["op_p50_us"], 2.0);
        assert_eq!(m["op_max_us"], 3.0);
    }
}
