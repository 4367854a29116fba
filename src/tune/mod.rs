//! `fsarena tune FS --workload W`: which options of a file system suit a workload, found
//! by racing configurations on fresh file systems.
//!
//! From the bottom up: the option space as data (`space`, built in from `spaces/*.toml`,
//! extended by `--space FILE`), the candidates drawn from it (`sample`: the defaults, the
//! whole space when it is small, else one value at a time and a Latin hypercube), the
//! race's setup kept for `--resume` (`setup`: each candidate a target of one plan), the
//! race itself (`race`: a [`crate::runner::budget::Questions`] that asks the runner's
//! budget rounds to spend runs on the comparisons with the best candidate still open, and
//! drops those decided worse), what each parameter explains (`importance`), the answer
//! (`answer`) and its renderings (`text`, `output`: `best.toml`, `answer.json`,
//! `search.html`). The runner measures everything: the same cells, fresh file systems,
//! records, cleanup and interrupt handling as `fsarena run`.

pub mod afford;
pub mod answer;
pub mod importance;
pub mod model;
pub mod output;
pub mod race;
pub mod sample;
pub mod setup;
pub mod space;
pub mod text;

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use crate::plan::{fs_size, FsKind, Plan, PlanError};
use crate::results::Status;
use crate::runner::{self, RunError, RunOptions, RunSummary};
pub use answer::Answer;
pub use setup::Setup;
use space::SpaceError;

