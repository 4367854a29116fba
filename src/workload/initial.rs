//! What a workload's cells start from, and how big it is: the plan's data set, or a state
//! of its own (`replay`'s trace: the files its program found; `db`'s SQLite database, `pg`'s
//! pgbench database, `io-*`'s fio data file). Everything that sizes or describes a run
//! before or after it — the space check, the dry run, the cost estimate, the report's header
//! — asks `Workload::initial_state` through [`Starts`] (whose `of`, which asks the registry,
//! sits beside it in `mod.rs`), so a plan that runs only a replay is not sized and described
//! as the default data set it never writes. Which populated image a cell copies is the
//! workload's `WorkloadSpec::start` instead.

/// A workload's own starting state, as big as it is.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnState {
    /// Files (not directories or symlinks), where they can be told before the run (a
    /// PostgreSQL cluster's count is `initdb`'s business), and their bytes.
    pub files: Option<u64>,
    pub bytes: u64,
    /// The most its tree may hold during the phase (the state and every byte the phase
    /// may add): what the space check must find room for.
    pub peak_bytes: u64,
    /// What it is, for a reader, after its size: "from traces/tar-xf.fstrace", "a SQLite
    /// database, built for each repetition".
    pub what: String,
    /// The page cache it may use, where the workload limits it ("page cache held to 25 %
    /// of it"): said instead of whether it fits in RAM, which then does not matter.
    pub cache: Option<String>,
}

/// What a workload's cells start from.
#[derive(Debug, Clone, PartialEq)]
pub enum Start {
    /// The plan's data set (generated, or the user's directory).
    DataSet,
    /// A state of its own.
    Own(OwnState),
    /// A state of its own that cannot be read here (why): a report read where the trace
    /// is not. Refused before a run; said as unknown in a report.
    Unknown(String),
}

/// What a plan's workloads start from.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Starts {
    /// Whether any of its workloads starts from the data set.
    pub dataset: bool,
    /// The workloads that start from a state of their own, by name, in the plan's order.
    pub own: Vec<(&'static str, Start)>,
}

impl Starts {
    /// The first state that cannot be read, as one line naming its workload.
    pub fn unknown(&self) -> Option<String> {
        self.own.iter().find_map(|(name, s)| match s {
            Start::Unknown(why) => Some(format!("workload {name}: {why}")),
            _ => None,
        })
    }

    /// The own states that could be read.
    pub fn known(&self) -> impl Iterator<Item = (&'static str, &OwnState)> + '_ {
        self.own.iter().filter_map(|(name, s)| match s {
            Start::Own(o) => Some((*name, o)),
            _ => None,
        })
    }

    /// The bytes a file system of the run must hold at most, given the data set's: the
    /// data set's when a workload starts from it, each own state's peak.
    pub fn bytes_to_hold(&self, data_bytes: u64) -> u64 {
        let own = self.known().map(|(_, o)| o.peak_bytes).max().unwrap_or(0);
        own.max(if self.dataset { data_bytes } else { 0 })
    }

    /// The files workload `name` starts from, given the data set's (what a cell's cost
    /// grows with); `None` for a state that cannot be read or counted.
    pub fn files_of(&self, name: &str, data_files: u64) -> Option<u64> {
        match self.own.iter().find(|(n, _)| *n == name) {
            None => Some(data_files),
            Some((_, Start::Own(o))) => o.files,
            Some(_) => None,
        }
    }

    /// The bytes workload `name` starts from, given the data set's (what a copy's cost grows
    /// with); `None` for a state that cannot be read.
    pub fn bytes_of(&self, name: &str, data_bytes: u64) -> Option<u64> {
        match self.own.iter().find(|(n, _)| *n == name) {
            None => Some(data_bytes),
            Some((_, Start::Own(o))) => Some(o.bytes),
            Some(_) => None,
        }
    }

    /// The files the run's largest start holds: what its images grow with.
    pub fn largest_files(&self, data_files: u64) -> u64 {
        let own = self.known().filter_map(|(_, o)| o.files).max().unwrap_or(0);
        own.max(if self.dataset { data_files } else { 0 })
    }
}
