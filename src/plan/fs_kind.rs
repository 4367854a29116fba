//! The file-system kinds fsarena knows, and every fact about a kind that the rest of the
//! program reads, in one table: what mkfs, mount, fsck, the host checks, the sizes, the
//! golden images and the cost model need to know of a kind. A new kind is one variant and
//! one entry of [`FACTS`]; only what its tools do unlike any other (ext4's merged `-E`, say)
//! lives beside the code that runs them. Below `target` (a target names its kind), so it
//! imports nothing of the plan.

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

/// A file system that runs as a user-space daemon (FUSE): how it is mounted and what the
/// host needs for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fuse {
    /// The `mount -t` type.
    pub mount_type: &'static str,
    /// The mount helper that must be installed for that type.
    pub helper: &'static str,
    /// The kernel's own driver for the same format: when the running kernel has it, it is
    /// mounted instead and this is no FUSE mount at all.
    pub kernel_driver: Option<&'static str>,
    /// The program and arguments `fsarena doctor` asks for the daemon's version, and the
    /// Debian package that provides it.
    pub version: (&'static str, &'static [&'static str]),
    pub package: &'static str,
}

/// Everything the program knows of one kind; see the accessors of [`FsKind`] for what each
/// field means.
#[derive(Debug)]
pub struct Facts {
    pub kind: FsKind,
    pub name: &'static str,
    pub mkfs: Option<(&'static str, &'static [&'static str])>,
    pub mkfs_sparse: Option<&'static [&'static str]>,
    pub sparse_since: Option<(u32, u32)>,
    pub version_args: &'static [&'static str],
    pub mkfs_dry_run: Option<&'static str>,
    pub kernel_fs: Option<&'static str>,
    pub fuse: Option<Fuse>,
    pub fsck: Option<(&'static str, &'static [&'static str])>,
    pub package: Option<&'static str>,
    pub in_memory: bool,
    pub min_size: Option<u64>,
    pub max_size: Option<u64>,
    pub fresh_from_blank: bool,
    pub create_rate: f64,
}

const MIB: u64 = 1 << 20;
const TIB: u64 = 1 << 40;
const PIB: u64 = 1 << 50;
const EIB: u64 = 1 << 60;

/// One entry per kind, in the order of the enum's variants (a test holds them to it).
pub const FACTS: [Facts; 8] = [
    Facts {
        kind: FsKind::Ext4,
        name: "ext4",
        mkfs: Some((
            "mkfs.ext4",
            &["-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"],
        )),
        mkfs_sparse: Some(&[
            "-q",
            "-F",
            "-E",
            "lazy_itable_init=0,lazy_journal_init=0,assume_storage_prezeroed=1",
        ]),
        sparse_since: Some((1, 47)),
        version_args: &["-V"],
        mkfs_dry_run: Some("-n"),
        kernel_fs: Some("ext4"),
        fuse: None,
        fsck: Some(("e2fsck", &["-f", "-n"])),
        package: Some("e2fsprogs"),
        in_memory: false,
        min_size: Some(2 * MIB),
        max_size: Some(EIB),
        fresh_from_blank: false,
        create_rate: 11_000.0,
    },
    Facts {
        kind: FsKind::Xfs,
        name: "xfs",
        mkfs: Some(("mkfs.xfs", &["-q", "-f"])),
        mkfs_sparse: Some(&["-q", "-f", "-K"]),
        sparse_since: None,
        version_args: &["-V"],
        mkfs_dry_run: Some("-N"),
        kernel_fs: Some("xfs"),
        fuse: None,
        fsck: Some(("xfs_repair", &["-n"])),
        package: Some("xfsprogs"),
        in_memory: false,
        min_size: Some(300 * MIB),
        max_size: Some(8 * EIB - 1),
        fresh_from_blank: false,
        create_rate: 11_000.0,
    },
    Facts {
        kind: FsKind::Btrfs,
        name: "btrfs",
        mkfs: Some(("mkfs.btrfs", &["-q", "-f"])),
        mkfs_sparse: Some(&["-q", "-f", "-K"]),
        sparse_since: None,
        version_args: &["--version"],
        mkfs_dry_run: None,
        kernel_fs: Some("btrfs"),
        fuse: None,
        fsck: Some(("btrfs", &["check", "--readonly"])),
        package: Some("btrfs-progs"),
        in_memory: false,
        min_size: Some(109 * MIB),
        max_size: None,
        fresh_from_blank: false,
        create_rate: 3_300.0,
    },
    Facts {
        kind: FsKind::Ntfs,
        name: "ntfs",
        // -f: quick format (no zeroing pass); -F: accept a whole device / loop.
        mkfs: Some(("mkntfs", &["-q", "-F", "-f"])),
        mkfs_sparse: None,
        sparse_since: None,
        version_args: &["-V"],
        mkfs_dry_run: None,
        kernel_fs: Some("fuseblk"),
        fuse: Some(Fuse {
            mount_type: "ntfs-3g",
            helper: "mount.ntfs-3g",
            kernel_driver: None,
            version: ("ntfs-3g", &["--version"]),
            package: "ntfs-3g",
        }),
        fsck: Some(("ntfsfix", &["-n"])),
        package: Some("ntfs-3g"),
        in_memory: false,
        min_size: Some(2 * MIB),
        max_size: Some(256 * TIB),
        // mkntfs writes its `$LogFile` in full: ~2 s per fresh cell on a sparse image.
        fresh_from_blank: true,
        create_rate: 3_500.0,
    },
    Facts {
        kind: FsKind::Exfat,
        name: "exfat",
        mkfs: Some(("mkfs.exfat", &[])),
        mkfs_sparse: None,
        sparse_since: None,
        version_args: &["-V"],
        mkfs_dry_run: None,
        kernel_fs: Some("fuseblk"),
        fuse: Some(Fuse {
            mount_type: "exfat-fuse",
            helper: "mount.exfat-fuse",
            kernel_driver: Some("exfat"),
            version: ("mount.exfat-fuse", &["-V"]),
            package: "exfat-fuse",
        }),
        fsck: Some(("fsck.exfat", &["-n"])),
        package: Some("exfatprogs and exfat-fuse"),
        in_memory: false,
        min_size: Some(3 * MIB),
        max_size: Some(128 * PIB),
        fresh_from_blank: false,
        create_rate: 3_500.0,
    },
    Facts {
        kind: FsKind::F2fs,
        name: "f2fs",
        mkfs: Some(("mkfs.f2fs", &["-q", "-f"])),
        mkfs_sparse: Some(&["-q", "-f", "-t", "0"]),
        sparse_since: None,
        version_args: &["-V"],
        mkfs_dry_run: None,
        kernel_fs: Some("f2fs"),
        fuse: None,
        fsck: Some(("fsck.f2fs", &["--dry-run"])),
        package: Some("f2fs-tools"),
        in_memory: false,
        min_size: Some(52 * MIB),
        max_size: Some(16 * TIB),
        fresh_from_blank: false,
        create_rate: 3_300.0,
    },
    Facts {
        kind: FsKind::Tmpfs,
        name: "tmpfs",
        mkfs: None,
        mkfs_sparse: None,
        sparse_since: None,
        version_args: &["-V"],
        mkfs_dry_run: None,
        kernel_fs: Some("tmpfs"),
        fuse: None,
        fsck: None,
        package: None,
        in_memory: true,
        min_size: None,
        max_size: None,
        fresh_from_blank: false,
        create_rate: 40_000.0,
    },
    Facts {
        kind: FsKind::Existing,
        name: "dir",
        mkfs: None,
        mkfs_sparse: None,
        sparse_since: None,
        version_args: &["-V"],
        mkfs_dry_run: None,
        kernel_fs: None,
        fuse: None,
        fsck: None,
        package: None,
        in_memory: false,
        min_size: None,
        max_size: None,
        fresh_from_blank: false,
        create_rate: 3_500.0,
    },
];

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

    /// This kind's entry of [`FACTS`].
    pub fn facts(self) -> &'static Facts {
        &FACTS[self as usize]
    }

    /// The name used in plans, results and reports.
    pub fn name(self) -> &'static str {
        self.facts().name
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
        self.facts().mkfs
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
        self.facts().mkfs_sparse
    }

    /// The oldest mkfs (major, minor) that takes [`FsKind::mkfs_sparse_flags`]:
    /// `assume_storage_prezeroed` is new in e2fsprogs 1.47; the others are old.
    pub fn sparse_flags_since(self) -> Option<(u32, u32)> {
        self.facts().sparse_since
    }

    /// How to ask the mkfs tool its version.
    pub fn version_args(self) -> &'static [&'static str] {
        self.facts().version_args
    }

    /// The flag that turns the mkfs tool's run into a dry one, where it has one.
    pub fn mkfs_dry_run_flag(self) -> Option<&'static str> {
        self.facts().mkfs_dry_run
    }

    /// Name in /proc/filesystems the kernel needs (FUSE file systems need `fuseblk`).
    pub fn kernel_fs(self) -> Option<&'static str> {
        self.facts().kernel_fs
    }

    /// How the file system is mounted in user space, for a FUSE file system.
    pub fn fuse(self) -> Option<&'static Fuse> {
        self.facts().fuse.as_ref()
    }

    /// Read-only consistency check run after each repetition (program, args before the device).
    pub fn fsck(self) -> Option<(&'static str, &'static [&'static str])> {
        self.facts().fsck
    }

    /// The Debian package that provides the tools, for error messages and setup.
    pub fn package(self) -> Option<&'static str> {
        self.facts().package
    }

    /// Whether the file system lives in memory (tmpfs): a reference for what the disk file
    /// systems could reach, never a candidate a user is choosing, so never ranked, never the
    /// default baseline.
    pub fn is_memory(self) -> bool {
        self.facts().in_memory
    }

    /// The smallest image its mkfs accepts, measured by bisection on sparse files with
    /// the catalogue's mkfs flags (Debian 12: e2fsprogs 1.47, xfsprogs 6.1, btrfs-progs 6.2,
    /// ntfs-3g 2022.10, exfatprogs 1.2, f2fs-tools 1.15), rounded up to a MiB. `None` where
    /// there is no mkfs.
    pub fn min_size(self) -> Option<u64> {
        self.facts().min_size
    }

    /// The largest file system of the kind as the catalogue makes it (4 KiB blocks or
    /// clusters), from the format's own limits: ext4 with `64bit` (on by default since
    /// e2fsprogs 1.43) 1 EiB, xfs 8 EiB, ntfs 2^32 clusters of at most 64 KiB (256 TiB),
    /// exFAT 128 PiB, f2fs 16 TiB; `None` where only the host's largest file bounds it
    /// (btrfs's 16 EiB is beyond any file offset). A larger `--fs-size` is refused up
    /// front; the image must also fit in a file of the work directory's file system, which
    /// the run checks there.
    pub fn max_size(self) -> Option<u64> {
        self.facts().max_size
    }

    /// Whether the file system needs a block device (and so a loop image by default).
    pub fn needs_device(self) -> bool {
        !matches!(self, FsKind::Tmpfs | FsKind::Existing)
    }

    /// Whether fresh file systems of this kind are copied from a blank: only where mkfs
    /// writes enough that a copy of its result is cheaper (ntfs's `$LogFile`); the others'
    /// mkfs is already a few hundredths of a second on a sparse image.
    pub fn copied_from_blank(self) -> bool {
        self.facts().fresh_from_blank
    }

    /// Files per second the file system is assumed to create (dev machine, loop devices on
    /// an ext4 host, default run at scale 0.01): orders the golden images' builds slowest
    /// first, and the cost model's coarse estimate prices a cell or an image from it.
    pub fn create_rate(self) -> f64 {
        self.facts().create_rate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_the_order_of_the_variants() {
        for (i, f) in FACTS.iter().enumerate() {
            assert_eq!(f.kind as usize, i, "{}", f.name);
        }
        for k in FsKind::PROVISIONABLE.into_iter().chain([FsKind::Existing]) {
            assert_eq!(FsKind::parse(k.name()), Some(k));
        }
    }

    #[test]
    fn a_fuse_kind_is_mounted_through_fuseblk() {
        for f in &FACTS {
            if f.fuse.is_some() {
                assert_eq!(f.kernel_fs, Some("fuseblk"), "{}", f.name);
            }
        }
    }
}
