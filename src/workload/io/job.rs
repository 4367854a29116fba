//! Running one fio job for a workload point: here, or on the `--io-hosts` through fio's
//! client mode, stopped when the run is cancelled or past its deadline; and fio's errors as
//! workload errors.

use crate::fio::{self, ClientRun, FioError, FioJob, FioRun, Server};
use crate::workload::ctx::Ctx;
use crate::workload::error::WorkloadError;
use crate::workload::outcome::Outcome;

use super::metrics;

/// Runs `job` in the work directory, stopping fio as soon as the run is cancelled or past
/// its deadline; the stop comes back as the reason (`Interrupted` or `Timeout`).
pub(super) fn run_fio(ctx: &Ctx, job: &FioJob) -> Result<FioRun, WorkloadError> {
    until_stopped(ctx, |stop| fio::run(ctx.root, job, stop))
}

/// Runs `run` with a stop hook that asks `ctx` whether the run was cancelled or is past its
/// deadline; fio's `Cancelled` comes back as that reason (`Interrupted` or `Timeout`).
fn until_stopped<T>(
    ctx: &Ctx,
    run: impl FnOnce(&mut dyn FnMut() -> bool) -> Result<T, FioError>,
) -> Result<T, WorkloadError> {
    let mut why = None;
    let result = run(&mut || match ctx.check() {
        Ok(()) => false,
        Err(e) => {
            why = Some(e);
            true
        }
    });
    match result {
        Err(FioError::Cancelled) => Err(why.unwrap_or(WorkloadError::Interrupted)),
        other => Ok(other?),
    }
}

/// A finished measured job: one local fio, or fio's client mode on the `hosts`.
pub(super) enum Ran {
    Local(FioRun),
    Clients(ClientRun),
}

/// Runs `job` in the work directory: here when `hosts` is empty, else on every server at
/// once through fio's client mode (the directory must be the same path on each host).
pub(super) fn run_job(ctx: &Ctx, hosts: &[Server], job: &FioJob) -> Result<Ran, WorkloadError> {
    if hosts.is_empty() {
        return run_fio(ctx, job).map(Ran::Local);
    }
    until_stopped(ctx, |stop| {
        fio::client::run_clients(ctx.root, job, hosts, stop)
    })
    .map(Ran::Clients)
}

impl Ran {
    /// The measurement: fio's consolidated figures, plus each host's share with hosts.
    pub(super) fn outcome(&self, hosts: &[Server]) -> Outcome {
        match self {
            Ran::Local(run) => metrics::outcome_of(&run.report),
            Ran::Clients(run) => metrics::clients_outcome(&run.report, hosts),
        }
    }

    /// fio's own accounting, checked (for clients: every host and the sum of them).
    pub(super) fn verify(&self, job: &FioJob) -> Result<String, WorkloadError> {
        Ok(match self {
            Ran::Local(run) => fio::verify(job, run)?,
            Ran::Clients(run) => fio::verify_clients(job, run)?,
        })
    }

    pub(super) fn version(&self) -> &str {
        match self {
            Ran::Local(run) => &run.report.fio_version,
            Ran::Clients(run) => &run.report.fio_version,
        }
    }

    /// Which hosts ran the point and how the consolidated figure was made.
    pub(super) fn hosts_note(&self, hosts: &[Server]) -> String {
        let sum = match self {
            Ran::Clients(run) if run.report.fio_sum => "fio's \"All clients\" sum",
            _ => "the one host's figures",
        };
        format!(
            "fio client/server on {} host(s): {}; consolidated figures are {sum} (IOPS and \
             MB/s over the slowest host's runtime), latency percentiles from the hosts' \
             merged histograms, host_* metrics each host's share",
            hosts.len(),
            hosts
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

/// The driver's errors as workload errors, each keeping its status: a missing fio is
/// "unsupported here", fio's errno stays an I/O error (ENOSPC, EIO), a wrong volume is a
/// failed verification.
impl From<FioError> for WorkloadError {
    fn from(e: FioError) -> Self {
        match e {
            FioError::NotInstalled => WorkloadError::Unsupported(e.to_string()),
            FioError::Io { context, source } => WorkloadError::Io { context, source },
            FioError::Tool(msg) => WorkloadError::Tool(msg),
            FioError::Verify(msg) => WorkloadError::Verify(msg),
            FioError::Cancelled => WorkloadError::Interrupted,
        }
    }
}
