//! One cell: every point of a workload, each measured on its own freshly made file system,
//! under the monitor, and checked after it. Whatever happens, a cell yields records.
//!
//! [`context`] holds what the points share, [`fresh`] a point's file system from made to
//! retired, [`point`] one point under the monitor, [`sweep`] the points in order.

mod context;
mod fresh;
mod point;
mod sweep;

pub use super::failure::{is_provision_failure, provision_failure, Failure};
pub use context::{Beside, CellRun};
pub use fresh::{LOG_DIR, WORK_DIR};
pub use sweep::{measure_points, CellOutput};
