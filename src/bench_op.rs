//! `fsarena op`: one workload's measured operation on a tree that already exists, so it can
//! be timed by an outside tool (hyperfine) next to the peer program that does the same job.
//!
//! Each op calls exactly the core function the workload wraps in `Harness::measure` — no
//! data generation, no verification, no monitor — with the work matched to its peer. The
//! ops are one table, [`OPS`]: each row names the op, the registry workload
//! ([`crate::workload::all`]) whose measured phase it is, the peers it is compared with,
//! and the call. The command line's list of names is that table, so there is no second list
//! to keep in step.
//!
//! The time printed is the op's own wall clock around the core call; an outside timer also
//! sees process start and exit, which is the point of comparing with whole peer programs.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use crate::dataset::DatasetSpec;
use crate::workload::search::Query;
use crate::workload::tree_copy::{copy_tree, CopyMode};
use crate::workload::{
    chmod, copy_verify, delete, dupes, scan, search, sync, touch, Ctx, IoContext, WorkloadError,
};

pub mod in_turn;

/// What an op's core call returns: a count and a byte total (see [`run`]).
type Counts = Result<(u64, u64), WorkloadError>;

/// One operation of `fsarena op`: a row of [`OPS`].
#[derive(Clone, Copy)]
pub struct Op {
    /// The name as typed on the command line.
    pub name: &'static str,
    /// The registry workload whose measured phase this op is.
    pub workload: &'static str,
    /// The core function called, for the help text.
    pub core: &'static str,
    /// The peer programs bench/files.sh times it against.
    pub peers: &'static str,
    /// Whether the op writes into a second tree (DEST).
    pub needs_dest: bool,
    /// Whether the op changes nothing, so it can run again on the same tree
    /// ([`in_turn::run_in_turn`]).
    pub read_only: bool,
    /// The core call: (args, context, source tree, destination when `needs_dest`).
    call: fn(&OpArgs, &Ctx, &Path, Option<&Path>) -> Counts,
}

/// Every op `fsarena op` runs, in the order `--help` lists them.
pub const OPS: &[Op] = &[
    Op {
        name: "scan",
        workload: "scan",
        core: "scan::analyze",
        peers: "du -s, dua, pdu",
        needs_dest: false,
        read_only: true,
        call: op_scan,
    },
    Op {
        name: "search-name",
        workload: "search",
        core: "search::search (name glob)",
        peers: "find -name, fdfind -g",
        needs_dest: false,
        read_only: true,
        call: op_search_name,
    },
    Op {
        name: "search-size",
        workload: "search",
        core: "search::search (size range)",
        peers: "find -size",
        needs_dest: false,
        read_only: true,
        call: op_search_size,
    },
    Op {
        name: "dupes",
        workload: "dupes",
        core: "dupes::find_duplicates",
        peers: "jdupes -r, rmlint, fclones group",
        needs_dest: false,
        read_only: true,
        call: op_dupes,
    },
    Op {
        name: "copy",
        workload: "copy",
        core: "tree_copy::copy_tree (into DEST)",
        peers: "cp -a, rsync -a, xcp -r",
        needs_dest: true,
        read_only: false,
        call: op_copy,
    },
    Op {
        name: "sync",
        workload: "sync",
        core: "sync::sync_tree (SRC onto DEST)",
        peers: "rsync -a --delete",
        needs_dest: true,
        read_only: false,
        call: op_sync,
    },
    Op {
        name: "delete",
        workload: "delete",
        core: "delete::remove_tree_contents + rmdir SRC",
        peers: "rm -rf",
        needs_dest: false,
        read_only: false,
        call: op_delete,
    },
    Op {
        name: "touch",
        workload: "touch",
        core: "touch::touch_all",
        peers: "find -type f -exec touch {} +",
        needs_dest: false,
        read_only: false,
        call: op_touch,
    },
    Op {
        name: "chmod",
        workload: "chmod",
        core: "chmod::apply (mode only)",
        peers: "chmod -R",
        needs_dest: false,
        read_only: false,
        call: op_chmod,
    },
    Op {
        name: "hash",
        workload: "copy-verify",
        core: "copy_verify::read_back",
        peers: "xxhsum over every file",
        needs_dest: false,
        read_only: true,
        call: op_hash,
    },
];

impl Op {
    /// The op called `name`, if there is one.
    pub fn by_name(name: &str) -> Option<Op> {
        OPS.iter().find(|o| o.name == name).copied()
    }
}

impl std::fmt::Debug for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl PartialEq for Op {
    fn eq(&self, other: &Op) -> bool {
        self.name == other.name
    }
}

