//! Tests of the io workloads: points and options without fio, then real fio runs on tmpfs,
//! a disk directory and a loop-mounted ext4 (the "matches fio by hand" checks).

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use super::datafile::verify_written;
use super::options::mem_total_bytes;
use super::*;
use crate::dataset::DatasetSpec;
use crate::fio::FioError;
use crate::results::Status;
use crate::workload::harness::PlainHarness;

/// A tmpfs mounted for one test and unmounted on drop, even when the test fails.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Tmpfs {
        let dir = tempfile::tempdir_in("/tmp").unwrap();
        rustix::mount::mount(
            "fsarena-test",
            dir.path(),
            "tmpfs",
            rustix::mount::MountFlags::empty(),
            std::ffi::CString::new(format!("size={size}"))
                .unwrap()
                .as_c_str(),
        )
        .unwrap();
        Tmpfs { dir }
    }
    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        use rustix::mount::{unmount, UnmountFlags};
        // io_uring tears its rings down asynchronously after fio exits, so the mount can
        // stay busy for a moment: retry briefly, then detach it lazily.
        for _ in 0..40 {
            match unmount(self.dir.path(), UnmountFlags::empty()) {
                Err(rustix::io::Errno::BUSY) => std::thread::sleep(Duration::from_millis(50)),
                _ => return,
            }
        }
        let _ = unmount(self.dir.path(), UnmountFlags::DETACH);
    }
}

/// Tests that run fio take turns: on a 2-core machine, concurrent fio runs would make
/// each other's IOPS meaningless to compare.
static FIO_TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn fio_turn() -> std::sync::MutexGuard<'static, ()> {
    FIO_TURN.lock().unwrap_or_else(|e| e.into_inner())
}

fn table(src: &str) -> toml::Table {
    src.parse().unwrap()
}

struct Env {
    dataset: DatasetSpec,
    options: toml::Table,
    cancel: AtomicBool,
    scratch: PathBuf,
}

impl Env {
    fn new(options: &str) -> Env {
        Env {
            dataset: DatasetSpec::default(),
            options: table(options),
            cancel: AtomicBool::new(false),
            scratch: std::env::temp_dir(),
        }
    }
    fn ctx<'a>(&'a self, root: &'a Path) -> Ctx<'a> {
        Ctx::new(
            root,
            &self.scratch,
            &self.dataset,
            &self.options,
            &self.cancel,
        )
    }
}

fn variants(points: &[Point]) -> Vec<&str> {
    points.iter().map(|p| p.variant.as_str()).collect()
}

#[test]
fn quick_preset_points() {
    let env = Env::new("");
    let dir = tempfile::tempdir().unwrap();
    let w = IoWorkload::quick();
    let points = w.points(&env.ctx(dir.path())).unwrap();
    assert_eq!(
        variants(&points),
        [
            "randread-bs4k-j1-qd32-small-direct",
            "randwrite-bs4k-j1-qd32-small-direct",
            "read-bs1m-j1-qd8-small-direct",
            "write-bs1m-j1-qd8-small-direct",
        ]
    );
    let p = &points[0].params;
    assert_eq!(p["rw"], "randread");
    assert_eq!(p["bs"], 4096);
    assert_eq!(p["numjobs"], 1);
    assert_eq!(p["iodepth"], 32);
    // 64 MiB × scale 0.01 is below the 16 MiB floor.
    assert_eq!(p["size_bytes"], 16 * MIB);
    assert_eq!(p["size_label"], "small");
    assert_eq!(p["direct"], true);
    assert_eq!(p["ioengine"], "auto");
    for point in &points {
        assert_eq!(PointSpec::from_point(point).unwrap().to_point(), *point);
    }
    assert_eq!(
        (w.spec().key_metric, w.spec().uses_threads),
        (("iops", true), false)
    );
}

