//! `fsarena doctor`: what this host can test, and what to install or change when it cannot.

use std::fmt::Write;
use std::path::Path;

use serde::Serialize;

use crate::plan::size::human_bytes;
use crate::plan::{catalogue, FsKind};
use crate::provision::command::Cmd;
use crate::provision::{host, workdir};
use crate::stats::steadiness::{steadiness, stolen_pct, Steadiness, UNSTEADY_CV};

/// One external tool fsarena may call, and where and which version this host has.
#[derive(Debug, Serialize)]
pub struct Tool {
    pub name: String,
    pub path: Option<String>,
    pub version: Option<String>,
    pub package: String,
}

/// Whether one catalogue target can run on this host, and why not.
#[derive(Debug, Serialize)]
pub struct TargetSupport {
    pub name: String,
    pub supported: bool,
    pub reason: Option<String>,
}

/// What `fsarena doctor` found: everything that decides which targets can run here.
#[derive(Debug, Serialize)]
pub struct Doctor {
    pub root: bool,
    pub kernel: String,
    pub loop_devices: bool,
    pub fuse: bool,
    pub drop_caches_writable: bool,
    pub io_uring: Option<bool>,
    pub kernel_filesystems: Vec<String>,
    pub work_dir: String,
    pub work_dir_free_bytes: Option<u64>,
    pub tools: Vec<Tool>,
    pub targets: Vec<TargetSupport>,
    /// Where database engines' memory cgroups go, or why there are none.
    pub memory_cgroup: Result<String, String>,
    /// The PostgreSQL the `pg` workload would use, or why it is skipped.
    pub postgresql: Result<String, String>,
    /// Whether this build can run under MPI (`mpirun -np N fsarena run ...`), or why not.
    pub mpi: Result<String, String>,
    /// How steady the machine is right now: the run's probe ([`steadiness`]), taken
    /// [`STEADINESS_PROBES`] times.
    pub steadiness: Option<Steadiness>,
    /// Of the CPU time every CPU asked for over [`STEAL_WINDOW`], the share the hypervisor
    /// kept, in percent (CPU steal; 0 on bare metal); `None` when `/proc/stat` could not
    /// be read or counted no time.
    pub cpu_steal_pct: Option<f64>,
}

/// How long `doctor` keeps every CPU busy to see how much of their time a hypervisor keeps.
/// The steadiness probe cannot tell: it sleeps most of its second, and a CPU that asks for
/// nothing loses nothing. A run records the same share per phase (`cpu_steal_pct`).
pub const STEAL_WINDOW: std::time::Duration = std::time::Duration::from_secs(1);

/// Spins one thread per CPU for [`STEAL_WINDOW`] and returns the share of the CPU time they
/// asked for that the hypervisor kept ([`stolen_pct`]).
fn steal_now() -> Option<f64> {
    let read = || {
        std::fs::read_to_string("/proc/stat")
            .ok()
            .and_then(|t| crate::monitor::cpu::parse_stat(&t).ok())
    };
    let before = read()?;
    let deadline = std::time::Instant::now() + STEAL_WINDOW;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|s| {
        for _ in 0..cpus {
            s.spawn(|| {
                let mut spins = 0u64;
                while std::time::Instant::now() < deadline {
                    spins = std::hint::black_box(spins.wrapping_add(1));
                }
            });
        }
    });
    let p = read()?.percent_since(&before)?;
    stolen_pct(p.user, p.system, p.steal)
}

/// Probes `doctor` takes, [`STEADINESS_GAP`] apart: about a second in all, long enough to
/// catch a machine that changes speed from moment to moment.
pub const STEADINESS_PROBES: usize = 40;
const STEADINESS_GAP: std::time::Duration = std::time::Duration::from_millis(25);

/// The probe a run times before every phase, taken [`STEADINESS_PROBES`] times now.
fn steadiness_now() -> Option<Steadiness> {
    // The table is written on first use and may still be partly cached for the first
    // walks; the robust spread keeps a low one or two from moving the verdict.
    let ms: Vec<f64> = (0..STEADINESS_PROBES)
        .map(|_| {
            std::thread::sleep(STEADINESS_GAP);
            crate::monitor::steadiness::probe_ms()
        })
        .collect();
    steadiness(&ms, &[])
}

