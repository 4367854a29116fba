//! The start of a run on several ranks: they meet before anything is created and agree to
//! run the same plan, each in its own place (its subtree of each `dir:` target; for a rank
//! other than 0, its own results directory).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::exchange::exchange;
use super::job::Ranks;
use crate::cluster::{self, World};
use crate::plan::{Location, Plan, TargetConfig};
use crate::provision::journal::{Kind, Op};
use crate::provision::WorkDir;
use crate::runner::team::{Alone, Team};
use crate::runner::terms::{RunError, RunOptions};
use crate::workload::Workload;

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
pub(super) fn digest(plan: &Plan) -> String {
    let bytes = serde_json::to_vec(plan).unwrap_or_default();
    format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&bytes))
}

/// Meets the other ranks before anything is created. `None` on a single rank. Every rank
/// reaches the same verdict from the same gathered facts, so all refuse together (rank 0
/// says why, before any rank exits; the others stay quiet) and nothing is provisioned
/// anywhere: a plan that differs between ranks (another fsarena version, plan file or flag), a check that failed
/// on any rank, `--resume`, or file systems fsarena makes itself (loop images, tmpfs,
/// devices) with ranks on more than one host.
fn agree_to_start(
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
    // Rank 0 says why before any rank exits: mpirun ends the job at the first rank that
    // exits non-zero, which once cut rank 0 short before it had said anything (CI, stop 52).
    // Every rank then returns an empty refusal, which exits 2 and prints nothing more.
    let refuse = |why: String| -> Result<Option<Ranks>, RunError> {
        if world.is_root() {
            eprintln!("fsarena: {why}");
        }
        cluster::barrier();
        Err(RunError::Refused(String::new()))
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
pub(super) fn shared_refusal(plan: &Plan, workloads: &[Box<dyn Workload>]) -> Option<String> {
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
                .find(|w| w.spec().name == name.as_str())
                .is_some_and(|w| !w.spec().shares_dirs)
        })
        .map(String::as_str)
        .collect();
    if !refused.is_empty() {
        let ok: Vec<&str> = workloads
            .iter()
            .filter(|w| w.spec().shares_dirs)
            .map(|w| w.spec().name)
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
pub fn make_rank_dirs(targets: &[TargetConfig], work: &WorkDir) -> Result<(), String> {
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
            return Err(format!("cannot create {}: {e}", p.display()));
        }
    }
    Ok(())
}

/// How this process runs the plan: with whom, where it records and on what.
pub struct Joined {
    /// Alone, or this rank of the job.
    pub team: Box<dyn Team>,
    pub opts: RunOptions,
    /// The run directory, when this process needed it before its store.
    pub work: Option<WorkDir>,
    /// The plan's targets as this process works on them.
    pub targets: Vec<TargetConfig>,
}

/// Under MPI, meets the other ranks before anything is created ([`agree_to_start`]) and
/// takes this rank's place; alone, the run goes on as asked. `checked` is whether this
/// process's checks of the plan passed, or the line that refused it.
pub fn join(
    plan: &Plan,
    opts: &RunOptions,
    checked: Result<(), String>,
) -> Result<Joined, RunError> {
    match agree_to_start(plan, opts, checked)? {
        None => Ok(Joined {
            team: Box::new(Alone),
            opts: opts.clone(),
            work: None,
            targets: plan.targets.clone(),
        }),
        Some(r) => place(r, plan, opts),
    }
}

/// Where this rank records and works. A rank other than 0 keeps its records in its own
/// run directory (which goes with the run) and prints no progress: only rank 0 writes into
/// `--out` and to the terminal.
fn place(r: Ranks, plan: &Plan, opts: &RunOptions) -> Result<Joined, RunError> {
    let mut opts = opts.clone();
    let targets = rank_targets(plan, r.world);
    if r.world.is_root() {
        return Ok(Joined {
            team: Box::new(r),
            opts,
            work: None,
            targets,
        });
    }
    let work = WorkDir::create(&opts.work_root)?;
    opts.out = private_out(&work)?;
    opts.quiet = true;
    Ok(Joined {
        team: Box::new(r),
        opts,
        work: Some(work),
        targets,
    })
}

fn private_out(work: &WorkDir) -> Result<PathBuf, RunError> {
    work.subdir("rank-results")
        .map_err(|e| RunError::Refused(format!("cannot create this rank's results directory: {e}")))
}
