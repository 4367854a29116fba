//! Checking fio's own accounting of a finished job, so a run can never be fast by being
//! wrong: the bytes it moved, in the directions it was asked to use, with no error.

use std::io;

use super::client::ClientRun;
use super::error::FioError;
use super::job::{FioJob, Rw};
use super::report::FioReport;
use super::run::FioRun;

/// Checks fio's own accounting of a finished job and says what was checked.
///
/// fio's error must be 0 (a non-zero errno becomes an I/O error, so ENOSPC and EIO get their
/// own statuses). A size-bounded job must have moved exactly the bytes it was asked to; a
/// time-based one must have moved some bytes in each direction it was asked to use, and none
/// in a direction it was not.
pub fn verify(job: &FioJob, run: &FioRun) -> Result<String, FioError> {
    check(job, &run.report, &run.stderr_tail(), &job.name)
}

/// [`verify`] for a run through fio's client mode: every host's own figures must pass it,
/// and fio's consolidated figures must be exactly the sum of the hosts' — bytes, I/Os and
/// latency samples in each direction — so neither a host that did less nor a sum that
/// counts a host twice can pass.
pub fn verify_clients(job: &FioJob, run: &ClientRun) -> Result<String, FioError> {
    let hosts = &run.report.hosts;
    let mut per_host = Vec::new();
    for h in hosts {
        let who = format!("{} on {}:{}", job.name, h.hostname, h.port);
        check(job, &h.report, &run.stderr_tail(), &who)?;
        per_host.push(h.report.read.io_bytes + h.report.write.io_bytes);
    }
    let all = &run.report.all;
    if all.error != 0 {
        return Err(FioError::io(
            format!("fio job {} (all clients): {}", job.name, run.stderr_tail()),
            io::Error::from_raw_os_error(all.error),
        ));
    }
    let sum = |f: &dyn Fn(&FioReport) -> u64| hosts.iter().map(|h| f(&h.report)).sum::<u64>();
    let checks: [(&str, u64, u64); 6] = [
        ("read bytes", all.read.io_bytes, sum(&|r| r.read.io_bytes)),
        (
            "write bytes",
            all.write.io_bytes,
            sum(&|r| r.write.io_bytes),
        ),
        ("read I/Os", all.read.total_ios, sum(&|r| r.read.total_ios)),
        (
            "write I/Os",
            all.write.total_ios,
            sum(&|r| r.write.total_ios),
        ),
        (
            "read latency samples",
            all.read.clat.samples,
            all.read.clat.bins.iter().map(|&(_, c)| c).sum(),
        ),
        (
            "write latency samples",
            all.write.clat.samples,
            all.write.clat.bins.iter().map(|&(_, c)| c).sum(),
        ),
    ];
    for (what, total, of_hosts) in checks {
        if total != of_hosts {
            return Err(FioError::Verify(format!(
                "fio job {}: all clients report {total} {what}, the {} hosts' own figures \
                 add up to {of_hosts}",
                job.name,
                hosts.len()
            )));
        }
    }
    let moved = all.read.io_bytes + all.write.io_bytes;
    Ok(format!(
        "fio errors 0 on {} host(s), each checked as one job ({}); all clients moved {moved} \
         bytes = the sum of the hosts' ({}), I/Os and latency samples likewise",
        hosts.len(),
        match job.expected_io_bytes() {
            Some(want) => format!("{want} bytes each, size-bounded"),
            None => "bytes in each asked direction, time-based".into(),
        },
        per_host
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(" + ")
    ))
}

