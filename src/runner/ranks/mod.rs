//! What a run does differently on several MPI ranks ([`crate::cluster`]).
//!
//! Every rank runs the same resolved plan, cell by cell, in the same order; rank 0 alone
//! records. The ranks meet (an all-gather, which is also a barrier) at fixed steps, and
//! each step carries a label, so ranks that fell out of step are caught instead of pairing
//! the wrong phases:
//!
//! * at the start: the plan's digest, the host, and whether the checks passed here;
//! * at the start of each cell: whether the rank's file system and points are ready;
//! * around each measured phase: before (ready), after (each rank's figures);
//! * at the end of each point: the status each rank records.
//!
//! A failure on one rank becomes the same failure on every rank, so the cells, stopped
//! targets and records stay identical everywhere. A rank that dies is not waited for here:
//! the launcher (`mpirun`) ends the job when one rank exits abnormally.

use std::path::PathBuf;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::harness::Observed;
use super::{RunError, RunOptions};
use crate::cluster::{self, World};
use crate::plan::{Location, Plan, TargetConfig};
use crate::provision::journal::{Kind, Op};
use crate::provision::WorkDir;
use crate::results::{Measurement, Status};
use crate::workload::{Outcome, Workload};

/// The job as a run sees it, when it has more than one rank.
#[derive(Debug, Clone)]
pub struct Ranks {
    pub world: World,
    /// Each rank's host name, in rank order.
    pub hosts: Vec<String>,
    /// All ranks work in one tree of each `dir:` target (`--rank-dirs shared`).
    pub shared: bool,
}

impl Ranks {
    /// The distinct hosts, in order of first appearance.
    pub fn distinct_hosts(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for h in &self.hosts {
            if !out.contains(h) {
                out.push(h.clone());
            }
        }
        out
    }

    /// Adds the job's shape to a record.
    pub fn stamp(&self, m: &mut Measurement) {
        m.ranks = Some(self.world.size as u32);
        m.hosts = self.distinct_hosts();
        m.rank_dirs = Some(if self.shared { "shared" } else { "own" }.into());
    }

    fn who(&self, rank: usize) -> String {
        match self.hosts.get(rank) {
            Some(h) => format!("rank {rank} ({h})"),
            None => format!("rank {rank}"),
        }
    }
}

/// What one rank says at a step.
#[derive(Serialize, Deserialize)]
struct Said<T> {
    step: String,
    what: Result<T, String>,
}

/// Every rank's `what` at `step`, in rank order. Ranks at different steps cannot be put
/// back in step (one of them skipped a phase the others are in): the job ends, on every
/// rank, with one line naming both steps.
pub(super) fn exchange<T: Serialize + DeserializeOwned>(
    step: &str,
    what: Result<T, String>,
) -> Vec<Result<T, String>> {
    let mine = Said {
        step: step.to_string(),
        what,
    };
    let bytes = serde_json::to_vec(&mine).unwrap_or_default();
    let mut out = Vec::new();
    for (rank, b) in cluster::all_gather(&bytes).iter().enumerate() {
        match serde_json::from_slice::<Said<T>>(b) {
            Ok(s) if s.step == step => out.push(s.what),
            Ok(s) => {
                eprintln!(
                    "fsarena: ranks out of step: this rank is at {step}, rank {rank} at {}; ending the job",
                    s.step
                );
                cluster::abort(1);
            }
            Err(e) => {
                eprintln!(
                    "fsarena: rank {rank} sent what this rank cannot read ({e}); ending the job"
                );
                cluster::abort(1);
            }
        }
    }
    out
}

/// The lowest rank that failed, with its error.
fn first_failure<T>(all: &[Result<T, String>]) -> Option<(usize, String)> {
    all.iter()
        .enumerate()
        .find_map(|(k, r)| r.as_ref().err().map(|e| (k, e.clone())))
}

/// What every rank reports before anything is created.
#[derive(Serialize, Deserialize)]
struct Hello {
    version: String,
    plan_digest: String,
    host: String,
    resume: bool,
    /// This rank's checks of the plan (preflight), or the line that refused it.
    checked: Result<(), String>,
}

