//! One test per defect found and fixed, named for it (ripgrep's habit): each fails on the
//! code before its fix.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{bin, leftovers, require_root, TestRoot};
use fsarena::results::store;
use fsarena::results::Status;

/// An xfs file system on a loop device of our own, mounted for the test, taken down on drop.
struct XfsWorkDir {
    mnt: PathBuf,
    dev: String,
}

impl XfsWorkDir {
    fn new(root: &Path) -> XfsWorkDir {
        let img = root.join("workdir-xfs.img");
        let f = std::fs::File::create(&img).unwrap();
        f.set_len(8 << 30).unwrap();
        drop(f);
        let out = Command::new("losetup")
            .args(["--find", "--show", "--direct-io=on"])
            .arg(&img)
            .output()
            .unwrap();
        assert!(out.status.success());
        let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let mnt = root.join("workdir-xfs");
        std::fs::create_dir_all(&mnt).unwrap();
        let w = XfsWorkDir { mnt, dev };
        let ok = |c: &mut Command| assert!(c.status().unwrap().success(), "{c:?}");
        ok(Command::new("mkfs.xfs").args(["-q", "-m", "reflink=1", &w.dev]));
        ok(Command::new("mount").arg(&w.dev).arg(&w.mnt));
        w
    }
}

impl Drop for XfsWorkDir {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mnt).status();
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
    }
}

/// Defect: with the work directory on xfs, a populated xfs image was made on a loop device
/// with 512-byte sectors, and its copies were attached with 4096-byte ones, which xfs
/// refuses to mount ("device supports 4096 byte sectors (not 512)"): every cell that starts
/// from the data set failed. Copies are now attached with the master's sector size.
#[test]
fn clones_mount_when_the_work_directory_is_on_xfs() {
    require_root();
    let root = TestRoot::new("xfs-workdir");
    let xfs = XfsWorkDir::new(&root.path);
    let (out, work) = (root.path.join("out"), xfs.mnt.join("work"));
    let o = Command::new(bin())
        .args(["run", "--target", "xfs", "--target", "ext4"])
        .args(["--workload", "scan", "--runs", "1", "--scale", "0.002"])
        .args(["--quiet", "--out"])
        .arg(&out)
        .arg("--work-dir")
        .arg(&work)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let loaded = store::load(&out).unwrap();
    assert_eq!(loaded.measurements.len(), 4, "two targets × cold, warm");
    for m in &loaded.measurements {
        assert_eq!(
            m.status,
            Status::Ok,
            "{} {}: {:?}",
            m.target,
            m.variant,
            m.error
        );
        assert!(m.provenance.clone.is_some(), "ran on a clone");
    }
    let _ = Command::new(bin())
        .args(["cleanup", "--work-dir"])
        .arg(&work)
        .output();
    assert!(leftovers(&work).is_empty(), "{:?}", leftovers(&work));
}
