//! fio's own client/server mode: the same job run at once by `fio --server` processes on
//! several hosts, driven by one local `fio --client` process, whose JSON carries each host's
//! figures (`client_stats`) and fio's "All clients" sum.
//!
//! fsarena adds no network protocol of its own: the servers are the user's (`fio --server`
//! on each host), this module only names them ([`Server`]), checks that each answers with
//! the local fio's version before anything is provisioned ([`check_servers`]), and runs a
//! [`FioJob`] through them ([`run_clients`]).
//!
//! Two facts about fio's client mode shape the job file: the servers run it in their own
//! working directory, so it names the directory (`directory=`); and with a directory fio
//! prefixes file names with the client's address (`unique_filename`), which on a real
//! cluster is the same for every server but on loopback differs, so it is turned off: every
//! host works on the one data file fsarena laid out (like `numjobs` copies on one host).
//!
//! Stopping: killing the client does not stop the servers' jobs (they run on until their
//! runtime ends), so the client is sent SIGINT, on which fio tells every server to stop,
//! and is killed only if it does not exit. A `kill -9` of fsarena sends it the same SIGINT
//! (parent-death signal), so no server keeps working for a run that is gone.

use std::fmt;
use std::io;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::error::FioError;
use super::job::FioJob;
use super::report::{parse_client_output, ClientReport};
use super::run::{join_reader, read_all, spawn_and_wait, tail};

/// fio's default server port (`fio --server` without one).
pub const DEFAULT_PORT: u16 = 8765;

/// How long a server may take to answer the pre-run probe.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// How long the client may take to stop its servers after SIGINT before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// How often a running client is checked for cancellation.
const POLL: Duration = Duration::from_millis(50);

/// One `fio --server` as the user named it: `HOST`, `HOST:PORT`, `[V6]` or `[V6]:PORT`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Server {
    /// The host as written (an address or a name), without brackets.
    pub host: String,
    pub port: u16,
}

impl Server {
    /// Parses `HOST[:PORT]` (IPv6 in brackets); the port defaults to fio's 8765.
    pub fn parse(s: &str) -> Result<Server, String> {
        let s = s.trim();
        let bad = |why: &str| format!("`{s}`: {why} (use HOST, HOST:PORT or [IPv6]:PORT)");
        let (host, port) = if let Some(rest) = s.strip_prefix('[') {
            let (h, after) = rest.split_once(']').ok_or_else(|| bad("no closing `]`"))?;
            if h.parse::<std::net::Ipv6Addr>().is_err() {
                return Err(bad("not an IPv6 address in brackets"));
            }
            match after {
                "" => (h, None),
                p => (
                    h,
                    Some(p.strip_prefix(':').ok_or_else(|| bad("junk after `]`"))?),
                ),
            }
        } else if s.matches(':').count() > 1 {
            return Err(bad("an IPv6 address needs brackets"));
        } else {
            match s.split_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (s, None),
            }
        };
        let valid_name = |h: &str| {
            !h.is_empty()
                && h.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_')
        };
        if !(valid_name(host) || host.parse::<IpAddr>().is_ok()) {
            return Err(bad("not a host name or address"));
        }
        let port = match port {
            None => DEFAULT_PORT,
            Some(p) => p
                .parse::<u16>()
                .ok()
                .filter(|&p| p > 0)
                .ok_or_else(|| bad("the port must be 1..=65535"))?,
        };
        Ok(Server {
            host: host.to_string(),
            port,
        })
    }

    /// fio's spelling of the server for `--client=`: `host,port`, `ip6:addr,port`.
    pub fn fio_arg(&self) -> String {
        match self.host.parse::<IpAddr>() {
            Ok(IpAddr::V6(_)) => format!("ip6:{},{}", self.host, self.port),
            _ => format!("{},{}", self.host, self.port),
        }
    }

    /// Whether the server is on this machine's loopback (127.0.0.0/8, ::1, `localhost`):
    /// only then can it reach a file system fsarena mounted here.
    pub fn is_loopback(&self) -> bool {
        match self.host.parse::<IpAddr>() {
            Ok(ip) => ip.is_loopback(),
            Err(_) => self.host.eq_ignore_ascii_case("localhost"),
        }
    }

    /// Whether fio's JSON entry (`hostname`, `port`) is this server's.
    pub fn is(&self, hostname: &str, port: u16) -> bool {
        self.port == port && self.host == hostname
    }
}

/// The label in metric names and notes: the host alone on fio's default port, else
/// `host:port` (`[v6]:port`).
impl fmt::Display for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v6 = matches!(self.host.parse::<IpAddr>(), Ok(IpAddr::V6(_)));
        match (self.port == DEFAULT_PORT, v6) {
            (true, _) => write!(f, "{}", self.host),
            (false, true) => write!(f, "[{}]:{}", self.host, self.port),
            (false, false) => write!(f, "{}:{}", self.host, self.port),
        }
    }
}