/// The plan's digest: equal on every rank that resolved the same plan.
fn digest(plan: &Plan) -> String {
    let bytes = serde_json::to_vec(plan).unwrap_or_default();
    format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&bytes))
}

/// Meets the other ranks before anything is created. `None` on a single rank. Every rank
/// reaches the same verdict from the same gathered facts, so all refuse together (rank 0
/// says why; the others stay quiet) and nothing is provisioned anywhere: a plan that
/// differs between ranks (another fsarena version, plan file or flag), a check that failed
/// on any rank, `--resume`, or file systems fsarena makes itself (loop images, tmpfs,
/// devices) with ranks on more than one host.
pub fn agree_to_start(
    plan: &Plan,
    opts: &RunOptions,
    checked: Result<(), String>,
) -> Result<Option<Ranks>, RunError> {
    let world = cluster::world();
    if !world.is_cluster() {
        return Ok(None);
    }
    let hello = Hello {
        version: env!("CARGO_PKG_VERSION").to_string(),
        plan_digest: digest(plan),
        host: cluster::host_name(),
        resume: opts.resume,
        checked,
    };
    let all: Vec<Hello> = exchange("start", Ok(hello))
        .into_iter()
        .map(|r| r.map_err(RunError::Refused))
        .collect::<Result<_, _>>()?;
    let ranks = Ranks {
        world,
        hosts: all.iter().map(|h| h.host.clone()).collect(),
        shared: plan.rank_dirs == crate::plan::RankDirs::Shared,
    };
    let refuse = |why: String| -> Result<Option<Ranks>, RunError> {
        Err(RunError::Refused(if world.is_root() {
            why
        } else {
            String::new()
        }))
    };
    for (k, h) in all.iter().enumerate() {
        if h.version != all[0].version || h.plan_digest != all[0].plan_digest {
            return refuse(format!(
                "{} resolved another plan than rank 0 (fsarena {} vs {}, plan {} vs {}): run the same fsarena version with the same plan file and flags on every host",
                ranks.who(k),
                h.version,
                all[0].version,
                h.plan_digest,
                all[0].plan_digest
            ));
        }
    }
    if let Some((k, h)) = all.iter().enumerate().find(|(_, h)| h.checked.is_err()) {
        let why = h.checked.clone().err().unwrap_or_default();
        return refuse(format!("{}: {why}", ranks.who(k)));
    }
    if all.iter().any(|h| h.resume) {
        return refuse(
            "--resume is not supported under MPI: start a new run (every rank must run every cell)"
                .into(),
        );
    }
    if let Some(why) = shared_refusal(plan, &crate::workload::all()) {
        return refuse(why);
    }
    let hosts = ranks.distinct_hosts();
    if hosts.len() > 1 {
        if let Some(t) = plan
            .targets
            .iter()
            .find(|t| !matches!(t.location, Location::Dir(_)))
        {
            return refuse(format!(
                "target {} is a file system fsarena makes itself, which under MPI is allowed only when every rank runs on one host (ranks run on {}): use --target dir:PATH on the shared file system",
                t.name,
                hosts.join(", ")
            ));
        }
    }
    Ok(Some(ranks))
}

