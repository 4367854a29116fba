//! Checking a target's own mkfs options before anything is provisioned, with the tool's
//! own dry mode: `mkfs.ext4 -n` and `mkfs.xfs -N` parse every option and compute the
//! layout without writing a byte. Tools without one (btrfs, ntfs, exfat, f2fs) are left
//! to the runner, which stops a target whose first file system cannot be made.

use std::fs::File;
use std::path::Path;

use super::command::{meaningful, Cmd};
use super::mkfs::mkfs_cmd;
use crate::plan::TargetConfig;

/// Runs the target's mkfs in its dry mode on a sparse scratch file of `size` bytes in
/// `dir` (removed after). `Ok` when there is nothing to check (catalogue options are
/// known good, or the tool has no dry mode) or the tool accepts the options; `Err` with
/// the tool's meaningful lines otherwise.
pub fn check(t: &TargetConfig, size: u64, dir: &Path) -> Result<(), String> {
    let Some(flag) = t.fs.mkfs_dry_run_flag() else {
        return Ok(());
    };
    if t.mkfs_args.is_empty() {
        return Ok(());
    }
    let path = dir.join(format!(".fsarena-dry-mkfs-{}", std::process::id()));
    let made = File::create(&path).and_then(|f| f.set_len(size));
    if let Err(e) = made {
        let _ = std::fs::remove_file(&path);
        // Not the options' fault: the run's own checks report an unwritable directory.
        return if e.kind() == std::io::ErrorKind::PermissionDenied {
            Ok(())
        } else {
            Err(format!(
                "cannot make a scratch file in {}: {e}",
                dir.display()
            ))
        };
    }
    let file = path.display().to_string();
    // The scratch file is a fresh sparse file, like a loop image.
    let ran = mkfs_cmd(t, &file, t.location == crate::plan::Location::Loop)
        .map(|c| dry(c, flag))
        .map(|c| (format!("{} {flag}", c.program), c.output("")));
    let _ = std::fs::remove_file(&path);
    match ran {
        None => Ok(()),
        Some((_, Ok(r))) if r.success => Ok(()),
        Some((line, Ok(r))) => {
            let text = if r.stderr.trim().is_empty() {
                &r.stdout
            } else {
                &r.stderr
            };
            Err(format!(
                "{} (said by {line}, its dry run)",
                meaningful(text)
            ))
        }
        // A missing tool is reported by the host checks, which skip the target.
        Some((_, Err(_))) => Ok(()),
    }
}

/// The same command with the dry flag placed before the device.
fn dry(mut c: Cmd, flag: &str) -> Cmd {
    let at = c.args.len().saturating_sub(1);
    c.args.insert(at, flag.to_string());
    c
}
