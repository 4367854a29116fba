//! `fsarena history`: the runs kept over time ([`crate::history`]). One file per command
//! in `history/`; `place` and `filter` hold the flags they share.

use anyhow::Result;
use clap::{Args, Subcommand};

mod add;
mod check;
mod filter;
mod list;
pub mod place;
mod prune;
mod report;

/// `fsarena history [COMMAND]`; alone, it lists.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct HistoryArgs {
    #[command(subcommand)]
    pub command: Option<HistoryCommand>,
    #[command(flatten)]
    pub list: list::ListArgs,
}

#[derive(Debug, Subcommand)]
pub enum HistoryCommand {
    /// Import results directories (or the results directories below a directory).
    Add(add::AddArgs),
    /// List the runs kept, oldest first (what `fsarena history` alone does).
    List(list::ListArgs),
    /// Write the trend report: HTML, JSON and CSV of each key metric over time.
    Report(report::ReportArgs),
    /// Check the newest run of each plan and host against its history: exit 0 when
    /// nothing got worse, 1 naming each regression, 125 when the newest run measured
    /// nothing (`git bisect run` skips it).
    Check(check::CheckArgs),
    /// Remove runs from the history by a rule (results directories are left alone).
    Prune(prune::PruneArgs),
}

pub fn run(a: HistoryArgs) -> Result<i32> {
    match a.command {
        None => list::run(&a.list),
        Some(HistoryCommand::Add(x)) => add::run(x),
        Some(HistoryCommand::List(x)) => list::run(&x),
        Some(HistoryCommand::Report(x)) => report::run(&x),
        Some(HistoryCommand::Check(x)) => check::run(&x),
        Some(HistoryCommand::Prune(x)) => prune::run(&x),
    }
}
