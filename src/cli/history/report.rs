//! `fsarena history report --out DIR`: the trend report's HTML, JSON and CSV.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::super::exit::EXIT_OK;
use super::super::output::emit;
use super::filter::FilterArgs;
use super::place::Place;
use crate::history::trend::{trend, By};
use crate::history::trend_files;

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The directory the report's files are written into (history.html, .json, .csv).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// The x axis: date, kernel, version (fsarena's), or label:KEY.
    #[arg(long, value_name = "AXIS", default_value = "date", value_parser = By::parse)]
    pub by: By,
    #[command(flatten)]
    pub filter: FilterArgs,
    #[command(flatten)]
    pub place: Place,
}

pub fn run(a: &ReportArgs) -> Result<i32> {
    let mut store = a.place.open()?;
    let runs = a.filter.runs(store.as_mut())?;
    let ids: Vec<String> = runs.iter().map(|r| r.id.clone()).collect();
    let mut values = store.values(&ids)?;
    if let Some(t) = &a.filter.target {
        values.retain(|v| &v.target == t);
    }
    let t = trend(&runs, &values, &a.by);
    let files = trend_files::write(&a.out, &t)?;
    let mut s = format!(
        "{} runs of {} plans, by {}:\n",
        runs.len(),
        t.plans.len(),
        t.by
    );
    for f in files {
        s.push_str(&format!("  {}\n", f.display()));
    }
    emit(&s)?;
    Ok(EXIT_OK)
}