impl Eq for Op {}

/// Lets clap take an op name as a positional argument, listing [`OPS`] as its values.
impl clap::ValueEnum for Op {
    fn value_variants<'a>() -> &'a [Self] {
        OPS
    }
    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name).help(format!(
            "workload {}: {}; peers: {}",
            self.workload, self.core, self.peers
        )))
    }
}

/// What to run and with which parameters.
#[derive(Debug, Clone)]
pub struct OpArgs {
    pub name: Op,
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
    pub fn line(&self, op: Op) -> String {
        format!(
            "{} seconds={:.6} files={} bytes={}",
            op.name, self.seconds, self.files, self.bytes
        )
    }
}

/// Runs one op. `files`/`bytes` are: scan — files, allocated bytes (files and directories,
/// as `du` counts); search — matches, 0; dupes — files in duplicate groups, bytes hashed;
/// copy/sync — files copied, bytes copied; delete — entries removed, 0; touch/chmod —
/// files changed, 0; hash — files, bytes read.
pub fn run(args: &OpArgs) -> Result<OpReport, WorkloadError> {
    let dest = destination(args)?;
    in_ctx(args, dest, |ctx| timed(args, ctx, &args.src, dest))
}

/// The op's destination: given exactly when it writes into a second tree.
fn destination(args: &OpArgs) -> Result<Option<&Path>, WorkloadError> {
    let op = args.name;
    match (op.needs_dest, &args.dest) {
        (true, Some(d)) => Ok(Some(d.as_path())),
        (true, None) => Err(WorkloadError::Option(format!(
            "op {} needs a destination: fsarena op {} SRC DEST",
            op.name, op.name
        ))),
        (false, Some(_)) => Err(WorkloadError::Option(format!(
            "op {} takes no destination",
            op.name
        ))),
        (false, None) => Ok(None),
    }
}

/// Calls `f` with the context every op runs in (the default data set's spec, no options,
/// nothing cancelled, no deadline): built in one place for one pass and for many.
fn in_ctx<R>(args: &OpArgs, dest: Option<&Path>, f: impl FnOnce(&Ctx) -> R) -> R {
    let spec = DatasetSpec::default();
    let options = toml::Table::new();
    let cancel = AtomicBool::new(false);
    let scratch = dest.unwrap_or(&args.src);
    let ctx = Ctx {
        threads: args.threads.max(1),
        ..Ctx::new(&args.src, scratch, &spec, &options, &cancel)
    };
    f(&ctx)
}

/// The op's core call on `src`, timed by its own wall clock.
fn timed(
    args: &OpArgs,
    ctx: &Ctx,
    src: &Path,
    dest: Option<&Path>,
) -> Result<OpReport, WorkloadError> {
    let t0 = Instant::now();
    let (files, bytes) = (args.name.call)(args, ctx, src, dest)?;
    Ok(OpReport {
        seconds: t0.elapsed().as_secs_f64(),
        files,
        bytes,
    })
}

fn op_scan(_: &OpArgs, ctx: &Ctx, src: &Path, _: Option<&Path>) -> Counts {
    let u = scan::analyze(src, ctx.threads, ctx)?;
    Ok((u.files, u.allocated()))
}

fn op_search_name(args: &OpArgs, ctx: &Ctx, src: &Path, _: Option<&Path>) -> Counts {
    let found = search::search(src, ctx.threads, &Query::Name(args.pattern.clone()), ctx)?;
    Ok((found.paths.len() as u64, 0))
}

fn op_search_size(args: &OpArgs, ctx: &Ctx, src: &Path, _: Option<&Path>) -> Counts {
    let q = Query::Size {
        min: args.min_size,
        max: args.max_size,
    };
    let found = search::search(src, ctx.threads, &q, ctx)?;
    Ok((found.paths.len() as u64, 0))
}

fn op_dupes(_: &OpArgs, ctx: &Ctx, src: &Path, _: Option<&Path>) -> Counts {
    let s = dupes::find_duplicates(ctx, src, ctx.threads)?;
    Ok((
        s.groups.iter().map(Vec::len).sum::<usize>() as u64,
        s.bytes_hashed,
    ))
}

fn op_copy(_: &OpArgs, ctx: &Ctx, src: &Path, dest: Option<&Path>) -> Counts {
    let dest = dest_dir(dest)?;
    // `cp -a SRC DEST` creates DEST; copy_tree fills an existing directory.
    create_dir_like(src, dest)?;
    // `cp` reflinks where the file system offers it (--reflink=auto).
    let t = copy_tree(
        ctx,
        src,
        dest,
        ctx.threads,
        CopyMode::Fast { reflink: true },
    )?;
    Ok((t.files, t.bytes))
}

