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
    Some(
        Cmd::new(prog)
            .args(base.iter().copied())
            .args(t.mkfs_args.iter().cloned())
            .arg(device),
    )
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
