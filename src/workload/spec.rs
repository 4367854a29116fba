//! What a workload declares as data: the charts it calls for and the side columns of its
//! tables.

/// A chart a workload declares for the HTML report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chart {
    /// One line per target: `metric` (y) against the numeric point parameter `x`, one chart
    /// for every combination of the point's other parameters. Points of one repetition
    /// that share every parameter are averaged.
    Curve {
        /// The point parameter on the x axis (a key of [`Point::params`]).
        x: &'static str,
        x_label: &'static str,
        /// The metric on the y axis (a key of the measurement's metrics).
        metric: &'static str,
        y_label: &'static str,
        /// Logarithmic x axis.
        log_x: bool,
    },
}

/// Columns of the workloads that operate on files: rate and what the device and cache saw.
pub const FILE_COLUMNS: &[&str] = &[
    "files_per_s",
    "write_amplification",
    "peak_cached_bytes",
    "cpu_system_pct",
];

/// Columns of the workloads that write a data set: throughput and what it cost on disk.
pub const WRITE_COLUMNS: &[&str] = &[
    "mb_per_s",
    "write_amplification",
    "space_amplification",
    "peak_cached_bytes",
    "cpu_system_pct",
];
