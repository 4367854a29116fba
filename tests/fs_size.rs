//! File systems sized like a device (issue 41, item 1): every loop target of a run gets the
//! same large sparse image (64 GiB unless `--fs-size`), recorded in every record's
//! provenance and stated in the report; a size too small for the data set, and an aged
//! plan whose aging would not fit the work directory, are refused before anything is made.

mod common;

use common::{leftovers, refused_before_provisioning, require_root, run_quiet, TestRoot};
use fsarena::provision::command::Cmd;
use fsarena::results::store;

/// The default: ext4, xfs and btrfs on the same 64 GiB sparse image, fresh and copied
/// alike, made with the flags that keep mkfs from zeroing or discarding it; tmpfs keeps a
/// size from the data set; the report's header says so.
#[test]
fn default_images_are_all_the_same_size_and_64_gib_nominal() {
    require_root();
    let root = TestRoot::new("fs-size-default");
    let (out, work) = (root.path.join("out"), root.path.join("work"));
    let args = common::with_targets(
        &["ext4", "xfs", "btrfs", "tmpfs"],
        &[
            "--workload",
            "create,scan",
            "--runs",
            "1",
            "--scale",
            "0.002",
            "--phase-floor",
            "0",
        ],
    );
    let o = run_quiet(&args, &out, &work);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let loaded = store::load(&out).unwrap();
    let mut cloned = 0;
    for m in &loaded.measurements {
        assert!(
            m.status.is_ok(),
            "{} {}: {:?}",
            m.target,
            m.workload,
            m.error
        );
        let p = &m.provenance;
        if m.target == "tmpfs" {
            assert_eq!(
                p.image_bytes,
                Some(1 << 30),
                "tmpfs is sized from the data set"
            );
            continue;
        }
        assert_eq!(p.location, "loop");
        assert_eq!(p.image_bytes, Some(64 << 30), "{} {}", m.target, m.workload);
        cloned += usize::from(p.clone.is_some());
        let mkfs = p.mkfs_command.clone().unwrap_or_default().join(" ");
        let flag = match m.target.as_str() {
            "ext4" => "assume_storage_prezeroed=1",
            _ => " -K",
        };
        assert!(mkfs.contains(flag), "{}: {mkfs}", m.target);
    }
    // scan's two points on each disk target are measured on copies of its populated image.
    assert!(cloned >= 3, "{cloned}");
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        summary.contains("File systems: 64.0 GiB each, sparse loop images"),
        "{summary}"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("64.0 GiB each, sparse loop images"));
    assert!(leftovers(&root.path).is_empty());
}

/// `fs_size` in a plan file (and `--fs-size`) sizes every loop image, and the records say
/// so; the dry run states it.
#[test]
fn fs_size_is_honoured_and_recorded() {
    require_root();
    let root = TestRoot::new("fs-size-given");
    let (out, work) = (root.path.join("out"), root.path.join("work"));
    let plan = root.path.join("plan.toml");
    std::fs::write(
        &plan,
        "targets = [\"ext4\", \"xfs\"]\nworkloads = [\"create\"]\nruns = 1\nscale = 0.002\nfs_size = \"2G\"\n",
    )
    .unwrap();
    let dry = run_quiet(&[plan.to_str().unwrap(), "--dry-run"], &out, &work);
    let text = String::from_utf8_lossy(&dry.stdout);
    assert!(text.contains("2.0 GiB each (--fs-size)"), "{text}");
    let o = run_quiet(&[plan.to_str().unwrap()], &out, &work);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let loaded = store::load(&out).unwrap();
    assert_eq!(loaded.measurements.len(), 2);
    for m in &loaded.measurements {
        assert_eq!(m.provenance.image_bytes, Some(2 << 30), "{}", m.target);
    }
    let dry = run_quiet(
        &["--target", "ext4", "--fs-size", "3G", "--dry-run"],
        &out,
        &work,
    );
    let text = String::from_utf8_lossy(&dry.stdout);
    assert!(text.contains("3.0 GiB each (--fs-size)"), "{text}");
}

/// A `--fs-size` below what the data set needs is refused (exit 2, one line naming the
/// minimum) before anything is made.
#[test]
fn a_fs_size_too_small_for_the_data_set_is_refused_before_provisioning() {
    let root = TestRoot::new("fs-size-small");
    let plan = root.path.join("plan.toml");
    // ~400 MiB of data: at least twice that, and 128 MiB.
    std::fs::write(
        &plan,
        "targets = [\"ext4\"]\nworkloads = [\"create\"]\nscale = 0.1\nfs_size = \"600M\"\n",
    )
    .unwrap();
    refused_before_provisioning(&root.path, &plan, "fs-size 600.0 MiB is too small");
    refused_before_provisioning(&root.path, &plan, "give --fs-size of at least");
}

/// Issue 39 item 2 / issue 41: `--age 50` with a work directory on a 600 MB tmpfs died in
/// aging with "statvfs …: Input/output error", because the space check did not count what
/// aging writes. It is now refused up front, saying what aging would write.
#[test]
fn an_aged_plan_whose_fill_does_not_fit_the_work_directory_is_refused() {
    require_root();
    let root = TestRoot::new("fs-size-aged");
    let small = root.path.join("small");
    std::fs::create_dir_all(&small).unwrap();
    Cmd::new("mount")
        .args(["-t", "tmpfs", "-o", "size=600m", "tmpfs"])
        .arg(small.display().to_string())
        .run("mount")
        .unwrap();
    let unmount = || {
        let _ = Cmd::new("umount")
            .arg(small.display().to_string())
            .output("");
    };
    let plan = small.join("plan.toml");
    std::fs::write(
        &plan,
        "targets = [\"ext4\"]\nworkloads = [\"create\"]\nruns = 1\nscale = 0.002\nage = 50\n",
    )
    .unwrap();
    let result = std::panic::catch_unwind(|| {
        refused_before_provisioning(&small, &plan, "aging writing 5.0 GiB");
    });
    unmount();
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}
