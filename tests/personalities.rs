//! The application personalities and the mixes users write, run on real ext4 loop targets
//! at a small scale: each reports operations/s and per-operation percentiles and passes
//! its own check; a mix repeats exactly for a seed; bad mixes are refused with exit 2
//! before anything is provisioned.

mod common;

use std::path::Path;
use std::process::Command;

use common::{bin, leftovers, measurements, require_root, TestRoot};

fn run(args: &[&str], root: &Path, out: &str) -> (std::process::Output, Vec<serde_json::Value>) {
    let out = root.join(out);
    let run = Command::new(bin())
        .arg("run")
        .args(args)
        .args(["--quiet", "--scale", "0.005"])
        .arg("--work-dir")
        .arg(root.join("work"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{args:?}: {err}");
    let ms = measurements(&out);
    (run, ms)
}

fn metric(m: &serde_json::Value, k: &str) -> f64 {
    m["metrics"][k]
        .as_f64()
        .unwrap_or_else(|| panic!("no {k}: {}", m["metrics"]))
}

#[test]
fn each_personality_runs_on_ext4_and_reports_ops_and_percentiles() {
    require_root();
    let root = TestRoot::new("personalities");
    let (_, ms) = run(
        &[
            "--target",
            "ext4",
            "--workload",
            "fileserver,varmail,webserver,untar",
            "--runs",
            "1",
        ],
        &root.path,
        "out",
    );
    assert_eq!(ms.len(), 4, "{ms:?}");
    for m in &ms {
        assert_eq!(m["status"], "ok", "{m}");
        let w = m["workload"].as_str().unwrap();
        assert!(metric(m, "ops_per_s") > 0.0, "{w}");
        let ops: &[&str] = match w {
            "fileserver" => &["create", "append", "read", "stat", "delete"],
            "varmail" => &["create", "append", "read", "delete"],
            "webserver" => &["read", "log_append"],
            "untar" => &["file"],
            other => panic!("unexpected workload {other}"),
        };
        for op in ops {
            let p50 = metric(m, &format!("{op}_p50_us"));
            let p99 = metric(m, &format!("{op}_p99_us"));
            let p999 = metric(m, &format!("{op}_p999_us"));
            assert!(
                0.0 < p50 && p50 <= p99 && p99 <= p999,
                "{w} {op}: {}",
                m["metrics"]
            );
            assert!(metric(m, &format!("{op}_ops")) > 0.0, "{w} {op}");
        }
        if w != "untar" {
            // The operations counted are the ones the shipped mix asks for at this scale.
            assert_eq!(metric(m, "ops") as u64, planned_ops(w), "{w}");
        }
    }
    assert!(leftovers(&root.path).is_empty());
}

/// Operations the personality `w` does at `--scale 0.005`, log appends included.
fn planned_ops(w: &str) -> u64 {
    use fsarena::workload::mix::{self, spec::Stop};
    let p = match w {
        "fileserver" => mix::FILESERVER,
        "varmail" => mix::VARMAIL,
        _ => mix::WEBSERVER,
    };
    let s = p.mix_spec(&toml::Table::new()).unwrap().at_scale(0.005);
    let Stop::Ops(n) = s.stop else {
        panic!("{w} is not a counted mix")
    };
    let log = s.log.map_or(0, |l| {
        (l.per_op * n as f64 / l.appenders as f64) as u64 * l.appenders as u64
    });
    n + log
}

const MYMAIL: &str = "workloads = [\"mix\"]\ntargets = [\"ext4\"]\n\
    [workload.mix.mymail]\nthreads = 3\nfiles = 200\nprefill = 0.7\ndir_width = 4\ndir_depth = 2\n\
    file_size = { dist = \"gamma\", mean = \"8K\", shape = 1.5 }\nio_size = \"4K\"\n\
    fsync = \"each-file\"\ntotal_ops = 1500\n\
    ops = { create = 1, write = 1, append = 1, read = 2, delete = 1, stat = 1 }\n";

/// A user's mix runs from a plan file; two repetitions with one seed do the very same
/// operations (counts and bytes per operation type), another seed does not.
#[test]
fn a_mix_from_the_plan_file_repeats_exactly_for_a_seed() {
    require_root();
    let root = TestRoot::new("mix-seed");
    let plan = root.path.join("plan.toml");
    std::fs::write(&plan, MYMAIL).unwrap();
    let plan = plan.to_str().unwrap();
    let (_, a) = run(&[plan, "--runs", "2", "--seed", "7"], &root.path, "a");
    let (_, b) = run(&[plan, "--runs", "1", "--seed", "8"], &root.path, "b");
    assert_eq!(a.len(), 2);
    let same = |k: &str| {
        assert_eq!(
            metric(&a[0], k),
            metric(&a[1], k),
            "{k} differs for one seed"
        );
    };
    for k in [
        "create_ops",
        "write_ops",
        "append_ops",
        "read_ops",
        "stat_ops",
        "delete_ops",
    ] {
        same(k);
    }
    same("files_at_end");
    same("logical_write_bytes");
    same("logical_read_bytes");
    assert_eq!(a[0]["variant"], "mymail");
    assert_eq!(metric(&a[0], "ops"), 1500.0);
    assert_eq!(metric(&a[0], "worker_threads"), 3.0);
    assert_ne!(
        metric(&a[0], "logical_write_bytes"),
        metric(&b[0], "logical_write_bytes"),
        "another seed wrote the same bytes"
    );
    assert!(leftovers(&root.path).is_empty());
}

/// A bad mix is bad input: one line naming the key, exit 2, and no run directory made.
#[test]
fn bad_mixes_are_refused_with_exit_2_before_provisioning() {
    require_root();
    let root = TestRoot::new("mix-bad");
    let head = "targets = [\"ext4\"]\n";
    let cases: &[(&str, &str)] = &[
        ("workloads = [\"mix\"]\n[workload.mix.m]\nfiles = 10\ntotal_ops = 5\nops = { read = 1 }\nfsink = \"never\"\n", "`fsink`"),
        ("workloads = [\"mix\"]\n[workload.mix.m]\nfiles = 10\ntotal_ops = 5\nops = { read = 0 }\n", "`ops`"),
        ("workloads = [\"mix\"]\n[workload.mix.m]\nfiles = 10\ntotal_ops = 5\nops = { read = 1 }\nfile_size = \"lots\"\n", "`file_size`"),
        ("workloads = [\"mix\"]\n[workload.mix.m]\nfiles = 10\ntotal_ops = 5\nops = { read = 1 }\nfile_size = { dist = \"uniform\", min = \"2M\", max = \"1M\" }\n", "`file_size`"),
        ("workloads = [\"mix\"]\n", "[workload.mix.NAME]"),
        ("workloads = [\"varmail\"]\n[workload.varmail]\nfsync = \"often\"\n", "`fsync`"),
        ("workloads = [\"untar\"]\n[workload.untar]\nprofile = \"tiny\"\n", "`profile`"),
    ];
    for (i, (body, what)) in cases.iter().enumerate() {
        let dir = root.path.join(format!("case{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        let plan = dir.join("plan.toml");
        std::fs::write(&plan, format!("{head}{body}")).unwrap();
        let run = Command::new(bin())
            .arg("run")
            .arg(&plan)
            .arg("--work-dir")
            .arg(dir.join("work"))
            .arg("--out")
            .arg(dir.join("out"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{body}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{body}: {err}");
        assert!(err.contains(what), "{body}: {err}");
        let made = std::fs::read_dir(dir.join("work")).map_or(0, |rd| rd.count());
        assert_eq!(made, 0, "{body}: something was provisioned");
    }
}
