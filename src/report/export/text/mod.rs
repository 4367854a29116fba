//! Text that several exporters lay out alike: the output width and wrapping ([`width`]),
//! fitting a table's columns to it ([`fit`]), the warnings, ranking and host said once
//! ([`notes`]), and what was compared, which opens `summary.md` and `study.md` ([`header`]).

pub mod fit;
pub mod header;
pub mod notes;
pub mod width;