/// Checks, before anything is provisioned, that every server answers within `timeout` and
/// runs the same fio version as this host; the error is one line naming the first server
/// that does not (servers are probed at once, so a dead one costs `timeout`, not N ×).
pub fn check_servers(servers: &[Server], timeout: Duration) -> Result<String, FioError> {
    let local = local_version()?;
    let job = TempJob::write(PROBE_JOB)?;
    let mut probes = Vec::new();
    for s in servers {
        let child = client_command()
            .arg(format!("--client={}", s.fio_arg()))
            .arg(&job.path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        probes.push((s, child));
    }
    let deadline = Instant::now() + timeout;
    let mut first_error = None;
    for (s, child) in probes {
        let answer = match child {
            Ok(c) => wait_probe(c, deadline),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(FioError::NotInstalled),
            Err(e) => Err(FioError::io("starting fio", e)),
        };
        let verdict = match answer {
            Ok(Some(v)) if v == local => Ok(()),
            Ok(Some(v)) => Err(format!("runs {v}, this host runs {local}")),
            Ok(None) => Err(format!("did not answer within {} s", timeout.as_secs_f64())),
            Err(FioError::Tool(why)) => Err(format!("does not answer ({why})")),
            Err(e) => return Err(e),
        };
        if let (Err(why), None) = (verdict, &first_error) {
            first_error = Some(format!("fio server {s}: {why}"));
        }
    }
    match first_error {
        Some(e) => Err(FioError::Tool(e)),
        None => Ok(format!(
            "{} fio server(s) answered with {local}",
            servers.len()
        )),
    }
}

/// A job that touches no file (the null engine), only to make each server say its version.
const PROBE_JOB: &str = "[fsarena-probe]\nioengine=null\nsize=4k\n";

/// Waits for one probe until `deadline`: `Some(version)` from fio's "hostname=…, fio=…"
/// line, `None` when it did not finish in time (killed and reaped), a `Tool` error when it
/// finished without that line (no server, refused, …).
fn wait_probe(mut child: Child, deadline: Instant) -> Result<Option<String>, FioError> {
    let stdout = child.stdout.take().map(read_all);
    let stderr = child.stderr.take().map(read_all);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Ok(None);
            }
            Ok(None) => thread::sleep(POLL),
            Err(e) => return Err(FioError::io("waiting for fio", e)),
        }
    }
    let out = String::from_utf8_lossy(&join_reader(stdout)?).into_owned();
    let err = String::from_utf8_lossy(&join_reader(stderr)?).into_owned();
    match probe_version(&out) {
        Some(v) => Ok(Some(v)),
        None => Err(FioError::Tool(tail(&format!("{err}\n{out}")))),
    }
}

/// The server's version from the line fio's client prints on connecting:
/// `hostname=vm, be=0, 64-bit, os=Linux, arch=x86-64, fio=fio-3.33, flags=1`.
pub fn probe_version(stdout: &str) -> Option<String> {
    stdout
        .lines()
        .filter(|l| l.starts_with("hostname="))
        .find_map(|l| {
            l.split(", ")
                .find_map(|f| f.strip_prefix("fio="))
                .map(|v| v.trim().to_string())
        })
}

/// This host's fio version (`fio --version`, e.g. `fio-3.33`).
pub fn local_version() -> Result<String, FioError> {
    let out = match crate::sys::helper_command("fio").arg("--version").output() {
        Ok(o) => o,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(FioError::NotInstalled),
        Err(e) => return Err(FioError::io("running fio --version", e)),
    };
    let v = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if v.is_empty() {
        return Err(FioError::Tool("fio --version printed nothing".into()));
    }
    Ok(v)
}

/// A finished client run: fio's per-host and "All clients" figures, and its stderr.
#[derive(Debug, Clone)]
pub struct ClientRun {
    pub report: ClientReport,
    pub stderr: String,
}

impl ClientRun {
    /// The last few lines of stderr, for error messages.
    pub fn stderr_tail(&self) -> String {
        tail(&self.stderr)
    }
}

