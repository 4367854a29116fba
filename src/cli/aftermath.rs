//! What the process says first when it ends in a panic, an abort or an error after its run
//! made something: where the results so far are, and the `fsarena cleanup` that removes
//! what the run left (issue 57.6: none of five aborts and panics said either).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::provision::workdir;

/// The run this process is making: set once its results directory and work directory are
/// known, before anything is provisioned.
struct Run {
    work_root: PathBuf,
    /// The line a panic or an abort prints first, formatted beforehand: an abort's signal
    /// handler may not allocate.
    line: String,
}

static RUN: OnceLock<Run> = OnceLock::new();

/// The command that removes what a run in `work_root` left.
fn cleanup_command(work_root: &Path) -> String {
    format!("fsarena cleanup --work-dir {}", work_root.display())
}

/// Installs the panic hook (before anything else, the line naming the results and the
/// cleanup, then the standard message) and the abort handler (the same line on SIGABRT, as
/// an allocation failure raises it). Called once, at the start of `main`.
pub fn install() {
    let standard = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if let Some(run) = RUN.get() {
            eprintln!("{}", run.line.trim_end());
        }
        standard(info);
    }));
    use signal_hook::consts::SIGABRT;
    // SAFETY: the action only reads an initialised `OnceLock` (an atomic load), calls
    // write(2) and then ends the process as SIGABRT's default would (signal-hook's
    // emulation is async-signal-safe); it allocates nothing and takes no lock.
    let _ = unsafe {
        signal_hook::low_level::register(SIGABRT, || {
            if let Some(run) = RUN.get() {
                let b = run.line.as_bytes();
                // A valid buffer of `b.len()` bytes, written to stderr.
                libc::write(2, b.as_ptr().cast(), b.len());
            }
            // A SIGABRT sent from outside must still end the process, not just print.
            let _ = signal_hook::low_level::emulate_default_handler(SIGABRT);
        })
    };
}

/// Records the run's results directory `out` and work directory `work_root` (as the user
/// gave it, made absolute) for the lines above. A second call is ignored: one process
/// makes one run.
pub fn set_run(out: &Path, work_root: &Path) {
    let work_root = workdir::absolute(work_root);
    let line = format!(
        "fsarena: panic or abort (a bug, never intended: please report it); the results so far are in {}; if the process ends here, remove what its run left with: {}\n",
        workdir::absolute(out).display(),
        cleanup_command(&work_root)
    );
    let _ = RUN.set(Run { work_root, line });
}

/// After an error exit (`code` not 0): when the run directory this process made is still
/// there, one line pointing to the cleanup that removes it.
pub fn say_leftovers(code: i32) {
    let Some(run) = RUN.get() else {
        return;
    };
    if code == super::exit::EXIT_OK {
        return;
    }
    let left = workdir::made_by_this_process(&run.work_root);
    if let Some(dir) = left.first() {
        eprintln!(
            "fsarena: this run left {} behind; remove it with: {}",
            dir.display(),
            cleanup_command(&run.work_root)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 57.6: no abort or panic said where the results were or how to clean up.
    /// The line names the results and the cleanup with the work directory made absolute.
    #[test]
    fn a_panic_names_the_results_and_the_cleanup_of_the_work_dir_made_absolute() {
        set_run(Path::new("out-dir"), Path::new("wd"));
        let run = RUN.get().expect("set");
        let here = std::env::current_dir().expect("cwd");
        let cleanup = format!("fsarena cleanup --work-dir {}", here.join("wd").display());
        assert!(run.line.contains(&cleanup), "{}", run.line);
        assert!(run
            .line
            .contains(&here.join("out-dir").display().to_string()));
        assert_eq!(run.line.lines().count(), 1, "{}", run.line);
    }
}
