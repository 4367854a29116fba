//! Records the commit fsarena is built from, for the history (`fsarena history`): a run
//! registered there says which build measured it. Empty outside a git checkout.

use std::process::Command;

/// `git ARGS` in the crate's directory, its first line, or `None`.
fn git(args: &[&str]) -> Option<String> {
    let o = Command::new("git").args(args).output().ok()?;
    let s = String::from_utf8_lossy(&o.stdout).trim().to_string();
    (o.status.success() && !s.is_empty()).then_some(s)
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_default();
    println!("cargo:rustc-env=FSARENA_COMMIT={commit}");
    // A new commit moves HEAD or the branch it names; a worktree keeps its HEAD apart from
    // the refs it shares, so both places are asked of git rather than assumed. Only the
    // branch HEAD names is watched: watching all of refs/heads rebuilt every worktree's
    // crate whenever any other branch took a commit.
    if let (Some(dir), Some(common)) = (
        git(&["rev-parse", "--absolute-git-dir"]),
        git(&["rev-parse", "--path-format=absolute", "--git-common-dir"]),
    ) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={common}/{branch}");
        }
        let packed = format!("{common}/packed-refs");
        if std::path::Path::new(&packed).exists() {
            println!("cargo:rerun-if-changed={packed}");
        }
    } else {
        println!("cargo:rerun-if-changed=build.rs");
    }
}
