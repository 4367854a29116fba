//! Cheap per-operation latency logs: one per worker thread, merged afterwards, summarised
//! as nearest-rank percentiles.

use std::time::Instant;

use super::totals::Totals;

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

    /// Merges several logs into one (the same as [`Totals::sum_all`]).
    pub fn merge(logs: impl IntoIterator<Item = LatencyLog>) -> LatencyLog {
        LatencyLog::sum_all(logs)
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

/// Logs add up by concatenation, so a worker's totals may hold one and derive their sum.
impl Totals for LatencyLog {
    fn add(&mut self, other: LatencyLog) {
        self.0.extend(other.0);
    }
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