#[test]
fn sweep_preset_points() {
    let mut env = Env::new("");
    env.dataset.scale = 1.0;
    let dir = tempfile::tempdir().unwrap();
    let points = IoWorkload::sweep().points(&env.ctx(dir.path())).unwrap();
    assert_eq!(points.len(), 4 * 3 * 4 * 8 * 2);
    let mut seen: Vec<&str> = variants(&points);
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), points.len(), "variants are unique");
    assert!(seen.contains(&"randwrite-bs512k-j4-qd128-large-direct"));
    assert!(seen.contains(&"read-bs8k-j1-qd1-small-direct"));
    let large = points
        .iter()
        .find(|p| p.params["size_label"] == "large")
        .unwrap();
    let small = points
        .iter()
        .find(|p| p.params["size_label"] == "small")
        .unwrap();
    let (l, s) = (
        large.params["size_bytes"].as_u64().unwrap(),
        small.params["size_bytes"].as_u64().unwrap(),
    );
    assert_eq!(s, 64 * MIB);
    let free = {
        let v = rustix::fs::statvfs(dir.path()).unwrap();
        v.f_bavail * v.f_frsize
    };
    // Free space moves while others write; allow 1 GiB of drift.
    assert!(l >= s && l <= free / 2 + (1 << 30), "{l} vs free {free}");
    assert!(l <= 2 * mem_total_bytes().unwrap() && l % MIB == 0);
    // max_large caps it; scale shrinks it.
    let mut env = Env::new("max_large = \"100m\"");
    env.dataset.scale = 1.0;
    let points = IoWorkload::sweep().points(&env.ctx(dir.path())).unwrap();
    assert!(points
        .iter()
        .filter(|p| p.params["size_label"] == "large")
        .all(|p| p.params["size_bytes"] == 100 * MIB));
}

#[test]
fn options_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let points = |opts: &str| {
        let env = Env::new(opts);
        IoWorkload::quick().points(&env.ctx(dir.path()))
    };
    let err = points("blocksize = 4096").unwrap_err().to_string();
    assert!(
        err.contains("`blocksize`") && err.contains("rw, bs, numjobs"),
        "{err}"
    );
    for bad in [
        "rw = [\"readwrite\"]",
        "bs = [\"4q\"]",
        "iodepth = [0]",
        "numjobs = []",
        "direct = [1]",
        "ioengine = [\"windowsaio\"]",
        "runtime = -1",
        "rwmixread = 101",
        "size = [\"huge\"]",
        "bs = [\"32m\"]",
    ] {
        assert!(
            matches!(points(bad), Err(WorkloadError::Option(_))),
            "{bad} accepted"
        );
    }
    let p = points(
        "rw = \"randrw\"\nrwmixread = 70\nbs = [\"8k\", 65536]\nsize = [\"32m\"]\n\
         direct = [false]\nioengine = [\"psync\"]\nnumjobs = [2]",
    )
    .unwrap();
    assert_eq!(
        variants(&p),
        [
            "randrw70-bs8k-j2-qd32-32m-buffered-psync",
            "randrw70-bs64k-j2-qd32-32m-buffered-psync"
        ]
    );
    assert_eq!(p[0].params["rwmixread"], 70);
}

/// The same job by hand, outside fsarena: the IOPS fio reports for it.
fn fio_by_hand(dir: &Path, job: &FioJob) -> f64 {
    let out = Command::new("fio")
        .args(job.args())
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    fio::parse_output(&out.stdout).unwrap().iops()
}

