//! The report model: what a results directory says once its statistics are decided
//! ([`report::build`], through `stats::verdicts`), and the comparison of two runs
//! ([`compare`]). Every exporter reads it; nothing here knows how an output is laid out,
//! beyond the words and figures every output shares ([`format`]).
//!
//! The model is made of the pieces that compute it, each below [`report`], which assembles
//! them: the sections and their rows ([`section`]), the one figure shown per metric
//! ([`shown`]), the headline, the explanations and the call types behind them, the ranking,
//! the data sets' sizes and the scale check, the measurements set aside, the measured file
//! systems and where the phases ran.

pub mod call_types;
pub mod compare;
pub mod cpus;
pub mod explain;
pub mod file_systems;
pub mod format;
pub mod headline;
pub mod ranking;
pub mod report;
pub mod scales;
pub mod section;
pub mod set_aside;
pub mod shown;
