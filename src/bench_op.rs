//! `fsarena op`: one workload's measured operation on a tree that already exists, so it can
//! be timed by an outside tool (hyperfine) next to the peer program that does the same job.
//!
//! Each op calls exactly the core function the workload wraps in `Harness::measure` — no
//! data generation, no verification, no monitor — with the work matched to its peer:
//!
//! | op          | core function                      | peer it is compared with              |
//! |-------------|------------------------------------|---------------------------------------|
//! | scan        | `scan::analyze`                    | `du -s`, `dua`, `pdu`                 |
//! | search-name | `search::search` (name glob)       | `find -name`, `fdfind -g`             |
//! | search-size | `search::search` (size range)      | `find -size`                          |
//! | dupes       | `dupes::find_duplicates`           | `jdupes -r`, `rmlint`, `fclones group`|
//! | copy        | `copy::copy_tree` (into DEST)      | `cp -a`, `rsync -a`, `xcp -r`         |
//! | sync        | `sync::sync_tree` (SRC onto DEST)  | `rsync -a --delete`                   |
//! | delete      | `delete::remove_tree_contents` + `rmdir SRC` | `rm -rf`                    |
//! | touch       | `touch::touch_all`                 | `find -type f -exec touch {} +`       |
//! | chmod       | `chmod::apply` (mode only)         | `chmod -R`                            |
//! | hash        | `copy_verify::read_back`           | `xxhsum` over every file              |
//!
//! The time printed is the op's own wall clock around the core call; an outside timer also
//! sees process start and exit, which is the point of comparing with whole peer programs.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use crate::dataset::DatasetSpec;
use crate::workload::tree_copy::{copy_tree, CopyMode};
use crate::workload::search::Query;
use crate::workload::{
    chmod, copy_verify, delete, dupes, scan, search, sync, touch, Ctx, IoContext,
    WorkloadError,
};

/// The operations `fsarena op` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OpName {
    Scan,
    SearchName,
    SearchSize,
    Dupes,
    Copy,
    Sync,
    Delete,
    Touch,
    Chmod,
    Hash,
}

impl OpName {
    /// The name as typed on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            OpName::Scan => "scan",
            OpName::SearchName => "search-name",
            OpName::SearchSize => "search-size",
            OpName::Dupes => "dupes",
            OpName::Copy => "copy",
            OpName::Sync => "sync",
            OpName::Delete => "delete",
            OpName::Touch => "touch",
            OpName::Chmod => "chmod",
            OpName::Hash => "hash",
        }
    }

    /// Whether the op writes into a second tree.
    pub fn needs_dest(self) -> bool {
        matches!(self, OpName::Copy | OpName::Sync)
    }
}

/// What to run and with which parameters.
#[derive(Debug, Clone)]
pub struct OpArgs {
    pub name: OpName,
    pub src: PathBuf,
    pub dest: Option<PathBuf>,
    pub threads: usize,
    /// `search-name`: glob on the file name.
    pub pattern: String,
    /// `search-size`: inclusive byte range.
    pub min_size: u64,
    pub max_size: u64,
    /// `touch`: the time (seconds since the epoch) every file gets.
    pub time: i64,
    /// `chmod`: the permission bits every file gets.
    pub mode: u32,
    /// `sync`: modification times this close count as equal.
    pub modify_window_s: f64,
}

/// What an op did: its own wall-clock time, and a count and byte total whose meaning
/// depends on the op (see [`run`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OpReport {
    pub seconds: f64,
    pub files: u64,
    pub bytes: u64,
}

impl OpReport {
    /// The one line `fsarena op` prints.
    pub fn line(&self, name: OpName) -> String {
        format!(
            "{} seconds={:.6} files={} bytes={}",
            name.as_str(),
            self.seconds,
            self.files,
            self.bytes
        )
    }
}

