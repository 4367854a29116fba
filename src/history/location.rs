//! Where the history is kept: `--history URL`, else `FSARENA_HISTORY`, else
//! `$XDG_DATA_HOME/fsarena/history.sqlite` (`~/.local/share/fsarena/` when XDG_DATA_HOME is
//! unset, as the XD Base Directory specification says). `off` keeps no history.

use std::path::PathBuf;

use super::error::HistoryError;

/// The environment variable that names the history.
pub const ENV: &str = "FSARENA_HISTORY";

/// Where a history is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// No history: runs are not registered.
    Off,
    /// An SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL server, by its connection URL.
    Postgres(String),
}

impl Location {
    /// The location a command uses: `given` (`--history`) wins over the environment, the
    /// environment over the default file.
    pub fn choose(given: Option<&str>) -> Result<Location, HistoryError> {
        let named = given
            .map(str::to_string)
            .or_else(|| std::env::var(ENV).ok().filter(|s| !s.trim().is_empty()));
        match named {
            Some(s) => Location::parse(&s),
            None => default_file().map(Location::Sqlite),
        }
    }

    /// `off`, `postgres://…`/`postgresql://…`, `sqlite://PATH`, or a file path.
    pub fn parse(s: &str) -> Result<Location, HistoryError> {
        let s = s.trim();
        if s == "off" {
            Ok(Location::Off)
        } else if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            Ok(Location::Postgres(s.to_string()))
        } else if let Some(p) = s.strip_prefix("sqlite://") {
            Ok(Location::Sqlite(PathBuf::from(p)))
        } else if s.contains("://") || s.is_empty() {
            Err(HistoryError::Location(s.to_string()))
        } else {
            Ok(Location::Sqlite(PathBuf::from(s)))
        }
    }
}

/// `$XDG_DATA_HOME/fsarena/history.sqlite`, or under `$HOME/.local/share`.
fn default_file() -> Result<PathBuf, HistoryError> {
    let env_dir = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let data = env_dir("XDG_DATA_HOME")
        .filter(|p| p.is_absolute())
        .or_else(|| env_dir("HOME").map(|h| h.join(".local/share")))
        .ok_or_else(|| HistoryError::Nowhere("neither XDG_DATA_HOME nor HOME is set".into()))?;
    Ok(data.join("fsarena").join("history.sqlite"))
}