/// Every 4 KiB block of the data file holds non-zero bytes and the file has no hole.
fn assert_all_written(path: &Path, size: u64) {
    let f = fs::File::open(path).unwrap();
    assert_eq!(f.metadata().unwrap().len(), size);
    let hole = rustix::fs::seek(&f, rustix::fs::SeekFrom::Hole(0)).unwrap();
    assert_eq!(hole, size, "hole in the data file");
    let mut buf = vec![0u8; 4096];
    for off in (0..size).step_by(4096) {
        f.read_exact_at(&mut buf, off).unwrap();
        assert!(buf.iter().any(|&b| b != 0), "zero block at {off}");
    }
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs one randread point through the workload and the same job by hand, alternately;
/// the median IOPS must agree within a factor of 1.6 either way: it catches a harness that
/// halves (or doubles) what fio does, not noise. Up to five pairs, since other processes
/// share this 2-core machine and a CPU-bound tmpfs run swings with them (seen on
/// 2026-11-23: fio by hand alone gave 230k, 323k and 514k IOPS in three back-to-back runs;
/// CI's lib run, other tests beside it, gave medians 507k and 354k, a ratio of 1.43, which
/// the earlier ±30 % failed).
fn read_point_matches_fio_by_hand(root: &Path, direct: bool) {
    let opts = format!(
        "rw = [\"randread\"]\nbs = [\"4k\"]\niodepth = [8]\nruntime = 1\nramp_time = 0.2\n\
         direct = [{direct}]"
    );
    let env = Env::new(&opts);
    let ctx = env.ctx(root);
    let w = IoWorkload::quick();
    let points = w.points(&ctx).unwrap();
    assert_eq!(points.len(), 1);
    let spec = PointSpec::from_point(&points[0]).unwrap();
    let cfg = Config::from_options(Preset::Quick, &env.options, "io-quick").unwrap();
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        let mut h = PlainHarness::default();
        let out = w.run(&ctx, &points[0], &mut h).unwrap();
        assert_eq!(h.measured, 1);
        let m = &out.metrics;
        assert!(m["iops"] > 0.0 && m["read_iops"] == m["iops"] && m["write_iops"] == 0.0);
        assert!(m["lat_p50_us"] <= m["lat_p99_us"] && m["lat_p99_us"] <= m["lat_p99_99_us"]);
        assert!(out.seconds > 0.9 && out.seconds < 2.0, "{}", out.seconds);
        assert!(out.logical_read_bytes > 0 && out.logical_write_bytes == 0);
        assert!(
            out.notes.iter().any(|n| n.contains("laid out")),
            "{:?}",
            out.notes
        );
        assert!(
            out.notes.iter().any(|n| n.contains("time-based")),
            "{:?}",
            out.notes
        );
        // The read point read written data: the file it read has no hole and no zero block.
        assert_all_written(&root.join(spec.filename()), spec.size_bytes);
        ours.push(m["iops"]);
        let engine = w.engine_for(&ctx, &[]).unwrap().0;
        theirs.push(fio_by_hand(root, &spec.job(&cfg, engine)));
        if (1.0 / 1.6..=1.6).contains(&(median(&ours) / median(&theirs))) {
            return;
        }
    }
    panic!("fsarena and fio by hand disagree on IOPS: {ours:?} vs {theirs:?}");
}

#[test]
fn real_run_on_disk_matches_fio_by_hand() {
    let _turn = fio_turn();
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    read_point_matches_fio_by_hand(dir.path(), true);
}

#[test]
fn real_run_on_loop_mounted_ext4_matches_fio_by_hand() {
    use crate::provision::{Instance, InstanceSpec, WorkDir};
    let _turn = fio_turn();
    let root = tempfile::tempdir_in("/var/tmp").unwrap();
    let work = WorkDir::create(root.path()).unwrap();
    let target = crate::plan::catalogue::get("ext4").unwrap();
    let spec = InstanceSpec {
        target: &target,
        seq: 1,
        size: 1 << 30,
        allow_device: false,
        wipe: false,
        daemon_cpus: None,
    };
    // Dropped on a panic too: unmounted and detached either way.
    let inst = Instance::provision(&spec, &work).unwrap();
    read_point_matches_fio_by_hand(&inst.root, true);
    let (_, res) = inst.teardown(false);
    res.unwrap();
}

#[test]
fn real_run_on_tmpfs_matches_fio_by_hand() {
    let _turn = fio_turn();
    let t = Tmpfs::mount("64m");
    read_point_matches_fio_by_hand(t.path(), false);
}

#[test]
fn quick_preset_runs_every_point_on_tmpfs() {
    let _turn = fio_turn();
    let t = Tmpfs::mount("64m");
    let env = Env::new("runtime = 0.5\nramp_time = 0");
    let ctx = env.ctx(t.path());
    let w = IoWorkload::quick();
    let mut layouts = Vec::new();
    for point in w.points(&ctx).unwrap() {
        let mut h = PlainHarness::default();
        let out = w.run(&ctx, &point, &mut h).unwrap();
        layouts.push(out.notes.iter().any(|n| n.starts_with("laid out")));
        let writes = point.params["rw"].as_str().unwrap().contains("write");
        assert_eq!(out.logical_write_bytes > 0, writes, "{}", point.variant);
        assert_eq!(out.logical_read_bytes > 0, !writes, "{}", point.variant);
        for key in [
            "iops",
            "mb_per_s",
            "read_iops",
            "write_iops",
            "lat_mean_us",
            "lat_p50_us",
            "lat_p90_us",
            "lat_p99_us",
            "lat_p99_9_us",
            "lat_p99_99_us",
            "fio_cpu_usr_pct",
            "fio_cpu_sys_pct",
        ] {
            assert!(
                out.metrics.contains_key(key),
                "{key} missing in {}",
                point.variant
            );
        }
        let bs = point.params["bs"].as_f64().unwrap();
        let mbps = out.metrics["iops"] * bs / 1e6;
        assert!((mbps / out.metrics["mb_per_s"] - 1.0).abs() < 0.01);
        assert!(out.notes.iter().any(|n| n.starts_with("ioengine auto → ")));
    }
    // randread lays out; randwrite reuses that pristine file and ages it; read must lay
    // out again; write reuses read's file.
    assert_eq!(layouts, [true, false, true, false]);
    // The last point wrote, so its aged data file was removed: nothing is left behind.
    let files: Vec<_> = fs::read_dir(t.path()).unwrap().collect();
    assert!(files.is_empty(), "{files:?}");
}

