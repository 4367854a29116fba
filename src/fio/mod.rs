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

use std::io;
use std::time::Duration;

pub mod client;
pub mod report;
mod run;
mod verify;

pub use client::{ClientRun, Server};
pub use report::{
    parse_output, percentile_from_bins, ClientReport, DirStats, FioReport, HostReport, LatStats,
    ParseError,
};
pub use run::{run, FioRun};
pub use verify::{verify, verify_clients};

/// The Debian package that provides the `fio` binary, named in "not installed" errors.
pub const PACKAGE: &str = "fio";

/// The access pattern of a job (fio's `rw=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rw {
    Read,
    RandRead,
    Write,
    RandWrite,
    /// Mixed random reads and writes; the read share is [`FioJob::rwmixread`].
    RandRw,
}

impl Rw {
    pub const ALL: [Rw; 5] = [Rw::Read, Rw::RandRead, Rw::Write, Rw::RandWrite, Rw::RandRw];

    /// The name fio uses, which is also the name in variants and options.
    pub fn as_str(self) -> &'static str {
        match self {
            Rw::Read => "read",
            Rw::RandRead => "randread",
            Rw::Write => "write",
            Rw::RandWrite => "randwrite",
            Rw::RandRw => "randrw",
        }
    }

    /// The pattern fio calls `s`, if fsarena drives it.
    pub fn parse(s: &str) -> Option<Rw> {
        Rw::ALL.into_iter().find(|rw| rw.as_str() == s)
    }

    /// Whether the job issues reads (so the file must hold written data first).
    pub fn reads(self) -> bool {
        matches!(self, Rw::Read | Rw::RandRead | Rw::RandRw)
    }

    /// Whether the job issues writes.
    pub fn writes(self) -> bool {
        matches!(self, Rw::Write | Rw::RandWrite | Rw::RandRw)
    }
}

/// The fio I/O engines fsarena uses, in the order it prefers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IoEngine {
    IoUring,
    Libaio,
    /// Synchronous `pread`/`pwrite`: works everywhere, but caps the queue depth at 1.
    Psync,
}

impl IoEngine {
    /// Fallback order when the engine is `auto`: io_uring may be disabled by a sysctl or a
    /// seccomp profile, libaio needs the library, psync always works.
    pub const FALLBACK: [IoEngine; 3] = [IoEngine::IoUring, IoEngine::Libaio, IoEngine::Psync];

    /// The name fio uses for the engine.
    pub fn as_str(self) -> &'static str {
        match self {
            IoEngine::IoUring => "io_uring",
            IoEngine::Libaio => "libaio",
            IoEngine::Psync => "psync",
        }
    }

    /// The engine fio calls `s`, if fsarena drives it.
    pub fn parse(s: &str) -> Option<IoEngine> {
        IoEngine::FALLBACK.into_iter().find(|e| e.as_str() == s)
    }

    /// Synchronous engines complete each I/O before issuing the next: iodepth is 1.
    pub fn is_sync(self) -> bool {
        self == IoEngine::Psync
    }
}

/// One fio job (fio's `numjobs` copies of it run on the same file and report as one group).
#[derive(Debug, Clone, PartialEq)]
pub struct FioJob {
    pub name: String,
    /// File name relative to the directory fio runs in (fio gives `:` a meaning; avoid it).
    pub filename: String,
    pub rw: Rw,
    /// Percentage of reads for [`Rw::RandRw`]; ignored otherwise.
    pub rwmixread: u32,
    pub bs: u64,
    /// Bytes of the file the job covers.
    pub size: u64,
    pub numjobs: u32,
    pub iodepth: u32,
    pub direct: bool,
    pub ioengine: IoEngine,
    /// `None`: size-bounded, every job moves `size` bytes once. `Some`: time-based.
    pub runtime: Option<Duration>,
    /// Time-based warm-up excluded from fio's statistics.
    pub ramp_time: Duration,
    /// `fsync` the file when the job ends (used by the lay-out pass so the data is durable).
    pub end_fsync: bool,
}

