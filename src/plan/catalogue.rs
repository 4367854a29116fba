//! The named variants users can ask for by name (`--target btrfs-zstd`).

use super::target::{FsKind, Location, TargetConfig};

/// (name, file system, mkfs args, mount options, in the default run, description)
type Entry = (
    &'static str,
    FsKind,
    &'static [&'static str],
    &'static [&'static str],
    bool,
    &'static str,
);

const ENTRIES: &[Entry] = &[
    (
        "ext4",
        FsKind::Ext4,
        &[],
        &[],
        true,
        "ext4, 4 KiB blocks, ordered journal",
    ),
    (
        "ext4-bigalloc64k",
        FsKind::Ext4,
        &["-O", "bigalloc", "-C", "65536"],
        &[],
        false,
        "ext4 with 64 KiB allocation clusters",
    ),
    (
        "ext4-journal",
        FsKind::Ext4,
        &[],
        &["data=journal"],
        false,
        "ext4 journalling data as well as metadata",
    ),
    (
        "ext4-nocsum",
        FsKind::Ext4,
        &["-O", "^metadata_csum"],
        &[],
        false,
        "ext4 without metadata checksums",
    ),
    (
        "ext4-fscrypt",
        FsKind::Ext4,
        &["-O", "encrypt"],
        &[],
        false,
        "ext4 with native encryption (fscrypt v2, AES-256-XTS/CTS) on the work directory",
    ),
    (
        "ext4-nocsum-fscrypt",
        FsKind::Ext4,
        &["-O", "^metadata_csum,encrypt"],
        &[],
        false,
        "ext4 without metadata checksums, with native encryption (integrity off + encryption)",
    ),
    (
        "ext4-noatime",
        FsKind::Ext4,
        &[],
        &["noatime"],
        false,
        "ext4 mounted noatime",
    ),
    (
        "xfs",
        FsKind::Xfs,
        &[],
        &[],
        true,
        "xfs, 4 KiB blocks, reflink",
    ),
    (
        "xfs-noreflink",
        FsKind::Xfs,
        &["-m", "reflink=0"],
        &[],
        false,
        "xfs without reflink",
    ),
    (
        "btrfs",
        FsKind::Btrfs,
        &[],
        &[],
        true,
        "btrfs, data and metadata checksums",
    ),
    (
        "btrfs-nodatasum",
        FsKind::Btrfs,
        &[],
        &["nodatasum"],
        false,
        "btrfs without data checksums",
    ),
    (
        "btrfs-zstd",
        FsKind::Btrfs,
        &[],
        &["compress=zstd"],
        false,
        "btrfs with zstd compression",
    ),
    (
        "btrfs-nodesize64k",
        FsKind::Btrfs,
        &["--nodesize", "65536"],
        &[],
        false,
        "btrfs with 64 KiB metadata nodes",
    ),
    (
        "ntfs",
        FsKind::Ntfs,
        &[],
        &[],
        true,
        "NTFS through ntfs-3g (FUSE), 4 KiB clusters",
    ),
    (
        "ntfs-64k",
        FsKind::Ntfs,
        &["-c", "65536"],
        &[],
        false,
        "NTFS through ntfs-3g, 64 KiB clusters",
    ),
    (
        "exfat",
        FsKind::Exfat,
        &[],
        &[],
        true,
        "exFAT (kernel driver, or FUSE)",
    ),
    (
        "exfat-64k",
        FsKind::Exfat,
        &["-c", "64K"],
        &[],
        false,
        "exFAT with 64 KiB clusters",
    ),
    (
        "f2fs",
        FsKind::F2fs,
        &[],
        &[],
        true,
        "f2fs (where the kernel has it)",
    ),
    (
        "tmpfs",
        FsKind::Tmpfs,
        &[],
        &[],
        true,
        "tmpfs: the memory baseline",
    ),
];

fn build(e: &Entry) -> TargetConfig {
    let (name, fs, mkfs, mount, _, description) = *e;
    TargetConfig {
        name: name.to_string(),
        fs,
        mkfs_args: mkfs.iter().map(|s| s.to_string()).collect(),
        mount_options: mount.iter().map(|s| s.to_string()).collect(),
        location: Location::default_for(fs),
        size: None,
        description: description.to_string(),
    }
}

/// Every catalogue entry.
pub fn all() -> Vec<TargetConfig> {
    ENTRIES.iter().map(build).collect()
}

/// The entries of the default comparison (one per file system).
pub fn defaults() -> Vec<TargetConfig> {
    ENTRIES.iter().filter(|e| e.4).map(build).collect()
}

/// The catalogue entry called `name`, if any.
pub fn get(name: &str) -> Option<TargetConfig> {
    ENTRIES.iter().find(|e| e.0 == name).map(build)
}

/// Every catalogue name, listed when a target name is unknown.
pub fn names() -> Vec<&'static str> {
    ENTRIES.iter().map(|e| e.0).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_defaults_cover_each_fs_once() {
        let mut n = names();
        n.sort();
        n.dedup();
        assert_eq!(n.len(), ENTRIES.len());
        let mut fs: Vec<_> = defaults().iter().map(|t| t.fs.name()).collect();
        let before = fs.len();
        fs.dedup();
        assert_eq!(fs.len(), before);
        assert!(get("btrfs-zstd").is_some_and(|t| t.mount_options == ["compress=zstd"]));
        assert!(get("nope").is_none());
    }
}
