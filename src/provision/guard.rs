//! The safety guard for named block devices. fsarena formats things as root; before every
//! mkfs on a device the user named, it checks that formatting destroys nothing in use and
//! says what would be destroyed otherwise.
//!
//! Devices are compared by major:minor, never by path: `/dev/sda` and a symlink to it are the
//! same disk, and a mounted partition makes its whole disk untouchable (fio #1382 checked the
//! path only and let `/dev/sda` through while `/dev/sda1` was mounted).

use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::command::Cmd;
use super::error::ProvisionError;
use super::mounts;
use crate::sys::DevId;

/// What the guard found about a device.
#[derive(Debug, Clone, Default)]
pub struct Findings {
    /// Reasons that refuse the device whatever the flags.
    pub in_use: Vec<String>,
    /// File-system or partition-table signatures (refused unless `--wipe`).
    pub signatures: Vec<String>,
}

/// Checks `path` and returns its device number when formatting it is allowed. `work_root`
/// is the run's work directory (`--work-dir`): the disk holding it is never formatted.
pub fn check_device(path: &Path, wipe: bool, work_root: &Path) -> Result<DevId, ProvisionError> {
    let refused = |reasons: Vec<String>| ProvisionError::Refused {
        device: path.display().to_string(),
        reasons,
    };
    let real =
        fs::canonicalize(path).map_err(|e| refused(vec![format!("cannot resolve it: {e}")]))?;
    let meta = fs::metadata(&real).map_err(|e| refused(vec![format!("cannot stat it: {e}")]))?;
    if !meta.file_type().is_block_device() {
        return Err(refused(vec![format!(
            "{} is not a block device",
            real.display()
        )]));
    }
    let dev = DevId::from_dev_t(meta.rdev());
    let f = inspect(&real, dev, work_root);
    if !f.in_use.is_empty() {
        return Err(refused(f.in_use));
    }
    if !f.signatures.is_empty() && !wipe {
        let mut r: Vec<String> = f
            .signatures
            .iter()
            .map(|s| format!("it holds {s}, which formatting would destroy"))
            .collect();
        r.push("pass --wipe to destroy it anyway".into());
        return Err(refused(r));
    }
    Ok(dev)
}

/// Everything that makes a device unsafe to format. Pure reads; changes nothing.
pub fn inspect(real: &Path, dev: DevId, work_root: &Path) -> Findings {
    let mut f = Findings::default();
    // A loop device shares its data with every other loop device over the same backing
    // file, and with the file itself: formatting one destroys what is mounted through the
    // others (issue 11: a second `losetup` of a mounted image was formatted).
    f.in_use.extend(loop_aliases(dev));
    let family = family(dev);
    f.in_use.extend(mounted(&family));
    f.in_use.extend(swapped(&family));
    f.in_use.extend(held(&family));
    f.in_use.extend(system_disk(&family, work_root));
    // Exclusive open: the kernel's own answer to "is anyone using this?".
    if f.in_use.is_empty() {
        if let Err(e) = fs::OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::EXCL.bits() as i32)
            .open(real)
        {
            f.in_use
                .push(format!("it cannot be opened exclusively ({e})"));
        }
    }
    f.signatures = signatures(real);
    f
}

/// Mounts of the device's `family`: by device number, and by the mount source (btrfs
/// reports anonymous numbers).
fn mounted(family: &[DevId]) -> Vec<String> {
    let mut out = Vec::new();
    for m in mounts::read() {
        let src_dev = fs::metadata(&m.source)
            .ok()
            .filter(|md| md.file_type().is_block_device())
            .map(|md| DevId::from_dev_t(md.rdev()));
        if family.contains(&m.dev) || src_dev.is_some_and(|d| family.contains(&d)) {
            out.push(format!(
                "{} is mounted at {} ({})",
                m.source,
                m.target.display(),
                m.fstype
            ));
        }
    }
    out
}

/// Members of the device's `family` in use as swap.
fn swapped(family: &[DevId]) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(swaps) = fs::read_to_string("/proc/swaps") {
        for line in swaps.lines().skip(1) {
            let Some(p) = line.split_whitespace().next() else {
                continue;
            };
            if let Ok(md) = fs::metadata(p) {
                if md.file_type().is_block_device()
                    && family.contains(&DevId::from_dev_t(md.rdev()))
                {
                    out.push(format!("{p} is in use as swap"));
                }
            }
        }
    }
    out
}