impl FioJob {
    /// The fio command line (without the program name).
    ///
    /// Fixed choices, and why: `--thread` so that killing fio on cancel kills every job with
    /// it; `--group_reporting` so `numjobs` copies report as one; `--fallocate=none` so no
    /// job ever creates preallocated (unwritten) extents that read back as zeros without
    /// touching the device (fio #719); `json+` for latency histograms.
    pub fn args(&self) -> Vec<String> {
        let mut a = vec![
            format!("--name={}", self.name),
            format!("--filename={}", self.filename),
            format!("--rw={}", self.rw.as_str()),
        ];
        if self.rw == Rw::RandRw {
            a.push(format!("--rwmixread={}", self.rwmixread));
        }
        a.extend([
            format!("--bs={}", self.bs),
            format!("--size={}", self.size),
            format!("--numjobs={}", self.numjobs),
            format!("--iodepth={}", self.iodepth),
            format!("--direct={}", u8::from(self.direct)),
            format!("--ioengine={}", self.ioengine.as_str()),
            "--fallocate=none".to_string(),
            "--thread".to_string(),
            "--group_reporting".to_string(),
        ]);
        if let Some(rt) = self.runtime {
            a.push("--time_based".to_string());
            a.push(format!("--runtime={}ms", rt.as_millis().max(1)));
            if !self.ramp_time.is_zero() {
                a.push(format!("--ramp_time={}ms", self.ramp_time.as_millis()));
            }
        }
        if self.end_fsync {
            a.push("--end_fsync=1".to_string());
        }
        a.push("--output-format=json+".to_string());
        a
    }

    /// The job as a job file for fio's client mode, run in `dir` on every server: the
    /// command line's options one per line (client mode sends job files, not options), the
    /// directory named because servers run in their own working directory, and
    /// `unique_filename=0` so every host uses the one data file rather than one prefixed
    /// with the client's address (see [`client`]).
    pub fn ini(&self, dir: &std::path::Path) -> String {
        let mut s = format!(
            "[{}]\ndirectory={}\nunique_filename=0\n",
            self.name,
            dir.display()
        );
        for a in self.args() {
            let a = a.trim_start_matches('-');
            if a.starts_with("name=") || a.starts_with("output-format=") {
                continue;
            }
            s.push_str(a);
            s.push('\n');
        }
        s
    }

    /// Bytes a size-bounded job must move in total (whole blocks only, per job); `None` for
    /// time-based jobs, whose volume depends on speed.
    pub fn expected_io_bytes(&self) -> Option<u64> {
        match self.runtime {
            Some(_) => None,
            None => Some(u64::from(self.numjobs) * (self.size - self.size % self.bs.max(1))),
        }
    }
}

/// Why driving fio did not give a trustworthy report. Typed so the caller can map each case
/// to its own status (a missing tool, a full disk, a lie, a cancel).
#[derive(Debug, thiserror::Error)]
pub enum FioError {
    /// No `fio` binary: say which package provides it.
    #[error(
        "fio is not installed (no `fio` in PATH); install the Debian package `{PACKAGE}` \
         (apt-get install {PACKAGE})"
    )]
    NotInstalled,
    /// An OS error: starting or reading fio, or the errno fio reported for a job (so ENOSPC
    /// and EIO keep their meaning).
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
    /// fio ran but said something we cannot read (no report, a broken report, a crash).
    #[error("{0}")]
    Tool(String),
    /// fio's own accounting disagrees with the job it was given: the numbers would lie.
    #[error("{0}")]
    Verify(String),
    /// The caller's cancel hook asked to stop; fio was killed and reaped.
    #[error("stopped by the caller")]
    Cancelled,
}

impl FioError {
    /// Wraps an I/O error with what was being done.
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        FioError::Io {
            context: context.into(),
            source,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

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
