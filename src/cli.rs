//! The command line: clap types turned into plain values, then handed to the library.
//! Exit codes: 0 all measured, 1 some measurements failed (or the run was interrupted),
//! 2 bad input or refused, 3 a regression gate that could not decide (see [`exit`]).

use std::path::PathBuf;

use anyhow::Result;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::plan::settings::Settings;
use crate::plan::value::Margin;
use crate::provision::workdir;

mod aftermath;
mod commands;
mod compare;
mod exit;
mod generate;
mod history;
mod out_dir;
pub mod output;
mod pct;
mod record;
mod run;
mod same_plan;
mod signals;
mod tune;

use commands::OpArgs;
pub use exit::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, EXIT_UNDECIDED};
use output::{is_closed_pipe, one_line, OutputArgs};
pub use run::RunArgs;

#[derive(Debug, Parser)]
#[command(
    name = "fsarena",
    version,
    about = "A file-system benchmark lab: provision file systems, run workloads, compare honestly.",
    after_help = "Run `fsarena doctor` first to see what this host can test.\n\n\
Exit codes: 0 every measurement of the plan ok; 1 some measurement failed, the plan is \
incomplete, a target or workload of the plan was skipped (this host cannot run it), or the run was interrupted (finish it with --resume), or `compare --fail-if-worse` \
found a comparison worse by more than its margin or a point of A with no ok run in B; 2 bad input or a refusal, \
nothing provisioned (compare: runs of different plans); 3 `compare --fail-if-worse` found nothing worse but could \
not decide some comparison (too few runs; each named); 130 / 143 a second Ctrl-C / SIGTERM tore everything down at once; \
101 a panic, never intended (please report it)."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Report what this host can test: root, loop devices, file systems, tools, caches.
    Doctor {
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run a comparison (with no arguments: every supported catalogue file system, the
    /// file-management workloads, a small data set, 3 repetitions).
    Run(Box<RunArgs>),
    /// Race a file system's mkfs and mount options for a workload on fresh file systems,
    /// within a time budget: the best configuration, its gain over the defaults, what it
    /// gives up, and a best.toml `fsarena run` accepts.
    Tune(Box<tune::TuneArgs>),
    /// Print the report of a results directory.
    Report {
        dir: PathBuf,
        /// Equivalence margin in % of the baseline (default: the run's, else 5).
        #[arg(long, value_name = "PCT", allow_negative_numbers = true)]
        margin: Option<Margin>,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Compare two results directories of the same plan side by side (B against A).
    Compare {
        dir_a: PathBuf,
        dir_b: PathBuf,
        /// Equivalence margin in % of A (default 5).
        #[arg(long, value_name = "PCT", allow_negative_numbers = true)]
        margin: Option<Margin>,
        /// Exit 1 when any key metric is significantly worse in B (decided `worse` after
        /// plain Benjamini–Hochberg over the compared rows) by more than PCT % of A; for
        /// scripts and CI.
        #[arg(long, value_name = "PCT", value_parser = pct::parse_pct)]
        fail_if_worse: Option<f64>,
        /// With --fail-if-worse: pass points A measured that B lacks or has no ok run of
        /// (they fail the gate otherwise); each is still named on stderr.
        #[arg(long, requires = "fail_if_worse")]
        allow_missing: bool,
        /// Compare runs of different plans (workloads, targets, data set, a workload's
        /// options such as the replayed trace): only the points both ran alike are
        /// compared, the differences named on stderr (refused otherwise, exit 2).
        #[arg(long)]
        allow_different_plans: bool,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), generated from these definitions: `fsarena man > fsarena.1`.
    Man,
    /// Remove mounts, loop devices and images left by a killed run (touches nothing else).
    Cleanup {
        /// The work directory root the run used.
        #[arg(long, default_value = workdir::DEFAULT_ROOT)]
        work_dir: PathBuf,
        /// Internal (an MPI rank interrupted by mpirun starts it): wait until process PID
        /// has ended, then clean up, again while other runs are still ending.
        #[arg(long, value_name = "PID", hide = true)]
        after_pid: Option<u32>,
    },
    /// List the catalogue of targets and the workloads.
    List,
    /// Write a generated data set into DIR (for looking at it, or benchmarking other tools
    /// on exactly the tree fsarena measures) and print its manifest digest.
    Dataset {
        dir: PathBuf,
        #[arg(long, default_value = "small")]
        profile: String,
        #[arg(long, default_value_t = crate::plan::DEFAULT_SCALE)]
        scale: f64,
        #[arg(long, default_value_t = 42)]
        seed: u64,
        #[arg(long, default_value_t = 0.10)]
        duplicate_fraction: f64,
        #[arg(long, default_value_t = 4)]
        threads: usize,
    },
    /// Run one workload's measured operation on an existing tree and print
    /// `NAME seconds=… files=… bytes=…` (for timing fsarena next to peer tools; see
    /// bench/ and BENCHMARKS.md). No data generation and no verification: point it at a
    /// tree written by `fsarena dataset`.
    #[command(hide = true)]
    Op(OpArgs),
    /// Run a command under strace and write its file-system calls under a root as a
    /// trace the `replay` workload replays (docs/trace-format.md).
    Record(record::RecordArgs),
    /// Results over time: every run is kept in a history (list, add, report, check,
    /// prune).
    History(Box<history::HistoryArgs>),
}

/// Entry point; returns the process exit code.
pub fn main() -> i32 {
    aftermath::install();
    let (cli, given) = match parse() {
        Ok(p) => p,
        Err(e) if e.use_stderr() => {
            eprintln!("fsarena: {} (see fsarena --help)", clap_line(&e));
            return EXIT_BAD_INPUT;
        }
        Err(e) => {
            let _ = e.print();
            return EXIT_OK;
        }
    };
    let code = match dispatch(cli, &given) {
        Ok(code) => code,
        // The reader of stdout went away (`| head`): a quiet end, as for a shell tool.
        Err(e) if is_closed_pipe(&e) => EXIT_OK,
        Err(e) => {
            // Empty on MPI ranks other than 0 when all refused together: rank 0 says why.
            let line = one_line(&e);
            if !line.is_empty() {
                eprintln!("fsarena: {line}");
            }
            EXIT_BAD_INPUT
        }
    };
    aftermath::say_leftovers(code);
    signals::exit_code(code)
}

/// One line, like every other refusal: clap's first paragraph, whose indented lines are
/// part of the sentence (the missing arguments after "were not provided:", issue 57.5).
fn clap_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let paragraph: Vec<&str> = text
        .lines()
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    let Some((first, rest)) = paragraph.split_first() else {
        return "bad arguments".to_string();
    };
    let first = first.trim_start_matches("error: ");
    match rest {
        [] => first.to_string(),
        _ => format!("{first} {}", rest.join(", ")),
    }
}

/// The command line, and the run options it names (see [`Settings::given_flags`]).
fn parse() -> Result<(Cli, Vec<String>), clap::Error> {
    let matches = Cli::command().try_get_matches()?;
    let cli = Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut Cli::command()))?;
    let given = matches
        .subcommand_matches("run")
        .or_else(|| matches.subcommand_matches("tune"))
        .map(Settings::given_flags)
        .unwrap_or_default();
    Ok((cli, given))
}

