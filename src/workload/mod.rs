//! Workloads: each one does real work on a target, measures it, and checks its own result.
//!
//! A workload is one file (or folder) here, like fio's engines: a [`WorkloadSpec`] of what it
//! declares and the behaviour of the [`Workload`] contract (`contract`). It gets a [`Ctx`]
//! (where to work, how many threads, which data set) and a [`Harness`] from the runner. It
//! does its unmeasured preparation itself, wraps exactly the measured part in
//! [`Harness::measure`] (the runner starts the monitor, runs the closure, ends with
//! `syncfs`, stops the monitor), then verifies its own work so that it can never be fast by
//! being wrong.
//!
//! This file is the registry: the module list, the shared types re-exported under their
//! old paths, and [`all`]. The types live in files of their own (`ctx`, `point`, `outcome`,
//! `harness`, `error`, `spec`, `contract`), which the workloads import directly, so no file
//! here imports this one while it imports them.

pub mod chmod;
pub mod cold_read;
mod contract;
pub mod copy;
pub mod copy_verify;
pub mod create;
mod ctx;
pub mod db;
pub mod delete;
mod dirfd;
pub mod dupes;
mod engine;
mod error;
mod harness;
pub mod in_turn;
pub mod initial;
pub mod io;
pub mod launch;
pub mod mix;
pub mod options;
mod outcome;
pub mod passes;
pub mod pg;
mod point;
pub mod prepare;
pub mod replay;
pub mod scan;
pub mod search;
pub mod source;
mod spec;
pub mod sync;
pub mod tool;
pub mod touch;
pub mod tree_copy;
pub mod untar;
pub mod verify;

pub use contract::Workload;
pub use ctx::Ctx;
pub use error::{status_of_io, IoContext, WorkloadError};
pub use harness::{Harness, Phase, PlainHarness, WriteBack};
pub use outcome::Outcome;
pub use point::Point;
pub use spec::{Chart, StartState, WorkloadSpec, FILE_COLUMNS, WRITE_COLUMNS};

use crate::plan::Plan;
use initial::{Start, Starts};

/// Every workload fsarena knows, in the order the default run uses them.
pub fn all() -> Vec<Box<dyn Workload>> {
    vec![
        Box::new(create::Create),
        Box::new(scan::Scan),
        Box::new(search::Search),
        Box::new(touch::Touch),
        Box::new(chmod::Chmod),
        Box::new(delete::Delete),
        Box::new(copy::CopyTree),
        Box::new(sync::SyncMirror),
        Box::new(dupes::Dupes),
        Box::new(copy_verify::CopyVerify),
        Box::new(cold_read::ColdRead),
        Box::new(io::IoWorkload::quick()),
        Box::new(io::IoWorkload::sweep()),
        Box::new(db::Db),
        Box::new(pg::Pg),
        Box::new(mix::FILESERVER),
        Box::new(mix::VARMAIL),
        Box::new(mix::WEBSERVER),
        Box::new(untar::Untar),
        Box::new(mix::Mix),
        Box::new(replay::Replay),
    ]
}

/// The short header a workload declares for `metric`, if any does.
pub fn metric_header(metric: &str) -> Option<&'static str> {
    all().iter().find_map(|w| {
        w.spec()
            .metric_headers
            .iter()
            .find(|(m, _)| *m == metric)
            .map(|(_, h)| *h)
    })
}

/// Looks a workload up by name.
pub fn by_name(name: &str) -> Option<Box<dyn Workload>> {
    all().into_iter().find(|w| w.spec().name == name)
}

/// Names of every workload, for error messages.
pub fn names() -> Vec<&'static str> {
    all().iter().map(|w| w.spec().name).collect()
}

/// What a plan's workloads start from: here, beside the registry it asks, so that
/// `initial` stays below the contract that names its types.
impl Starts {
    /// Asks each of the plan's workloads (unknown names are left to the run's own checks),
    /// at the plan's largest scale: what the space check must hold.
    pub fn of(plan: &Plan) -> Starts {
        let empty = toml::Table::new();
        let scale = plan.scales().into_iter().fold(0.0, f64::max);
        let mut s = Starts::default();
        for w in plan.workloads.iter().filter_map(|n| by_name(n)) {
            let name = w.spec().name;
            let options = plan.workload_options.get(name).unwrap_or(&empty);
            match w.initial_state(options, scale) {
                Start::DataSet => s.dataset = true,
                own => s.own.push((name, own)),
            }
        }
        s
    }
}