fn tool(name: &str, version_args: &[&str], package: &str) -> Tool {
    let path = host::which(name);
    let version = path.as_ref().and_then(|_| {
        let ran = Cmd::new(name)
            .args(version_args.iter().copied())
            .output(package)
            .ok()?;
        ran.stdout
            .lines()
            .chain(ran.stderr.lines())
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(str::to_string)
    });
    Tool {
        name: name.to_string(),
        path: path.map(|p| p.display().to_string()),
        version,
        package: package.to_string(),
    }
}

/// Looks at the host (root, loop devices, tools, caches, free space under `work_root`)
/// without changing anything.
pub fn examine(work_root: &Path) -> Doctor {
    let mut tools = Vec::new();
    for fs in FsKind::PROVISIONABLE {
        if let Some((prog, _)) = fs.mkfs_base() {
            tools.push(tool(prog, fs.version_args(), fs.package().unwrap_or("?")));
        }
    }
    for fuse in FsKind::PROVISIONABLE.into_iter().filter_map(FsKind::fuse) {
        let (program, args) = fuse.version;
        tools.push(tool(program, args, fuse.package));
    }
    tools.push(tool("fio", &["--version"], "fio"));
    tools.push(tool("losetup", &["--version"], "util-linux"));
    tools.push(tool("wipefs", &["--version"], "util-linux"));
    for fs in FsKind::PROVISIONABLE {
        if let Some((prog, _)) = fs.fsck() {
            if !tools.iter().any(|t| t.name == prog) {
                let args: &[&str] = if prog == "btrfs" {
                    &["--version"]
                } else {
                    &["-V"]
                };
                tools.push(tool(prog, args, fs.package().unwrap_or("?")));
            }
        }
    }
    let probe = work_root
        .ancestors()
        .find(|a| a.exists())
        .unwrap_or(Path::new("/"));
    Doctor {
        root: host::is_root(),
        kernel: host::kernel_release(),
        loop_devices: Path::new("/dev/loop-control").exists(),
        fuse: Path::new("/dev/fuse").exists(),
        drop_caches_writable: rustix::fs::access(
            "/proc/sys/vm/drop_caches",
            rustix::fs::Access::WRITE_OK,
        )
        .is_ok(),
        io_uring: std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
            .ok()
            .map(|s| s.trim() == "0")
            .or(Some(true)),
        kernel_filesystems: std::fs::read_to_string("/proc/filesystems")
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split_whitespace().last().map(str::to_string))
            .collect(),
        work_dir: work_root.display().to_string(),
        work_dir_free_bytes: workdir::free_bytes(probe).ok(),
        tools,
        targets: catalogue::all()
            .iter()
            .map(|t| {
                let r = host::support(t);
                TargetSupport {
                    name: t.name.clone(),
                    supported: r.is_ok(),
                    reason: r.err(),
                }
            })
            .collect(),
        memory_cgroup: crate::provision::cgroup::parent()
            .map(|p| format!("{} ({})", p.dir.display(), p.version.label()))
            .map_err(|e| e.to_string()),
        postgresql: crate::workload::pg::install::locate()
            .map(|i| format!("{} (major {})", i.bin.display(), i.major))
            .map_err(|e| format!("{e}; pg cells are skipped")),
        mpi: mpi_support(),
        steadiness: steadiness_now(),
        cpu_steal_pct: steal_now(),
    }
}

/// Whether this build can run on many ranks: built with the `mpi` feature, and a launcher
/// (`mpirun`) on the PATH to start it with.
fn mpi_support() -> Result<String, String> {
    let mpirun = tool("mpirun", &["--version"], "openmpi-bin");
    let launcher = match (&mpirun.path, &mpirun.version) {
        (Some(p), v) => format!("{} ({p})", v.as_deref().unwrap_or("mpirun ?")),
        (None, _) => "no mpirun: install openmpi-bin".to_string(),
    };
    if !crate::cluster::compiled() {
        return Err(format!(
            "built without the mpi feature (cargo build --release --features mpi; ./dev does when OpenMPI is installed); {launcher}"
        ));
    }
    match mpirun.path {
        Some(_) => Ok(format!("built with MPI; {launcher}")),
        None => Err(format!("built with MPI, but {launcher}")),
    }
}

