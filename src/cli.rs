//! The command line: clap types turned into plain values, then handed to the library.
//! Exit codes: 0 all measured, 1 some measurements failed (or the run was interrupted),
//! 2 bad input or refused.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};

use crate::plan::file;
use crate::plan::resolve::{self, Overrides};
use crate::plan::Plan;
use crate::provision::{host, workdir};
use crate::runner::{self, RunError, RunOptions};

mod commands;
mod generate;
mod out_dir;
pub mod output;
mod signals;

use output::{emit, is_closed_pipe, OutputArgs};

/// Exit code: everything measured `ok`.
pub const EXIT_OK: i32 = 0;
/// Exit code: the run finished but some measurement did not end `ok`.
pub const EXIT_FAILED: i32 = 1;
/// Exit code: bad input or a refusal; nothing was measured.
pub const EXIT_BAD_INPUT: i32 = 2;

#[derive(Debug, Parser)]
#[command(
    name = "fsarena",
    version,
    about = "A file-system benchmark lab: provision file systems, run workloads, compare honestly.",
    after_help = "Run `fsarena doctor` first to see what this host can test.\n\n\
Exit codes: 0 every measurement of the plan ok; 1 some measurement failed, the plan is \
incomplete, or the run was interrupted (finish it with --resume), or `compare --fail-if-worse` \
found a comparison worse by more than its margin; 2 bad input or a refusal, \
nothing provisioned; 130 / 143 a second Ctrl-C / SIGTERM tore everything down at once; \
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
    /// Print the report of a results directory.
    Report {
        dir: PathBuf,
        /// Equivalence margin in % of the baseline (default: the run's, else 5).
        #[arg(long, value_name = "PCT", value_parser = parse_margin, allow_negative_numbers = true)]
        margin: Option<f64>,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Compare two results directories of the same plan side by side (B against A).
    Compare {
        dir_a: PathBuf,
        dir_b: PathBuf,
        /// Equivalence margin in % of A (default 5).
        #[arg(long, value_name = "PCT", value_parser = parse_margin, allow_negative_numbers = true)]
        margin: Option<f64>,
        /// Exit 1 when any key metric is significantly worse in B (decided `worse` after
        /// Benjamini–Hochberg) by more than PCT % of A; for scripts and CI.
        #[arg(long, value_name = "PCT", value_parser = parse_pct)]
        fail_if_worse: Option<f64>,
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
}

/// `fsarena op NAME SRC [DEST]`.
#[derive(Debug, Args)]
pub struct OpArgs {
    /// The operation.
    #[arg(value_enum)]
    pub name: crate::bench_op::Op,
    /// The tree to work on (copy/sync: the source).
    pub src: PathBuf,
    /// copy: a directory to create and copy into; sync: the mirror to bring in line.
    pub dest: Option<PathBuf>,
    /// Worker threads (default: the CPUs).
    #[arg(long)]
    pub threads: Option<usize>,
    /// search-name: glob on the file name.
    #[arg(long, default_value = "*.jpg")]
    pub pattern: String,
    /// search-size: smallest size in bytes.
    #[arg(long, default_value_t = 0)]
    pub min_size: u64,
    /// search-size: largest size in bytes.
    #[arg(long, default_value_t = u64::MAX)]
    pub max_size: u64,
    /// touch: the modification time to set, in seconds since the epoch.
    #[arg(long, default_value_t = 1_000_000_000)]
    pub time: i64,
    /// chmod: the permission bits to set, in octal.
    #[arg(long, default_value = "640")]
    pub mode: String,
    /// sync: modification times this many seconds apart count as equal (rsync
    /// --modify-window).
    #[arg(long, default_value_t = 0.0)]
    pub modify_window: f64,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// A TOML plan file, or study:NAME for a built-in study (`fsarena list`).
    pub plan: Option<PathBuf>,
    /// A target: catalogue name (ext4, xfs, btrfs-zstd, …), dir:PATH, or NAME@/dev/DEVICE.
    #[arg(long = "target", value_name = "SPEC")]
    pub targets: Vec<String>,
    /// Workloads to run, comma-separated (`all` for every one).
    #[arg(long = "workload", value_name = "NAME[,NAME...]")]
    pub workloads: Vec<String>,
    /// Thread counts, e.g. 1,2,4.
    #[arg(long, value_name = "LIST")]
    pub threads: Option<String>,
    /// Repetitions per target, or `auto` (the default): 3, then more runs for the
    /// comparisons still undecided, closest to a decision first, within --budget.
    #[arg(long, value_name = "N|auto")]
    pub runs: Option<String>,
    /// Wall time an `auto` run may spend, e.g. 5m, 90s, 1h (default 5m).
    #[arg(long, value_name = "DURATION")]
    pub budget: Option<String>,
    /// Shortest measured phase a key metric may come from (default 0.5s): warm read-only
    /// phases repeat until they reach it; shorter ones are flagged.
    #[arg(long, value_name = "DURATION")]
    pub phase_floor: Option<String>,
    /// Run the io workloads on these `fio --server`s at once (fio's client mode), in the
    /// target directory, which must be the same shared path on every host.
    #[arg(long, value_name = "HOST[:PORT],...", value_delimiter = ',')]
    pub io_hosts: Option<Vec<String>>,
    /// Shrinks the data sets (1 = full size: 250,000 × 16 KiB for `small`).
    #[arg(long, value_name = "F", allow_negative_numbers = true)]
    pub scale: Option<f64>,
    /// The target others are compared with (default: the first).
    #[arg(long, value_name = "NAME")]
    pub baseline: Option<String>,
    /// Data-set profile: small, medium, large, huge, bigfolder, smallfolder; several,
    /// comma-separated, run every cell on each.
    #[arg(long)]
    pub profile: Option<String>,
    /// Seed of the generated data set.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Use your own directory as the data set (dir:PATH).
    #[arg(long, value_name = "dir:PATH")]
    pub dataset: Option<String>,
    /// Fraction of generated content that compresses (0 to 1).
    #[arg(long, value_name = "F")]
    pub compressibility: Option<f64>,
    /// What generated files hold: typed (text, structured binary or already-compressed
    /// bytes by file type; the default) or random (incompressible unless --compressibility).
    #[arg(long, value_name = "typed|random")]
    pub content: Option<String>,
    /// Per-measurement time limit in seconds.
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
    /// Equivalence margin in % of the baseline: a difference whose 90 % interval lies
    /// inside ±PCT is reported as `equivalent` (default 5).
    #[arg(long, value_name = "PCT", value_parser = parse_margin, allow_negative_numbers = true)]
    pub margin: Option<f64>,
    /// Age every file system to PCT % full (0 < PCT < 95) with a seeded churn of creates,
    /// appends, overwrites, renames and deletes before measuring: one aged image per
    /// target, cloned per cell. Loop-image targets only.
    #[arg(long, value_name = "PCT", allow_negative_numbers = true)]
    pub age: Option<f64>,
    /// Under MPI: each rank works in its own subtree of a `dir:` target (own, the default)
    /// or all ranks in one tree, their files tagged by rank (shared). One process: the same.
    #[arg(long, value_name = "MODE", value_parser = ["own", "shared"])]
    pub rank_dirs: Option<String>,
    /// Image (or tmpfs) size for every target, e.g. 2G.
    #[arg(long, value_name = "SIZE")]
    pub size: Option<String>,
    /// Results directory (default: fsarena-results/<date-time>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Where fsarena creates its work directory (images, mount points, scratch).
    #[arg(long, value_name = "DIR", default_value = workdir::DEFAULT_ROOT)]
    pub work_dir: PathBuf,
    /// Keep the work directory (scratch data, journal) after the run.
    #[arg(long)]
    pub keep: bool,
    /// Print what would be created, formatted, mounted and run; touch nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// With --dry-run: every cell's commands too.
    #[arg(long)]
    pub verbose: bool,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Finish an interrupted run in DIR without redoing what it recorded.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["plan", "out"])]
    pub resume: Option<PathBuf>,
    /// No progress output.
    #[arg(long, short)]
    pub quiet: bool,
    /// Allow formatting block devices named as NAME@/dev/DEVICE.
    #[arg(long)]
    pub allow_device: bool,
    /// Allow formatting a named device that carries a file-system or partition signature.
    #[arg(long, requires = "allow_device")]
    pub wipe: bool,
    /// Skip the free-space check of the work directory (fault-injection tests put the
    /// work directory on a tiny tmpfs on purpose, so its loop images fail part-way).
    #[arg(long, hide = true)]
    pub no_space_check: bool,
}

