//! The mount table, read from /proc/self/mountinfo, and mounting/unmounting.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::command::Cmd;
use super::error::ProvisionError;
use crate::sys::DevId;

/// One mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountEntry {
    /// The device number the kernel reports (anonymous for btrfs, tmpfs, FUSE).
    pub dev: DevId,
    pub target: PathBuf,
    pub fstype: String,
    pub source: String,
    /// Per-mount and superblock options together, as /proc/mounts shows them.
    pub options: String,
}

/// Undoes the octal escapes the kernel uses for spaces, tabs, newlines and backslashes.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses mountinfo text; malformed lines are skipped.
pub fn parse_mountinfo(text: &str) -> Vec<MountEntry> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let l: Vec<&str> = left.split(' ').collect();
        let r: Vec<&str> = right.split(' ').collect();
        if l.len() < 6 || r.len() < 3 {
            continue;
        }
        let Some((maj, min)) = l[2].split_once(':') else {
            continue;
        };
        let (Ok(major), Ok(minor)) = (maj.parse(), min.parse()) else {
            continue;
        };
        let mut opts: Vec<&str> = l[5].split(',').collect();
        for o in r[2].split(',') {
            if !opts.contains(&o) {
                opts.push(o);
            }
        }
        out.push(MountEntry {
            dev: DevId { major, minor },
            target: PathBuf::from(unescape(l[4])),
            fstype: r[0].to_string(),
            source: unescape(r[1]),
            options: opts.join(","),
        });
    }
    out
}

/// The current mounts, from `/proc/self/mountinfo` (empty if it cannot be read).
pub fn read() -> Vec<MountEntry> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .map(|t| parse_mountinfo(&t))
        .unwrap_or_default()
}

/// The topmost mount at exactly `target`.
pub fn find(target: &Path) -> Option<MountEntry> {
    read().into_iter().rev().find(|m| m.target == target)
}

/// Mounts under `dir` (including `dir`), deepest first, for teardown.
pub fn under(dir: &Path) -> Vec<MountEntry> {
    let mut v: Vec<MountEntry> = read()
        .into_iter()
        .filter(|m| m.target.starts_with(dir))
        .collect();
    v.sort_by_key(|m| std::cmp::Reverse(m.target.components().count()));
    v
}

/// The `mount` command for `source` at `target` with the given type and options.
pub fn mount_cmd(fstype: &str, options: &[String], source: &str, target: &Path) -> Cmd {
    let mut c = Cmd::new("mount").args(["-t", fstype]);
    if !options.is_empty() {
        c = c.arg("-o").arg(options.join(","));
    }
    c.arg(source).arg(target.display().to_string())
}

/// Unmounts, retrying while something still holds it busy; a last resort lazy unmount
/// detaches it from the tree so nothing can write through it any more.
pub fn unmount(target: &Path) -> Result<(), ProvisionError> {
    let cmd = Cmd::new("umount").arg(target.display().to_string());
    let mut last = None;
    for attempt in 0..10 {
        if find(target).is_none() {
            return Ok(());
        }
        let ran = cmd.output("util-linux")?;
        if ran.success {
            return Ok(());
        }
        last = Some(cmd.failure(&ran));
        std::thread::sleep(Duration::from_millis(50 * (attempt + 1)));
    }
    let lazy = Cmd::new("umount")
        .arg("-l")
        .arg(target.display().to_string());
    let dev = find(target).map(|m| m.dev);
    if dev.is_some() && lazy.output("util-linux").is_ok_and(|r| r.success) {
        return dev.map_or(Ok(()), |dev| wait_released(dev, target, RELEASE_WAIT));
    }
    Err(last.unwrap_or_else(|| ProvisionError::Unsupported("umount failed".into())))
}

/// How long a lazily unmounted file system gets to be let go by whoever still uses it.
const RELEASE_WAIT: Duration = Duration::from_secs(30);

/// Waits until the block device `dev` of a lazily unmounted file system is no longer held
/// by it (an exclusive open succeeds: a mounted file system holds its device exclusively).
/// `umount -l` only takes the mount out of the tree: the file system lives on, and writes,
/// until its last user lets go, so checking the device (e2fsck -f -n) or detaching its loop
/// device before then reads a file system in mid-write, which can fail its check though
/// nothing is wrong with it (issue 57.9). An error when it is still held after `wait`, so
/// the teardown neither checks nor calls it fresh. A device with no block node (tmpfs,
/// FUSE) is not waited for.
pub fn wait_released(dev: DevId, target: &Path, wait: Duration) -> Result<(), ProvisionError> {
    use rustix::fs::{open, Mode, OFlags};
    let Some(node) = block_node(dev) else {
        return Ok(());
    };
    let t0 = std::time::Instant::now();
    loop {
        match open(&node, OFlags::RDONLY | OFlags::EXCL | OFlags::CLOEXEC, Mode::empty()) {
            Ok(_) => return Ok(()),
            Err(rustix::io::Errno::BUSY) if t0.elapsed() < wait => {
                std::thread::sleep(Duration::from_millis(50))
            }
            Err(rustix::io::Errno::BUSY) => {
                return Err(ProvisionError::Unsupported(format!(
                    "{} was unmounted lazily (it was busy) and its file system on {} is still in use {} s later; it is neither checked nor reused",
                    target.display(),
                    node.display(),
                    wait.as_secs()
                )))
            }
            // Gone, or not a device we may open: nothing holds it that we could wait for.
            Err(_) => return Ok(()),
        }
    }
}

/// `/dev/NAME` of the block device `dev`, from sysfs; `None` for an anonymous device.
fn block_node(dev: DevId) -> Option<PathBuf> {
    let uevent =
        std::fs::read_to_string(format!("/sys/dev/block/{}:{}/uevent", dev.major, dev.minor))
            .ok()?;
    let name = uevent.lines().find_map(|l| l.strip_prefix("DEVNAME="))?;
    Some(PathBuf::from("/dev").join(name.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,errors=remount-ro
98 22 7:3 / /var/tmp/fsarena/run-1/mnt/a\\040b rw,relatime shared:50 - xfs /dev/loop3 rw,inode64,noquota
99 22 0:61 / /mnt/b rw,relatime shared:51 - btrfs /dev/loop4 rw,discard=async,space_cache=v2,subvolid=5,subvol=/
garbage line
";

    #[test]
    fn parses_mountinfo() {
        let m = parse_mountinfo(SAMPLE);
        assert_eq!(m.len(), 3);
        assert_eq!(m[1].target, PathBuf::from("/var/tmp/fsarena/run-1/mnt/a b"));
        assert_eq!(m[1].dev, DevId { major: 7, minor: 3 });
        assert_eq!(m[1].options, "rw,relatime,inode64,noquota");
        assert_eq!(m[2].source, "/dev/loop4");
        assert_eq!(m[2].fstype, "btrfs");
    }
}

#[cfg(test)]
mod fuzz {
    use super::parse_mountinfo;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        #[test]
        fn any_text_never_panics(text in "\\PC{0,400}") {
            let _ = parse_mountinfo(&text);
        }

        #[test]
        fn mountinfo_shaped_lines_never_panic(
            a in "[0-9:]{0,8}", target in "[ -~]{0,30}", sep in prop_oneof![Just(" - "), Just(" -"), Just("")],
            tail in "[ -~\\\\]{0,40}",
        ) {
            let line = format!("22 1 {a} / {target} rw shared:1{sep}{tail}\n");
            let _ = parse_mountinfo(&line);
        }
    }
}
