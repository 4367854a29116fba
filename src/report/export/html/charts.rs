//! Inline SVG charts for the HTML report: bar charts with every repetition and its 95 %
//! interval ([`bars`]), and line charts ([`lines`]). Written by hand rather than through a
//! plotting crate so the page stays small, self-contained and styled like the rest of the
//! report.
//!
//! Every chart shares one frame (a `viewBox` the page scales to its grid cell), nice axis
//! ticks labelled to the precision of their step, and classes the page's self-check reads:
//! `xtick`, `ytick` and `val` text must never overlap one another.

mod bars;
pub mod forest;
mod frame;
mod lines;

pub use bars::{bar_chart, bars, Bar, BarGroup, BarOpts};
pub use frame::PALETTE;
pub use lines::{lines, Line, XAxis};
