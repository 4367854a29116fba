//! Bad input gets one clear line naming what is wrong, exit code 2, and touches nothing.

mod common;

use std::path::Path;
use std::process::Command;

use common::{bin, fsarena, refused, require_root, TestRoot};

/// Nothing was created: no run directory under the work root.
fn untouched(work: &Path) {
    let runs = std::fs::read_dir(work).map(|rd| rd.count()).unwrap_or(0);
    assert_eq!(runs, 0, "something was created in {}", work.display());
}

#[test]
fn malformed_plans_name_file_line_and_column() {
    let root = TestRoot::new("cli-plan");
    let work = root.path.join("work");
    let plan = root.path.join("plan.toml");
    std::fs::write(
        &plan,
        "runs = 3\nthreads = [1, 2]\nworklaods = [\"scan\"]\n",
    )
    .unwrap();
    let out = fsarena(&["run", plan.to_str().unwrap(), "--dry-run"], &work);
    refused(&out, &["plan.toml:3:1", "worklaods"]);
    std::fs::write(&plan, "runs = 3\n[dataset\nprofile = \"small\"\n").unwrap();
    let out = fsarena(&["run", plan.to_str().unwrap()], &work);
    refused(&out, &["plan.toml:2:"]);
    std::fs::write(&plan, "threads = [0]\n").unwrap();
    refused(
        &fsarena(&["run", plan.to_str().unwrap()], &work),
        &["threads", "1 to 1024"],
    );
    std::fs::write(
        &plan,
        "targets = [\"tmpfs\"]\n[workload.scan]\ncolt = true\n",
    )
    .unwrap();
    refused(
        &fsarena(&["run", plan.to_str().unwrap()], &work),
        &["[workload.scan]", "`colt`"],
    );
    std::fs::write(
        &plan,
        "targets = [\"tmpfs\"]\n[workload.dupes]\ncolt = true\n",
    )
    .unwrap();
    refused(
        &fsarena(&["run", plan.to_str().unwrap()], &work),
        &["[workload.dupes]", "`colt`", "valid: cold"],
    );
    std::fs::write(&plan, "[[target]]\nname = \"x\"\nfs = \"zfs\"\n").unwrap();
    refused(
        &fsarena(&["run", plan.to_str().unwrap()], &work),
        &["unknown file system `zfs`", "ext4"],
    );
    untouched(&work);
}

#[test]
fn unknown_names_and_bad_numbers_list_what_is_valid() {
    let root = TestRoot::new("cli-names");
    let work = root.path.join("work");
    refused(
        &fsarena(&["run", "--target", "zfs"], &work),
        &["unknown target `zfs`", "btrfs-zstd", "dir:PATH"],
    );
    refused(
        &fsarena(
            &["run", "--target", "ext4", "--workload", "frobnicate"],
            &work,
        ),
        &["unknown workload `frobnicate`", "valid:"],
    );
    refused(
        &fsarena(&["run", "--target", "ext4", "--threads", "1,x"], &work),
        &["thread list"],
    );
    refused(
        &fsarena(&["run", "--target", "ext4", "--runs", "0"], &work),
        &["runs"],
    );
    refused(
        &fsarena(&["run", "--target", "ext4", "--scale", "-2"], &work),
        &["scale"],
    );
    refused(
        &fsarena(&["run", "--target", "ext4", "--fs-size", "12Q"], &work),
        &["size"],
    );
    refused(
        &fsarena(&["run", "--target", "ext4", "--baseline", "xfs"], &work),
        &["baseline `xfs`"],
    );
    untouched(&work);
}

#[test]
fn dir_targets_that_cannot_be_used_are_refused() {
    require_root();
    let root = TestRoot::new("cli-dir");
    let work = root.path.join("work");
    let missing = root.path.join("does-not-exist");
    let out = fsarena(
        &[
            "run",
            "--target",
            &format!("dir:{}", missing.display()),
            "--workload",
            "create",
        ],
        &work,
    );
    refused(&out, &["does-not-exist"]);
    // Inside fsarena's own work directory.
    std::fs::create_dir_all(work.join("inner")).unwrap();
    let out = fsarena(
        &[
            "run",
            "--target",
            &format!("dir:{}", work.join("inner").display()),
            "--workload",
            "create",
        ],
        &work,
    );
    refused(&out, &["inside fsarena's own work directory"]);
    assert_eq!(
        std::fs::read_dir(&work).unwrap().count(),
        1,
        "only the test's own dir"
    );
}