/// Runs one op. `files`/`bytes` are: scan — files, allocated bytes (files and directories,
/// as `du` counts); search — matches, 0; dupes — files in duplicate groups, bytes hashed;
/// copy/sync — files copied, bytes copied; delete — entries removed, 0; touch/chmod —
/// files changed, 0; hash — files, bytes read.
pub fn run(args: &OpArgs) -> Result<OpReport, WorkloadError> {
    let spec = DatasetSpec::default();
    let options = toml::Table::new();
    let cancel = AtomicBool::new(false);
    let dest = match (args.name.needs_dest(), &args.dest) {
        (true, Some(d)) => Some(d.as_path()),
        (true, None) => {
            return Err(WorkloadError::Option(format!(
                "op {} needs a destination: fsarena op {} SRC DEST",
                args.name.as_str(),
                args.name.as_str()
            )))
        }
        (false, Some(_)) => {
            return Err(WorkloadError::Option(format!(
                "op {} takes no destination",
                args.name.as_str()
            )))
        }
        (false, None) => None,
    };
    let ctx = Ctx {
        root: &args.src,
        scratch: dest.unwrap_or(&args.src),
        threads: args.threads.max(1),
        dataset: &spec,
        options: &options,
        cancel: &cancel,
        deadline: None,
    };
    let (src, threads) = (args.src.as_path(), ctx.threads);
    let t0 = Instant::now();
    let (files, bytes) = match args.name {
        OpName::Scan => {
            let u = scan::analyze(src, threads, &ctx)?;
            (u.files, u.allocated())
        }
        OpName::SearchName | OpName::SearchSize => {
            let q = if args.name == OpName::SearchName {
                Query::Name(args.pattern.clone())
            } else {
                Query::Size {
                    min: args.min_size,
                    max: args.max_size,
                }
            };
            let found = search::search(src, threads, &q, &ctx)?;
            (found.paths.len() as u64, 0)
        }
        OpName::Dupes => {
            let s = dupes::find_duplicates(&ctx, src, threads)?;
            (
                s.groups.iter().map(Vec::len).sum::<usize>() as u64,
                s.bytes_hashed,
            )
        }
        OpName::Copy => {
            let dest = dest_dir(dest)?;
            // `cp -a SRC DEST` creates DEST; copy_tree fills an existing directory.
            create_dir_like(src, dest)?;
            // `cp` reflinks where the file system offers it (--reflink=auto).
            let t = copy_tree(&ctx, src, dest, threads, CopyMode::Fast { reflink: true })?;
            (t.files, t.bytes)
        }
        OpName::Sync => {
            let dest = dest_dir(dest)?;
            if !dest.exists() {
                create_dir_like(src, dest)?;
            }
            let s = sync::sync_tree(&ctx, src, dest, threads, args.modify_window_s)?;
            (s.files_copied, s.bytes_copied)
        }
        OpName::Delete => {
            let r = delete::remove_tree_contents(src, threads, &ctx)?;
            // `rm -rf SRC` removes SRC itself too.
            std::fs::remove_dir(src).ctx(|| format!("removing {}", src.display()))?;
            (r.files + r.dirs + 1, 0)
        }
        OpName::Touch => {
            let (n, _) = touch::touch_all(src, threads, args.time, &ctx)?;
            (n, 0)
        }
        OpName::Chmod => {
            let expect = chmod::Expect {
                mode: Some(args.mode),
                mode_stored: true,
                xattr: None,
            };
            let a = chmod::apply(src, threads, &expect, &ctx)?;
            (a.files, 0)
        }
        OpName::Hash => {
            let rb = copy_verify::read_back(&ctx, src, threads)?;
            (rb.files.len() as u64, rb.bytes)
        }
    };
    Ok(OpReport {
        seconds: t0.elapsed().as_secs_f64(),
        files,
        bytes,
    })
}

fn dest_dir(dest: Option<&Path>) -> Result<&Path, WorkloadError> {
    dest.ok_or_else(|| WorkloadError::Option("a destination is needed".into()))
}