/// Each command to the function that does it.
fn dispatch(cli: Cli, given: &[String]) -> Result<i32> {
    match cli.command {
        Command::Doctor { json } => commands::doctor(json),
        Command::Run(args) => run::run(*args, given),
        Command::Tune(args) => tune::tune(*args, given),
        Command::Report {
            dir,
            margin,
            output,
        } => commands::report(&dir, margin.map(|m| m.0), &output),
        Command::Compare {
            dir_a,
            dir_b,
            margin,
            fail_if_worse,
            allow_missing,
            allow_different_plans,
            output,
        } => {
            let gate = fail_if_worse.map(|pct| compare::Gate { pct, allow_missing });
            let margin = margin.map(|m| m.0);
            compare::compare(&dir_a, &dir_b, margin, gate, allow_different_plans, &output)
        }
        Command::Completions { shell } => {
            generate::completions(shell, Cli::command()).map(|()| EXIT_OK)
        }
        Command::Man => generate::man(Cli::command()).map(|()| EXIT_OK),
        Command::Cleanup {
            work_dir,
            after_pid,
        } => match after_pid {
            None => commands::cleanup(&work_dir),
            Some(pid) => Ok(commands::cleanup_after(&work_dir, pid)),
        },
        Command::Dataset {
            dir,
            profile,
            scale,
            seed,
            duplicate_fraction,
            threads,
        } => {
            let spec = crate::dataset::DatasetSpec {
                profile: crate::dataset::parse_profile(&profile)?,
                scale,
                seed,
                duplicate_fraction,
                ..Default::default()
            };
            commands::dataset(&spec, &dir, threads)
        }
        Command::Op(a) => commands::op(a),
        Command::List => commands::list(),
        Command::Record(args) => record::run(args),
        Command::History(args) => history::run(*args),
    }
}

#[cfg(test)]
mod tests;
