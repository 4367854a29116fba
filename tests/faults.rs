//! Faults during a run, made for real: a file system too small for its data, a loop device
//! whose backing file runs out of room, a device throttled until the per-measurement
//! timeout fires, and on-disk corruption that the read-only health check must catch. Each
//! failure is recorded with its status, the rest of the run goes on, and nothing is left
//! mounted, attached or on disk.

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::{bin, leftovers, require_root, TestRoot};
use fsarena::plan::catalogue;
use fsarena::provision::command::Cmd;
use fsarena::provision::{Instance, InstanceSpec, WorkDir};
use fsarena::results::{store, Status};

fn run(args: &[&str], out: &Path, work: &Path) -> (Output, Duration) {
    let t0 = Instant::now();
    let o = Command::new(bin())
        .args(args)
        .args(["--quiet", "--out"])
        .arg(out)
        .arg("--work-dir")
        .arg(work)
        .output()
        .unwrap();
    (o, t0.elapsed())
}

fn statuses(out: &Path) -> Vec<(String, String, Status)> {
    store::load(out)
        .unwrap()
        .measurements
        .into_iter()
        .map(|m| (m.target, m.workload, m.status))
        .collect()
}

/// A tmpfs the test mounts and always unmounts.
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(at).unwrap();
        Cmd::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at.display().to_string())
            .run("mount")
            .unwrap();
        Tmpfs(at.to_path_buf())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Whatever the run left inside must go first, or the tmpfs stays busy.
        fsarena::provision::cleanup::cleanup(&self.0);
        let _ = Cmd::new("umount")
            .arg(self.0.display().to_string())
            .output("");
    }
}

#[test]
fn a_full_file_system_is_recorded_enospc_and_the_run_goes_on() {
    require_root();
    let root = TestRoot::new("enospc");
    let (out, work) = (root.path.join("out"), root.path.join("work"));
    let plan = root.path.join("plan.toml");
    // ~39 MB of data into a 24 MiB ext4: full part-way through.
    std::fs::write(
        &plan,
        "targets = [\"xfs\"]\nworkloads = [\"create\", \"delete\"]\nruns = 1\n\
         [[target]]\nname = \"tiny-ext4\"\nbase = \"ext4\"\nsize = \"24M\"\n",
    )
    .unwrap();
    let (o, took) = run(&["run", plan.to_str().unwrap()], &out, &work);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(took < Duration::from_secs(120));
    let st = statuses(&out);
    for w in ["create", "delete"] {
        assert!(
            st.contains(&("tiny-ext4".into(), w.into(), Status::Enospc)),
            "{st:?}"
        );
        assert!(
            st.contains(&("xfs".into(), w.into(), Status::Ok)),
            "the other target must still run: {st:?}"
        );
    }
    assert!(
        err.contains("tiny-ext4 create threads 1 repetition 1: enospc"),
        "{err}"
    );
    assert!(
        leftovers(&root.path).is_empty(),
        "{:?}",
        leftovers(&root.path)
    );
    assert_eq!(
        std::fs::read_dir(&work).unwrap().count(),
        0,
        "work directory left behind"
    );
}

#[test]
fn a_failing_device_is_recorded_as_a_failure_without_hanging() {
    require_root();
    let root = TestRoot::new("eio");
    let out = root.path.join("out");
    // The loop images' backing files live on a 160 MiB tmpfs: the file systems are made,
    // then the device fails writes part-way through ~235 MB of data.
    let tiny = Tmpfs::mount(&root.path.join("tiny"), "160M");
    let (o, took) = run(
        &[
            "run",
            "--target",
            "btrfs",
            "--target",
            "ext4",
            "--workload",
            "create",
            "--runs",
            "1",
            "--scale",
            "0.06",
            "--fs-size",
            "1G",
            "--no-space-check",
        ],
        &out,
        &tiny.0,
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(took < Duration::from_secs(180), "took {took:?}");
    let st = statuses(&out);
    assert_eq!(st.len(), 2, "{st:?}");
    for (t, _, s) in &st {
        assert!(
            matches!(s, Status::Eio | Status::Enospc | Status::Error),
            "{t}: {s:?} — a failing device must never yield ok"
        );
    }
    // btrfs sees the I/O errors and turns read-only: recorded as eio.
    assert!(
        st.iter().any(|(t, _, s)| t == "btrfs" && *s == Status::Eio),
        "{st:?}"
    );
    let ours = format!("mount {}", tiny.0.display());
    let left: Vec<String> = leftovers(&root.path)
        .into_iter()
        .filter(|l| *l != ours)
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(
        std::fs::read_dir(&tiny.0).unwrap().count(),
        0,
        "work directory left behind"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_slow_device_becomes_a_timeout_record() {
    require_root();
    // Throttle reads from loop devices for a cgroup holding only the fsarena process
    // (cgroup v1 blkio here; v2 io.max where that is what the host has).
    let v1 = Path::new("/sys/fs/cgroup/blkio");
    let v2 = Path::new("/sys/fs/cgroup/cgroup.controllers");
    let name = format!("fsarena-test-slow-{}", std::process::id());
    let (cg, file, fmt): (std::path::PathBuf, &str, fn(u32) -> String) =
        if v1.join("blkio.throttle.read_bps_device").exists() {
            (v1.join(&name), "blkio.throttle.read_bps_device", |m| {
                format!("7:{m} 1048576")
            })
        } else if std::fs::read_to_string(v2).is_ok_and(|c| c.contains("io")) {
            let _ = std::fs::write("/sys/fs/cgroup/cgroup.subtree_control", "+io");
            (Path::new("/sys/fs/cgroup").join(&name), "io.max", |m| {
                format!("7:{m} rbps=1048576")
            })
        } else {
            panic!("no blkio/io cgroup controller to make a slow device with");
        };
    std::fs::create_dir_all(&cg).unwrap();
    struct Cg(std::path::PathBuf);
    impl Drop for Cg {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir(&self.0);
        }
    }
    let _guard = Cg(cg.clone());
    for minor in 0..64 {
        if Path::new(&format!("/dev/loop{minor}")).exists() {
            let _ = std::fs::write(cg.join(file), fmt(minor));
        }
    }
    let root = TestRoot::new("timeout");
    let (out, work) = (root.path.join("out"), root.path.join("work"));
    let t0 = Instant::now();
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "echo $$ > {}/cgroup.procs && exec \"$0\" \"$@\"",
            cg.display()
        ))
        .arg(bin())
        .args([
            "run",
            "--target",
            "ext4",
            "--workload",
            "cold-read",
            "--runs",
            "1",
            "--scale",
            "0.03",
            "--timeout",
            "2",
            "--quiet",
            "--out",
        ])
        .arg(&out)
        .arg("--work-dir")
        .arg(&work)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        t0.elapsed() < Duration::from_secs(120),
        "took {:?}",
        t0.elapsed()
    );
    let st = statuses(&out);
    // Both points read tens of MB through the 1 MiB/s throttle and time out: the file-by-file
    // one, and the `launch` one, whose program is killed at the limit (it used to be waited
    // for, 26 s, and recorded ok).
    assert_eq!(st.len(), 2, "{st:?}");
    assert!(st.iter().all(|(_, _, s)| *s == Status::Timeout), "{st:?}");
    assert!(err.contains("timeout"), "{err}");
    assert!(
        leftovers(&root.path).is_empty(),
        "{:?}",
        leftovers(&root.path)
    );
}

