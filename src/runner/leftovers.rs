//! What a killed run left behind, found when its results directory is resumed: the
//! `--resume` of a run killed with SIGKILL (no cleanup) removes its earlier run's mounts,
//! loop devices, cgroups and images itself, through that run's journal, and says in one
//! line when other abandoned runs still need `fsarena cleanup`.

use std::path::Path;

use super::terms::RunOptions;
use crate::provision::{cleanup, workdir};

/// Before a resumed run makes its own work directory: takes down the dead runs under the
/// work directory whose marker names this results directory (only what their journals
/// name, as `fsarena cleanup` does), and names the other dead runs it leaves alone.
pub fn sweep_earlier(opts: &RunOptions) {
    let root = &opts.work_root;
    if !root.is_dir() {
        return;
    }
    let ours = |run: &Path| workdir::runs_for(run, &opts.out);
    let report = cleanup::cleanup_matching(root, ours);
    let taken = report.unmounted.len() + report.detached.len();
    if taken > 0 && !opts.quiet {
        eprintln!(
            "fsarena: removed what the killed run of {} left: {} mount(s), {} loop device(s)",
            opts.out.display(),
            report.unmounted.len(),
            report.detached.len()
        );
    }
    let others = dead_runs(root, |run| !ours(run));
    if let Some(e) = report.errors.first() {
        eprintln!(
            "fsarena: could not remove all the killed run left ({e}); run `fsarena cleanup --work-dir {}`",
            root.display()
        );
    } else if others > 0 {
        eprintln!(
            "fsarena: {others} abandoned run(s) in {} may still hold mounts, loop devices or cgroups; run `fsarena cleanup --work-dir {}`",
            root.display(),
            root.display()
        );
    }
}

/// How many run directories under `root` that `wanted` picks belong to no live process.
fn dead_runs(root: &Path, wanted: impl Fn(&Path) -> bool) -> usize {
    let Ok(rd) = std::fs::read_dir(root) else {
        return 0;
    };
    rd.flatten()
        .map(|e| e.path())
        .filter(|p| p.join(workdir::OWNER_FILE).is_file() && wanted(p))
        .filter(|p| !cleanup::owner_alive(p))
        .count()
}
