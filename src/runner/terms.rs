//! The terms between the command line and the runner: how to run a plan ([`RunOptions`]),
//! what a run did ([`RunSummary`]) and why one could not start ([`RunError`]). They sit
//! below every step of the run, so a step that reads them never imports the module that
//! walks it.

use std::path::PathBuf;

use crate::dataset::DatasetError;
use crate::provision::ProvisionError;
use crate::results::store::StoreError;

/// How to run a plan (what is not part of the plan itself).
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub out: PathBuf,
    pub work_root: PathBuf,
    /// Keep the work directory (scratch data, journal, images) after the run.
    pub keep: bool,
    pub quiet: bool,
    pub allow_device: bool,
    pub wipe: bool,
    /// Append to an existing results directory, skipping what it already holds.
    pub resume: bool,
    /// Refuse a plan whose data set does not fit the work directory's free space.
    pub space_check: bool,
    pub command_line: Vec<String>,
}

/// What a finished (or interrupted) run did.
#[derive(Debug, Default)]
pub struct RunSummary {
    pub out: PathBuf,
    pub measured: usize,
    /// One line per measurement that did not end `ok`, except those an interrupt cut short.
    pub failures: Vec<String>,
    /// The run stopped before its end: a signal, a results file it could no longer write,
    /// or a budget that could not tell what was still open (each said in one line).
    pub interrupted: bool,
    /// Measurements an interrupt cut short (recorded `interrupted`; `--resume` measures
    /// them again): not failures, and not listed as such.
    pub cut_short: usize,
    /// Measurements set aside as disturbed (the hypervisor kept too much of the CPU) and
    /// measured again.
    pub set_aside: usize,
    /// Targets and workloads of the plan this host could not run, each with why: the run
    /// did not measure all it was asked to, so it does not end in exit 0.
    pub skipped_targets: Vec<(String, String)>,
    pub skipped_workloads: Vec<(String, String)>,
}

/// Why a run could not start. All of these are bad input or refusals (exit code 2).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{0}")]
    Refused(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Provision(#[from] ProvisionError),
    #[error("data set: {0}")]
    Dataset(#[from] DatasetError),
}