/// Runs `job` on every server at once, in `dir` (which must be the same path on every
/// host), through one local `fio --client` process; polls `stop` while it runs and, once
/// it returns true, stops the servers' jobs (SIGINT to the client) and returns
/// [`FioError::Cancelled`]. Every server must appear in the report.
pub fn run_clients(
    dir: &Path,
    job: &FioJob,
    servers: &[Server],
    stop: &mut dyn FnMut() -> bool,
) -> Result<ClientRun, FioError> {
    let dir = std::path::absolute(dir).map_err(|e| FioError::io("resolving the work dir", e))?;
    let file = TempJob::write(&job.ini(&dir))?;
    let mut cmd = client_command();
    cmd.arg("--output-format=json+");
    for s in servers {
        cmd.arg(format!("--client={}", s.fio_arg())).arg(&file.path);
    }
    let (status, stdout, stderr) = spawn_and_wait(cmd, stop, &mut interrupt)?;
    let names = || {
        servers
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let report = parse_client_output(&stdout).map_err(|e| {
        FioError::Tool(format!(
            "fio client for {} ({status}): {e}; stderr: {}",
            names(),
            tail(&stderr)
        ))
    })?;
    // fio leaves a server that failed out of `client_stats`: a sum without it would lie.
    for s in servers {
        if !report.hosts.iter().any(|h| s.is(&h.hostname, h.port)) {
            return Err(FioError::Tool(format!(
                "fio client ({status}) reported no figures for server {s} (of {}); stderr: {}",
                names(),
                tail(&stderr)
            )));
        }
    }
    if report.hosts.len() != servers.len() {
        return Err(FioError::Tool(format!(
            "fio client reported {} hosts for {} servers ({})",
            report.hosts.len(),
            servers.len(),
            names()
        )));
    }
    Ok(ClientRun { report, stderr })
}

/// Stops a running client the way that also stops its servers' jobs: SIGINT (fio then
/// tells each server to quit), SIGKILL only if it has not exited within [`STOP_GRACE`].
fn interrupt(child: &mut Child) {
    if let Some(pid) = rustix::process::Pid::from_raw(child.id() as i32) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
    }
    let deadline = Instant::now() + STOP_GRACE;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        thread::sleep(POLL);
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// `fio` as a client that gets SIGINT when the thread that started it dies (a `kill -9`
/// of fsarena), so it tells its servers to stop rather than leave their jobs running.
fn client_command() -> Command {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new("fio");
    crate::sys::dies_with_parent(&mut cmd, libc::SIGINT);
    // A group of its own: a terminal's Ctrl-C reaches fsarena only (see provision::command).
    cmd.process_group(0);
    cmd
}

/// A job file fio's client reads and sends to its servers, held in memory (a memfd) and
/// named by its `/proc/PID/fd/N` path: it disappears with its last descriptor, so even a
/// `kill -9` of fsarena leaves no file behind.
struct TempJob {
    _fd: std::os::fd::OwnedFd,
    path: PathBuf,
}

impl TempJob {
    fn write(text: &str) -> Result<TempJob, FioError> {
        use std::os::fd::AsRawFd;
        let err = |e: rustix::io::Errno| FioError::io("creating fio's job file", e.into());
        let fd = rustix::fs::memfd_create("fsarena-fio-job", rustix::fs::MemfdFlags::CLOEXEC)
            .map_err(err)?;
        let mut file = std::fs::File::from(fd);
        std::io::Write::write_all(&mut file, text.as_bytes())
            .map_err(|e| FioError::io("writing fio's job file", e))?;
        let path = PathBuf::from(format!(
            "/proc/{}/fd/{}",
            std::process::id(),
            file.as_raw_fd()
        ));
        Ok(TempJob {
            _fd: file.into(),
            path,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_server_specs() {
        let s = Server::parse("127.0.0.2").unwrap();
        assert_eq!((s.host.as_str(), s.port), ("127.0.0.2", DEFAULT_PORT));
        assert_eq!(s.fio_arg(), "127.0.0.2,8765");
        assert_eq!(s.to_string(), "127.0.0.2");
        let s = Server::parse("node-3.lab:9000").unwrap();
        assert_eq!(s.fio_arg(), "node-3.lab,9000");
        assert_eq!(s.to_string(), "node-3.lab:9000");
        assert!(!s.is_loopback());
        let s = Server::parse("[::1]:8766").unwrap();
        assert_eq!(s.fio_arg(), "ip6:::1,8766");
        assert_eq!(s.to_string(), "[::1]:8766");
        assert!(s.is_loopback());
        assert!(Server::parse("localhost").unwrap().is_loopback());
        assert!(Server::parse("127.9.9.9").unwrap().is_loopback());
        assert!(!Server::parse("10.0.0.1").unwrap().is_loopback());
        for bad in ["", "h:0", "h:99999", "::1", "[::1", "[nope]:1", "a b", "h:"] {
            let e = Server::parse(bad).unwrap_err();
            assert!(e.contains("HOST:PORT"), "{bad}: {e}");
        }
    }

    #[test]
    fn reads_the_server_version_from_the_probe_line() {
        let out = "hostname=vm, be=0, 64-bit, os=Linux, arch=x86-64, fio=fio-3.33, flags=1\n\
                   <vm> fsarena-probe: (g=0): rw=read\n";
        assert_eq!(probe_version(out).as_deref(), Some("fio-3.33"));
        assert_eq!(probe_version("fio: connect: Connection refused\n"), None);
    }
}