#[test]
fn results_directories_that_are_not_fsarenas_are_refused() {
    let root = TestRoot::new("cli-results");
    let work = root.path.join("work");
    let foreign = root.path.join("foreign");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("results.jsonl"), "{\"hello\": 1}\n").unwrap();
    let out = Command::new(bin())
        .args(["report"])
        .arg(&foreign)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not an fsarena results directory"));
    let out = fsarena(&["run", "--resume", foreign.to_str().unwrap()], &work);
    refused(&out, &["not an fsarena results directory"]);
    untouched(&work);
}

#[test]
fn named_devices_need_the_flag_and_are_checked() {
    require_root();
    let root = TestRoot::new("cli-dev");
    let work = root.path.join("work");
    // Without --allow-device the device is refused before anything is made.
    let out = fsarena(
        &[
            "run",
            "--target",
            "ext4@/dev/loop-nonexistent",
            "--workload",
            "create",
            "--runs",
            "1",
        ],
        &work,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("loop-nonexistent"), "{err}");
    // The root disk, by its /dev path, is refused even with --allow-device --wipe.
    let mi = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    if let Some(m) = fsarena::provision::mounts::parse_mountinfo(&mi)
        .into_iter()
        .find(|m| m.target == Path::new("/") && m.source.starts_with("/dev/"))
    {
        let spec = format!("ext4@{}", m.source);
        let out = fsarena(
            &[
                "run",
                "--target",
                &spec,
                "--workload",
                "create",
                "--runs",
                "1",
                "--allow-device",
                "--wipe",
            ],
            &work,
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{err}");
        assert!(
            err.contains("refusing to touch") && err.contains("mounted at /"),
            "{err}"
        );
    }
}

#[test]
fn not_root_says_what_still_works() {
    require_root();
    let root = TestRoot::new("cli-user");
    let work = root.path.join("work");
    // Drop to nobody for this one invocation.
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(bin())
        .args([
            "run",
            "--target",
            "ext4",
            "--workload",
            "create",
            "--work-dir",
        ])
        .arg(&work)
        .output()
        .unwrap();
    refused(&out, &["root", "dir:"]);
}

#[test]
fn a_scale_that_does_not_fit_is_refused_with_the_numbers() {
    require_root();
    let root = TestRoot::new("cli-space");
    let work = root.path.join("small");
    std::fs::create_dir_all(&work).unwrap();
    fsarena::provision::command::Cmd::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64M", "tmpfs"])
        .arg(work.display().to_string())
        .run("mount")
        .unwrap();
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = fsarena::provision::command::Cmd::new("umount")
                .arg(self.0.display().to_string())
                .output("");
        }
    }
    let _guard = Unmount(work.clone());
    let t0 = std::time::Instant::now();
    let out = fsarena(
        &[
            "run",
            "--target",
            "ext4",
            "--workload",
            "create",
            "--scale",
            "0.1",
        ],
        &work,
    );
    refused(&out, &["needs about", "free in", "lower --scale"]);
    untouched(&work);
    // Even an absurd scale is refused at once, not after generating the data.
    let out = fsarena(
        &[
            "run",
            "--target",
            "ext4",
            "--workload",
            "create",
            "--scale",
            "100",
        ],
        &work,
    );
    refused(&out, &["needs about"]);
    assert!(t0.elapsed() < std::time::Duration::from_secs(5));
}

#[test]
fn a_margin_that_is_not_a_percentage_in_0_to_100_is_refused() {
    let root = TestRoot::new("cli-margin");
    let work = root.path.join("work");
    for bad in ["0", "100", "-5", "nan", "inf", "abc", "250"] {
        refused(
            &fsarena(&["run", "--target", "ext4", "--margin", bad], &work),
            &["margin"],
        );
        for cmd in [&["report", "/nonexistent"][..], &["compare", "/a", "/b"]] {
            let out = Command::new(bin())
                .args(cmd)
                .args(["--margin", bad])
                .output()
                .unwrap();
            refused(&out, &["margin"]);
        }
    }
    untouched(&work);
}