/// The checks of [`verify`] on one report; `who` names the job (and host) in errors.
fn check(job: &FioJob, r: &FioReport, stderr_tail: &str, who: &str) -> Result<String, FioError> {
    if r.error != 0 {
        return Err(FioError::io(
            format!("fio job {who}: {stderr_tail}"),
            io::Error::from_raw_os_error(r.error),
        ));
    }
    let moved = r.read.io_bytes + r.write.io_bytes;
    let dirs_ok =
        (job.rw.reads() || r.read.io_bytes == 0) && (job.rw.writes() || r.write.io_bytes == 0);
    if !dirs_ok {
        return Err(FioError::Verify(format!(
            "fio job {} ({}) read {} and wrote {} bytes: wrong direction",
            who,
            job.rw.as_str(),
            r.read.io_bytes,
            r.write.io_bytes
        )));
    }
    match job.expected_io_bytes() {
        Some(want) if moved != want => Err(FioError::Verify(format!(
            "fio job {who} moved {moved} bytes, asked for {want} ({} job(s) × {} bytes)",
            job.numjobs, job.size
        ))),
        Some(want) => Ok(format!(
            "fio errors 0; io_bytes {moved} = {want} asked (size-bounded, {} job(s) × {} bytes)",
            job.numjobs, job.size
        )),
        None => {
            let each_dir = match job.rw {
                Rw::RandRw if job.rwmixread == 0 => r.write.io_bytes > 0,
                Rw::RandRw if job.rwmixread >= 100 => r.read.io_bytes > 0,
                Rw::RandRw => r.read.io_bytes > 0 && r.write.io_bytes > 0,
                _ => moved > 0,
            };
            if each_dir {
                Ok(format!(
                    "fio errors 0; io_bytes {moved} > 0 (time-based; read {}, write {})",
                    r.read.io_bytes, r.write.io_bytes
                ))
            } else {
                Err(FioError::Verify(format!(
                    "time-based fio job {} moved no bytes in a direction it was asked to use \
                     (read {}, write {})",
                    who, r.read.io_bytes, r.write.io_bytes
                )))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::process::ExitStatus;
    use std::time::Duration;

    use super::*;
    use crate::fio::parse_output;
    use crate::fio::tests::job;

    const RANDRW_NOTES: &str = include_str!("testdata/randrw70-psync-j2-notes.json");
    const WRITE_SIZED: &str = include_str!("testdata/write-1m-32m-libaio.json");
    const ENOSPC: &str = include_str!("testdata/dev-full-enospc.json");

    fn exit(code: i32) -> ExitStatus {
        use std::os::unix::process::ExitStatusExt;
        ExitStatus::from_raw(code << 8)
    }

    #[test]
    fn parses_size_bounded_write_and_verifies_its_volume() {
        let r = parse_output(WRITE_SIZED.as_bytes()).unwrap();
        assert_eq!(r.write.io_bytes, 32 << 20);
        assert_eq!(r.write.total_ios, 32);
        assert_eq!(r.write.iops, 1280.0);
        assert_eq!(r.write.runtime_ms, 25);
        assert_eq!(r.read.io_bytes, 0);
        assert_eq!(r.clat_percentile_ns(50.0), Some(2_179_072));
        let mut j = job(Rw::Write, None);
        j.bs = 1 << 20;
        j.size = 32 << 20;
        j.numjobs = 1;
        let run = FioRun {
            report: r.clone(),
            stderr: String::new(),
            status: exit(0),
        };
        let note = verify(&j, &run).unwrap();
        assert!(note.contains("size-bounded"), "{note}");
        // The same report cannot pass for a job that asked for twice the bytes.
        j.numjobs = 2;
        assert!(matches!(verify(&j, &run), Err(FioError::Verify(_))));
        // Nor for a read job: it wrote.
        let rd = job(Rw::Read, Some(Duration::from_secs(1)));
        assert!(matches!(verify(&rd, &run), Err(FioError::Verify(_))));
    }

    #[test]
    fn failed_job_after_stray_error_line_becomes_enospc() {
        assert!(ENOSPC.starts_with("fio: pid="));
        let r = parse_output(ENOSPC.as_bytes()).unwrap();
        assert_eq!(r.error, 28);
        assert_eq!(r.write.io_bytes, 0);
        assert_eq!(r.clat_percentile_ns(99.0), None);
        let run = FioRun {
            report: r,
            stderr: "fio: io_u error on file /dev/full: No space left on device\n".into(),
            status: exit(1),
        };
        let err = verify(&job(Rw::Write, None), &run).unwrap_err();
        // The errno survives, so the caller records ENOSPC (see `workload::io`'s conversion).
        assert!(
            matches!(&err, FioError::Io { source, .. } if source.raw_os_error() == Some(rustix::io::Errno::NOSPC.raw_os_error())),
            "{err:?}"
        );
        assert!(err.to_string().contains("No space left"), "{err}");
    }

    #[test]
    fn time_based_verification_needs_bytes_in_each_asked_direction() {
        let r = parse_output(RANDRW_NOTES.as_bytes()).unwrap();
        let mut run = FioRun {
            report: r,
            stderr: String::new(),
            status: exit(0),
        };
        let j = job(Rw::RandRw, Some(Duration::from_secs(1)));
        assert!(verify(&j, &run).unwrap().contains("time-based"));
        run.report.write.io_bytes = 0;
        assert!(matches!(verify(&j, &run), Err(FioError::Verify(_))));
    }
}
