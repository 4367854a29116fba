//! Whether the server's user can reach the directories a cell gives it. The postmaster runs
//! as [`super::server::USER`], not root: its data directory (on a target mounted under the
//! work directory) and its socket directory (in the run's scratch) are only reachable when
//! every directory above them lets others search them. A `--work-dir` inside a `mktemp -d`
//! directory (mode 0700) does not, and every cell failed in `initdb` after its target was
//! made; the run is refused before anything is provisioned instead, naming the directory.
//! fsarena never changes the permissions of a directory the user did not ask it to make.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// `Some(why)` when a directory at or above `work_root` keeps others out: the first one,
/// with its mode and how to fix it, in one line. Directories not made yet are made 0755 by
/// the run (a umask that keeps others out is not looked at: the run makes them itself).
pub fn blocked(work_root: &Path) -> Option<String> {
    let root = std::path::absolute(work_root).unwrap_or_else(|_| work_root.to_path_buf());
    // The server user's ids when it exists already (made by the first `pg` cell otherwise,
    // and then owner of nothing above the work directory).
    let ids = super::server::lookup(super::server::USER);
    let (uid, gid) = (ids.map(|i| i.0), ids.map(|i| i.1));
    for dir in root.ancestors() {
        let Ok(meta) = std::fs::metadata(dir) else {
            continue;
        };
        if searchable(meta.mode(), meta.uid(), meta.gid(), uid, gid) {
            continue;
        }
        return Some(format!(
            "the pg workload's server runs as user {} and cannot enter {} (mode {:04o}), \
             which holds the work directory {}: use a --work-dir whose parent directories \
             others may enter (the default {} does), or `chmod o+x {}`",
            super::server::USER,
            dir.display(),
            meta.mode() & 0o7777,
            work_root.display(),
            crate::provision::workdir::DEFAULT_ROOT,
            dir.display()
        ));
    }
    None
}

/// Whether a directory of `mode` owned by `owner:group` lets user `uid` (group `gid`)
/// search it, by its permission bits (the server user has no supplementary groups).
fn searchable(mode: u32, owner: u32, group: u32, uid: Option<u32>, gid: Option<u32>) -> bool {
    if uid == Some(owner) {
        return mode & 0o100 != 0;
    }
    if gid == Some(group) {
        return mode & 0o010 != 0;
    }
    mode & 0o001 != 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_0700_parent_blocks_and_names_itself() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let why = blocked(&dir.path().join("w/not-yet")).unwrap();
        assert!(why.contains(&format!(
            "cannot enter {} (mode 0700)",
            dir.path().display()
        )));
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
        assert_eq!(blocked(&dir.path().join("w")), None);
        // Bits by class: the owner's, else the group's, else others'.
        assert!(searchable(0o100, 5, 6, Some(5), None));
        assert!(!searchable(0o011, 5, 6, Some(5), Some(6)));
        assert!(searchable(0o010, 5, 6, Some(7), Some(6)));
        assert!(!searchable(0o770, 5, 6, Some(7), Some(8)));
    }
}
