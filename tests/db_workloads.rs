//! Database workloads that reach the disk: at the default scale the `db` engine runs in a
//! memory cgroup whose page cache budget is a quarter of the database, so its reads miss
//! the cache and reach the device in every repetition; the cgroup is gone afterwards; and a
//! malformed cache option is refused before anything is provisioned.

mod common;

use std::path::Path;
use std::process::Command;

use common::{
    alive, bin, cleanup_ok, files_named, leftovers, measurements, processes_naming,
    refused_before_provisioning, require_root, wait_for, TestRoot,
};

/// The regression test for "the database fits in the cache": on main a db run on ext4 made
/// 19 device reads in the whole run, and a repetition could make none (no read latency).
#[test]
fn db_reads_reach_the_device_in_every_repetition_at_the_default_scale() {
    require_root();
    fsarena::provision::cgroup::parent().expect("this test needs a memory cgroup");
    let root = TestRoot::new("db-reads");
    let out = root.path.join("out");
    let run = Command::new(bin())
        .args([
            "run",
            "--target",
            "ext4",
            "--workload",
            "db",
            "--runs",
            "2",
            "--quiet",
        ])
        .arg("--work-dir")
        .arg(&root.path)
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = run.id();
    let run = run.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{err}");
    let ms = measurements(&out);
    assert_eq!(ms.len(), 2, "{ms:?}");
    for m in &ms {
        assert_eq!(m["status"], "ok", "{m}");
        let x = &m["metrics"];
        let f = |k: &str| x[k].as_f64().unwrap_or_else(|| panic!("no {k}: {x}"));
        assert!(f("device_read_ios") > 0.0, "no device reads: {x}");
        assert!(f("device_read_latency_ms") > 0.0, "{x}");
        // The engine's own per-file figures (Jetstress's): database reads missed SQLite's
        // cache, durable commits synced the WAL.
        for k in [
            "db_reads",
            "db_read_latency_ms",
            "wal_write_latency_ms",
            "wal_sync_latency_ms",
            "engine_cpu_ms_per_tx",
        ] {
            assert!(f(k) > 0.0, "{k}: {x}");
        }
        let db = f("db_initial_bytes");
        assert!((f("cgroup_cache_bytes") - db / 4.0).abs() <= 1.0, "{x}");
        // The cap held: the page cache never came near holding the database.
        // At most half: the peak reached exactly half (5,390,336 of 10,780,672 bytes) once.
        assert!(f("cgroup_page_cache_peak_bytes") <= db * 0.5, "{x}");
        assert!(f("cgroup_limit_bytes") >= f("cgroup_cache_bytes"), "{x}");
    }
    // The answer's size is the database measured, not the data set db never reads (the
    // header said "2.5k files · 39.1 MiB"), and the data set's compressibility is not said.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let sizes = summary["sizes"].as_array().unwrap();
    assert_eq!(sizes.len(), 1, "{sizes:?}");
    assert_eq!(sizes[0]["initial_state_of"], "db", "{sizes:?}");
    let (stated, built) = (
        sizes[0]["bytes"].as_f64().unwrap(),
        ms[0]["metrics"]["db_initial_bytes"].as_f64().unwrap(),
    );
    assert!(
        (stated - built).abs() <= built * 0.05,
        "{stated} vs {built}"
    );
    assert!(summary["host"]["dataset_zstd_ratio"].is_null(), "{summary}");
    assert!(leftovers(&root.path).is_empty());
    // Only this run's cgroups: other tests may be running pg or db cells in parallel.
    assert!(cgroups_of(pid).is_empty(), "{:?}", cgroups_of(pid));
}