fn op_sync(args: &OpArgs, ctx: &Ctx, src: &Path, dest: Option<&Path>) -> Counts {
    let dest = dest_dir(dest)?;
    if !dest.exists() {
        create_dir_like(src, dest)?;
    }
    let s = sync::sync_tree(ctx, src, dest, ctx.threads, args.modify_window_s)?;
    Ok((s.files_copied, s.bytes_copied))
}

fn op_delete(_: &OpArgs, ctx: &Ctx, src: &Path, _: Option<&Path>) -> Counts {
    let r = delete::remove_tree_contents(src, ctx.threads, ctx)?;
    // `rm -rf SRC` removes SRC itself too.
    std::fs::remove_dir(src).ctx(|| format!("removing {}", src.display()))?;
    Ok((r.files + r.dirs + 1, 0))
}

fn op_touch(args: &OpArgs, ctx: &Ctx, src: &Path, _: Option<&Path>) -> Counts {
    let (n, _) = touch::touch_all(src, ctx.threads, args.time, ctx)?;
    Ok((n, 0))
}

fn op_chmod(args: &OpArgs, ctx: &Ctx, src: &Path, _: Option<&Path>) -> Counts {
    let expect = chmod::Expect {
        mode: Some(args.mode),
        mode_stored: true,
        xattr: None,
    };
    let a = chmod::apply(src, ctx.threads, &expect, ctx)?;
    Ok((a.files, 0))
}

fn op_hash(_: &OpArgs, ctx: &Ctx, src: &Path, _: Option<&Path>) -> Counts {
    let rb = copy_verify::read_back(ctx, src, ctx.threads)?;
    Ok((rb.files.len() as u64, rb.bytes))
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

    fn op(name: &str) -> Op {
        Op::by_name(name).unwrap()
    }

    pub(super) fn args(name: &str, src: &Path, dest: Option<&Path>) -> OpArgs {
        OpArgs {
            name: op(name),
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
    pub(super) fn tree(base: &Path) -> PathBuf {
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
        let r = |n: &str, d: Option<&Path>| run(&args(n, &t, d)).unwrap();
        assert_eq!(r("scan", None).files, 3);
        assert_eq!(r("search-name", None).files, 2);
        assert_eq!(r("search-size", None).files, 2);
        let d = r("dupes", None);
        assert_eq!(d.files, 2);
        let h = r("hash", None);
        assert_eq!((h.files, h.bytes), (3, 105));

        let copy_dest = base.path().join("copy");
        let c = r("copy", Some(&copy_dest));
        assert_eq!((c.files, c.bytes), (3, 105));
        assert_eq!(std::fs::read(copy_dest.join("a/y.txt")).unwrap(), b"hello");
        // A second copy onto an existing destination is refused, not merged.
        assert!(run(&args("copy", &t, Some(&copy_dest))).is_err());

        std::fs::write(t.join("a/y.txt"), b"changed!").unwrap();
        std::fs::remove_file(t.join("b/z.jpg")).unwrap();
        let s = r("sync", Some(&copy_dest));
        assert_eq!((s.files, s.bytes), (1, 8));
        assert!(!copy_dest.join("b/z.jpg").exists());

        assert_eq!(r("touch", None).files, 2);
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(t.join("a/x.jpg")).unwrap();
        assert_eq!(m.mtime(), 1_000_000_000);
        assert_eq!(r("chmod", None).files, 2);
        assert_eq!(
            std::fs::metadata(t.join("a/x.jpg")).unwrap().mode() & 0o7777,
            0o640
        );

        // root + a + b + 2 files
        assert_eq!(r("delete", None).files, 5);
        assert!(!t.exists());
        assert!(run(&args("scan", &t, Some(&copy_dest))).is_err());
        assert!(run(&args("copy", &copy_dest, None)).is_err());
    }

    #[test]
    fn every_op_belongs_to_a_registry_workload_and_names_are_unique() {
        let workloads = crate::workload::names();
        for o in OPS {
            assert!(
                workloads.contains(&o.workload),
                "{} -> {}",
                o.name,
                o.workload
            );
            assert_eq!(Op::by_name(o.name), Some(*o));
        }
        let mut names: Vec<&str> = OPS.iter().map(|o| o.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), OPS.len());
        assert!(Op::by_name("nope").is_none());
    }
}