#[test]
fn a_damaged_pristine_file_is_laid_out_again() {
    let _turn = fio_turn();
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let env = Env::new("");
    let ctx = env.ctx(dir.path());
    let name = "fsarena-io-1048576.dat";
    // A marker next to a sparse file of the right size: reading it would read a hole.
    fs::File::create(dir.path().join(name))
        .unwrap()
        .set_len(MIB)
        .unwrap();
    fs::write(dir.path().join(pristine_marker(name)), "1048576").unwrap();
    assert!(matches!(
        verify_written(&dir.path().join(name), MIB),
        Err(WorkloadError::Verify(_))
    ));
    let note = prepare_file(&ctx, name, MIB).unwrap();
    assert!(note.starts_with("laid out"), "{note}");
    assert_all_written(&dir.path().join(name), MIB);
    let again = prepare_file(&ctx, name, MIB).unwrap();
    assert!(again.starts_with("reused"), "{again}");
}

#[test]
fn size_bounded_mixed_job_moves_exactly_its_size() {
    let _turn = fio_turn();
    let t = Tmpfs::mount("64m");
    let env = Env::new(
        "rw = [\"randrw\"]\nrwmixread = 70\nbs = [\"4k\"]\niodepth = [4]\nnumjobs = [2]\n\
         runtime = 0\ndirect = [false]\nsize = [\"8m\"]",
    );
    let ctx = env.ctx(t.path());
    let w = IoWorkload::quick();
    let point = &w.points(&ctx).unwrap()[0];
    let out = w.run(&ctx, point, &mut PlainHarness::default()).unwrap();
    assert_eq!(
        out.logical_read_bytes + out.logical_write_bytes,
        2 * 8 * MIB
    );
    assert!(out.logical_read_bytes > out.logical_write_bytes);
    assert!(out.metrics.contains_key("read_lat_p99_us"));
    assert!(out.metrics.contains_key("write_lat_p99_us"));
    assert!(
        out.notes.iter().any(|n| n.contains("size-bounded")),
        "{:?}",
        out.notes
    );
}

#[test]
fn full_target_fails_the_point_with_enospc() {
    let _turn = fio_turn();
    let t = Tmpfs::mount("4m");
    let env = Env::new("size = [\"16m\"]\nrw = [\"read\"]\nbs = [\"1m\"]");
    let ctx = env.ctx(t.path());
    let w = IoWorkload::quick();
    let point = &w.points(&ctx).unwrap()[0];
    let mut h = PlainHarness::default();
    let err = w.run(&ctx, point, &mut h).unwrap_err();
    assert_eq!(err.status(), Status::Enospc, "{err}");
    assert_eq!(h.measured, 0, "nothing is measured when the lay-out fails");
}

#[test]
fn cancel_mid_run_interrupts_and_stops_fio() {
    let _turn = fio_turn();
    let t = Tmpfs::mount("64m");
    let env = Env::new("rw = [\"randread\"]\nruntime = 30\ndirect = [false]");
    let ctx = env.ctx(t.path());
    let w = IoWorkload::quick();
    let point = &w.points(&ctx).unwrap()[0];
    let started = Instant::now();
    let err = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(1500));
            env.cancel.store(true, Ordering::Relaxed);
        });
        w.run(&ctx, point, &mut PlainHarness::default())
            .unwrap_err()
    });
    assert!(matches!(err, WorkloadError::Interrupted), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
    // fio was killed and reaped: no process is left working in the directory.
    let stale: Vec<_> = fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| fs::read_link(e.ok()?.path().join("cwd")).ok())
        .filter(|cwd| cwd.starts_with(t.path()))
        .collect();
    assert!(
        stale.is_empty(),
        "processes still in {}",
        t.path().display()
    );
}