impl Doctor {
    /// The report as the terminal shows it.
    pub fn render(&self) -> String {
        let mut s = String::new();
        self.render_host(&mut s);
        self.render_support(&mut s);
        self.render_tools(&mut s);
        self.render_targets(&mut s);
        s
    }

    /// What the host offers a run: privileges, kernel features, the work directory's room.
    fn render_host(&self, s: &mut String) {
        let yes = |b: bool| if b { "yes" } else { "NO" };
        let _ = writeln!(s, "root:                 {}", yes(self.root));
        let _ = writeln!(s, "kernel:               {}", self.kernel);
        let _ = writeln!(s, "loop devices:         {}", yes(self.loop_devices));
        let _ = writeln!(s, "FUSE (/dev/fuse):     {}", yes(self.fuse));
        let _ = writeln!(
            s,
            "drop_caches writable: {}",
            yes(self.drop_caches_writable)
        );
        let _ = writeln!(
            s,
            "io_uring:             {}",
            self.io_uring.map_or("unknown", yes)
        );
        let _ = writeln!(
            s,
            "work dir:             {} ({} free)",
            self.work_dir,
            self.work_dir_free_bytes.map_or("?".into(), human_bytes)
        );
        let _ = writeln!(
            s,
            "kernel file systems:  {}",
            self.kernel_filesystems.join(" ")
        );
    }

    /// What optional workloads need (a memory cgroup, PostgreSQL, MPI), and how steady the
    /// host is to measure on.
    fn render_support(&self, s: &mut String) {
        let line = |r: &Result<String, String>| match r {
            Ok(v) => v.clone(),
            Err(e) => format!("NO: {e}"),
        };
        let _ = writeln!(s, "memory cgroup (db):   {}", line(&self.memory_cgroup));
        let _ = writeln!(s, "PostgreSQL (pg):      {}", line(&self.postgresql));
        let _ = writeln!(s, "MPI (many ranks):     {}", line(&self.mpi));
        if let Some(h) = &self.steadiness {
            // 80 columns: the README says the CV is robust and what the walk is.
            let _ = writeln!(
                s,
                "host steadiness:      {}: a {:.2} ms memory walk varied {:.1} % ({} {:.0} %)",
                if h.unsteady { "UNSTEADY" } else { "steady" },
                h.median_ms,
                h.cv * 100.0,
                if h.unsteady { "over" } else { "under" },
                UNSTEADY_CV * 100.0
            );
        }
        if let Some(pct) = self.cpu_steal_pct {
            let _ = writeln!(
                s,
                "CPU steal:            {pct:.1} % of CPU time kept by the hypervisor ({} s, \
                 all busy)",
                STEAL_WINDOW.as_secs()
            );
        }
    }

    /// Each external tool, with its version, or the package that provides it.
    fn render_tools(&self, s: &mut String) {
        let _ = writeln!(s, "tools:");
        for t in &self.tools {
            match (&t.path, &t.version) {
                (Some(p), v) => {
                    let _ = writeln!(
                        s,
                        "  {:<18} {} ({})",
                        t.name,
                        v.as_deref().unwrap_or("?"),
                        p
                    );
                }
                (None, _) => {
                    let _ = writeln!(s, "  {:<18} missing: install {}", t.name, t.package);
                }
            }
        }
    }

    /// Each target, and why it cannot be used if it cannot.
    fn render_targets(&self, s: &mut String) {
        let _ = writeln!(s, "targets:");
        for t in &self.targets {
            match &t.reason {
                None => {
                    let _ = writeln!(s, "  {:<18} ok", t.name);
                }
                Some(r) => {
                    let _ = writeln!(s, "  {:<18} no: {r}", t.name);
                }
            }
        }
    }
}