/// Why this plan cannot run with its ranks in one shared tree, or `None`. Asked only under
/// MPI: a single process works alone in its tree whatever `rank_dirs` says.
fn shared_refusal(plan: &Plan, workloads: &[Box<dyn Workload>]) -> Option<String> {
    if plan.rank_dirs != crate::plan::RankDirs::Shared {
        return None;
    }
    if let Some(t) = plan
        .targets
        .iter()
        .find(|t| !matches!(t.location, Location::Dir(_)))
    {
        return Some(format!(
            "--rank-dirs shared needs dir: targets (one tree every rank sees); target {} is a file system each rank makes for itself: use --target dir:PATH, or --rank-dirs own",
            t.name
        ));
    }
    if plan.dataset.source_dir.is_some() {
        return Some(
            "--rank-dirs shared works with generated data sets only (each rank tags its file names), not with --dataset-dir".into(),
        );
    }
    let refused: Vec<&str> = plan
        .workloads
        .iter()
        .filter(|name| {
            workloads
                .iter()
                .find(|w| w.name() == name.as_str())
                .is_some_and(|w| !w.shares_dirs())
        })
        .map(String::as_str)
        .collect();
    if !refused.is_empty() {
        let ok: Vec<&str> = workloads
            .iter()
            .filter(|w| w.shares_dirs())
            .map(|w| w.name())
            .collect();
        return Some(format!(
            "--rank-dirs shared does not support {} (each needs the tree to itself); shared mode runs {}: drop them or use --rank-dirs own",
            refused.join(", "),
            ok.join(", ")
        ));
    }
    None
}

/// The name of rank `rank`'s own directory inside a `dir:` target. `fsarena-` like every
/// directory fsarena makes there, so `fsarena cleanup` recognises it.
pub fn rank_dir_name(rank: usize) -> String {
    format!("fsarena-rank-{rank}")
}

/// The targets as this rank works on them: each `dir:PATH` becomes `PATH/fsarena-rank-K`,
/// this rank's own subtree (with `--rank-dirs shared`, `PATH` itself, where rank 0 makes
/// the tree every rank works in); everything else is the rank's own file system already.
pub fn rank_targets(plan: &Plan, world: World) -> Vec<TargetConfig> {
    if plan.rank_dirs == crate::plan::RankDirs::Shared {
        return plan.targets.clone();
    }
    plan.targets
        .iter()
        .map(|t| {
            let mut t = t.clone();
            if let Location::Dir(p) = &t.location {
                t.location = Location::Dir(p.join(rank_dir_name(world.rank)));
            }
            t
        })
        .collect()
}

/// Creates this rank's directory in each `dir:` target that lacks one, journaled as a tree
/// first, so the end of the run (or `fsarena cleanup` after a kill) removes it.
pub fn make_rank_dirs(targets: &[TargetConfig], work: &WorkDir) -> Result<(), RunError> {
    for t in targets {
        let Location::Dir(p) = &t.location else {
            continue;
        };
        if p.is_dir() {
            continue;
        }
        let made = work
            .journal
            .record(Op::Create, Kind::Dir, p, Some("tree"))
            .and_then(|()| std::fs::create_dir(p));
        if let Err(e) = made {
            return Err(RunError::Refused(format!(
                "cannot create {}: {e}",
                p.display()
            )));
        }
    }
    Ok(())
}

/// How this rank runs the plan.
pub struct Setup {
    pub opts: RunOptions,
    /// The run directory, when this rank needed it before its store.
    pub work: Option<WorkDir>,
    /// The plan's targets as this rank works on them.
    pub targets: Vec<TargetConfig>,
}

/// Where this rank records and works. A rank other than 0 keeps its records in its own
/// run directory (which goes with the run) and prints no progress: only rank 0 writes into
/// `--out` and to the terminal.
pub fn setup(ranks: Option<&Ranks>, plan: &Plan, opts: &RunOptions) -> Result<Setup, RunError> {
    let mut opts = opts.clone();
    let Some(r) = ranks else {
        let targets = plan.targets.clone();
        return Ok(Setup {
            opts,
            work: None,
            targets,
        });
    };
    let targets = rank_targets(plan, r.world);
    if r.world.is_root() {
        return Ok(Setup {
            opts,
            work: None,
            targets,
        });
    }
    let work = WorkDir::create(&opts.work_root)?;
    opts.out = private_out(&work)?;
    opts.quiet = true;
    Ok(Setup {
        opts,
        work: Some(work),
        targets,
    })
}

fn private_out(work: &WorkDir) -> Result<PathBuf, RunError> {
    work.subdir("rank-results")
        .map_err(|e| RunError::Refused(format!("cannot create this rank's results directory: {e}")))
}

