//! `fsarena history prune`: runs removed from the history by a retention rule.

use anyhow::{bail, Result};
use clap::Args;

use super::super::exit::EXIT_OK;
use super::super::output::emit;
use super::place::Place;
use crate::history::prune::{doomed, Rule};
use crate::history::store::now;

#[derive(Debug, Args)]
pub struct PruneArgs {
    /// Remove runs that started longer ago than this (90d, 12w).
    #[arg(long, value_name = "AGE", value_parser = humantime::parse_duration)]
    pub older_than: Option<std::time::Duration>,
    /// Keep only the newest N runs of each plan on each host.
    #[arg(long, value_name = "N")]
    pub keep_last: Option<usize>,
    /// Say what would be removed; remove nothing.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub place: Place,
}

pub fn run(a: &PruneArgs) -> Result<i32> {
    if a.older_than.is_none() && a.keep_last.is_none() {
        bail!("prune needs a rule: --older-than AGE and/or --keep-last N");
    }
    let mut store = a.place.open()?;
    let runs = store.runs()?;
    let rule = Rule {
        older_than_s: a.older_than.map(|d| d.as_secs_f64()),
        keep_last: a.keep_last,
    };
    let ids = doomed(&runs, rule, now());
    let n = if a.dry_run {
        ids.len()
    } else {
        store.remove(&ids)?
    };
    let mut s = String::new();
    for id in &ids {
        s.push_str(&format!(
            "{} {id}\n",
            if a.dry_run { "would remove" } else { "removed" }
        ));
    }
    s.push_str(&format!(
        "{n} of {} runs {}; history: {}\n",
        runs.len(),
        if a.dry_run {
            "would be removed"
        } else {
            "removed"
        },
        store.location()
    ));
    emit(&s)?;
    Ok(EXIT_OK)
}
