//! fio as a measuring instrument: build a job, run fio, read its JSON, check what it moved.
//!
//! fsarena drives fio rather than re-implementing an I/O generator: fio's engines, queue-depth
//! handling and latency histograms are the reference everyone compares against. This module
//! is only the driver; it knows nothing about sweeps, presets, workloads or reports (those
//! are `workload::io`, which converts [`FioError`] into its own error). It turns a [`FioJob`]
//! into a fio command line ([`FioJob::args`]), runs it with stdout and stderr kept apart and
//! a cancel hook ([`run()`]), parses `--output-format=json+` ([`report`]) and checks fio's own
//! accounting of the bytes a job moved ([`verify()`]).
//!
//! Sizes here are bytes: parsing what a user typed (`4k`, `1m`) is the caller's business
//! (`plan::size`), so the driver never has a second idea of what a size means.

pub mod client;
mod error;
mod job;
pub mod report;
mod run;
mod verify;

pub use client::{ClientRun, Server};
pub use error::{FioError, PACKAGE};
pub use job::{FioJob, IoEngine, Rw};
pub use report::{
    parse_output, percentile_from_bins, ClientReport, DirStats, FioReport, HostReport, LatStats,
    ParseError,
};
pub use run::{run, FioRun};
pub use verify::{verify, verify_clients};

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::time::Duration;

    /// A 2 × 16 MiB, 4 KiB-block psync job on file `f`, for tests.
    pub(crate) fn job(rw: Rw, runtime: Option<Duration>) -> FioJob {
        FioJob {
            name: "t".into(),
            filename: "f".into(),
            rw,
            rwmixread: 70,
            bs: 4096,
            size: 16 << 20,
            numjobs: 2,
            iodepth: 4,
            direct: false,
            ioengine: IoEngine::Psync,
            runtime,
            ramp_time: Duration::ZERO,
            end_fsync: false,
        }
    }

    #[test]
    fn builds_command_line() {
        let mut j = job(Rw::RandRw, Some(Duration::from_millis(2500)));
        j.ramp_time = Duration::from_secs(1);
        j.direct = true;
        j.ioengine = IoEngine::IoUring;
        let a = j.args();
        for want in [
            "--rw=randrw",
            "--rwmixread=70",
            "--bs=4096",
            "--size=16777216",
            "--numjobs=2",
            "--iodepth=4",
            "--direct=1",
            "--ioengine=io_uring",
            "--fallocate=none",
            "--thread",
            "--group_reporting",
            "--time_based",
            "--runtime=2500ms",
            "--ramp_time=1000ms",
            "--output-format=json+",
        ] {
            assert!(a.iter().any(|x| x == want), "{want} missing from {a:?}");
        }
        assert_eq!(j.expected_io_bytes(), None);
        let s = job(Rw::Read, None);
        let a = s.args();
        assert!(!a
            .iter()
            .any(|x| x.starts_with("--rwmixread") || x == "--time_based"));
        assert_eq!(s.expected_io_bytes(), Some(2 * (16 << 20)));
    }

    #[test]
    fn names_parse() {
        assert_eq!(Rw::parse("randrw"), Some(Rw::RandRw));
        assert_eq!(IoEngine::parse("libaio"), Some(IoEngine::Libaio));
    }
}
