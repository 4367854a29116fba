//! Running the fio process: arguments from a [`FioJob`], stdout and stderr drained apart,
//! and a cancel hook polled while it runs.
//!
//! Run as one process with `--thread`, so killing it on cancel stops every job at once and
//! nothing keeps working on the target after fsarena has moved on.

use std::io::{self, Read};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::Duration;

use super::error::FioError;
use super::job::FioJob;
use super::report::{parse_output, FioReport};

/// A finished fio process: its parsed report and what it said on stderr.
#[derive(Debug, Clone)]
pub struct FioRun {
    pub report: FioReport,
    pub stderr: String,
    pub status: ExitStatus,
}

impl FioRun {
    /// The last few lines of stderr, for error messages.
    pub fn stderr_tail(&self) -> String {
        tail(&self.stderr)
    }
}

pub(super) fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(4)..].join(" | ")
}

/// How often a running fio is checked for cancellation.
const POLL: Duration = Duration::from_millis(50);

/// Runs fio with `job` in `dir`, stdout and stderr captured separately, polling `stop`
/// while it runs: once `stop` returns true fio is killed and reaped, and the result is
/// [`FioError::Cancelled`] (the caller knows why it asked).
///
/// A non-zero exit status is not an error by itself when fio still printed its report (a
/// job with an I/O error does that); the caller verifies [`FioReport::error`].
pub fn run(dir: &Path, job: &FioJob, stop: &mut dyn FnMut() -> bool) -> Result<FioRun, FioError> {
    run_program("fio", dir, job, stop)
}

/// [`run`] with the program named, so a test can stand for "fio is not installed".
fn run_program(
    program: &str,
    dir: &Path,
    job: &FioJob,
    stop: &mut dyn FnMut() -> bool,
) -> Result<FioRun, FioError> {
    let args = job.args();
    let mut cmd = Command::new(program);
    cmd.args(&args).current_dir(dir);
    // Its own process group: a terminal's Ctrl-C reaches fsarena only, which stops fio
    // itself (`stop`), so the interruption is recorded as one, never as fio's failure.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    // --thread: every job lives in this one process, so killing it stops all of them.
    let (status, stdout, stderr) = spawn_and_wait(cmd, stop, &mut |child| {
        let _ = child.kill();
        let _ = child.wait();
    })?;
    match parse_output(&stdout) {
        Ok(report) => Ok(FioRun {
            report,
            stderr,
            status,
        }),
        Err(e) => Err(FioError::Tool(format!(
            "fio {} ({status}): {e}; stderr: {}",
            args.join(" "),
            tail(&stderr)
        ))),
    }
}

/// Starts `cmd` with its output piped and waits for it, polling `stop`; when `stop` says
/// so, `halt` ends the child (fio alone is killed; a fio client is interrupted, so that it
/// tells its servers to stop) and the run is `Cancelled`. Returns the exit status, stdout
/// and stderr (lossy text).
pub(super) fn spawn_and_wait(
    mut cmd: Command,
    stop: &mut dyn FnMut() -> bool,
    halt: &mut dyn FnMut(&mut Child),
) -> Result<(ExitStatus, Vec<u8>, String), FioError> {
    let mut child = match cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(FioError::NotInstalled),
        Err(e) => return Err(FioError::io("starting fio", e)),
    };
    let stdout = child.stdout.take().map(read_all);
    let stderr = child.stderr.take().map(read_all);
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break st,
            Ok(None) => {}
            Err(e) => return Err(FioError::io("waiting for fio", e)),
        }
        if stop() {
            halt(&mut child);
            return Err(FioError::Cancelled);
        }
        thread::sleep(POLL);
    };
    let stdout = join_reader(stdout)?;
    let stderr = String::from_utf8_lossy(&join_reader(stderr)?).into_owned();
    Ok((status, stdout, stderr))
}

type Reader = thread::JoinHandle<io::Result<Vec<u8>>>;

/// Drains a pipe on its own thread so a full stderr pipe can never stall fio's stdout.
pub(super) fn read_all(mut pipe: impl Read + Send + 'static) -> Reader {
    thread::spawn(move || {
        let mut buf = Vec::with_capacity(64 * 1024);
        pipe.read_to_end(&mut buf)?;
        Ok(buf)
    })
}

pub(super) fn join_reader(r: Option<Reader>) -> Result<Vec<u8>, FioError> {
    match r {
        None => Ok(Vec::new()),
        Some(h) => match h.join() {
            Ok(res) => res.map_err(|e| FioError::io("reading fio's output", e)),
            Err(_) => Err(FioError::Tool(
                "the thread reading fio's output panicked".into(),
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fio::tests::job;
    use crate::fio::Rw;

    #[test]
    fn missing_fio_names_the_package() {
        let dir = std::env::temp_dir();
        let err = run_program(
            "fsarena-no-such-fio",
            &dir,
            &job(Rw::Read, None),
            &mut || false,
        )
        .unwrap_err();
        assert!(matches!(err, FioError::NotInstalled), "{err:?}");
        let msg = err.to_string();
        assert!(msg.contains("Debian package `fio`"), "{msg}");
        assert!(msg.contains("apt-get install fio"), "{msg}");
    }
}