#[test]
fn on_disk_corruption_fails_the_health_check() {
    require_root();
    let root = TestRoot::new("health");
    let work = WorkDir::create(&root.path).unwrap();
    let t = catalogue::get("ext4").unwrap();
    // 1 GiB so mke2fs picks 4 KiB blocks (smaller file systems get 1 KiB blocks).
    let spec = InstanceSpec {
        target: &t,
        seq: 1,
        size: 1 << 30,
        allow_device: false,
        wipe: false,
        daemon_cpus: None,
    };
    let inst = Instance::provision(&spec, &work).unwrap();
    for i in 0..200 {
        std::fs::write(inst.root.join(format!("f{i}")), vec![1u8; 10_000]).unwrap();
    }
    // Freezing flushes the journal, so unmounting has nothing to write back over the damage.
    let mnt = inst.root.display().to_string();
    Cmd::new("fsfreeze")
        .args(["-f", &mnt])
        .run("util-linux")
        .unwrap();
    Cmd::new("fsfreeze")
        .args(["-u", &mnt])
        .run("util-linux")
        .unwrap();
    let dev = inst.provenance.loop_device.clone().unwrap();
    assert!(Cmd::new("dumpe2fs")
        .args(["-h", &dev])
        .run("e2fsprogs")
        .unwrap()
        .stdout
        .contains("Block size:               4096"));
    // Find group 0's inode table and zero part of it on the raw device, under the mounted
    // file system: the kind of damage a failing disk does. The first blocks (root directory
    // and reserved inodes) are skipped: unmounting writes the root inode back.
    let dump = Cmd::new("dumpe2fs")
        .arg(&dev)
        .run("e2fsprogs")
        .unwrap()
        .stdout;
    let block: u64 = dump
        .lines()
        .find_map(|l| l.trim().strip_prefix("Inode table at "))
        .and_then(|s| s.split('-').next())
        .and_then(|s| s.trim().parse().ok())
        .expect("inode table location");
    Cmd::new("dd")
        .args([
            "if=/dev/zero",
            &format!("of={dev}"),
            "bs=4096",
            &format!("seek={}", block + 2),
            "count=4",
            "oflag=direct",
            "conv=notrunc",
        ])
        .run("coreutils")
        .unwrap();
    fsarena::sys::drop_caches().unwrap();
    let (health, res) = inst.teardown(true);
    res.unwrap();
    let h = health.expect("ext4 is checked");
    assert!(!h.passed, "e2fsck -fn should find the damage: {}", h.output);
    assert_eq!(h.command[0], "e2fsck");
    assert!(leftovers(&root.path).is_empty());
}

#[test]
fn invalid_repetitions_are_counted_never_averaged() {
    use fsarena::results::Measurement;
    let mk = |rep: u32, v: f64, status: Status| Measurement {
        target: "ext4".into(),
        workload: "create".into(),
        repetition: rep,
        threads: 1,
        status,
        metrics: [("files_per_s".to_string(), v)].into_iter().collect(),
        ..Default::default()
    };
    let ms = vec![
        mk(0, 100.0, Status::Ok),
        mk(1, 110.0, Status::Ok),
        mk(2, 99999.0, Status::Invalid),
    ];
    let groups = fsarena::stats::aggregate(&ms, "ext4", 0.05);
    assert_eq!(groups[0].invalid, 1);
    assert_eq!(groups[0].metrics["files_per_s"].summary.n, 2);
    assert!((groups[0].metrics["files_per_s"].summary.mean - 105.0).abs() < 1e-9);
}
