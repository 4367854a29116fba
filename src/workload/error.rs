//! Why a workload did not produce a result, and the status it is recorded with.

use rustix::io::Errno;

use crate::results::Status;

/// Why a workload did not produce a result. Typed so the runner can record a status.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// The workload's own check of its work failed: the result would have been a lie.
    #[error("verification failed: {0}")]
    Verify(String),
    /// A replay did something else than the recorded program did (a call ended otherwise,
    /// or the tree differs): measured, but not a result of the program's workload.
    #[error("the replay diverged from its trace: {0}")]
    Diverged(String),
    /// An external tool (fio) failed or printed something we cannot read.
    #[error("{0}")]
    Tool(String),
    #[error("unsupported here: {0}")]
    Unsupported(String),
    #[error("bad workload option: {0}")]
    Option(String),
    #[error("interrupted")]
    Interrupted,
    #[error("timed out")]
    Timeout,
}

impl WorkloadError {
    /// Wraps an I/O error with what was being done and to which path.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        WorkloadError::Io {
            context: context.into(),
            source,
        }
    }

    /// A panic caught in a workload (its own thread, or a worker it started) as the cell's
    /// error, with the panic's message: the run goes on to its normal cleanup (mounts,
    /// loop devices, tracefs instances removed) instead of the process ending there.
    pub fn from_panic(what: &str, payload: Box<dyn std::any::Any + Send>) -> Self {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".into());
        WorkloadError::Tool(format!("{what} panicked: {message}"))
    }

    /// The status this error is recorded with.
    pub fn status(&self) -> Status {
        match self {
            WorkloadError::Io { source, .. } => status_of_io(source),
            WorkloadError::Interrupted => Status::Interrupted,
            WorkloadError::Timeout => Status::Timeout,
            WorkloadError::Diverged(_) => Status::Invalid,
            _ => Status::Error,
        }
    }
}

/// An fsops error (operation and path) as a workload error with that context; fsops sits
/// below workloads and so cannot name this type itself.
impl From<crate::fsops::FsError> for WorkloadError {
    fn from(e: crate::fsops::FsError) -> Self {
        WorkloadError::Io {
            context: format!("{} {}", e.op, e.path.display()),
            source: e.source,
        }
    }
}

/// Maps an OS error to the status users care about: a full file system or a failing device.
pub fn status_of_io(e: &std::io::Error) -> Status {
    match e.raw_os_error() {
        Some(c)
            if [Errno::NOSPC, Errno::DQUOT]
                .map(Errno::raw_os_error)
                .contains(&c) =>
        {
            Status::Enospc
        }
        Some(c)
            if [Errno::IO, Errno::ROFS, Errno::UCLEAN]
                .map(Errno::raw_os_error)
                .contains(&c) =>
        {
            Status::Eio
        }
        _ => Status::Error,
    }
}

/// Adds `.with_path(...)`-style context to `std::io::Result`s inside workloads.
pub trait IoContext<T> {
    fn ctx(self, what: impl FnOnce() -> String) -> Result<T, WorkloadError>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn ctx(self, what: impl FnOnce() -> String) -> Result<T, WorkloadError> {
        self.map_err(|e| WorkloadError::io(what(), e))
    }
}
