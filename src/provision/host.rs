//! What this host can provision: kernel file systems, tools, privileges.

use std::fs;
use std::path::PathBuf;
use std::sync::OnceLock;

use super::command::Cmd;
use crate::plan::{FsKind, Location, TargetConfig};

/// Whether fsarena runs as root (needed for loop devices, mkfs and mount).
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// The running kernel's release, recorded with every measurement.
pub fn kernel_release() -> String {
    rustix::system::uname()
        .release()
        .to_string_lossy()
        .into_owned()
}

/// File systems the kernel has now, or can load as a module.
pub fn kernel_has(fs: &str) -> bool {
    static LISTED: OnceLock<Vec<String>> = OnceLock::new();
    let listed = LISTED.get_or_init(|| {
        fs::read_to_string("/proc/filesystems")
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split_whitespace().last().map(str::to_string))
            .collect()
    });
    if listed.iter().any(|l| l == fs) {
        return true;
    }
    let base = format!("/lib/modules/{}", kernel_release());
    let needle = format!("/{fs}.ko");
    ["modules.dep", "modules.builtin"].iter().any(|f| {
        fs::read_to_string(format!("{base}/{f}"))
            .map(|t| t.lines().any(|l| l.contains(&needle)))
            .unwrap_or(false)
    })
}

/// Finds a program on PATH or in the sbin directories root's PATH usually has.
pub fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    let found = path
        .split(':')
        .chain(["/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/bin", "/bin"])
        .map(|d| PathBuf::from(d).join(program))
        .find(|p| p.is_file());
    found
}

/// The `mount -t` type for a file system on this host.
/// A FUSE kind whose format the running kernel also has a driver for is mounted by the
/// kernel.
pub fn mount_type(fs: FsKind) -> &'static str {
    match fs.fuse() {
        Some(f) => match f.kernel_driver.filter(|k| kernel_has(k)) {
            Some(kernel) => kernel,
            None => f.mount_type,
        },
        None => fs.name(),
    }
}

/// Why this host cannot provision `t`, or `Ok` when it can.
pub fn support(t: &TargetConfig) -> Result<(), String> {
    if let Location::Dir(p) = &t.location {
        return if p.is_dir() {
            Ok(())
        } else {
            Err(format!("{} is not an existing directory", p.display()))
        };
    }
    if !is_root() {
        return Err(format!(
            "{} needs root (loop devices, mkfs, mount); run as root or use a dir:PATH target",
            t.name
        ));
    }
    if let Some(k) = t.fs.kernel_fs() {
        if !kernel_has(k) {
            return Err(format!("the kernel has no {k} file system"));
        }
    }
    if super::fscrypt::wanted(t) {
        super::fscrypt::kernel_support()?;
    }
    if let Some((prog, _)) = t.fs.mkfs_base() {
        if which(prog).is_none() {
            return Err(format!(
                "{prog} is missing (install the Debian package {})",
                t.fs.package().unwrap_or("?")
            ));
        }
    }
    let helper =
        t.fs.fuse()
            .filter(|f| mount_type(t.fs) == f.mount_type)
            .map(|f| f.helper);
    if let Some(h) = helper {
        if which(h).is_none() {
            return Err(format!(
                "{h} is missing (install the Debian package {})",
                t.fs.package().unwrap_or("?")
            ));
        }
        if !std::path::Path::new("/dev/fuse").exists() {
            return Err("/dev/fuse is missing (FUSE is not available)".into());
        }
    }
    if matches!(t.location, Location::Loop) && !std::path::Path::new("/dev/loop-control").exists() {
        return Err("loop devices are not available (/dev/loop-control is missing)".into());
    }
    Ok(())
}

/// The first line the mkfs tool prints about its version.
pub fn mkfs_version(fs: FsKind) -> Option<String> {
    let (prog, _) = fs.mkfs_base()?;
    let ran = Cmd::new(prog)
        .args(fs.version_args().iter().copied())
        .output("")
        .ok()?;
    ran.stdout
        .lines()
        .chain(ran.stderr.lines())
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("Usage"))
        .map(str::to_string)
}
