//! Loop devices, through losetup (which handles LOOP_CTL_GET_FREE races for us).

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::command::Cmd;
use super::error::ProvisionError;
use crate::sys::DevId;

/// An attached loop device.
#[derive(Debug, Clone)]
pub struct LoopDev {
    pub path: PathBuf,
    pub dev: DevId,
    /// Whether the kernel really granted direct I/O (it silently may not).
    pub direct_io: bool,
}

/// The `losetup` command that attaches `image` with direct I/O, with the logical sector
/// size `sector` when given.
pub fn attach_cmd(image: &Path, sector: Option<u32>) -> Cmd {
    let cmd = Cmd::new("losetup").args(["--find", "--show", "--direct-io=on"]);
    let cmd = match sector {
        Some(n) => cmd.args(["--sector-size", &n.to_string()]),
        None => cmd,
    };
    cmd.arg(image.display().to_string())
}

/// Attaches `image` with direct I/O on, so the host page cache does not cache the image a
/// second time under the file system's own cache. `sector` pins the logical sector size:
/// a copy of a populated image must be presented with the geometry it was made on, and the
/// kernel's default can differ between two attaches of the same bytes (on an xfs work
/// directory, a new sparse file gets 512-byte sectors, a copy of it 4096).
pub fn attach(image: &Path, sector: Option<u32>) -> Result<LoopDev, ProvisionError> {
    let ran = attach_cmd(image, sector).run("util-linux")?;
    let path = PathBuf::from(ran.stdout.trim());
    let meta = fs::metadata(&path)
        .map_err(|e| ProvisionError::io(format!("cannot stat {}", path.display()), e))?;
    use std::os::unix::fs::MetadataExt;
    let dev = DevId::from_dev_t(meta.rdev());
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let direct_io = fs::read_to_string(format!("/sys/block/{name}/loop/dio"))
        .map(|s| s.trim() == "1")
        .unwrap_or(false);
    Ok(LoopDev {
        path,
        dev,
        direct_io,
    })
}

/// The logical sector size of an attached loop device (`/dev/loopN`), from sysfs.
pub fn sector_size(dev: &Path) -> Option<u32> {
    let name = dev.file_name()?.to_string_lossy().into_owned();
    fs::read_to_string(format!("/sys/block/{name}/queue/logical_block_size"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Detaches, retrying while udev or a FUSE daemon still holds the device.
pub fn detach(dev: &Path) -> Result<(), ProvisionError> {
    let cmd = Cmd::new("losetup").arg("-d").arg(dev.display().to_string());
    let mut last = None;
    settle();
    for attempt in 0..20 {
        let ran = cmd.output("util-linux")?;
        if ran.success {
            // `losetup -d` on a device someone still has open (udev probing after the
            // unmount) only sets autoclear and succeeds; wait until it is really gone.
            return wait_detached(dev);
        }
        last = Some(cmd.failure(&ran));
        settle();
        std::thread::sleep(Duration::from_millis(50 * (attempt + 1)));
    }
    Err(last.unwrap_or_else(|| ProvisionError::Unsupported("losetup -d failed".into())))
}

fn wait_detached(dev: &Path) -> Result<(), ProvisionError> {
    let name = dev
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let backing = format!("/sys/block/{name}/loop/backing_file");
    for attempt in 0..100 {
        if !Path::new(&backing).exists() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(10 * (attempt + 1).min(10)));
    }
    Err(ProvisionError::Unsupported(format!(
        "{} is still attached 5 s after losetup -d: something holds it open",
        dev.display()
    )))
}

/// Waits for udev to finish with new or vanishing devices, where udev runs.
pub fn settle() {
    if Path::new("/run/udev/control").exists() {
        let _ = Cmd::new("udevadm")
            .args(["settle", "--timeout=5"])
            .output("udev");
    }
}

/// Every attached loop device with its backing file, from sysfs.
pub fn attached() -> Vec<(PathBuf, PathBuf)> {
    let mut out = Vec::new();
    let Ok(rd) = fs::read_dir("/sys/block") else {
        return out;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with("loop") {
            continue;
        }
        if let Ok(b) = fs::read_to_string(e.path().join("loop/backing_file")) {
            out.push((
                PathBuf::from(format!("/dev/{name}")),
                PathBuf::from(b.trim()),
            ));
        }
    }
    out
}
