//! What every history command and the runs that register share: `--history URL` (where
//! the history is) and, on `run` and `tune`, `--label KEY=VALUE`.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use clap::Args;

use crate::history::{self, Location, Store};

/// `--history URL`.
#[derive(Debug, Clone, Default, Args)]
pub struct Place {
    /// Where the history is kept: a file (SQLite), postgres://… (a shared server), or
    /// off (default: $FSARENA_HISTORY, else $XDG_DATA_HOME/fsarena/history.sqlite).
    #[arg(long = "history", value_name = "URL")]
    pub history: Option<String>,
}

impl Place {
    pub fn location(&self) -> Result<Location> {
        Ok(Location::choose(self.history.as_deref())?)
    }

    /// The store the command reads; an error when the history is off.
    pub fn open(&self) -> Result<Box<dyn Store>> {
        history::open(&self.location()?)?.ok_or_else(|| {
            anyhow::anyhow!("the history is off (FSARENA_HISTORY=off or --history off)")
        })
    }
}

/// What `run` and `tune` add: the run's labels and where it is registered.
#[derive(Debug, Clone, Args)]
pub struct Registration {
    /// A label kept with the run in the history (repeatable): --label kernel=6.18-rc2
    /// --label patch=nodelalloc. `history list --label`, `report --by label:KEY` and
    /// `check --against KEY=VALUE` read them.
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = parse_label)]
    pub labels: Vec<(String, String)>,
    #[command(flatten)]
    pub place: Place,
}

/// `key=value`, for clap.
pub fn parse_label(s: &str) -> Result<(String, String), String> {
    history::entry::parse_label(s).map_err(|e| e.to_string())
}

impl Registration {
    /// Registers the results in `out`: one stderr line says where, or why not. Never an
    /// error: the run is measured and written whatever happens to its history.
    pub fn register(&self, out: &Path) {
        if !out.join(crate::results::store::FILE_NAME).exists() {
            return;
        }
        let labels: BTreeMap<String, String> = self.labels.iter().cloned().collect();
        let t0 = Instant::now();
        let done = self
            .place
            .location()
            .and_then(|l| Ok(history::register(out, &labels, &l)?));
        match done {
            Ok(Some(r)) => eprintln!(
                "history: run {} {} {} ({:.2} s)",
                r.run_id,
                if r.added { "kept in" } else { "updated in" },
                r.location,
                t0.elapsed().as_secs_f64()
            ),
            Ok(None) => {}
            Err(e) => eprintln!(
                "fsarena: warning: the run was not kept in the history ({}); add it later with: fsarena history add {}",
                super::super::output::one_line(&e),
                out.display()
            ),
        }
    }
}