impl super::Walk<'_> {
    /// A `--runs auto` round under MPI: rank 0, which holds the results, decides the round
    /// from the `open` questions; every rank runs it. `Break` when the budget ends.
    pub(super) fn ranked_round(
        &mut self,
        r: &Ranks,
        round: usize,
        open: &[super::budget::Open],
        next_rep: &mut std::collections::HashMap<super::budget::Group, u32>,
        max: u32,
        remaining: f64,
    ) -> std::ops::ControlFlow<()> {
        let decided = (!open.is_empty()).then(|| {
            let costs = &self.costs;
            super::budget::plan_round(
                open,
                &self.plan.baseline,
                next_rep,
                max,
                &|g| costs.estimate(g),
                remaining,
            )
        });
        let groups = round_from_root(r, decided.as_ref().map(|d| &d.groups[..]));
        if groups.is_empty() {
            if r.world.is_root() && !open.is_empty() {
                self.progress.println(&format!(
                    "budget: {} comparison(s) still undecided; {remaining:.0} s left, which pays for no further round",
                    open.len()
                ));
            }
            return std::ops::ControlFlow::Break(());
        }
        // Every rank runs every cell of the round root chose: a rank that left one out on
        // its own clock would wait for ever at the others' barriers.
        self.run_round(round, &groups, next_rep, std::time::Duration::MAX)
    }
}

/// The groups of a `--runs auto` round, as rank 0 (which holds the results) decided them:
/// `decided` is read on rank 0 only; empty ends the budget on every rank.
pub fn round_from_root(
    ranks: &Ranks,
    decided: Option<&[super::budget::Group]>,
) -> Vec<super::budget::Group> {
    let _ = ranks;
    type Wire = (String, String, u32, Option<String>);
    let groups: Vec<Wire> = decided
        .unwrap_or_default()
        .iter()
        .map(|g| {
            (
                g.target.clone(),
                g.workload.clone(),
                g.threads,
                g.dataset.clone(),
            )
        })
        .collect();
    let bytes = serde_json::to_vec(&groups).unwrap_or_default();
    let got: Vec<Wire> = serde_json::from_slice(&cluster::from_root(&bytes)).unwrap_or_default();
    got.into_iter()
        .map(
            |(target, workload, threads, dataset)| super::budget::Group {
                target,
                workload,
                dataset,
                threads,
            },
        )
        .collect()
}

/// A cell's failure as every rank records it: `(status, error, notes)`.
pub type Failure = (Status, String, Vec<String>);

/// Status as it travels between ranks.
fn status_name(s: Status) -> String {
    serde_json::to_value(s)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "error".into())
}

fn status_from(name: &str) -> Status {
    serde_json::from_value(serde_json::Value::String(name.into())).unwrap_or(Status::Error)
}

/// At the start of a cell: whether each rank has its file system and `points` ready. When
/// any rank failed, every rank gets that (lowest) rank's failure, word for word, with a note
/// naming the rank, so all record and stop the same.
pub fn agree_cell(ranks: &Ranks, step: &str, mine: Result<usize, &Failure>) -> Result<(), Failure> {
    let said = mine
        .map_err(|(s, e, n)| serde_json::to_string(&(status_name(*s), e, n)).unwrap_or_default());
    let all = exchange(step, said);
    if let Some((k, text)) = first_failure(&all) {
        let (s, e, mut notes): (String, String, Vec<String>) =
            serde_json::from_str(&text).unwrap_or(("error".into(), text, Vec::new()));
        notes.push(format!(
            "failed on {} of {} ranks",
            ranks.who(k),
            ranks.world.size
        ));
        return Err((status_from(&s), e, notes));
    }
    let counts: Vec<usize> = all.into_iter().flatten().collect();
    if counts.iter().any(|&c| c != counts[0]) {
        return Err((
            Status::Error,
            format!("the ranks found different points for this cell ({counts:?}): a point list that depends on each rank's free space cannot run under MPI"),
            Vec::new(),
        ));
    }
    Ok(())
}

/// One rank's figures of a measured phase.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Figures {
    pub work_seconds: f64,
    pub syncfs_seconds: f64,
    pub files: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
}