/// Entry point; returns the process exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) if e.use_stderr() => {
            // One line, like every other refusal: clap's first line says what is wrong.
            let text = e.render().to_string();
            let first = text
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("bad arguments");
            eprintln!(
                "fsarena: {} (see fsarena --help)",
                first.trim_start_matches("error: ")
            );
            return EXIT_BAD_INPUT;
        }
        Err(e) => {
            let _ = e.print();
            return EXIT_OK;
        }
    };
    match dispatch(cli) {
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
    }
}

/// Errors print as one line: the chain joined with ": ", each cause once (most errors
/// already print their source).
fn one_line(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in e.chain().map(|c| c.to_string()) {
        if !parts.iter().any(|p| p.contains(&c)) {
            parts.push(c);
        }
    }
    parts.join(": ").replace('\n', " ")
}

fn dispatch(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Doctor { json } => commands::doctor(json),
        Command::Run(args) => run(*args),
        Command::Report {
            dir,
            margin,
            output,
        } => {
            let text = crate::report::report_text(&dir, margin, output.format(), output.color())?;
            emit(&text)?;
            Ok(EXIT_OK)
        }
        Command::Compare {
            dir_a,
            dir_b,
            margin,
            fail_if_worse,
            output,
        } => {
            let (text, c) = crate::report::compare_text(
                &dir_a,
                &dir_b,
                margin,
                output.format(),
                output.color(),
            )?;
            emit(&text)?;
            let Some(pct) = fail_if_worse else {
                return Ok(EXIT_OK);
            };
            let worse = crate::report::compare::worse_than(&c, pct);
            for r in &worse {
                eprintln!(
                    "fsarena: worse by more than {pct} %: {}, {} threads, {}: {} {:+.1} %",
                    r.point(),
                    r.threads,
                    r.target,
                    r.metric,
                    r.pct_diff.unwrap_or(f64::NAN)
                );
            }
            if !worse.is_empty() {
                // Beside the failures, so a gate's log shows when the machine moved too.
                for n in c.host_notes() {
                    eprintln!("fsarena: note: {n}");
                }
            }
            Ok(if worse.is_empty() {
                EXIT_OK
            } else {
                EXIT_FAILED
            })
        }
        Command::Completions { shell } => generate::completions(shell).map(|()| EXIT_OK),
        Command::Man => generate::man().map(|()| EXIT_OK),
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
            let manifest = spec.plan()?;
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            if std::fs::read_dir(&dir)?.next().is_some() {
                anyhow::bail!(
                    "{} is not empty: name a new or empty directory",
                    dir.display()
                );
            }
            let bytes = crate::dataset::materialize(&spec, &manifest, &dir, threads.max(1))?;
            emit(&format!(
                "{} files, {} directories, {} bytes, {} planted duplicate groups, digest {}\n",
                manifest.files.len(),
                manifest.dirs.len(),
                bytes,
                manifest.duplicate_groups.len(),
                manifest.digest()
            ))?;
            Ok(EXIT_OK)
        }
        Command::Op(a) => commands::op(a),
        Command::List => commands::list(),
    }
}