#[test]
fn check_options_refuses_bad_values_before_provisioning() {
    let check = |opts: &str| IoWorkload::quick().check_options(&table(opts));
    let err = check("blocksize = 4096").unwrap_err();
    assert!(
        err.contains("`blocksize`") && err.contains("rw, bs, numjobs"),
        "{err}"
    );
    for bad in [
        "rw = [\"readwrite\"]",
        "bs = [\"4q\"]",
        "bs = [\"1.3\"]",
        "iodepth = [0]",
        "iodepth = [5000]",
        "numjobs = []",
        "numjobs = [2000]",
        "direct = [1]",
        "ioengine = [\"windowsaio\"]",
        "runtime = -1",
        "runtime = \"3s\"",
        "ramp_time = nan",
        "rwmixread = 101",
        "size = [\"huge\"]",
        "small = 0",
        "max_large = \"big\"",
        // Known without the target: a block larger than an explicit file size.
        "bs = [\"32m\"]\nsize = [\"16m\"]",
        "bs = [\"32m\"]\nsmall = \"16m\"",
        "hosts = []",
        "hosts = [\"h:0\"]",
        "hosts = [\"127.0.0.2\", \"127.0.0.2:8765\"]",
    ] {
        let err = check(bad).expect_err(bad);
        assert!(
            err.starts_with("[workload.io-quick]") || err.starts_with("io-quick:"),
            "{err}"
        );
        assert!(!err.contains('\n'), "{err}");
    }
    assert!(check("").is_ok());
    assert!(IoWorkload::sweep()
        .check_options(&table(
            "rw = \"randrw\"\nrwmixread = 0\nruntime = 0\nbs = 4096"
        ))
        .is_ok());
}

#[test]
fn fio_errors_keep_their_status() {
    let missing = WorkloadError::from(FioError::NotInstalled);
    assert!(
        matches!(missing, WorkloadError::Unsupported(_)),
        "{missing:?}"
    );
    let msg = missing.to_string();
    assert!(msg.contains("Debian package `fio`"), "{msg}");
    assert!(msg.contains("apt-get install fio"), "{msg}");

    // A job fio failed with ENOSPC is recorded as ENOSPC, not as a generic error.
    let enospc = include_str!("../../fio/testdata/dev-full-enospc.json");
    let run = fio::FioRun {
        report: fio::parse_output(enospc.as_bytes()).unwrap(),
        stderr: "fio: io_u error on file /dev/full: No space left on device\n".into(),
        status: std::os::unix::process::ExitStatusExt::from_raw(1 << 8),
    };
    let job = FioJob {
        name: "t".into(),
        filename: "f".into(),
        rw: Rw::Write,
        rwmixread: 50,
        bs: 4096,
        size: 16 << 20,
        numjobs: 2,
        iodepth: 4,
        direct: false,
        ioengine: IoEngine::Psync,
        runtime: None,
        ramp_time: Duration::ZERO,
        end_fsync: false,
    };
    let err = WorkloadError::from(fio::verify(&job, &run).unwrap_err());
    assert_eq!(err.status(), Status::Enospc);
    assert!(err.to_string().contains("No space left"), "{err}");
    let lie = WorkloadError::from(FioError::Verify("moved 0 bytes".into()));
    assert!(matches!(lie, WorkloadError::Verify(_)));
}

/// Regression (issue 14): the io tables showed p99 alone; p50 and p99.9 say how wide the
/// latency distribution is.
#[test]
fn io_tables_show_latency_percentiles() {
    for w in [IoWorkload::quick(), IoWorkload::sweep()] {
        let cols = w.spec().columns;
        for c in ["lat_p50_us", "lat_p99_us", "lat_p99_9_us"] {
            assert!(cols.contains(&c), "{}: no column {c}", w.spec().name);
        }
    }
}

/// The plan hands `--io-hosts` to the workloads it names as io workloads: these.
#[test]
fn the_plan_names_the_io_workloads_by_their_names() {
    let names = [
        IoWorkload::quick().spec().name,
        IoWorkload::sweep().spec().name,
    ];
    assert_eq!(names, crate::plan::io_hosts::IO_WORKLOADS);
}
