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
    // What losetup printed is the device it bound; a stray detach of it (57.9) is caught
    // here rather than by a file system check failing after a measurement.
    if !backed_by(&path, image) {
        return Err(ProvisionError::Unsupported(format!(
            "{} was not bound to {} right after losetup attached it: something else detached it",
            path.display(),
            image.display()
        )));
    }
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

/// Detaches `dev` if, and only while, it is backed by `image`; a device that no longer is
/// (detached already, or bound since to someone else's image) is left alone, and our image
/// counts as detached.
///
/// Why the image: a device path names whatever is bound to it now. A cleaner that listed
/// `/dev/loopN` as a dead run's, then found it detached by that run's own teardown, kept
/// retrying `losetup -d /dev/loopN` for ten seconds; when another run had meanwhile bound
/// a new image to it, the detach succeeded on *that* run's device (the kernel only marks a
/// device in use to clear itself when it is let go), so its file system vanished at its
/// unmount and its check failed on a device with nothing behind it (issue 57.9). The
/// device is held open from the check of its backing file until the detach, which keeps it
/// bound to that file meanwhile: an unbound device cannot be bound again while it is
/// open, and a detach asked for while it is open only takes effect at its last close.
pub fn detach(dev: &Path, image: &Path) -> Result<(), ProvisionError> {
    let cmd = Cmd::new("losetup").arg("-d").arg(dev.display().to_string());
    let mut last = None;
    settle();
    for attempt in 0..20 {
        let Some(held) = hold_if_backed_by(dev, image)? else {
            return Ok(());
        };
        let ran = cmd.output("util-linux")?;
        drop(held);
        if ran.success {
            // The detach takes effect at the device's last close: ours, or that of whoever
            // else still has it open (udev probing after the unmount); wait for it.
            return wait_detached(dev, image);
        }
        last = Some(cmd.failure(&ran));
        settle();
        std::thread::sleep(Duration::from_millis(50 * (attempt + 1)));
    }
    Err(last.unwrap_or_else(|| ProvisionError::Unsupported("losetup -d failed".into())))
}

/// `dev` opened, when it is bound to `image` (checked once it is open, so it stays bound
/// to it until the descriptor is dropped); `None` when it is not (any more).
fn hold_if_backed_by(
    dev: &Path,
    image: &Path,
) -> Result<Option<std::os::fd::OwnedFd>, ProvisionError> {
    use rustix::fs::{open, Mode, OFlags};
    let fd = match open(dev, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT | rustix::io::Errno::NXIO) => return Ok(None),
        Err(e) => {
            return Err(ProvisionError::io(
                format!("cannot open {}", dev.display()),
                e.into(),
            ))
        }
    };
    Ok(backed_by(dev, image).then_some(fd))
}

/// Whether the loop device `dev` is bound to `image` now (sysfs names the backing file by
/// its resolved path, with ` (deleted)` once it is unlinked).
pub fn backed_by(dev: &Path, image: &Path) -> bool {
    backing_file(dev).is_some_and(|b| same_file_name(&b, image))
}

/// The backing file of the loop device `dev`, from sysfs; `None` when it is not bound.
pub fn backing_file(dev: &Path) -> Option<PathBuf> {
    let name = dev.file_name()?.to_string_lossy().into_owned();
    let text = fs::read_to_string(format!("/sys/block/{name}/loop/backing_file")).ok()?;
    Some(PathBuf::from(text.trim()))
}

/// Whether `backing`, a backing file as sysfs shows it, names `image` (given as fsarena
/// made it, perhaps through a symbolic link, perhaps removed since).
fn same_file_name(backing: &Path, image: &Path) -> bool {
    let shown = backing.to_string_lossy();
    let backing = Path::new(shown.strip_suffix(" (deleted)").unwrap_or(&shown));
    if backing == image {
        return true;
    }
    let resolved = image
        .parent()
        .and_then(|d| fs::canonicalize(d).ok())
        .zip(image.file_name())
        .map(|(d, n)| d.join(n));
    resolved.is_some_and(|r| r == backing)
}

/// Waits until `dev` is no longer bound to `image` (it clears itself at its last close).
fn wait_detached(dev: &Path, image: &Path) -> Result<(), ProvisionError> {
    for attempt in 0..100 {
        if !backed_by(dev, image) {
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
