//! A fio job as data: what it does ([`Rw`]), through which engine ([`IoEngine`]), and the
//! whole [`FioJob`] with its command line. Running, reading and checking a job all start from
//! it, so it sits below the files that do each.

use std::time::Duration;

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
    /// with the client's address (see [`client`](super::client)).
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