/// Why a tune could not start: bad input or a refusal (exit 2), nothing provisioned.
#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    #[error(transparent)]
    Space(#[from] SpaceError),
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Run(#[from] RunError),
    #[error("{0}")]
    Refused(String),
}

/// What a new tune is asked.
pub struct Request {
    pub fs: FsKind,
    pub space_file: Option<PathBuf>,
    pub safe_only: bool,
    pub candidates: usize,
    pub seed: u64,
    /// The workloads, data set and run options (its targets and runs are replaced).
    pub base: Plan,
    pub budget: Duration,
    /// Earlier runs on this host, which price a candidate's minimum runs ([`afford`]).
    pub history: crate::cost::history::History,
}

/// The race's setup: the space read and checked (every mkfs value through the tool's dry
/// run, in `work_root`'s nearest existing directory; a value that does not fit the file
/// system's size is left out, with one line on stderr), the candidates drawn, and each
/// candidate's own mkfs options checked the same way (a combination the tool refuses is
/// left out, with one line on stderr). Only as many candidates are drawn as the budget
/// pays for at their minimum runs ([`afford`]; one line on stderr when that cuts them).
/// Touches nothing.
pub fn set_up(req: Request, work_root: &Path) -> Result<Setup, TuneError> {
    if !req.fs.needs_device() {
        return Err(TuneError::Refused(format!(
            "{} has no mkfs or mount options to tune; built-in spaces: {}",
            req.fs.name(),
            space::tunable().join(", ")
        )));
    }
    let mut space = space::load(req.fs, req.space_file.as_deref())?;
    if req.safe_only {
        space::safe_only(&mut space)?;
    }
    let size = req.base.fs_size.unwrap_or(fs_size::DEFAULT_FS_SIZE);
    let dir = work_root
        .ancestors()
        .find(|p| p.is_dir())
        .unwrap_or(Path::new("/tmp"))
        .to_path_buf();
    let afforded = afford::afford(
        &req.base,
        req.candidates,
        setup::MIN_RUNS,
        req.budget,
        &req.history,
    );
    if let Some(line) = afforded.line() {
        eprintln!("fsarena: tune: {line}");
    }
    let defaults = setup::target(
        &space,
        &setup::Candidate {
            name: setup::DEFAULTS.into(),
            levels: space.params.iter().map(|p| p.default_index()).collect(),
        },
    );
    for line in space::fit_mkfs_values(&mut space, &defaults, size, &dir)? {
        eprintln!("fsarena: tune: {line}");
    }
    if space.params.is_empty() {
        return Err(TuneError::Refused(format!(
            "no parameter of the {} space has two values that fit a {} file system",
            req.fs.name(),
            crate::plan::size::human_bytes(size)
        )));
    }
    let (levels, design) = sample::candidates(&space, afforded.drawn, req.seed);
    let mut kept = Vec::new();
    for (i, l) in levels.into_iter().enumerate() {
        let c = setup::Candidate {
            name: format!("#{i}"),
            levels: l,
        };
        match crate::provision::dry_mkfs::check(&setup::target(&space, &c), size, &dir) {
            Ok(()) => kept.push(c.levels),
            Err(why) if i == 0 => return Err(TuneError::Refused(format!("the defaults: {why}"))),
            Err(why) => eprintln!("fsarena: tune: a candidate is left out, its mkfs options together are refused: {why}"),
        }
    }
    let mut setup = Setup::new(
        space,
        kept,
        design,
        req.base,
        req.budget,
        req.safe_only,
        req.seed,
    );
    setup.afforded = Some(afforded);
    Ok(setup)
}

/// What a finished (or interrupted) tune did.
pub struct Tuned {
    pub summary: RunSummary,
    pub answer: Answer,
    /// The answer as text (what the terminal shows and `search.html` holds).
    pub text: String,
}

/// Runs the race of `setup` into `dir` (its `runs/` holds the records; `opts.out` is set
/// here), then builds the answer and writes `best.toml`, `answer.json` and `search.html`.
pub fn run(
    setup: &Setup,
    dir: &Path,
    mut opts: RunOptions,
    cancel: &Arc<AtomicBool>,
) -> Result<Tuned, TuneError> {
    setup
        .save(dir)
        .map_err(|e| TuneError::Refused(format!("cannot write {}: {e}", dir.display())))?;
    opts.out = dir.join(setup::RUNS_DIR);
    opts.resume = opts.out.join(crate::results::store::FILE_NAME).exists();
    let race = race::Race {
        candidates: setup.candidates.clone(),
    };
    let summary = runner::run_asking(&setup.plan, &opts, cancel, &race)?;
    let loaded = crate::results::store::load(&opts.out).map_err(RunError::from)?;
    let ms = &loaded.measurements;
    let answer = answer::build(setup, ms, summary.interrupted, &opts.out);
    let text = text::render(&answer, dir);
    // Each run's key metric at the first point, in % of the best's mean there.
    let runs = |r: &answer::Row| -> Vec<f64> { relative_runs(ms, &answer, &r.name) };
    output::write_all(dir, setup, &answer, &text, &runs)
        .map_err(|e| TuneError::Refused(format!("cannot write into {}: {e}", dir.display())))?;
    Ok(Tuned {
        summary,
        answer,
        text,
    })
}

/// Candidate `name`'s runs at the first workload point, in % of the best's mean there
/// (oriented so that above 100 is better).
fn relative_runs(ms: &[crate::results::Measurement], a: &Answer, name: &str) -> Vec<f64> {
    let Some(best) = a.best.as_ref() else {
        return Vec::new();
    };
    let Some(first) = ms.iter().find(|m| m.status == Status::Ok) else {
        return Vec::new();
    };
    let key = crate::report::key_metric(&first.workload).unwrap_or_default();
    let at = |target: &str| -> Vec<f64> {
        ms.iter()
            .filter(|m| {
                m.status == Status::Ok
                    && m.target == target
                    && m.workload == first.workload
                    && m.variant == first.variant
                    && m.threads == first.threads
                    && m.dataset == first.dataset
            })
            .filter_map(|m| m.metrics.get(&key.name).copied())
            .collect()
    };
    let base = at(&best.name);
    let mean = base.iter().sum::<f64>() / base.len().max(1) as f64;
    at(name)
        .into_iter()
        .filter(|v| *v > 0.0 && mean > 0.0)
        .map(|v| {
            if key.higher_is_better {
                v / mean * 100.0
            } else {
                mean / v * 100.0
            }
        })
        .collect()
}