/// Members of the device's `family` with holders (device-mapper, md RAID, bcache…).
fn held(family: &[DevId]) -> Vec<String> {
    let name = |d: &DevId| sysfs_name(*d).unwrap_or_else(|| d.to_string());
    let mut out = Vec::new();
    for d in family {
        let holders = PathBuf::from(format!("/sys/dev/block/{d}/holders"));
        if let Ok(rd) = fs::read_dir(&holders) {
            let names: Vec<String> = rd
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            if !names.is_empty() {
                out.push(format!("{} is held by {}", name(d), names.join(", ")));
            }
        }
    }
    out
}

/// Whether the device's `family` holds /, /boot or fsarena's own work directory.
fn system_disk(family: &[DevId], work_root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let work = work_root
        .ancestors()
        .find(|a| a.exists())
        .unwrap_or(Path::new("/"));
    for p in [
        Path::new("/"),
        Path::new("/boot"),
        Path::new("/boot/efi"),
        work,
    ] {
        if let Ok(md) = fs::metadata(p) {
            let d = DevId::from_dev_t(md.dev());
            if family.contains(&d) || whole_disk(d).is_some_and(|w| family.contains(&w)) {
                let what = if p == work {
                    format!("the work directory {}", work_root.display())
                } else {
                    p.display().to_string()
                };
                out.push(format!("it is the disk holding {what}"));
            }
        }
    }
    out
}

/// The backing file of loop device `dev` (None when `dev` is not an attached loop device).
fn loop_backing(dev: DevId) -> Option<PathBuf> {
    let name = sysfs_name(dev)?;
    let b = fs::read_to_string(format!("/sys/block/{name}/loop/backing_file")).ok()?;
    Some(PathBuf::from(
        b.trim_end_matches('\n').trim_end_matches(" (deleted)"),
    ))
}

/// Why formatting loop device `dev` would destroy data reached another way: another loop
/// device over the same backing file (compared by device and inode, not by path) — with
/// what is mounted through it — or the backing file open in some process or mounted.
fn loop_aliases(dev: DevId) -> Vec<String> {
    let Some(backing) = loop_backing(dev) else {
        return Vec::new();
    };
    let Ok(bmd) = fs::metadata(&backing) else {
        return Vec::new();
    };
    let table = mounts::read();
    let Some(mut out) = other_loops(dev, &backing, &bmd, &table) else {
        return Vec::new();
    };
    out.extend(backing_mounted(&backing, &bmd, &table));
    out.extend(backing_open(&backing, &bmd));
    out
}

/// Whether `md` is the file `backing` (by device and inode: a path may be another name).
fn same_file(md: &fs::Metadata, backing: &fs::Metadata) -> bool {
    md.dev() == backing.dev() && md.ino() == backing.ino()
}

/// The loop devices other than `dev` attached to the same backing file, each with what
/// formatting would destroy through it. `None` when sysfs cannot be listed (then no
/// alias of `dev` can be told, and none is named).
fn other_loops(
    dev: DevId,
    backing: &Path,
    bmd: &fs::Metadata,
    table: &[mounts::MountEntry],
) -> Option<Vec<String>> {
    let rd = fs::read_dir("/sys/block").ok()?;
    let mut out = Vec::new();
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(other) = fs::read_to_string(e.path().join("dev"))
            .ok()
            .and_then(|s| parse_devid(s.trim()))
        else {
            continue;
        };
        if other == dev || !name.starts_with("loop") {
            continue;
        }
        let Some(ob) = loop_backing(other) else {
            continue;
        };
        if !fs::metadata(&ob).is_ok_and(|md| same_file(&md, bmd)) {
            continue;
        }
        let what = through_alias(&e.path(), other, table);
        out.push(format!(
            "its backing file {} is also attached as /dev/{name}{what}",
            backing.display()
        ));
    }
    Some(out)
}

