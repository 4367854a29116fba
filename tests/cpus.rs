//! Where a cell runs (issue 41, `--cpus`): a cell of fewer threads than CPUs runs its
//! measured phase, what the phase starts, and its file system's user-space daemon on the
//! last CPUs, the harness's sampler on the others; `--cpus all` binds nothing; a bad value
//! is refused with exit 2 and one line before anything is made.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{
    bin, leftovers, measurements, processes_naming, refused_before_provisioning, require_root,
    TestRoot,
};
use fsarena::plan::cpus::Cpus;
use fsarena::runner::harness::MonitoredHarness;
use fsarena::runner::team::Alone;
use fsarena::sys::cpus::{allowed, CpuList};
use fsarena::workload::{Harness, Outcome};

/// The CPU list of every task of process `pid` (empty once it is gone).
fn task_lists(pid: i32) -> Vec<String> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|rd| rd.flatten().collect::<Vec<_>>())
        .unwrap_or_default();
    tasks
        .iter()
        .filter_map(|t| t.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|tid| allowed(pid, tid).map(|l| l.to_string()))
        .collect()
}

fn this_thread() -> Option<CpuList> {
    let pid = rustix::process::getpid().as_raw_nonzero().get();
    allowed(pid, rustix::thread::gettid().as_raw_nonzero().get())
}

/// The phase's thread, a thread it starts and a process it starts run on the work's CPUs;
/// the monitor's sampler is not among them; the thread is unbound again after the phase.
#[test]
fn the_measured_phase_and_what_it_starts_run_on_the_work_cpus_and_the_thread_is_unbound_after() {
    let all = CpuList::of_process().unwrap();
    assert!(
        all.len() >= 2,
        "this test needs a host with two CPUs or more"
    );
    let place = Cpus::Auto.place(1, &all).unwrap();
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let mut h = MonitoredHarness::new(&[], None, dir.path(), Duration::ZERO, &Alone, "t".into());
    h.cpus = Some(place.clone());
    let before = this_thread();
    let mut seen = Vec::new();
    h.measure(&mut || {
        seen.push(this_thread());
        seen.push(std::thread::spawn(this_thread).join().unwrap());
        let child = Command::new("sh")
            .args(["-c", "grep Cpus_allowed_list /proc/self/status"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&child.stdout).into_owned();
        seen.push(text.split(':').nth(1).and_then(CpuList::parse));
        Ok(Outcome::default())
    })
    .unwrap();
    assert_eq!(seen, vec![Some(place.work.clone()); 3]);
    assert_eq!(this_thread(), before, "the thread is bound after the phase");
    assert_eq!(h.cpus, Some(place), "the placement was kept as what ran");
}

/// Polls the FUSE daemon serving a mount under `work` while `run` lives (`mount.ntfs-3g`,
/// which stays as the daemon): the CPU lists
/// of all its tasks, from the first look that finds it.
fn daemon_lists(run: &mut std::process::Child, work: &Path) -> Vec<String> {
    let t0 = Instant::now();
    while run.try_wait().unwrap().is_none() && t0.elapsed() < Duration::from_secs(120) {
        let daemons: Vec<i32> = processes_naming(work)
            .into_iter()
            .filter(|&p| {
                std::fs::read_to_string(format!("/proc/{p}/comm"))
                    .is_ok_and(|c| c.trim().ends_with("ntfs-3g"))
            })
            .collect();
        if let Some(&pid) = daemons.first() {
            let lists = task_lists(pid);
            if !lists.is_empty() {
                return lists;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Vec::new()
}

/// Runs a 1-thread ntfs create cell with `--cpus MODE` and returns the ntfs-3g daemon's
/// task CPU lists seen while it ran and the record's placement.
fn ntfs_cell(root: &TestRoot, mode: &str) -> (Vec<String>, serde_json::Value) {
    let (out, work) = (root.path.join(mode), root.path.join(format!("work-{mode}")));
    std::fs::create_dir_all(&work).unwrap();
    let mut run = Command::new(bin())
        .args([
            "run",
            "--target",
            "ntfs",
            "--workload",
            "create",
            "--runs",
            "1",
        ])
        .args([
            "--scale",
            "0.003",
            "--threads",
            "1",
            "--cpus",
            mode,
            "--quiet",
        ])
        .arg("--out")
        .arg(&out)
        .arg("--work-dir")
        .arg(&work)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let lists = daemon_lists(&mut run, &work);
    assert!(run.wait().unwrap().success(), "the {mode} run failed");
    assert!(
        leftovers(&root.path).is_empty(),
        "{:?}",
        leftovers(&root.path)
    );
    let ms = measurements(&out);
    assert_eq!(ms.len(), 1, "{ms:?}");
    assert_eq!(ms[0]["status"], "ok", "{}", ms[0]);
    (lists, ms[0]["provenance"]["cpus"].clone())
}

/// Issue 41: a 1-thread cell on a FUSE file system runs its daemon (every task of it) on
/// the CPU its record states, the last one, the harness on the rest; `--cpus all` leaves
/// the daemon on every CPU and records no placement.
#[test]
fn a_one_thread_ntfs_cells_daemon_runs_on_the_stated_cpu_and_all_leaves_it_unbound() {
    require_root();
    let all = CpuList::of_process().unwrap();
    assert!(
        all.len() >= 2,
        "this test needs a host with two CPUs or more"
    );
    let root = TestRoot::new("cpus-ntfs");
    let (lists, placed) = ntfs_cell(&root, "auto");
    let last = all.last(1).to_string();
    assert_eq!(placed["work"], last.as_str(), "{placed}");
    assert_eq!(
        placed["harness"],
        all.without(&all.last(1)).to_string().as_str()
    );
    assert!(!lists.is_empty(), "no ntfs-3g daemon was seen");
    assert!(
        lists.iter().all(|l| *l == last),
        "daemon tasks on {lists:?}, not {last}"
    );
    let (lists, placed) = ntfs_cell(&root, "all");
    assert!(placed.is_null(), "{placed}");
    assert!(!lists.is_empty(), "no ntfs-3g daemon was seen");
    assert!(lists.iter().all(|l| *l == all.to_string()), "{lists:?}");
    let report = std::fs::read_to_string(root.path.join("auto/summary.md")).unwrap();
    let said = format!("1-thread cells on CPU {last} with their file system's daemon");
    assert!(report.contains(&said), "{report}");
}

/// A bad `--cpus` or `cpus =` is refused: exit 2, one line, nothing made.
#[test]
fn a_bad_cpus_value_is_refused_with_one_line() {
    let root = TestRoot::new("cpus-bad");
    let out = root.path.join("out").display().to_string();
    let flag = ["run", "--target", "ext4", "--cpus", "some", "--out", &out];
    let run = common::fsarena(&flag, &root.path.join("work"));
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("cpus"), "{err}");
    let plan = root.path.join("plan.toml");
    std::fs::write(&plan, "targets = [\"ext4\"]\ncpus = \"2\"\n").unwrap();
    refused_before_provisioning(&root.path, &plan, "use auto");
}
