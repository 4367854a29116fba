//! Deterministic data sets: the same seed gives the same tree, names and bytes everywhere.
//!
//! Modules, each depending only on those listed before it:
//! * [`error`], [`spec`] (what is asked for), [`manifest`] (what a data set holds), [`seed`]
//!   (stream keys), [`draw`] (portable random draws and math): leaves;
//! * [`names`] (realistic names), [`profile`] (each profile's shape and the scale rule),
//!   [`typed`] (text and structured-binary bytes), [`content`] (the bytes, a pure function
//!   of seed and content id, their kind carried in the id);
//! * [`snapshot`] (a tree read back into a manifest, and `source_dir` planning),
//!   [`materialize`] (a planned tree written to disk);
//! * [`generate`] (the seeded layout: `DatasetSpec::plan`), [`ratio`] (its measured zstd
//!   ratio), [`churn`] (the seeded operation stream that ages a file system), [`sizing`]
//!   (a spec's files and bytes without generating it, and the scale that holds a stated size).

pub mod churn;
pub mod content;
pub mod draw;
pub mod error;
pub mod generate;
pub mod manifest;
pub mod materialize;
pub mod names;
pub mod profile;
pub mod ratio;
pub mod seed;
pub mod sizing;
pub mod snapshot;
pub mod spec;
pub mod typed;

pub use content::{fill_content, ContentId};
pub use error::DatasetError;
pub use manifest::{FileEntry, Manifest};
pub use materialize::{materialize, materialize_timed, Written};
pub use profile::{parse_profile, profile_name};
pub use snapshot::{plan_source, snapshot, Snapshot};
pub use spec::{DatasetSpec, Profile};