/// What formatting would destroy through the alias `other` (sysfs directory `sys`): the
/// file system mounted from it, else its holders, else whatever it holds.
fn through_alias(sys: &Path, other: DevId, table: &[mounts::MountEntry]) -> String {
    let mounted: Vec<String> = table
        .iter()
        .filter(|m| m.dev == other)
        .map(|m| format!("{} ({})", m.target.display(), m.fstype))
        .collect();
    let holders: Vec<String> = fs::read_dir(sys.join("holders"))
        .map(|rd| {
            rd.flatten()
                .map(|h| h.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    if !mounted.is_empty() {
        format!(
            ", which is mounted at {}: formatting would destroy that file system",
            mounted.join(", ")
        )
    } else if !holders.is_empty() {
        format!(", which is held by {}", holders.join(", "))
    } else {
        ": formatting would destroy whatever it holds".to_string()
    }
}

/// The backing file itself, mounted (a loop mount by file name).
fn backing_mounted(
    backing: &Path,
    bmd: &fs::Metadata,
    table: &[mounts::MountEntry],
) -> Vec<String> {
    let mut out = Vec::new();
    for m in table {
        if fs::metadata(&m.source).is_ok_and(|md| md.is_file() && same_file(&md, bmd)) {
            out.push(format!(
                "its backing file {} is mounted at {}",
                backing.display(),
                m.target.display()
            ));
        }
    }
    out
}

/// The backing file open in a process other than this one.
fn backing_open(backing: &Path, bmd: &fs::Metadata) -> Vec<String> {
    let mut out = Vec::new();
    let me = std::process::id().to_string();
    if let Ok(procs) = fs::read_dir("/proc") {
        for p in procs.flatten() {
            let pid = p.file_name().to_string_lossy().into_owned();
            if pid == me || !pid.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let Ok(fds) = fs::read_dir(p.path().join("fd")) else {
                continue;
            };
            if fds
                .flatten()
                .any(|fd| fs::metadata(fd.path()).is_ok_and(|md| same_file(&md, bmd)))
            {
                let comm = fs::read_to_string(p.path().join("comm")).unwrap_or_default();
                out.push(format!(
                    "its backing file {} is open in process {pid} ({})",
                    backing.display(),
                    comm.trim()
                ));
            }
        }
    }
    out
}

/// The device, its whole disk if it is a partition, and every partition of that disk.
fn family(dev: DevId) -> Vec<DevId> {
    let disk = whole_disk(dev).unwrap_or(dev);
    let mut v = vec![dev];
    if disk != dev {
        v.push(disk);
    }
    if let Some(name) = sysfs_name(disk) {
        if let Ok(rd) = fs::read_dir(format!("/sys/block/{name}")) {
            for e in rd.flatten() {
                if let Ok(s) = fs::read_to_string(e.path().join("dev")) {
                    if let Some(d) = parse_devid(s.trim()) {
                        if e.path().join("partition").exists() && !v.contains(&d) {
                            v.push(d);
                        }
                    }
                }
            }
        }
    }
    v
}

/// The whole disk a partition belongs to (None for a whole disk or an unknown device).
pub fn whole_disk(dev: DevId) -> Option<DevId> {
    let sys = PathBuf::from(format!("/sys/dev/block/{dev}"));
    if !sys.join("partition").exists() {
        return None;
    }
    let parent = fs::canonicalize(&sys).ok()?.parent()?.join("dev");
    parse_devid(fs::read_to_string(parent).ok()?.trim())
}

/// The kernel's name for a block device (`sdb1`), from sysfs.
pub fn sysfs_name(dev: DevId) -> Option<String> {
    let p = fs::canonicalize(format!("/sys/dev/block/{dev}")).ok()?;
    Some(p.file_name()?.to_string_lossy().into_owned())
}

fn parse_devid(s: &str) -> Option<DevId> {
    let (a, b) = s.split_once(':')?;
    Some(DevId {
        major: a.parse().ok()?,
        minor: b.parse().ok()?,
    })
}

/// Signatures as `wipefs` lists them (read-only without `-a`).
pub fn signatures(real: &Path) -> Vec<String> {
    let cmd = Cmd::new("wipefs")
        .args(["--json"])
        .arg(real.display().to_string());
    let Ok(ran) = cmd.output("util-linux") else {
        return vec![
            "unknown contents (wipefs is missing, so signatures cannot be checked)".into(),
        ];
    };
    if !ran.success {
        return vec![format!(
            "unknown contents (wipefs failed: {})",
            ran.stderr.trim()
        )];
    }
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&ran.stdout) else {
        return Vec::new(); // wipefs prints nothing at all for a blank device
    };
    v["signatures"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|s| {
                    let t = s["type"].as_str().unwrap_or("?");
                    let off = s["offset"].as_str().unwrap_or("?");
                    match s["label"].as_str().filter(|l| !l.is_empty()) {
                        Some(l) => format!("a {t} signature at offset {off} (label \"{l}\")"),
                        None => format!("a {t} signature at offset {off}"),
                    }
                })
                .collect()
        })
        .unwrap_or_default()
}