/// The barrier before a measured phase: `Err` with the first rank that is not ready (the
/// phase is then not run anywhere).
pub fn before_phase(ranks: &Ranks, step: &str, ready: Result<(), String>) -> Result<(), String> {
    match first_failure(&exchange(&format!("{step} before"), ready)) {
        Some((k, e)) if k != ranks.world.rank => Err(format!("{}: {e}", ranks.who(k))),
        Some((_, e)) => Err(e),
        None => Ok(()),
    }
}

/// The barrier after a measured phase: every rank's figures, or the first rank's failure.
pub fn after_phase(
    ranks: &Ranks,
    step: &str,
    mine: Result<Figures, String>,
) -> Result<Vec<Figures>, String> {
    let all = exchange(&format!("{step} after"), mine);
    match first_failure(&all) {
        Some((k, e)) if k != ranks.world.rank => Err(format!("{}: {e}", ranks.who(k))),
        Some((_, e)) => Err(e),
        None => Ok(all.into_iter().flatten().collect()),
    }
}

/// The job's phase from every rank's figures: the phase lasts as long as its slowest rank
/// (its work and its `syncfs`), files and bytes add up (so rates are aggregate), and each
/// rank's seconds are kept as min / median / max. The monitor's figures stay this rank's.
pub fn combine(outcome: &mut Outcome, seen: &mut Observed, all: &[Figures]) {
    let total = |f: &Figures| f.work_seconds + f.syncfs_seconds;
    let Some(slowest) = all.iter().max_by(|a, b| total(a).total_cmp(&total(b))) else {
        return;
    };
    outcome.seconds = slowest.work_seconds;
    seen.wall_seconds = slowest.work_seconds;
    seen.syncfs_seconds = slowest.syncfs_seconds;
    outcome.files = all.iter().map(|f| f.files).sum();
    outcome.logical_read_bytes = all.iter().map(|f| f.read_bytes).sum();
    outcome.logical_write_bytes = all.iter().map(|f| f.write_bytes).sum();
    let mut secs: Vec<f64> = all.iter().map(total).collect();
    secs.sort_by(f64::total_cmp);
    let n = secs.len();
    let median = if n % 2 == 1 {
        secs[n / 2]
    } else {
        (secs[n / 2 - 1] + secs[n / 2]) / 2.0
    };
    for (k, v) in [
        ("rank_seconds_min", secs[0]),
        ("rank_seconds_median", median),
        ("rank_seconds_max", secs[n - 1]),
        ("ranks", n as f64),
    ] {
        outcome.metrics.insert(k.into(), v);
    }
}

/// The end of a point: when any rank's record is not `ok`, every rank records the lowest
/// such rank's status and error, so rank 0's record tells the truth about the whole job.
/// A rank's own failure wins over one it only saw from another rank (`echoed`).
pub fn agree_point(ranks: &Ranks, step: &str, m: &mut Measurement, echoed: bool) {
    let mine: Result<(), String> = if m.status == Status::Ok {
        Ok(())
    } else {
        Err(serde_json::to_string(&(
            status_name(m.status),
            m.error.clone().unwrap_or_default(),
            echoed,
        ))
        .unwrap_or_default())
    };
    let all = exchange(&format!("{step} end"), mine);
    let failed: Vec<(usize, (String, String, bool))> = all
        .iter()
        .enumerate()
        .filter_map(|(k, r)| {
            let t = r.as_ref().err()?;
            Some((
                k,
                serde_json::from_str(t).unwrap_or(("error".into(), t.clone(), false)),
            ))
        })
        .collect();
    let chosen = failed
        .iter()
        .find(|(_, (_, _, echo))| !echo)
        .or(failed.first());
    let Some((k, (s, e, _))) = chosen else {
        return;
    };
    if *k == ranks.world.rank {
        return;
    }
    m.status = status_from(s);
    m.error = Some(format!("{}: {e}", ranks.who(*k)));
    m.metrics.clear();
    m.series.clear();
}

#[cfg(test)]
mod tests;
