//! `fsarena run`: the plan from the flags and the plan file (or from a results directory to
//! resume), then the runner, then the report and the exit code.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;

use super::exit::{EXIT_FAILED, EXIT_OK};
use super::output::{emit, is_closed_pipe, one_line, OutputArgs};
use super::{out_dir, signals};
use crate::plan::file;
use crate::plan::resolve;
use crate::plan::settings::Settings;
use crate::plan::Plan;
use crate::provision::{host, workdir};
use crate::runner::{self, RunOptions, RunSummary};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// A TOML plan file, or study:NAME for a built-in study (`fsarena list`).
    pub plan: Option<PathBuf>,
    /// The run options a plan file may also hold (flags win over the file).
    #[command(flatten)]
    pub settings: Settings,
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
    /// Where the run is kept in the history, and its labels.
    #[command(flatten)]
    pub registration: super::history::place::Registration,
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

/// `fsarena run`. `given` are the run options' flags named on the command line (a resumed
/// run refuses all but `--budget`).
pub fn run(args: RunArgs, given: &[String]) -> Result<i32> {
    // Under an MPI launcher every rank runs this; alone, rank 0 of 1 (see `cluster`).
    let session = crate::cluster::Session::start()?;
    let code = run_plan(args, given)?;
    // Rank 0 writes the report before any rank leaves: a rank that ends first with a
    // non-zero code makes mpirun stop the others.
    crate::cluster::barrier();
    drop(session);
    Ok(code)
}

/// The plan from the plan file (or a study) with the flags over it.
fn build_plan(args: &RunArgs) -> Result<Plan> {
    let file = match args.plan.as_deref() {
        None => None,
        Some(p) => match p.to_str().and_then(crate::plan::study::plan_for) {
            Some(study) => Some(study?),
            None => Some(file::read_plan_file(p)?),
        },
    };
    let names = crate::workload::names();
    match resolve::resolve(file, &args.settings, &names, &|t| {
        host::support(t).is_ok()
    }) {
        Err(crate::plan::PlanError::NoTargets) if !host::is_root() => Err(anyhow::anyhow!(
            "not running as root: the catalogue targets need root (loop devices, mkfs, mount); run as root, or benchmark a directory you can write with --target dir:PATH"
        )),
        other => Ok(other?),
    }
}

/// The plan, where results go, and whether this continues a run: a resumed run's plan is
/// the one it recorded, with only `--budget` applied over it, and the image size its
/// recorded cells were measured on ([`crate::runner::fs_sizes::keep_recorded_size`]).
fn plan_and_out(args: &RunArgs, given: &[String]) -> Result<(Plan, PathBuf, bool)> {
    let Some(dir) = &args.resume else {
        let out = args.out.clone().unwrap_or_else(out_dir::default_out);
        return Ok((build_plan(args)?, out, false));
    };
    let loaded = crate::results::store::load(dir)?;
    let mut plan: Plan = serde_json::from_value(loaded.host.plan.clone())
        .with_context(|| format!("{}: the recorded plan cannot be read", dir.display()))?;
    for said in resolve::on_resume(&mut plan, &args.settings, given)? {
        eprintln!("fsarena: {said}");
    }
    if let Some(said) = crate::runner::fs_sizes::keep_recorded_size(&mut plan, &loaded.measurements)
    {
        eprintln!("fsarena: {said}");
    }
    Ok((plan, dir.clone(), true))
}

fn run_plan(args: RunArgs, given: &[String]) -> Result<i32> {
    let (plan, out, resume) = plan_and_out(&args, given)?;
    let opts = RunOptions {
        out,
        // Absolute: mounts are checked against /proc/mounts, which names absolute paths (a
        // relative `--work-dir` made mounts that the run then failed to find and left behind).
        work_root: workdir::absolute(&args.work_dir),
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
        let width = crate::report::output_width();
        emit(&crate::report::wrap_lines(&text, width, 2))?;
        return Ok(EXIT_OK);
    }
    super::aftermath::set_run(&opts.out, &opts.work_root);
    let cancel = Arc::new(AtomicBool::new(false));
    signals::install(
        Arc::clone(&cancel),
        opts.work_root.clone(),
        opts.out.clone(),
    )?;
    let summary = runner::run(&plan, &opts, &cancel)?;
    if crate::cluster::world().is_root() {
        // Only rank 0 reports; the others' exit code still says how the run went.
        tell(&summary, &args.output);
        // After the report: the history is a copy of what the results file holds.
        args.registration.register(&summary.out);
    }
    Ok(exit_code(&summary))
}

/// The report on stdout, then on stderr where the results are, what failed, and how to
/// finish an interrupted run.
fn tell(summary: &RunSummary, output: &OutputArgs) {
    if summary.measured > 0 {
        let (format, color) = (output.format(), output.color());
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
    // Said last, beside the exit code it causes: the plan asked for these.
    for (kind, skipped) in [
        ("target", &summary.skipped_targets),
        ("workload", &summary.skipped_workloads),
    ] {
        for (name, why) in skipped {
            eprintln!("fsarena: not measured: {kind} {name} ({why})");
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
}

/// 0 only when everything the plan asked for was measured `ok`: a target or workload this
/// host could not run (skipped, with why) leaves the plan unmeasured, as a failure does.
fn exit_code(s: &RunSummary) -> i32 {
    let skipped = !s.skipped_targets.is_empty() || !s.skipped_workloads.is_empty();
    [EXIT_OK, EXIT_FAILED][usize::from(s.interrupted || !s.failures.is_empty() || skipped)]
}
