//! A target: one file-system configuration, and everything fsarena must know to make it.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The file systems fsarena can provision. `Existing` is a directory the user named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FsKind {
    Ext4,
    Xfs,
    Btrfs,
    Ntfs,
    Exfat,
    F2fs,
    Tmpfs,
    Existing,
}

impl FsKind {
    /// The file systems fsarena can make itself (everything but an existing directory).
    pub const PROVISIONABLE: [FsKind; 7] = [
        FsKind::Ext4,
        FsKind::Xfs,
        FsKind::Btrfs,
        FsKind::Ntfs,
        FsKind::Exfat,
        FsKind::F2fs,
        FsKind::Tmpfs,
    ];

    /// The name used in plans, results and reports.
    pub fn name(self) -> &'static str {
        match self {
            FsKind::Ext4 => "ext4",
            FsKind::Xfs => "xfs",
            FsKind::Btrfs => "btrfs",
            FsKind::Ntfs => "ntfs",
            FsKind::Exfat => "exfat",
            FsKind::F2fs => "f2fs",
            FsKind::Tmpfs => "tmpfs",
            FsKind::Existing => "dir",
        }
    }

    /// The kind named `s` (`dir` for an existing directory).
    pub fn parse(s: &str) -> Option<FsKind> {
        FsKind::PROVISIONABLE
            .into_iter()
            .chain([FsKind::Existing])
            .find(|k| k.name() == s)
    }

    /// The mkfs program and the flags that make it non-interactive and complete.
    ///
    /// ext4 gets `lazy_itable_init=0,lazy_journal_init=0`: otherwise a kernel thread keeps
    /// zeroing inode tables in the background *during* the benchmark, and its writes would be
    /// charged to whatever workload runs first.
    pub fn mkfs_base(self) -> Option<(&'static str, &'static [&'static str])> {
        match self {
            FsKind::Ext4 => Some((
                "mkfs.ext4",
                &["-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"],
            )),
            FsKind::Xfs => Some(("mkfs.xfs", &["-q", "-f"])),
            FsKind::Btrfs => Some(("mkfs.btrfs", &["-q", "-f"])),
            // -f: quick format (no zeroing pass); -F: accept a whole device / loop.
            FsKind::Ntfs => Some(("mkntfs", &["-q", "-F", "-f"])),
            FsKind::Exfat => Some(("mkfs.exfat", &[])),
            FsKind::F2fs => Some(("mkfs.f2fs", &["-q", "-f"])),
            FsKind::Tmpfs | FsKind::Existing => None,
        }
    }

    /// The flags for mkfs on a fresh sparse image, in place of [`FsKind::mkfs_base`]'s
    /// where they differ. The image reads as zeros and discarding it frees nothing: ext4
    /// skips zeroing its inode tables and journal (`assume_storage_prezeroed=1`, e2fsprogs
    /// 1.47, which still marks the tables zeroed, so no kernel thread zeroes them during a
    /// measurement; a 64 GiB image holds 4.8 MiB after mkfs instead of 1.6 GiB of zeroed
    /// extents that every copy of it would carry), and xfs, btrfs (`-K`) and f2fs (`-t 0`)
    /// skip their discard pass. Never for a user's block device, which need not read as
    /// zeros and whose discard is part of a real mkfs.
    pub fn mkfs_sparse_flags(self) -> Option<&'static [&'static str]> {
        match self {
            FsKind::Ext4 => Some(&[
                "-q",
                "-F",
                "-E",
                "lazy_itable_init=0,lazy_journal_init=0,assume_storage_prezeroed=1",
            ]),
            FsKind::Xfs => Some(&["-q", "-f", "-K"]),
            FsKind::Btrfs => Some(&["-q", "-f", "-K"]),
            FsKind::F2fs => Some(&["-q", "-f", "-t", "0"]),
            _ => None,
        }
    }

    /// The oldest mkfs (major, minor) that takes [`FsKind::mkfs_sparse_flags`]:
    /// `assume_storage_prezeroed` is new in e2fsprogs 1.47; the others are old.
    pub fn sparse_flags_since(self) -> Option<(u32, u32)> {
        match self {
            FsKind::Ext4 => Some((1, 47)),
            _ => None,
        }
    }

    /// How to ask the mkfs tool its version.
    pub fn version_args(self) -> &'static [&'static str] {
        match self {
            FsKind::Btrfs => &["--version"],
            _ => &["-V"],
        }
    }

    /// Name in /proc/filesystems the kernel needs (FUSE file systems need `fuseblk`).
    pub fn kernel_fs(self) -> Option<&'static str> {
        match self {
            FsKind::Ext4 => Some("ext4"),
            FsKind::Xfs => Some("xfs"),
            FsKind::Btrfs => Some("btrfs"),
            FsKind::F2fs => Some("f2fs"),
            FsKind::Tmpfs => Some("tmpfs"),
            FsKind::Ntfs | FsKind::Exfat => Some("fuseblk"),
            FsKind::Existing => None,
        }
    }

    /// Read-only consistency check run after each repetition (program, args before the device).
    pub fn fsck(self) -> Option<(&'static str, &'static [&'static str])> {
        match self {
            FsKind::Ext4 => Some(("e2fsck", &["-f", "-n"])),
            FsKind::Xfs => Some(("xfs_repair", &["-n"])),
            FsKind::Btrfs => Some(("btrfs", &["check", "--readonly"])),
            FsKind::Ntfs => Some(("ntfsfix", &["-n"])),
            FsKind::Exfat => Some(("fsck.exfat", &["-n"])),
            FsKind::F2fs => Some(("fsck.f2fs", &["--dry-run"])),
            FsKind::Tmpfs | FsKind::Existing => None,
        }
    }

    /// The Debian package that provides the tools, for error messages and setup.
    pub fn package(self) -> Option<&'static str> {
        match self {
            FsKind::Ext4 => Some("e2fsprogs"),
            FsKind::Xfs => Some("xfsprogs"),
            FsKind::Btrfs => Some("btrfs-progs"),
            FsKind::Ntfs => Some("ntfs-3g"),
            FsKind::Exfat => Some("exfatprogs and exfat-fuse"),
            FsKind::F2fs => Some("f2fs-tools"),
            FsKind::Tmpfs | FsKind::Existing => None,
        }
    }

    /// Whether the file system lives in memory (tmpfs): a reference for what the disk file
    /// systems could reach, never a candidate a user is choosing, so never ranked, never the
    /// default baseline.
    pub fn is_memory(self) -> bool {
        matches!(self, FsKind::Tmpfs)
    }

    /// The smallest image its mkfs accepts, measured by bisection on sparse files with
    /// the catalogue's mkfs flags (Debian 12: e2fsprogs 1.47, xfsprogs 6.1, btrfs-progs 6.2,
    /// ntfs-3g 2022.10, exfatprogs 1.2, f2fs-tools 1.15), rounded up to a MiB. `None` where
    /// there is no mkfs.
    pub fn min_size(self) -> Option<u64> {
        const MIB: u64 = 1 << 20;
        match self {
            FsKind::Ext4 => Some(2 * MIB),
            FsKind::Xfs => Some(300 * MIB),
            FsKind::Btrfs => Some(109 * MIB),
            FsKind::Ntfs => Some(2 * MIB),
            FsKind::Exfat => Some(3 * MIB),
            FsKind::F2fs => Some(52 * MIB),
            FsKind::Tmpfs | FsKind::Existing => None,
        }
    }

    /// Whether the file system needs a block device (and so a loop image by default).
    pub fn needs_device(self) -> bool {
        !matches!(self, FsKind::Tmpfs | FsKind::Existing)
    }
}

/// Where a target lives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Location {
    /// A sparse image in fsarena's work directory, attached as a loop device (the default).
    Loop,
    /// A block device the user named; destructive, guarded.
    Device(PathBuf),
    /// An existing directory; fsarena works in a fresh subdirectory of it.
    Dir(PathBuf),
    /// Memory (tmpfs).
    Memory,
}

/// One file-system configuration, as asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetConfig {
    /// Unique name in a run: rows of every table, keys of every result.
    pub name: String,
    pub fs: FsKind,
    /// Extra mkfs arguments (block/cluster size, features).
    pub mkfs_args: Vec<String>,
    /// Mount options (`noatime`, `data=journal`, `compress=zstd`, …).
    pub mount_options: Vec<String>,
    pub location: Location,
    /// Image (or tmpfs) size in bytes; `None`: the run's size (`--fs-size`, `plan::fs_size`).
    pub size: Option<u64>,
    /// One line for listings.
    pub description: String,
}
