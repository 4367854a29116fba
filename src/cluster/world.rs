//! What the ranks are, and why they could not be set up: the types both the collective
//! steps (`mod.rs`) and the MPI calls behind them (`mpi.rs`) speak, in a file of their own
//! so that neither imports the other's caller.

/// This process's place among the ranks of the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct World {
    pub rank: usize,
    pub size: usize,
}

impl World {
    /// A process on its own: rank 0 of 1.
    pub const SINGLE: World = World { rank: 0, size: 1 };

    /// More than one rank: phases are synchronised and aggregated.
    pub fn is_cluster(&self) -> bool {
        self.size > 1
    }

    /// Rank 0: the one that writes results and reports.
    pub fn is_root(&self) -> bool {
        self.rank == 0
    }
}

/// Why the ranks could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// Started by a launcher with several ranks, but built without MPI: each process
    /// would run the whole plan on its own and write into the same results directory.
    #[error(
        "started by an MPI launcher with {size} ranks ({var} is set), but this fsarena was built without MPI: rebuild with `cargo build --release --features mpi` (./dev does), or run it without mpirun"
    )]
    NotBuilt { var: &'static str, size: usize },
    #[error("MPI could not be initialised (MPI_Init_thread failed or was called twice)")]
    Init,
}
