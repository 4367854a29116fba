//! The read-only check of a file system (e2fsck -n, xfs_repair -n, btrfs check
//! --readonly, …) made after a populate and after every cell: no measurement may come from,
//! or be followed by, a damaged file system without the record saying so.

use std::path::Path;

use super::command::Cmd;
use crate::plan::FsKind;
use crate::results::Health;

/// The first line of a check's output when the checker died of a signal before its verdict.
pub const KILLED: &str = "the checker was killed by a signal: no verdict";

/// Whether `h` is a check whose checker died before its verdict.
pub fn killed(h: &Health) -> bool {
    h.output.starts_with(KILLED)
}

/// Checks the file system of kind `fs` on `dev` (unmounted) without changing it; `None`
/// when the kind has no checker or it could not be run. The output kept is the last
/// 2,000 bytes: a damaged file system's report can run to megabytes.
pub(super) fn check(fs: FsKind, dev: &Path) -> Option<Health> {
    let (prog, args) = fs.fsck()?;
    let cmd = Cmd::new(prog)
        .args(args.iter().copied())
        .arg(dev.display().to_string());
    let ran = cmd.output("").ok()?;
    let mut output = format!("{}{}", ran.stdout, ran.stderr);
    if ran.code.is_none() {
        // No verdict: the record must say the checker died, not that the file system is
        // damaged (`--resume` measures such a cell again).
        output = format!("{KILLED}\n{output}");
    }
    if output.len() > 2000 {
        let mut cut = output.len() - 2000;
        while !output.is_char_boundary(cut) {
            cut += 1;
        }
        output = format!("…{}", &output[cut..]);
    }
    Some(Health {
        command: cmd.argv(),
        passed: ran.success,
        output,
    })
}