/// `--fail-if-worse PCT`: a finite percentage of 0 or more.
fn parse_pct(s: &str) -> Result<f64, String> {
    match s.trim().trim_end_matches('%').parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("`{s}` is not a percentage of 0 or more")),
    }
}

/// `--margin PCT`: a finite percentage in (0, 100), refused by the parser (exit 2) otherwise.
fn parse_margin(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number"))?;
    crate::plan::check_margin(v).map_err(|e| e.to_string())
}

fn build_plan(args: &RunArgs) -> Result<Plan> {
    let o = overrides(args)?;
    let file = match args.plan.as_deref() {
        None => None,
        Some(p) => match p.to_str().and_then(crate::plan::study::plan_for) {
            Some(study) => Some(study?),
            None => Some(file::read_plan_file(p)?),
        },
    };
    let names = crate::workload::names();
    match resolve::resolve(file, &o, &names, &|t| host::support(t).is_ok()) {
        Err(crate::plan::PlanError::NoTargets) if !host::is_root() => Err(anyhow::anyhow!(
            "not running as root: the catalogue targets need root (loop devices, mkfs, mount); run as root, or benchmark a directory you can write with --target dir:PATH"
        )),
        other => Ok(other?),
    }
}

fn overrides(args: &RunArgs) -> Result<Overrides> {
    let dataset_dir = match &args.dataset {
        None => None,
        Some(s) => Some(PathBuf::from(s.strip_prefix("dir:").ok_or_else(|| {
            anyhow::anyhow!("--dataset takes dir:PATH (your own directory as the data set)")
        })?)),
    };
    let o = Overrides {
        targets: args.targets.clone(),
        workloads: args.workloads.clone(),
        threads: args.threads.clone(),
        runs: args.runs.clone(),
        scale: args.scale,
        baseline: args.baseline.clone(),
        profile: args.profile.clone(),
        seed: args.seed,
        dataset_dir,
        compressibility: args.compressibility,
        content: args.content.clone(),
        timeout: args.timeout,
        size: args.size.clone(),
        margin: args.margin,
        budget: args.budget.clone(),
        phase_floor: args.phase_floor.clone(),
        io_hosts: args.io_hosts.clone(),
        age: args.age,
        rank_dirs: args.rank_dirs.clone(),
    };
    Ok(o)
}

