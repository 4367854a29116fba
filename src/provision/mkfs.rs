//! The mkfs command a target gets: the tool's base flags, or on a fresh sparse image the
//! flags that skip zeroing and discards where this host's tool takes them.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use super::command::Cmd;
use super::host;
use crate::plan::{FsKind, TargetConfig};

/// The mkfs command for a target on `device` (None: the file system has no mkfs); on a
/// fresh sparse image (`sparse`) with the flags that skip zeroing and discards, where
/// this host's mkfs takes them ([`FsKind::mkfs_sparse_flags`]).
pub(super) fn mkfs_cmd(t: &TargetConfig, device: &str, sparse: bool) -> Option<Cmd> {
    let (prog, mut base) = t.fs.mkfs_base()?;
    if let (true, Some(flags)) = (sparse, t.fs.mkfs_sparse_flags()) {
        if takes_sparse_flags(t.fs) {
            base = flags;
        }
    }
    let mut args: Vec<String> = base.iter().map(|a| a.to_string()).collect();
    args.extend(t.mkfs_args.iter().cloned());
    if t.fs == FsKind::Ext4 {
        args = merge_extended_options(args);
    }
    Some(Cmd::new(prog).args(args).arg(device))
}

/// mke2fs keeps only the last `-E` it is given, so a target's own extended options
/// (`-E stride=4`) would silently drop fsarena's (`lazy_itable_init=0,…`: the inode
/// tables zeroed at mkfs, not by a kernel thread during the measurement). Every `-E`
/// value (`-E X` or `-EX`) is joined, in order, into one `-E` where the first stood, so
/// a target's later value of the same key still wins as mke2fs reads them left to right.
fn merge_extended_options(args: Vec<String>) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut values: Vec<String> = Vec::new();
    let mut slot = None;
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        let value = match arg.strip_prefix("-E") {
            Some("") => it.next(),
            Some(joined) => Some(joined.to_string()),
            None => {
                out.push(arg);
                continue;
            }
        };
        slot.get_or_insert(out.len());
        values.extend(value);
    }
    if let Some(at) = slot {
        out.splice(at..at, ["-E".to_string(), values.join(",")]);
    }
    out
}

/// Whether this host's mkfs for `fs` is recent enough for its sparse-image flags: the
/// first dotted number of its version line against [`FsKind::sparse_flags_since`].
fn takes_sparse_flags(fs: FsKind) -> bool {
    let Some(since) = fs.sparse_flags_since() else {
        return true;
    };
    mkfs_version_cached(fs).is_some_and(|v| version_at_least(&v, since))
}

/// Whether the first `MAJOR.MINOR` in `line` (`mke2fs 1.47.0 (5-Feb-2023)`) is `since`
/// or later.
fn version_at_least(line: &str, since: (u32, u32)) -> bool {
    line.split_whitespace()
        .find_map(|w| {
            let mut parts = w.split('.').map(|p| p.parse::<u32>().ok());
            Some((parts.next()??, parts.next()??))
        })
        .is_some_and(|v| v >= since)
}

pub(super) fn mkfs_version_cached(fs: FsKind) -> Option<String> {
    static CACHE: OnceLock<Mutex<HashMap<FsKind, Option<String>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let mut c = cache.lock().ok()?;
    c.entry(fs)
        .or_insert_with(|| host::mkfs_version(fs))
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_from_the_tools_line() {
        assert!(version_at_least("mke2fs 1.47.0 (5-Feb-2023)", (1, 47)));
        assert!(version_at_least("mke2fs 1.48.1 (1-Jan-2025)", (1, 47)));
        assert!(!version_at_least("mke2fs 1.46.5 (30-Dec-2021)", (1, 47)));
        assert!(!version_at_least("mke2fs", (1, 47)));
    }

    /// Issue 41, left open there: a target's own `-E` replaced fsarena's, since mke2fs
    /// keeps only its last `-E`; now both reach it, the target's after fsarena's.
    #[test]
    fn a_targets_own_extended_options_keep_fsarenas() {
        let mut ext4 = crate::plan::catalogue::get("ext4").unwrap();
        ext4.mkfs_args = vec!["-E".into(), "stride=4".into(), "-Eroot_owner=0:0".into()];
        let cmd = mkfs_cmd(&ext4, "/dev/sdz", false).unwrap();
        let e: Vec<usize> = (0..cmd.args.len())
            .filter(|&i| cmd.args[i] == "-E")
            .collect();
        assert_eq!(e.len(), 1, "{cmd}");
        assert_eq!(
            cmd.args[e[0] + 1],
            "lazy_itable_init=0,lazy_journal_init=0,stride=4,root_owner=0:0",
            "{cmd}"
        );
        assert!(!cmd.args.iter().any(|a| a.starts_with("-Eroot")), "{cmd}");
    }

    /// Issue 41: on a fresh sparse image mkfs skips zeroing and discards; on a user's
    /// block device it does not (the device need not read as zeros).
    #[test]
    fn the_sparse_flags_are_for_sparse_images_only() {
        let xfs = crate::plan::catalogue::get("xfs").unwrap();
        let sparse = mkfs_cmd(&xfs, "/dev/loop9", true).unwrap();
        assert!(sparse.args.contains(&"-K".to_string()), "{sparse}");
        let device = mkfs_cmd(&xfs, "/dev/sdz", false).unwrap();
        assert!(!device.args.contains(&"-K".to_string()), "{device}");
        let ext4 = crate::plan::catalogue::get("ext4").unwrap();
        let device = mkfs_cmd(&ext4, "/dev/sdz", false).unwrap().to_string();
        assert!(!device.contains("prezeroed"), "{device}");
    }
}
