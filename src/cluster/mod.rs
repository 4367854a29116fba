//! The ranks of a run started by an MPI launcher (`mpirun`, `srun`): how many there are,
//! which one this process is, which host it runs on, and the three collective steps the
//! runner needs (a barrier, an all-gather of bytes, a decision taken by rank 0).
//!
//! Every MPI call of fsarena is in this module (`mpi.rs`, behind the `mpi` cargo feature).
//! Without the feature, or in a process no launcher started, the world is one rank and
//! every collective step is the identity, so the rest of the program has one code path.
//! Callers serialise what they exchange themselves: this layer moves bytes only.

#[cfg(feature = "mpi")]
mod mpi;
mod world;

pub use world::{ClusterError, World};

use std::sync::OnceLock;

/// Environment variables a launcher sets in every rank: Open MPI's mpirun, a PMIx launcher
/// (Slurm's `srun --mpi=pmix`), and PMI-1/2 launchers (MPICH's hydra, `srun --mpi=pmi2`).
/// The first names the world's size where the launcher says it.
const LAUNCHER_VARS: &[&str] = &["OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"];

/// The launcher variable set in this process, if any, with the world size it names (1 when
/// it names none).
pub fn launched_by() -> Option<(&'static str, usize)> {
    LAUNCHER_VARS.iter().find_map(|&v| {
        let value = std::env::var(v).ok()?;
        let size = match v {
            "PMIX_RANK" => std::env::var("SLURM_NTASKS").ok(),
            _ => Some(value),
        }
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(1);
        Some((v, size))
    })
}

/// Whether this build can run on many ranks (the `mpi` feature).
pub fn compiled() -> bool {
    cfg!(feature = "mpi")
}

static WORLD: OnceLock<World> = OnceLock::new();

/// An MPI session: [`World`] is known from here on, and MPI is finalised when it drops
/// (a rank that never finalises makes `mpirun` report the job as failed).
#[derive(Debug)]
pub struct Session {
    _private: (),
}

impl Session {
    /// Joins the job when a launcher started this process (initialising MPI), else stands
    /// alone as rank 0 of 1. Call once, early, before any thread that might use MPI.
    pub fn start() -> Result<Session, ClusterError> {
        let world = match launched_by() {
            None => World::SINGLE,
            Some((var, size)) => join(var, size)?,
        };
        // A second start in one process keeps the first world (tests start several runs).
        let _ = WORLD.set(world);
        Ok(Session { _private: () })
    }

    pub fn world(&self) -> World {
        world()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        #[cfg(feature = "mpi")]
        mpi::finalize();
    }
}

#[cfg(feature = "mpi")]
fn join(_var: &'static str, _size: usize) -> Result<World, ClusterError> {
    mpi::init()
}

#[cfg(not(feature = "mpi"))]
fn join(var: &'static str, size: usize) -> Result<World, ClusterError> {
    if size > 1 {
        return Err(ClusterError::NotBuilt { var, size });
    }
    Ok(World::SINGLE)
}

/// This process's place in the job; rank 0 of 1 before [`Session::start`] or without MPI.
pub fn world() -> World {
    WORLD.get().copied().unwrap_or(World::SINGLE)
}

/// Every rank's `mine`, in rank order, on every rank. Blocks until all ranks call it.
pub fn all_gather(mine: &[u8]) -> Vec<Vec<u8>> {
    #[cfg(feature = "mpi")]
    if world().is_cluster() {
        return mpi::all_gather(mine);
    }
    vec![mine.to_vec()]
}

/// Rank 0's `value` on every rank (what rank 0 decided); `value` is ignored elsewhere.
pub fn from_root(value: &[u8]) -> Vec<u8> {
    let mine = if world().is_root() { value } else { &[] };
    all_gather(mine).into_iter().next().unwrap_or_default()
}

/// Returns once every rank has called it.
pub fn barrier() {
    #[cfg(feature = "mpi")]
    if world().is_cluster() {
        mpi::barrier();
    }
}

/// Ends every rank of the job at once with `code` (a rank that cannot keep in step with
/// the others). Without MPI, exits this process.
pub fn abort(code: i32) -> ! {
    #[cfg(feature = "mpi")]
    if world().is_cluster() {
        mpi::abort(code);
    }
    std::process::exit(code)
}

/// The name of the host this rank runs on (its `uname` node name).
pub fn host_name() -> String {
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_on_its_own_is_rank_0_of_1_and_collectives_are_the_identity() {
        assert_eq!(world(), World::SINGLE);
        assert_eq!(all_gather(b"abc"), vec![b"abc".to_vec()]);
        assert_eq!(from_root(b"x"), b"x".to_vec());
        barrier();
        assert!(!host_name().is_empty());
    }
}
