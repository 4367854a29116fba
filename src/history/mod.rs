//! Results over time: every run fsarena makes is kept in a history — where and how it was
//! measured and each repetition's key metric — so that trends can be drawn across kernels,
//! versions and hosts, and a new run checked against the ones before it.
//!
//! From the bottom up: `error` (`HistoryError`), `entry` (the plain data a history holds:
//! `RunEntry`, `Value`, `Filter`), `schema` (the tables and their versioned migrations),
//! `store` (the `Store` trait), `sqlite` and `postgres` (its two places), `location` (which
//! one a command uses), `capture` (a results directory read into an entry), `series` (a
//! key metric run after run), `changepoint` (where a series changed, with a permutation
//! test), `check` (is the newest run worse), `prune` (retention), `trend` (the trend
//! report's model) and `trend_html`/`trend_files` (its outputs). This file opens a store
//! and registers a run.

pub mod capture;
pub mod changepoint;
pub mod check;
pub mod entry;
pub mod error;
pub mod location;
pub mod postgres;
pub mod prune;
pub mod schema;
pub mod series;
pub mod sqlite;
pub mod store;
pub mod trend;
pub mod trend_files;
pub mod trend_html;

use std::collections::BTreeMap;
use std::path::Path;

pub use entry::{Captured, Filter, RunEntry, Value};
pub use error::HistoryError;
pub use location::Location;
pub use store::Store;

/// The store at `location`; `None` when the history is off.
pub fn open(location: &Location) -> Result<Option<Box<dyn Store>>, HistoryError> {
    Ok(match location {
        Location::Off => None,
        Location::Sqlite(p) => Some(Box::new(sqlite::SqliteStore::open(p)?)),
        Location::Postgres(url) => Some(Box::new(postgres::PostgresStore::open(url)?)),
    })
}

/// What registering a run did.
#[derive(Debug, Clone)]
pub struct Registered {
    pub run_id: String,
    /// `false`: the run was already in the history (a resumed run registers again).
    pub added: bool,
    pub location: String,
}

/// Registers the results in `dir` with `labels` in the history at `location`; `None` when
/// the history is off.
pub fn register(
    dir: &Path,
    labels: &BTreeMap<String, String>,
    location: &Location,
) -> Result<Option<Registered>, HistoryError> {
    let Some(mut store) = open(location)? else {
        return Ok(None);
    };
    let c = capture::capture(dir, labels)?;
    let added = store.add(&c)?;
    Ok(Some(Registered {
        run_id: c.run.id,
        added,
        location: store.location(),
    }))
}