fn run(args: RunArgs) -> Result<i32> {
    // Under an MPI launcher every rank runs this; alone, rank 0 of 1 (see `cluster`).
    let session = crate::cluster::Session::start()?;
    let code = run_plan(args)?;
    // Rank 0 writes the report before any rank leaves: a rank that ends first with a
    // non-zero code makes mpirun stop the others.
    crate::cluster::barrier();
    drop(session);
    Ok(code)
}

fn run_plan(args: RunArgs) -> Result<i32> {
    let (plan, out, resume) = match &args.resume {
        Some(dir) => {
            let loaded = crate::results::store::load(dir)?;
            let mut plan: Plan = serde_json::from_value(loaded.host.plan.clone())
                .with_context(|| format!("{}: the recorded plan cannot be read", dir.display()))?;
            for said in resolve::on_resume(&mut plan, &overrides(&args)?)? {
                eprintln!("fsarena: {said}");
            }
            (plan, dir.clone(), true)
        }
        None => (
            build_plan(&args)?,
            args.out.clone().unwrap_or_else(out_dir::default_out),
            false,
        ),
    };
    let opts = RunOptions {
        out,
        work_root: args.work_dir.clone(),
        keep: args.keep,
        quiet: args.quiet,
        allow_device: args.allow_device,
        wipe: args.wipe,
        resume,
        space_check: !args.no_space_check,
        command_line: std::env::args().collect(),
    };
    if args.dry_run {
        let text = runner::dry_run(&plan, &opts, args.verbose)?;
        let width = crate::report::width::output_width();
        emit(&crate::report::width::wrap_lines(&text, width, 2))?;
        return Ok(EXIT_OK);
    }
    let cancel = Arc::new(AtomicBool::new(false));
    signals::install(
        Arc::clone(&cancel),
        opts.work_root.clone(),
        opts.out.clone(),
    )?;
    let summary = match runner::run(&plan, &opts, &cancel) {
        Ok(s) => s,
        Err(e @ RunError::Refused(_)) => return Err(e.into()),
        Err(e) => return Err(e.into()),
    };
    if !crate::cluster::world().is_root() {
        // Only rank 0 reports; the others' exit code still says how the run went.
        return Ok(exit_code(&summary));
    }
    if summary.measured > 0 {
        let (format, color) = (args.output.format(), args.output.color());
        match crate::report::report_text(&summary.out, None, format, color) {
            // A closed stdout loses the report's text, not the run: the files hold it.
            Ok(text) => match emit(&text) {
                Err(e) if !is_closed_pipe(&e) => eprintln!("fsarena: {}", one_line(&e)),
                _ => {}
            },
            Err(e) => eprintln!("fsarena: report: {}", one_line(&e)),
        }
    }
    eprintln!(
        "results: {}",
        summary.out.join(crate::results::store::FILE_NAME).display()
    );
    if !summary.failures.is_empty() {
        eprintln!("{} measurement(s) did not succeed:", summary.failures.len());
        for f in &summary.failures {
            eprintln!("  {f}");
        }
    }
    if summary.interrupted {
        let cut = match summary.cut_short {
            0 => String::new(),
            1 => " (1 measurement cut short, left out)".to_string(),
            n => format!(" ({n} measurements cut short, left out)"),
        };
        eprintln!(
            "fsarena: interrupted{cut}; finish with: fsarena run --resume {}",
            summary.out.display()
        );
    }
    Ok(exit_code(&summary))
}

fn exit_code(s: &runner::RunSummary) -> i32 {
    [EXIT_OK, EXIT_FAILED][usize::from(s.interrupted || !s.failures.is_empty())]
}

#[cfg(test)]
mod tests;
