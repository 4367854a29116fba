//! A btrfs file system of its own for a test that needs one (reflinks, clones): made on a
//! sparse image and a loop device, undone on drop.

/// A btrfs file system on a loop device for one test: image, loop device and mount are all
/// undone on drop, also when the test fails.
pub struct LoopBtrfs {
    dir: tempfile::TempDir,
    image: std::path::PathBuf,
    device: Option<String>,
    mounted: bool,
}

impl LoopBtrfs {
    pub fn mnt(&self) -> std::path::PathBuf {
        self.dir.path().join("mnt")
    }

    pub fn new(bytes: u64) -> LoopBtrfs {
        use std::process::Command;
        let dir = super::var_tmp_dir();
        let image = dir.path().join("btrfs.img");
        let mut me = LoopBtrfs {
            dir,
            image,
            device: None,
            mounted: false,
        };
        std::fs::File::create(&me.image)
            .unwrap()
            .set_len(bytes)
            .unwrap();
        let out = Command::new("losetup")
            .args(["--find", "--show"])
            .arg(&me.image)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "losetup: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let dev = String::from_utf8(out.stdout).unwrap().trim().to_string();
        me.device = Some(dev.clone());
        let out = Command::new("mkfs.btrfs")
            .args(["-q", "-f", &dev])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "mkfs.btrfs: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::create_dir(me.mnt()).unwrap();
        rustix::mount::mount(
            dev.as_str(),
            me.mnt(),
            "btrfs",
            rustix::mount::MountFlags::empty(),
            None,
        )
        .unwrap();
        me.mounted = true;
        me
    }
}

impl Drop for LoopBtrfs {
    fn drop(&mut self) {
        if self.mounted {
            let _ = rustix::mount::unmount(self.mnt(), rustix::mount::UnmountFlags::empty())
                .or_else(|_| {
                    rustix::mount::unmount(self.mnt(), rustix::mount::UnmountFlags::DETACH)
                });
        }
        if let Some(dev) = &self.device {
            let _ = std::process::Command::new("losetup")
                .args(["-d", dev])
                .status();
        }
    }
}