/// `cache = "off"` starts the phase as cold as a cache limit does: before, the database
/// fsarena had just built sat in the page cache, so "off" made no device reads at all and
/// "off" against a limit far above the database measured a warm start against a cold one,
/// not the cgroup.
#[test]
fn db_without_a_cache_limit_starts_cold_and_reads_the_device() {
    require_root();
    let root = TestRoot::new("db-off-cold");
    let (plan, out) = (root.path.join("plan.toml"), root.path.join("out"));
    std::fs::write(
        &plan,
        "workloads = [\"db\"]\ntargets = [\"ext4\"]\nruns = 1\n[workload.db]\ncache = \"off\"\n",
    )
    .unwrap();
    let run = Command::new(bin())
        .arg("run")
        .arg(&plan)
        .args(["--quiet", "--work-dir"])
        .arg(root.path.join("work"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let ms = measurements(&out);
    assert_eq!(ms.len(), 1, "{ms:?}");
    let x = &ms[0]["metrics"];
    assert!(
        x.get("cgroup_limit_bytes").is_none(),
        "no cgroup asked for: {x}"
    );
    assert!(x["device_read_ios"].as_f64().unwrap_or(0.0) > 0.0, "{x}");
    let notes = ms[0]["notes"].to_string();
    assert!(notes.contains("started cold"), "{notes}");
    assert!(leftovers(&root.path).is_empty());
}

/// A cache far above the database (the setting that measures what the cgroup itself
/// costs) gives a limit above the machine's memory, which can never bind: the keeper then
/// looks at the cgroup every 200 ms instead of every 5 ms (each look reads `memory.stat`,
/// ~85 µs of CPU), and the record says so.
#[test]
fn a_cache_limit_that_cannot_bind_is_only_sampled() {
    require_root();
    fsarena::provision::cgroup::parent().expect("this test needs a memory cgroup");
    let root = TestRoot::new("db-unbindable");
    let (plan, out) = (root.path.join("plan.toml"), root.path.join("out"));
    std::fs::write(
        &plan,
        "workloads = [\"db\"]\ntargets = [\"ext4\"]\nruns = 1\n[workload.db]\ncache = \"100g\"\n",
    )
    .unwrap();
    let run = Command::new(bin())
        .arg("run")
        .arg(&plan)
        .args(["--quiet", "--work-dir"])
        .arg(root.path.join("work"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let ms = measurements(&out);
    assert_eq!(ms.len(), 1, "{ms:?}");
    let x = &ms[0]["metrics"];
    let mem: f64 = std::fs::read_to_string("/proc/meminfo")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .unwrap()
        * 1024.0;
    assert!(x["cgroup_limit_bytes"].as_f64().unwrap() >= mem, "{x}");
    let notes = ms[0]["notes"].to_string();
    assert!(notes.contains("cannot bind"), "{notes}");
    assert!(
        x["cgroup_page_cache_peak_bytes"].as_f64().unwrap() > 0.0,
        "still sampled: {x}"
    );
    assert!(leftovers(&root.path).is_empty());
}

/// A bad `cache` value is bad input: one line, exit 2, and no run directory was made.
#[test]
fn a_malformed_db_cache_option_is_refused_with_exit_2_before_provisioning() {
    require_root();
    let root = TestRoot::new("db-badopt");
    let plan = root.path.join("plan.toml");
    std::fs::write(
        &plan,
        "workloads = [\"db\"]\ntargets = [\"ext4\"]\n[workload.db]\ncache = \"lots\"\n",
    )
    .unwrap();
    refused_before_provisioning(&root.path, &plan, "`cache`");
}

/// The fsarena cgroups the fsarena process `pid` made (named `fsarena-TAG-PID-SEQ`), with
/// the processes in each.
fn cgroups_of(pid: u32) -> Vec<(std::path::PathBuf, Vec<i32>)> {
    let Ok(parent) = fsarena::provision::cgroup::parent() else {
        return Vec::new();
    };
    let mark = format!("-{pid}-");
    std::fs::read_dir(&parent.dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name().is_some_and(|n| {
                        let n = n.to_string_lossy();
                        n.starts_with(fsarena::provision::cgroup::PREFIX) && n.contains(&mark)
                    })
                })
                .map(|p| {
                    let procs = fsarena::provision::cgroup::procs(&p);
                    (p, procs)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Regression: the db engine (a forked child in the memory cgroup) outlived a `kill -9`
/// of fsarena and went on writing to the target. It now dies with its parent
/// (PR_SET_PDEATHSIG) before any cleanup runs; `fsarena cleanup` then removes the rest.
#[test]
fn db_engine_child_dies_with_fsarena_on_kill_9_without_cleanup() {
    require_root();
    fsarena::provision::cgroup::parent().expect("this test needs a memory cgroup");
    let root = TestRoot::new("db-pdeath");
    let plan = root.path.join("plan.toml");
    std::fs::write(
        &plan,
        "workloads = [\"db\"]\ntargets = [\"ext4\"]\n[workload.db]\nsize = \"8m\"\n\
         duration = 120\nthreads = 2\n",
    )
    .unwrap();
    let work = root.path.join("work");
    let mut run = Command::new(bin())
        .arg("run")
        .arg(&plan)
        .arg("--quiet")
        .arg("--work-dir")
        .arg(&work)
        .arg("--out")
        .arg(root.path.join("out"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut engine = Vec::new();
    let started = wait_for(60, || {
        engine = cgroups_of(run.id())
            .into_iter()
            .flat_map(|(_, p)| p)
            .collect();
        !engine.is_empty()
    });
    if !started {
        let _ = run.kill();
        panic!("the db engine never started in a cgroup");
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    run.kill().unwrap(); // SIGKILL
    run.wait().unwrap();
    let gone = wait_for(5, || engine.iter().all(|&p| !alive(p)));
    let left: Vec<i32> = engine.iter().copied().filter(|&p| alive(p)).collect();
    // Clean up before asserting, so a failure leaves nothing behind.
    let cleanup = Command::new(bin())
        .arg("cleanup")
        .arg("--work-dir")
        .arg(&work)
        .output()
        .unwrap();
    assert!(gone, "engine processes {left:?} outlived fsarena");
    assert_eq!(
        cleanup.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&cleanup.stderr)
    );
    assert!(cgroups_of(run.id()).is_empty());
    assert!(leftovers(&root.path).is_empty());
}

fn pg_plan(root: &Path, options: &str) -> std::path::PathBuf {
    let plan = root.join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "workloads = [\"pg\"]\ntargets = [\"ext4\"]\nthreads = [2]\n[workload.pg]\n{options}\n"
        ),
    )
    .unwrap();
    plan
}

/// The pg workload end to end: both points measured, the server's reads reach the device
/// (the database does not fit in the cgroup's cache), the workload's own check passed, and
/// no server, socket or cgroup is left.
#[test]
fn pg_runs_both_modes_with_device_reads_and_leaves_nothing() {
    require_root();
    fsarena::workload::pg::install::locate().expect("this test needs PostgreSQL (./dev deps)");
    fsarena::provision::cgroup::parent().expect("this test needs a memory cgroup");
    let root = TestRoot::new("pg-run");
    let plan = pg_plan(&root.path, "seconds = 2");
    let out = root.path.join("out");
    let work = root.path.join("work");
    let run = Command::new(bin())
        .arg("run")
        .arg(&plan)
        .args(["--runs", "1", "--quiet"])
        .arg("--work-dir")
        .arg(&work)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{err}");
    let ms = measurements(&out);
    let variants: Vec<&str> = ms.iter().filter_map(|m| m["variant"].as_str()).collect();
    assert_eq!(variants.len(), 2, "{ms:?}");
    for m in &ms {
        assert_eq!(m["status"], "ok", "{m}");
        let x = &m["metrics"];
        let f = |k: &str| x[k].as_f64().unwrap_or_else(|| panic!("no {k}: {x}"));
        assert!(f("device_read_ios") > 0.0, "no device reads: {x}");
        assert!(f("db_reads") > 0.0 && f("db_read_latency_ms") > 0.0, "{x}");
        assert!(
            f("transactions_per_s") > 0.0 && f("transactions") > 0.0,
            "{x}"
        );
        assert_eq!(f("failed_transactions"), 0.0);
        assert_eq!(f("accounts_rows"), 100_000.0);
        assert!(f("latency_p50_ms") <= f("latency_p95_ms"));
        assert!(f("latency_p95_ms") <= f("latency_p99_ms"));
        // The limit kept the database out of the cache: its peak page cache stayed below
        // the database plus the WAL the run wrote (dirty WAL pages are charged to the server
        // until written back, so on a loaded machine TPC-B's peak can pass the database alone).
        assert!(
            f("cgroup_page_cache_peak_bytes") < f("db_initial_bytes") + f("wal_bytes"),
            "{x}"
        );
        assert!(f("server_cpu_ms_per_tx") > 0.0, "{x}");
        if m["variant"] == "tpcb" {
            assert!(f("wal_bytes") > f("transactions") * 100.0, "{x}");
            assert!(
                f("wal_syncs") > 0.0 && f("wal_sync_latency_ms") > 0.0,
                "{x}"
            );
        } else {
            assert_eq!(f("wal_bytes"), 0.0, "select-only writes no WAL: {x}");
        }
    }
    assert!(leftovers(&root.path).is_empty());
    assert!(processes_naming(&work).is_empty());
    assert!(files_named(&work, ".s.PGSQL").is_empty());
}

/// Starts a long pg cell, waits until pgbench is measuring, sends `signal`, and (for
/// SIGKILL) runs `fsarena cleanup`; then no postgres process, socket or cgroup is left.
fn pg_server_gone_after(signal: i32, name: &str) {
    require_root();
    fsarena::workload::pg::install::locate().expect("this test needs PostgreSQL (./dev deps)");
    fsarena::provision::cgroup::parent().expect("this test needs a memory cgroup");
    let root = TestRoot::new(name);
    let plan = pg_plan(&root.path, "seconds = 120\nmodes = [\"tpcb\"]");
    let work = root.path.join("work");
    let mut run = Command::new(bin())
        .arg("run")
        .arg(&plan)
        .args(["--runs", "1", "--quiet"])
        .arg("--work-dir")
        .arg(&work)
        .arg("--out")
        .arg(root.path.join("out"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let measuring = wait_for(90, || !files_named(&work, "pgbench_log").is_empty());
    let server: Vec<i32> = cgroups_of(run.id())
        .into_iter()
        .flat_map(|(_, p)| p)
        .collect();
    let sockets = files_named(&work, ".s.PGSQL");
    let shared = shared_memory_of(&server);
    unsafe { libc::kill(run.id() as i32, signal) };
    let status = run.wait().unwrap();
    if signal == libc::SIGKILL {
        cleanup_ok(&work);
    } else {
        assert_eq!(status.code(), Some(1), "an interrupted run exits 1");
    }
    assert!(measuring, "pgbench never started");
    assert!(
        server.len() >= 3,
        "postmaster and helpers in the cgroup: {server:?}"
    );
    assert!(!sockets.is_empty(), "the server had a socket");
    let gone = wait_for(5, || server.iter().all(|&p| !alive(p)));
    assert!(gone, "server processes left: {server:?}");
    // Its shared memory went with it (a SIGKILLed postmaster left both on the host).
    assert!(
        !shared.0.is_empty() && !shared.1.is_empty(),
        "the server mapped no /dev/shm file or System V segment: {shared:?}"
    );
    let left: Vec<_> = shared.0.iter().filter(|p| p.exists()).collect();
    assert!(left.is_empty(), "/dev/shm files left: {left:?}");
    let segments = std::fs::read_to_string("/proc/sysvipc/shm").unwrap_or_default();
    let keys: Vec<&str> = segments
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let left: Vec<_> = shared
        .1
        .iter()
        .filter(|k| keys.contains(&k.as_str()))
        .collect();
    assert!(left.is_empty(), "System V segments left (keys): {left:?}");
    assert!(processes_naming(&work).is_empty());
    assert!(files_named(&work, ".s.PGSQL").is_empty());
    assert!(cgroups_of(run.id()).is_empty());
    assert!(leftovers(&root.path).is_empty());
}

/// The shared memory the processes `pids` map: `/dev/shm` files, and System V segment keys
/// (decimal, as `/proc/sysvipc/shm` lists them; maps name them `/SYSV<hex key>`).
fn shared_memory_of(pids: &[i32]) -> (Vec<std::path::PathBuf>, Vec<String>) {
    let (mut files, mut keys) = (Vec::new(), Vec::new());
    for pid in pids {
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
        for path in maps.lines().filter_map(|l| l.split_whitespace().nth(5)) {
            if path.starts_with("/dev/shm/") {
                files.push(std::path::PathBuf::from(path));
            } else if let Some(hex) = path.strip_prefix("/SYSV") {
                if let Ok(k) = i64::from_str_radix(hex, 16) {
                    // The kernel lists keys as signed ints.
                    keys.push((k as i32).to_string());
                }
            }
        }
    }
    files.sort();
    files.dedup();
    keys.sort();
    keys.dedup();
    (files, keys)
}

#[test]
fn pg_server_is_gone_after_sigint() {
    pg_server_gone_after(libc::SIGINT, "pg-int");
}

#[test]
fn pg_server_is_gone_after_sigterm() {
    pg_server_gone_after(libc::SIGTERM, "pg-term");
}

#[test]
fn pg_server_is_gone_after_kill_9_and_cleanup() {
    pg_server_gone_after(libc::SIGKILL, "pg-kill");
}

/// A malformed pg option is bad input: one line, exit 2, nothing provisioned.
#[test]
fn a_malformed_pg_option_is_refused_with_exit_2_before_provisioning() {
    require_root();
    let root = TestRoot::new("pg-badopt");
    for bad in ["seconds = \"five\"", "modes = [\"tpcc\"]", "clients = 3"] {
        let plan = pg_plan(&root.path, bad);
        refused_before_provisioning(&root.path, &plan, "[workload.pg]");
    }
}

/// Regression (issue 13 defect): on a loaded machine db cells with the default cache limit
/// failed — `eio: sqlite cache_size: disk I/O error`, a `pwrite` to the WAL refused with
/// ENOMEM, a worker thread that could not be spawned — because the cgroup's limit was set
/// before the engine had allocated its connections and threads, and then kept by a 10 ms
/// poll the load delayed far longer than the engine took to outgrow it. Several
/// repetitions on tmpfs (whose WAL is memory nothing can reclaim: it now runs without a
/// limit, which could only fail its writes) and ext4 while four busy-loop processes keep
/// both cores busy: every cell must be ok and say its limit, or why it has none.
#[test]
fn db_cache_limit_does_not_starve_the_engine_on_a_loaded_machine() {
    require_root();
    fsarena::provision::cgroup::parent().expect("this test needs a memory cgroup");
    let root = TestRoot::new("db-loaded");
    let plan = root.path.join("plan.toml");
    std::fs::write(
        &plan,
        "workloads = [\"db\"]\ntargets = [\"tmpfs\", \"ext4\"]\nthreads = [1]\nruns = 4\n\
         [workload.db]\nsize = \"8m\"\nduration = 1\n",
    )
    .unwrap();
    let out = root.path.join("out");
    // The load: busy-loop processes, like `stress --cpu`, for the whole run.
    let mut hogs: Vec<std::process::Child> = (0..4)
        .map(|_| {
            Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .spawn()
                .unwrap()
        })
        .collect();
    let run = Command::new(bin())
        .arg("run")
        .arg(&plan)
        .arg("--work-dir")
        .arg(root.path.join("work"))
        .arg("--out")
        .arg(&out)
        .arg("--quiet")
        .output();
    for h in &mut hogs {
        let _ = h.kill();
        let _ = h.wait();
    }
    let run = run.unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    let ms = measurements(&out);
    assert_eq!(ms.len(), 8, "{err}");
    let failed: Vec<String> = ms
        .iter()
        .filter(|m| m["status"] != "ok")
        .map(|m| format!("{} {}: {}", m["target"], m["status"], m["error"]))
        .collect();
    assert!(
        failed.is_empty(),
        "{} of 8 cells failed: {failed:#?}",
        failed.len()
    );
    for m in &ms {
        let notes = m["notes"].to_string();
        if m["target"] == "tmpfs" {
            // Its pages are the database itself: a limit could only fail its writes.
            assert!(
                notes.contains("no cache limit on a memory file system"),
                "{notes}"
            );
            continue;
        }
        let x = &m["metrics"];
        let f = |k: &str| x[k].as_f64().unwrap_or_else(|| panic!("no {k}: {x}"));
        assert!(f("cgroup_limit_bytes") > f("cgroup_cache_bytes"), "{x}");
        f("cgroup_limit_hits");
        assert!(notes.contains("the limit was"), "{notes}");
    }
    assert_eq!(run.status.code(), Some(0), "{err}");
    assert!(leftovers(&root.path).is_empty());
}
