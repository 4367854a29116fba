//! `fsarena history` / `fsarena history list`: the runs kept, oldest first, with the
//! filters' narrowing.

use anyhow::Result;
use clap::Args;

use super::super::exit::EXIT_OK;
use super::super::output::emit;
use super::filter::FilterArgs;
use super::place::Place;
use crate::history::trend::date;

#[derive(Debug, Clone, Default, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Print the runs as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub place: Place,
}

pub fn run(a: &ListArgs) -> Result<i32> {
    let mut store = a.place.open()?;
    let runs = a.filter.runs(store.as_mut())?;
    if a.json {
        emit(&(serde_json::to_string_pretty(&runs)? + "\n"))?;
        return Ok(EXIT_OK);
    }
    let mut s = String::new();
    for r in &runs {
        let labels: Vec<String> = r.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        s.push_str(&format!(
            "{}  {}  host {}  plan {}  kernel {}  fsarena {}{}  {} ok, {} not ok{}\n    {}\n    {}{}\n",
            r.id,
            date(r.started_unix),
            r.host_key,
            r.plan_digest,
            r.kernel,
            r.version,
            if r.commit.is_empty() { String::new() } else { format!(" ({})", r.commit) },
            r.measured,
            r.failed,
            if labels.is_empty() { String::new() } else { format!("  {}", labels.join(" ")) },
            r.plan_name,
            r.results_path,
            // Retention: the history outlives the directory, and says so.
            if std::path::Path::new(&r.results_path).exists() { "" } else { " (deleted)" },
        ));
    }
    s.push_str(&format!(
        "{} runs; history: {}\n",
        runs.len(),
        store.location()
    ));
    emit(&s)?;
    Ok(EXIT_OK)
}