/// Creates `dest` with the mode of `src`, refusing an existing `dest` (as a copy that
/// silently merged into an old tree would time something else).
fn create_dir_like(src: &Path, dest: &Path) -> Result<(), WorkloadError> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(src).ctx(|| format!("stat {}", src.display()))?;
    std::fs::create_dir(dest).ctx(|| {
        format!(
            "creating {} (it must not exist yet; remove it between runs)",
            dest.display()
        )
    })?;
    std::fs::set_permissions(
        dest,
        std::fs::Permissions::from_mode(meta.permissions().mode()),
    )
    .ctx(|| format!("chmod {}", dest.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(name: OpName, src: &Path, dest: Option<&Path>) -> OpArgs {
        OpArgs {
            name,
            src: src.to_path_buf(),
            dest: dest.map(Path::to_path_buf),
            threads: 2,
            pattern: "*.jpg".into(),
            min_size: 10,
            max_size: 100,
            time: 1_000_000_000,
            mode: 0o640,
            modify_window_s: 0.0,
        }
    }

    /// a/x.jpg (50 B), a/y.txt (5 B), b/z.jpg (50 B, same bytes as x.jpg).
    fn tree(base: &Path) -> PathBuf {
        let t = base.join("t");
        std::fs::create_dir_all(t.join("a")).unwrap();
        std::fs::create_dir_all(t.join("b")).unwrap();
        std::fs::write(t.join("a/x.jpg"), [7u8; 50]).unwrap();
        std::fs::write(t.join("a/y.txt"), b"hello").unwrap();
        std::fs::write(t.join("b/z.jpg"), [7u8; 50]).unwrap();
        t
    }

    #[test]
    fn ops_do_their_work_and_count_it() {
        let base = tempfile::Builder::new()
            .prefix("fsarena-op-")
            .tempdir_in("/var/tmp")
            .unwrap();
        let t = tree(base.path());
        let r = |n, d: Option<&Path>| run(&args(n, &t, d)).unwrap();
        assert_eq!(r(OpName::Scan, None).files, 3);
        assert_eq!(r(OpName::SearchName, None).files, 2);
        assert_eq!(r(OpName::SearchSize, None).files, 2);
        let d = r(OpName::Dupes, None);
        assert_eq!(d.files, 2);
        let h = r(OpName::Hash, None);
        assert_eq!((h.files, h.bytes), (3, 105));

        let copy_dest = base.path().join("copy");
        let c = r(OpName::Copy, Some(&copy_dest));
        assert_eq!((c.files, c.bytes), (3, 105));
        assert_eq!(std::fs::read(copy_dest.join("a/y.txt")).unwrap(), b"hello");
        // A second copy onto an existing destination is refused, not merged.
        assert!(run(&args(OpName::Copy, &t, Some(&copy_dest))).is_err());

        std::fs::write(t.join("a/y.txt"), b"changed!").unwrap();
        std::fs::remove_file(t.join("b/z.jpg")).unwrap();
        let s = r(OpName::Sync, Some(&copy_dest));
        assert_eq!((s.files, s.bytes), (1, 8));
        assert!(!copy_dest.join("b/z.jpg").exists());

        assert_eq!(r(OpName::Touch, None).files, 2);
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(t.join("a/x.jpg")).unwrap();
        assert_eq!(m.mtime(), 1_000_000_000);
        assert_eq!(r(OpName::Chmod, None).files, 2);
        assert_eq!(
            std::fs::metadata(t.join("a/x.jpg")).unwrap().mode() & 0o7777,
            0o640
        );

        // root + a + b + 2 files
        assert_eq!(r(OpName::Delete, None).files, 5);
        assert!(!t.exists());
        assert!(run(&args(OpName::Scan, &t, Some(&copy_dest))).is_err());
        assert!(run(&args(OpName::Copy, &copy_dest, None)).is_err());
    }
}
