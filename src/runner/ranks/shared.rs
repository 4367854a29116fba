//! `--rank-dirs shared`: every rank of an MPI job works in one directory tree of a `dir:`
//! target (mdtest's shared-directory case) instead of its own subtree.
//!
//! Rank 0 makes each point's tree (and journals and removes it, as for any run); the other
//! ranks join it after one exchange, so none works before it exists and rank 0 removes it
//! only after the point's closing exchange, when every rank is done with it. The directories
//! are common; each rank's files carry its tag (`dataset::spec::SharedTree`), so generating,
//! checking and deleting work on this rank's files alone, or (scan) on everyone's.

use std::path::{Path, PathBuf};

use super::exchange::exchange;
use super::job::Ranks;
use crate::dataset::spec::SharedTree;
use crate::dataset::DatasetSpec;
use crate::provision::{Instance, InstanceSpec, WorkDir};
use crate::results::Status;
use crate::runner::failure::{provision_failure, Failure};

/// The data set as this rank works with it: in a shared tree, its files tagged with its rank.
pub fn dataset_for(r: &Ranks, d: DatasetSpec) -> DatasetSpec {
    if !r.shared {
        return d;
    }
    DatasetSpec {
        shared: Some(SharedTree {
            rank: r.world.rank as u32,
            ranks: r.world.size as u32,
        }),
        ..d
    }
}

/// Rank 0's tree of this point on every rank (`made` is what rank 0 made, or why not;
/// ignored elsewhere). Every rank calls it once per point it provisions, success or not.
pub fn tree_from_root(
    ranks: &Ranks,
    step: &str,
    made: Result<&Path, String>,
) -> Result<PathBuf, String> {
    let mine: Result<String, String> = if ranks.world.is_root() {
        made.map(|p| p.display().to_string())
    } else {
        Ok(String::new())
    };
    let all = exchange(&format!("{step} tree"), mine);
    match all.into_iter().next() {
        Some(Ok(p)) => Ok(PathBuf::from(p)),
        Some(Err(e)) if ranks.world.is_root() => Err(e),
        Some(Err(e)) => Err(format!("rank 0 could not make the shared tree: {e}")),
        None => Err("internal: no rank 0".into()),
    }
}

/// This point's tree on this rank: rank 0 provisions it (journaled, removed at its
/// teardown) with the workload's directory `work_dir` inside, then every rank joins it.
pub fn instance(
    ranks: &Ranks,
    step: &str,
    spec: &InstanceSpec,
    work: &WorkDir,
    work_dir: &str,
) -> Result<Instance, Failure> {
    let fail = provision_failure;
    let mut failed = None;
    let made = if ranks.world.is_root() {
        match Instance::provision(spec, work) {
            Err(e) => {
                let f = fail(e);
                failed = Some(f.clone());
                Err(f.1)
            }
            Ok(inst) => match std::fs::create_dir(inst.root.join(work_dir)) {
                Ok(()) => Ok(Some(inst)),
                Err(e) => {
                    let _ = inst.teardown(false);
                    Err(format!("cannot create the shared working directory: {e}"))
                }
            },
        }
    } else {
        Ok(None)
    };
    let shown = match &made {
        Ok(Some(inst)) => Ok(inst.root.as_path()),
        Ok(None) => Ok(Path::new("")),
        Err(e) => Err(e.clone()),
    };
    let root = tree_from_root(ranks, step, shown);
    match (made, root) {
        (Ok(Some(inst)), Ok(_)) => Ok(inst),
        (Ok(None), Ok(root)) => Instance::joined(spec.target, work, &root).map_err(fail),
        (Ok(Some(inst)), Err(e)) => {
            let _ = inst.teardown(false);
            Err((Status::Error, e, Vec::new()))
        }
        (Err(e), _) | (Ok(None), Err(e)) => Err(failed.unwrap_or((Status::Error, e, Vec::new()))),
    }
}
