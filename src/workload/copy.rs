//! `copy`: copy a whole tree onto the target, the way `cp -a` does, as fast as the file
//! systems allow.
//!
//! Two points:
//! * `from-outside` (the default): the source is the run's dated tree outside the target
//!   (made once per run, read back into the page cache before each cell:
//!   [`super::source`]); the measured phase copies it onto the target. Between
//!   different file systems `copy_file_range` is refused (EXDEV) on current kernels, so this
//!   is usually the read/write path, exactly as for `cp`.
//! * `within`: source and copy both on the target, so reflinks (`FICLONE`, btrfs/xfs) or an
//!   in-kernel `copy_file_range` can apply; which method ran is reported per file.
//!
//! The measured phase is one run of the tree-copy engine ([`super::tree_copy`]) and ends with
//! `syncfs` on the target, inside `seconds` (as `create` does): a copy is done when its
//! data is on the device. Afterwards the copy is hashed and compared with the manifest, and
//! modification times with the source's. A `within` copy made of reflinks is checked by its
//! block map instead of read back (`verify::copy_within`): its source was hashed when it was
//! warmed, and a file on its source's blocks holds its source's bytes.

use std::path::Path;
use std::time::Instant;

use super::contract::Workload;
use super::ctx::Ctx;
use super::error::{IoContext, WorkloadError};
use super::harness::Harness;
use super::outcome::Outcome;
use super::point::Point;
use super::prepare::{check_threads, dated_on_target};
use super::spec::{StartState, WorkloadSpec};
use super::tree_copy::{copy_report, copy_tree, CopyMode, TreeCopy};
use super::{source, verify};
use crate::dataset::Manifest;

/// The `copy` workload (named so as not to shadow the `Copy` trait).
pub struct CopyTree;

/// The check after `copy`: `dst` holds exactly the data set (paths, sizes, hashes,
/// directories) and every file kept its source's modification time.
pub fn verify_copy(
    src: &Path,
    dst: &Path,
    manifest: &Manifest,
    threads: usize,
) -> Result<(), WorkloadError> {
    verify::tree(dst, manifest, threads)?;
    verify::mtimes(src, dst, threads)
}

/// Where the `within` point writes its copy on the target (its source is the dated data
/// set in `prepare::DATED_DIR`).
const WITHIN_DST: &str = "copy";

impl Workload for CopyTree {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            key_metric: ("seconds", false),
            columns: super::spec::WRITE_COLUMNS,
            source_trees: 1,
            // `within` copies the dated data set already on the target: a copy of the dated
            // populated image, instead of writing the whole data set in every cell.
            start: StartState::DatedDataSet,
            ..WorkloadSpec::new("copy", "copy a tree onto the target like cp -a (from outside; and within, with reflinks where offered)")
        }
    }
    /// `from-outside` starts from an empty file system.
    fn point_wants_populated(&self, point: &Point) -> bool {
        point.variant == "within"
    }
    fn points(&self, _ctx: &Ctx) -> Result<Vec<Point>, WorkloadError> {
        let point = |variant: &str, source: &str| Point {
            variant: variant.into(),
            params: [("source".to_string(), serde_json::Value::from(source))]
                .into_iter()
                .collect(),
        };
        Ok(vec![
            point("from-outside", "outside"),
            point("within", "target"),
        ])
    }
    fn run(
        &self,
        ctx: &Ctx,
        point: &Point,
        harness: &mut dyn Harness,
    ) -> Result<Outcome, WorkloadError> {
        let within = match point.variant.as_str() {
            "" | "from-outside" => false,
            "within" => true,
            other => {
                return Err(WorkloadError::Option(format!(
                    "copy has points from-outside and within, not {other:?}"
                )))
            }
        };
        let (src, dst, manifest) = if within {
            // Written back before the clock starts (it stays cached when laid down here):
            // the copy must not share the device or the flusher threads with its writeback.
            let (src, manifest) = dated_on_target(ctx)?;
            let dst = ctx.root.join(WITHIN_DST);
            std::fs::create_dir(&dst).ctx(|| format!("creating {}", dst.display()))?;
            (src, dst, manifest)
        } else {
            // The run's one dated source tree, written back and warm.
            let (src, manifest) = source::dated(ctx)?;
            (src, ctx.root.to_path_buf(), manifest)
        };

        let mut result = None;
        let mut outcome = harness.measure(&mut || {
            let t = Instant::now();
            let r = copy_tree(
                ctx,
                &src,
                &dst,
                ctx.threads,
                CopyMode::Fast { reflink: within },
            )?;
            let s0 = Instant::now();
            crate::sys::syncfs(&dst).ctx(|| format!("syncfs {}", dst.display()))?;
            let mut out = Outcome {
                seconds: t.elapsed().as_secs_f64(),
                files: r.files,
                logical_read_bytes: if within { r.bytes } else { 0 },
                logical_write_bytes: r.bytes,
                ..Outcome::default()
            };
            copy_report(&r, &mut out);
            out.metrics
                .insert("syncfs_seconds".into(), s0.elapsed().as_secs_f64());
            result = Some(r);
            Ok(out)
        })?;
        let r = result.ok_or_else(|| WorkloadError::Verify("measured phase did not run".into()))?;
        check_copy(
            &r,
            within,
            &src,
            &dst,
            &manifest,
            check_threads(ctx),
            &mut outcome,
        )?;
        if !within {
            outcome
                .notes
                .push("read bytes are 0: the source is outside the target".into());
        }
        Ok(outcome)
    }
}

/// The check after the measured copy: every file of the data set copied, with its bytes and
/// times. A `within` copy made of reflinks is checked by its block map (its source was
/// hashed when it was warmed); any other copy is hashed. What was checked goes to the notes.
fn check_copy(
    r: &TreeCopy,
    within: bool,
    src: &Path,
    dst: &Path,
    manifest: &Manifest,
    threads: usize,
    outcome: &mut Outcome,
) -> Result<(), WorkloadError> {
    if r.files != manifest.files.len() as u64 {
        return Err(WorkloadError::Verify(format!(
            "copied {} files, the data set has {}",
            r.files,
            manifest.files.len()
        )));
    }
    if within && r.reflink_files > 0 {
        // A copy made of reflinks shares its source's blocks but none of its cached
        // pages: hashing it would read it all from the device. Its source was hashed
        // when it was warmed, so a file on the same blocks holds the same bytes.
        let c = verify::copy_within(src, dst, manifest, threads)?;
        verify::mtimes(src, dst, threads)?;
        outcome.notes.push(format!(
            "copy checked by its block map: {} of {} files on their source's blocks \
             (FIEMAP), {} hashed; the source was hashed before the phase",
            c.shared,
            manifest.files.len(),
            c.hashed
        ));
    } else {
        verify_copy(src, dst, manifest, threads)?;
    }
    Ok(())
}
