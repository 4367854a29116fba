//! Why the history could not be read or written: one type for every file of `history/`.

use std::path::PathBuf;

/// A history error. Registering a run turns it into a warning line (the run is never lost
/// for it); the `fsarena history` commands print it as their one line.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("history database {path}: {source}")]
    Sqlite {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("history on {url}: {source}")]
    Postgres {
        url: String,
        #[source]
        source: postgres::Error,
    },
    #[error("no history location: {0}")]
    Nowhere(String),
    #[error("cannot create the history's directory {path}: {source}")]
    Dir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}: not a history location (a file path, or postgres://…)")]
    Location(String),
    #[error("the history database is at schema version {found}, newer than this fsarena knows ({known}): upgrade fsarena")]
    Newer { found: i64, known: i64 },
    #[error("{dir}: {why}")]
    Results { dir: PathBuf, why: String },
    #[error("`{0}` is not a label: write key=value")]
    Label(String),
    #[error("history file {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}
