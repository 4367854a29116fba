//! `fsarena cleanup`: removes what a killed run (kill -9, power loss) left behind — its
//! mounts, loop devices, images and directories — found through the run journals and the
//! owner marker, and touches nothing else.

use std::fs;
use std::path::{Path, PathBuf};

use super::journal::{self, Journal, Kind};
use super::workdir::{start_time_of, OWNER_FILE};
use super::{loopdev, mounts};

/// What a cleanup did and what it left alone.
#[derive(Debug, Default)]
pub struct CleanupReport {
    pub unmounted: Vec<PathBuf>,
    pub detached: Vec<PathBuf>,
    pub removed: Vec<PathBuf>,
    /// Runs still in progress (their owner process is alive).
    pub live: Vec<PathBuf>,
    pub errors: Vec<String>,
}

/// Whether the process that made `run` is still running (pid and start time both match,
/// so a recycled pid does not count).
pub fn owner_alive(run: &Path) -> bool {
    let Ok(text) = fs::read_to_string(run.join(OWNER_FILE)) else {
        return false;
    };
    let field = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(k))
            .map(str::trim)
            .map(str::to_string)
    };
    let (Some(pid), Some(start)) = (field("pid="), field("start=")) else {
        return false;
    };
    start_time_of(&pid).is_some_and(|s| s.to_string() == start)
}

/// Cleans every abandoned run directory under `root`.
pub fn cleanup(root: &Path) -> CleanupReport {
    let mut report = CleanupReport::default();
    let Ok(rd) = fs::read_dir(root) else {
        return report;
    };
    let mut runs: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join(OWNER_FILE).is_file())
        .collect();
    runs.sort();
    for run in runs {
        if owner_alive(&run) {
            report.live.push(run);
        } else {
            cleanup_run(&run, &mut report);
        }
    }
    report
}

/// Takes down everything belonging to one run directory. Also used for the emergency
/// teardown on a second Ctrl-C, when the run's own unwinding may be stuck.
pub fn cleanup_run(run: &Path, report: &mut CleanupReport) {
    let entries = journal::read(&run.join(Journal::FILE_NAME)).unwrap_or_default();
    let live = journal::live(&entries);

    // 1. Mounts: everything mounted inside the run directory, deepest first, plus any
    //    journaled mount elsewhere that is still there.
    let mut targets: Vec<PathBuf> = mounts::under(run).into_iter().map(|m| m.target).collect();
    for e in live.iter().filter(|e| e.kind == Kind::Mount) {
        if !targets.contains(&e.path) && mounts::find(&e.path).is_some() {
            targets.push(e.path.clone());
        }
    }
    for t in targets {
        match mounts::unmount(&t) {
            Ok(()) => report.unmounted.push(t),
            Err(e) => report.errors.push(format!("{}: {e}", t.display())),
        }
    }

    // 2. Loop devices whose backing file is one of this run's images.
    for (dev, backing) in loopdev::attached() {
        let b = PathBuf::from(backing.to_string_lossy().trim_end_matches(" (deleted)"));
        let journaled = live.iter().any(|e| e.kind != Kind::Mount && e.path == b);
        if b.starts_with(run) || journaled {
            match loopdev::detach(&dev) {
                Ok(()) => report.detached.push(dev),
                Err(e) => report.errors.push(format!("{}: {e}", dev.display())),
            }
        }
    }

    // 3. Working directories fsarena made inside `dir:` targets (journaled as trees).
    for e in live
        .iter()
        .filter(|e| e.kind == Kind::Dir && e.detail.as_deref() == Some("tree"))
    {
        let named_by_us = e
            .path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("fsarena-"));
        if named_by_us && e.path.exists() && !e.path.starts_with(run) {
            match fs::remove_dir_all(&e.path) {
                Ok(()) => report.removed.push(e.path.clone()),
                Err(err) => report.errors.push(format!("{}: {err}", e.path.display())),
            }
        }
    }

    // 4. The run directory itself — never while anything is still mounted inside it, or
    //    removing it would delete that file system's contents.
    let still: Vec<_> = mounts::under(run);
    if !still.is_empty() {
        report.errors.push(format!(
            "{} left in place: {} is still mounted",
            run.display(),
            still[0].target.display()
        ));
        return;
    }
    match fs::remove_dir_all(run) {
        Ok(()) => report.removed.push(run.to_path_buf()),
        Err(e) => report.errors.push(format!("{}: {e}", run.display())),
    }
}
