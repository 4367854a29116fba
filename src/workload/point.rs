//! A workload's point: one measured variant of it.

use std::collections::BTreeMap;

/// One point of a workload. Most workloads have a single point with an empty variant;
/// an `io` sweep has one per (rw, bs, jobs, depth, size).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Point {
    pub variant: String,
    pub params: BTreeMap<String, serde_json::Value>,
}
