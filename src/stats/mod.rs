//! Statistics over repetitions: which differences between file systems are real, and which
//! are noise. Pure functions over numbers and [`crate::results::Measurement`] records; no I/O.
//!
//! * [`summary`]: mean, median, spread and a t-based 95 % interval of one metric.
//! * [`outliers`]: robust (MAD) outlier flags; flagged, never dropped.
//! * [`significance`]: Welch's t-test, Mann–Whitney U, and [`compare`] which picks one.
//! * [`aggregate`](mod@aggregate): groups measurements and compares each target to a baseline.
//! * [`adaptive`]: whether `--runs auto` should measure once more.

pub mod outliers;
pub mod significance;
pub mod summary;

pub use outliers::{mad_outliers, robust_sigma, OUTLIER_SIGMAS};
pub use significance::{
    choose_test, compare, mann_whitney, mann_whitney_min_p, skewness, welch, Comparison,
    MannWhitneyResult, MwMethod, Test, WelchResult,
};
pub use summary::{summarize, Summary};
