//! The MPI side of [`super`], through rsmpi. MPI is initialised with
//! `MPI_THREAD_SERIALIZED`: fsarena's workloads run many threads, and every MPI call here
//! holds [`LOCK`], so no two calls are ever concurrent.

use std::sync::Mutex;

use mpi::datatype::PartitionMut;
use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives};
use mpi::{Count, Threading};

use super::world::{ClusterError, World};

/// The universe while MPI is initialised; taken (and finalised) by [`finalize`].
static LOCK: Mutex<Option<Universe>> = Mutex::new(None);

fn locked() -> std::sync::MutexGuard<'static, Option<Universe>> {
    // A panic while holding the lock leaves nothing half-done on our side.
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

pub fn init() -> Result<World, ClusterError> {
    let mut held = locked();
    if held.is_some() {
        let w = SimpleCommunicator::world();
        return Ok(World {
            rank: w.rank() as usize,
            size: w.size() as usize,
        });
    }
    let (universe, _provided) =
        mpi::initialize_with_threading(Threading::Serialized).ok_or(ClusterError::Init)?;
    let w = universe.world();
    let world = World {
        rank: w.rank() as usize,
        size: w.size() as usize,
    };
    *held = Some(universe);
    Ok(world)
}

pub fn finalize() {
    // Dropping the universe calls MPI_Finalize.
    drop(locked().take());
}

pub fn all_gather(mine: &[u8]) -> Vec<Vec<u8>> {
    let held = locked();
    if held.is_none() {
        return vec![mine.to_vec()];
    }
    let w = SimpleCommunicator::world();
    let len = Count::try_from(mine.len()).unwrap_or(Count::MAX);
    let mut lens: Vec<Count> = vec![0; w.size() as usize];
    w.all_gather_into(&len, &mut lens[..]);
    let mut displs: Vec<Count> = Vec::with_capacity(lens.len());
    let mut total: Count = 0;
    for &l in &lens {
        displs.push(total);
        total = total.saturating_add(l);
    }
    let mut buf = vec![0u8; usize::try_from(total).unwrap_or(0)];
    {
        let mut part = PartitionMut::new(&mut buf[..], &lens[..], &displs[..]);
        w.all_gather_varcount_into(mine, &mut part);
    }
    drop(held);
    lens.iter()
        .zip(&displs)
        .map(|(&l, &d)| buf[d as usize..(d + l) as usize].to_vec())
        .collect()
}

pub fn barrier() {
    let held = locked();
    if held.is_some() {
        SimpleCommunicator::world().barrier();
    }
}

pub fn abort(code: i32) -> ! {
    // No lock: another thread may hold it inside a collective that will never finish.
    SimpleCommunicator::world().abort(code)
}
