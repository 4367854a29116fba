//! `fsarena tune FS --workload W`: the race set up from the flags (or read back from its
//! directory to resume), run by the runner with the same signal handling, cleanup and exit
//! codes as `fsarena run`, then its answer on stdout.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{bail, Result};
use clap::Args;

use super::exit::{EXIT_FAILED, EXIT_OK};
use super::output::{emit, OutputArgs};
use super::{out_dir, signals};
use crate::plan::settings::Settings;
use crate::plan::value::Budget;
use crate::plan::{resolve, FsKind, Runs, DEFAULT_TUNE_BUDGET};
use crate::provision::workdir;
use crate::runner::{self, RunOptions};
use crate::tune::{self, setup, Request, Setup};

#[derive(Debug, Args)]
pub struct TuneArgs {
    /// The file system to tune (built-in spaces: ext4, xfs, btrfs; any other with --space).
    #[arg(required_unless_present = "resume")]
    pub fs: Option<String>,
    /// The workloads and data set (as for `run`); --budget is the race's wall time
    /// (default 15m). --target, --runs and --baseline are the race's own.
    #[command(flatten)]
    pub settings: Settings,
    /// An option space in TOML (docs/tuning.md): its parameters replace the built-in ones
    /// of the same name and add the others (`replace = true`: only its own).
    #[arg(long, value_name = "FILE")]
    pub space: Option<PathBuf>,
    /// Leave out every value labelled unsafe (no barriers, no checksums, …).
    #[arg(long)]
    pub safe_only: bool,
    /// Configurations to race, the defaults included (default 16).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(2..=64))]
    pub candidates: Option<u32>,
    /// Seed of the Latin hypercube sample.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub sample_seed: u64,
    /// The tune's directory: runs/, tune.json, best.toml, answer.json, search.html
    /// (default: fsarena-results/<date-time>-tune).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Continue an interrupted tune in DIR (only --budget, --work-dir, --keep, --quiet and
    /// --format apply).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["fs", "out", "space", "safe_only", "candidates"])]
    pub resume: Option<PathBuf>,
    /// Print the space, the candidates and what the race would run, with its estimated
    /// cost; touch nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Where fsarena creates its work directory (images, mount points, scratch).
    #[arg(long, value_name = "DIR", default_value = workdir::DEFAULT_ROOT)]
    pub work_dir: PathBuf,
    /// Keep the work directory after the run.
    #[arg(long)]
    pub keep: bool,
    /// No progress output.
    #[arg(long, short)]
    pub quiet: bool,
    /// Where the race's runs are kept in the history, and their labels.
    #[command(flatten)]
    pub registration: super::history::place::Registration,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// The setup of a new tune from the flags, into `dir` (earlier runs beside it price the
/// candidates).
fn new_setup(args: &TuneArgs, given: &[String], dir: &std::path::Path) -> Result<Setup> {
    if let Some(flag) = given
        .iter()
        .find(|f| ["--target", "--runs", "--baseline"].contains(&f.as_str()))
    {
        bail!("{flag} is not for tune: the race sets its targets (the candidates), runs and baseline (the defaults) itself");
    }
    let name = args.fs.clone().unwrap_or_default();
    let fs = FsKind::parse(&name)
        .filter(|k| k.needs_device())
        .ok_or_else(|| {
            anyhow::anyhow!(
                "unknown file system `{name}` to tune; valid: {}",
                FsKind::PROVISIONABLE
                    .iter()
                    .filter(|k| k.needs_device())
                    .map(|k| k.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })?;
    let mut flags = args.settings.clone();
    flags.targets = vec![fs.name().to_string()];
    // The race's budget is the run option `--budget`, resolved as `run` resolves it, over
    // the race's own default.
    flags.budget = flags.budget.or(Some(Budget(DEFAULT_TUNE_BUDGET)));
    let names = crate::workload::names();
    let base = resolve::resolve(None, &flags, &names, &|_| true)?;
    let budget = base.runs.budget().unwrap_or(DEFAULT_TUNE_BUDGET);
    let candidates = args
        .candidates
        .map_or(setup::DEFAULT_CANDIDATES, |n| n as usize);
    let history = crate::cost::history::History::beside(dir, 20);
    check_budget(&tune::afford::afford(
        &base,
        candidates,
        setup::MIN_RUNS,
        budget,
        &history,
    ))?;
    let req = Request {
        fs,
        space_file: args.space.clone(),
        safe_only: args.safe_only,
        candidates,
        seed: args.sample_seed,
        budget,
        base,
        history,
    };
    Ok(tune::set_up(req, &args.work_dir)?)
}

/// Refuses, before anything is made, a budget that cannot pay for a race: the defaults
/// and one candidate at their minimum runs, plus what the run keeps for its start and end.
/// Such a budget started no cell and still ran for its closing and more (`--budget 1s` ran
/// ~9 s, issue 57.5); hyperfine and fio refuse a run they cannot do rather than pretend.
fn check_budget(a: &tune::afford::Afforded) -> Result<()> {
    use crate::runner::{Deadline, CLOSING};
    let budget = std::time::Duration::from_secs_f64(a.budget_s);
    let spendable = Deadline::spendable(budget).as_secs_f64();
    let least = tune::afford::FEWEST as f64 * a.candidate_s;
    if spendable > 0.0 && spendable >= least {
        return Ok(());
    }
    let need = (CLOSING.as_secs_f64() + least)
        .ceil()
        .max(CLOSING.as_secs_f64() + 1.0);
    bail!(
        "--budget {} does not pay for a race: the defaults and one candidate take ~{least:.0} s at their minimum runs (from {}), and a tune keeps {} s for its start and end; give --budget {need:.0}s or more",
        humantime::format_duration(budget),
        a.basis,
        CLOSING.as_secs()
    )
}

/// The setup of the tune in `dir`, with only `--budget` over it.
fn resumed_setup(dir: &std::path::Path, args: &TuneArgs, given: &[String]) -> Result<Setup> {
    if let Some(flag) = given.iter().find(|f| *f != "--budget") {
        bail!("{flag} cannot be combined with --resume, which continues the tune in the directory unchanged (only --budget, --work-dir, --keep, --quiet and --format apply)");
    }
    let mut s = Setup::load(dir).map_err(anyhow::Error::msg)?;
    if let (Some(b), Runs::Auto { budget, .. }) = (args.settings.budget, &mut s.plan.runs) {
        *budget = b.0;
    }
    Ok(s)
}

/// `fsarena tune`.
pub fn tune(args: TuneArgs, given: &[String]) -> Result<i32> {
    if !matches!(args.output.format().name(), "table" | "json") {
        bail!("tune prints a table or json (--format table|json)");
    }
    let (setup, dir) = match &args.resume {
        Some(d) => (resumed_setup(d, &args, given)?, d.clone()),
        None => {
            let out = args.out.clone().unwrap_or_else(|| {
                let d = out_dir::default_out();
                d.with_file_name(format!(
                    "{}-tune",
                    d.file_name().map_or("run".into(), |n| n.to_string_lossy())
                ))
            });
            (new_setup(&args, given, &out)?, out)
        }
    };
    let opts = RunOptions {
        out: dir.join(setup::RUNS_DIR),
        // Absolute, as for `run`: a relative one made mounts the race could not find (57.5).
        work_root: workdir::absolute(&args.work_dir),
        keep: args.keep,
        quiet: args.quiet,
        allow_device: false,
        wipe: false,
        resume: args.resume.is_some(),
        space_check: true,
        command_line: std::env::args().collect(),
    };
    if args.dry_run {
        emit(&dry_run(&setup, &opts)?)?;
        return Ok(EXIT_OK);
    }
    if args.resume.is_none() && dir.join(setup::FILE).exists() {
        bail!(
            "{} already holds a tune: finish it with --resume, or give another --out",
            dir.display()
        );
    }
    super::aftermath::set_run(&dir, &opts.work_root);
    let cancel = Arc::new(AtomicBool::new(false));
    signals::install(Arc::clone(&cancel), opts.work_root.clone(), dir.clone())?;
    let tuned = tune::run(&setup, &dir, opts, &cancel)?;
    args.registration.register(&dir.join(setup::RUNS_DIR));
    match args.output.format().name() {
        "json" => emit(&(serde_json::to_string_pretty(&tuned.answer)? + "\n"))?,
        _ => emit(&tuned.text)?,
    }
    let s = &tuned.summary;
    if !s.failures.is_empty() {
        eprintln!("{} measurement(s) did not succeed:", s.failures.len());
        for f in &s.failures {
            eprintln!("  {f}");
        }
    }
    if s.interrupted {
        eprintln!(
            "fsarena: interrupted; finish with: fsarena tune --resume {}",
            dir.display()
        );
    }
    Ok(if s.interrupted || !s.failures.is_empty() {
        EXIT_FAILED
    } else {
        EXIT_OK
    })
}

/// The space, the candidates and the runner's own dry run of the race's plan.
fn dry_run(setup: &Setup, opts: &RunOptions) -> Result<String> {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "tune {}: {} parameters, {} configurations; {} candidates ({}):",
        setup.fs.name(),
        setup.space.params.len(),
        tune::sample::size(&setup.space),
        setup.candidates.len(),
        setup.design.describe()
    );
    for c in &setup.candidates {
        let unsafe_: Vec<String> = setup
            .unsafe_values(c)
            .iter()
            .map(|u| format!("UNSAFE {}", u.value))
            .collect();
        let _ = writeln!(
            s,
            "  {:8} {} {}",
            c.name,
            setup.changes(c),
            unsafe_.join(" ")
        );
    }
    if let Some(line) = setup.afforded.as_ref().and_then(|a| a.line()) {
        let _ = writeln!(s, "{line}");
    }
    if let Runs::Auto { min, max, budget } = setup.plan.runs {
        let _ = writeln!(
            s,
            "race: {min} runs each, then rounds for the comparisons with the best still open (at most {max} runs each), within {}; a cell that no longer fits in it is not started",
            humantime::format_duration(budget)
        );
    }
    s.push_str(&runner::dry_run(&setup.plan, opts, false)?);
    Ok(s)
}
