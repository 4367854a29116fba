//! The io workloads through fio's client/server mode, for real, on one machine: several
//! `fio --server` processes on distinct loopback addresses (127.0.0.2, .3, …; never any
//! other address), an io workload on a `dir:` target through them, fio's consolidated
//! figures checked against the hosts' own, a server that does not answer refused before
//! anything is provisioned, and no fio client or server job left behind on any exit path.

mod common;

use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{bin, measurements, require_root, TestRoot};

/// A port of this test process's own (so parallel runs of the suite do not meet).
fn port(offset: u32) -> u16 {
    (20_000 + (std::process::id() * 7 + offset) % 20_000) as u16
}

/// `fio --server` processes this test started; each is killed and reaped on drop, so every
/// exit path of a test (a failed assertion too) stops them.
struct Servers {
    children: Vec<Child>,
    pub addrs: Vec<String>,
}

impl Servers {
    fn start(hosts: &[&str], port: u16) -> Servers {
        let mut s = Servers {
            children: Vec::new(),
            addrs: Vec::new(),
        };
        for h in hosts {
            assert!(h.starts_with("127."), "loopback only: {h}");
            let child = Command::new("fio")
                .arg(format!("--server={h},{port}"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("fio is installed (./dev installs it)");
            s.children.push(child);
            s.addrs.push(format!("{h}:{port}"));
        }
        for a in &s.addrs {
            let sa: SocketAddr = a.parse().unwrap();
            let t0 = Instant::now();
            while TcpStream::connect_timeout(&sa, Duration::from_millis(200)).is_err() {
                assert!(
                    t0.elapsed() < Duration::from_secs(10),
                    "fio server {a} never listened"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        s
    }

    fn pids(&self) -> Vec<u32> {
        self.children.iter().map(Child::id).collect()
    }

    /// Whether every server is still running (none died under the run).
    fn all_alive(&mut self) -> bool {
        self.children
            .iter_mut()
            .all(|c| matches!(c.try_wait(), Ok(None)))
    }
}

impl Drop for Servers {
    /// Kills the servers and, should a test have failed with jobs still running, their
    /// forked connections and jobs too (found by the command line they inherit).
    fn drop(&mut self) {
        let left = fio_left(self);
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for line in left {
            let pid = line.split(':').next().and_then(|p| p.parse::<i32>().ok());
            if let Some(pid) = pid.and_then(rustix::process::Pid::from_raw) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
    }
}

/// (pid, parent pid, command line) of every process. Arguments are joined with spaces, and
/// so are commas: fio's client rewrites its own `--client=HOST,PORT` to `HOST\0PORT`.
fn processes() -> Vec<(u32, u32, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // The field after the `(comm)` and the state is the parent pid.
        let Some(ppid) = stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.split(' ').nth(1))
            .and_then(|p| p.parse().ok())
        else {
            continue;
        };
        let cmd = std::fs::read(e.path().join("cmdline"))
            .map(|b| String::from_utf8_lossy(&b).replace(['\0', ','], " "))
            .unwrap_or_default();
        out.push((pid, ppid, cmd));
    }
    out
}

/// fio clients of these servers, and the processes the servers fork per connection and
/// per job, still running (the servers themselves are the test's and run on). A job whose
/// connection is gone is reparented away from its server, so processes are matched by
/// their command line, which they inherit from the server.
fn fio_left(servers: &Servers) -> Vec<String> {
    let pids = servers.pids();
    processes()
        .into_iter()
        .filter(|(pid, _, cmd)| {
            !pids.contains(pid)
                && cmd.starts_with("fio ")
                && servers.addrs.iter().any(|a| {
                    let spec = a.replace(':', " ");
                    cmd.contains(&format!("--server={spec}"))
                        || cmd.contains(&format!("--client={spec}"))
                })
        })
        .map(|(pid, _, cmd)| format!("{pid}: {cmd}"))
        .collect()
}

/// Whether a fio client of fsarena's runs a time-based job (the measured point, not the
/// version probe or the engine probe), read from the job file it was given (fsarena's
/// memfd, named by its /proc path).
fn measuring(servers: &Servers) -> bool {
    processes().into_iter().any(|(_, _, cmd)| {
        cmd.starts_with("fio ")
            && servers
                .addrs
                .iter()
                .any(|a| cmd.contains(&format!("--client={}", a.replace(':', " "))))
            && cmd.split(' ').any(|arg| {
                arg.starts_with("/proc/")
                    && std::fs::read_to_string(arg).is_ok_and(|job| job.contains("time_based"))
            })
    })
}

/// Waits up to 15 s for `fio_left` to be empty (a server's job ends shortly after its
/// client tells it to stop), then returns what is left.
fn settle(servers: &Servers) -> Vec<String> {
    let t0 = Instant::now();
    loop {
        let left = fio_left(servers);
        if left.is_empty() || t0.elapsed() > Duration::from_secs(15) {
            return left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A plan of size-bounded points, so each host must move exactly the file once.
fn plan(root: &Path, extra: &str) -> std::path::PathBuf {
    let plan = root.join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "runs = 1\n[workload.io-quick]\nrw = [\"randread\", \"write\"]\nbs = \"4k\"\n\
             iodepth = 4\nsmall = \"8m\"\nruntime = 0\ndirect = false\n{extra}"
        ),
    )
    .unwrap();
    plan
}

fn fsarena(root: &Path, plan: &Path, shared: &Path, hosts: &str) -> Command {
    let mut c = Command::new(bin());
    c.arg("run")
        .arg(plan)
        .arg("--target")
        .arg(format!("dir:{}", shared.display()))
        .args(["--workload", "io-quick", "--io-hosts", hosts, "--quiet"])
        .arg("--out")
        .arg(root.join("out"))
        .arg("--work-dir")
        .arg(root.join("work"));
    c
}

#[test]
fn aggregate_over_three_loopback_servers_is_the_sum_of_their_shares() {
    require_root();
    let root = TestRoot::new("fio-clients");
    let shared = root.path.join("shared");
    std::fs::create_dir(&shared).unwrap();
    let hosts = ["127.0.0.2", "127.0.0.3", "127.0.0.4"];
    let mut servers = Servers::start(&hosts, port(0));
    let run = fsarena(
        &root.path,
        &plan(&root.path, ""),
        &shared,
        &servers.addrs.join(","),
    )
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");

    let ms = measurements(&root.path.join("out"));
    assert_eq!(ms.len(), 2, "one record per point");
    for m in &ms {
        assert_eq!(m["status"], "ok", "{m}");
        let named: Vec<&str> = m["params"]["io_hosts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(named, servers.addrs, "the record names the hosts");
        let metric = |k: &str| {
            m["metrics"][k]
                .as_f64()
                .unwrap_or_else(|| panic!("{k} missing: {}", m["metrics"]))
        };
        assert_eq!(metric("hosts"), 3.0);
        let host = |k: &str| -> Vec<f64> {
            servers
                .addrs
                .iter()
                .map(|a| metric(&format!("host_{k}.{a}")))
                .collect()
        };
        // Size-bounded: each host moved the 8 MiB file once; fio's sum is exactly theirs.
        let bytes = host("io_bytes");
        assert!(bytes.iter().all(|&b| b == (8 << 20) as f64), "{bytes:?}");
        let ios = host("total_ios");
        assert_eq!(metric("total_ios"), ios.iter().sum::<f64>());
        assert_eq!(ios.iter().sum::<f64>(), 3.0 * 2048.0);
        let moved = metric("logical_read_bytes") + metric("logical_write_bytes");
        assert_eq!(moved, bytes.iter().sum::<f64>());
        // IOPS: fio's sum is all I/Os over the slowest host's runtime, so it is at most
        // the hosts' rates added up, and each host has its own positive share.
        let iops = host("iops");
        assert!(iops.iter().all(|&r| r > 0.0), "{iops:?}");
        let sum: f64 = iops.iter().sum();
        assert!(
            metric("iops") > 0.0 && metric("iops") <= sum * 1.0001,
            "all clients {} vs hosts {iops:?}",
            metric("iops")
        );
        let notes = m["notes"].to_string();
        assert!(notes.contains("= the sum of the hosts'"), "{notes}");
    }

    assert!(servers.all_alive(), "a server died under the run");
    assert_eq!(settle(&servers), Vec::<String>::new(), "fio left running");
    let left: Vec<_> = std::fs::read_dir(&shared).unwrap().flatten().collect();
    assert!(left.is_empty(), "left in the shared dir: {left:?}");
}

#[test]
fn a_host_without_a_server_is_refused_before_anything_is_provisioned() {
    require_root();
    let root = TestRoot::new("fio-clients-refused");
    let shared = root.path.join("shared");
    std::fs::create_dir(&shared).unwrap();
    let p = port(1);
    let servers = Servers::start(&["127.0.0.2"], p);
    // 127.0.0.5 has no server: nothing listens there on this port.
    let hosts = format!("127.0.0.2:{p},127.0.0.5:{p}");
    let run = fsarena(&root.path, &plan(&root.path, ""), &shared, &hosts)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains(&format!("127.0.0.5:{p}")), "{stderr}");
    assert!(
        !stderr.contains(&format!("127.0.0.2:{p}")),
        "names only the bad one: {stderr}"
    );
    assert!(!root.path.join("out").join("results.jsonl").exists());
    let made: Vec<_> = std::fs::read_dir(&shared).unwrap().flatten().collect();
    assert!(made.is_empty(), "provisioned in the target: {made:?}");
    assert_eq!(settle(&servers), Vec::<String>::new(), "fio left running");
}

/// Stopping fsarena mid-point must stop the servers' jobs too: killing the fio client
/// alone leaves them running to their runtime's end.
#[test]
fn stopping_the_run_stops_every_servers_job() {
    require_root();
    let root = TestRoot::new("fio-clients-stop");
    let shared = root.path.join("shared");
    std::fs::create_dir(&shared).unwrap();
    let servers = Servers::start(&["127.0.0.2", "127.0.0.3"], port(2));
    // Time-based, 60 s a point: far longer than the test waits.
    let plan = root.path.join("long.toml");
    std::fs::write(
        &plan,
        "runs = 1\n[workload.io-quick]\nrw = \"randwrite\"\nbs = \"4k\"\niodepth = 1\n\
         small = \"8m\"\nruntime = 60\nramp_time = 0\ndirect = false\nioengine = \"psync\"\n",
    )
    .unwrap();
    let mut child = fsarena(&root.path, &plan, &shared, &servers.addrs.join(","))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the measured job runs on the servers.
    let t0 = Instant::now();
    while !measuring(&servers) {
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "servers never ran the job"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(2));
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(child.id() as i32).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "fsarena did not stop"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(settle(&servers), Vec::<String>::new(), "fio left running");
}
