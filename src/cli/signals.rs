//! SIGINT and SIGTERM during `fsarena run`: alone, stop after the current measurement
//! (a second signal cleans up at once); under MPI, end this rank at once and leave its
//! cleanup to a process that outlives it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;

use anyhow::{Context, Result};

use crate::provision::{cleanup, journal, workdir};

/// SIGINT/SIGTERM: the first asks the run to stop after tearing down cleanly; a second
/// one runs the journal cleanup at once and exits (for when a workload is stuck in the
/// kernel and will not notice the first).
///
/// Under MPI the first signal does the second's work: a Ctrl-C reaches `mpirun`, which
/// ends every rank (SIGTERM, then SIGKILL a second later), so the ranks cannot stop in
/// step after the current measurement; each removes what its journal names at once, and
/// the records already written stay in `out`.
pub fn install(cancel: Arc<AtomicBool>, work_root: PathBuf, out: PathBuf) -> Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])
        .context("cannot install signal handlers")?;
    let world = crate::cluster::world();
    std::thread::spawn(move || {
        for sig in signals.forever() {
            let second = cancel.swap(true, Ordering::SeqCst);
            if !second && !world.is_cluster() {
                eprintln!("\nfsarena: stopping after the current measurement (again to force)");
                continue;
            }
            if world.is_cluster() {
                if world.is_root() {
                    eprintln!(
                        "\nfsarena: interrupted: the MPI job ends on every rank now; each rank's trees and mounts are removed as it ends; the records measured so far stay in {}",
                        out.join("results.jsonl").display()
                    );
                }
                // mpirun kills every rank a second after its SIGTERM, too soon to remove a
                // large tree: a process of its own, outside the rank's process group, waits
                // for this rank to end and then removes what its journal names.
                if spawn_cleaner(&work_root).is_ok() {
                    // A moment for mpirun to pass the line above on before the rank ends.
                    std::thread::sleep(std::time::Duration::from_millis(300));
                    std::process::exit(128 + sig);
                }
            } else {
                FORCED.store(sig, Ordering::SeqCst);
                crate::runner::recording::force_stop();
                eprintln!("\nfsarena: second signal: removing mounts, loop devices and images now");
            }
            // Nothing new is made from here on, and a loop device or mount whose journal
            // entry is written is made before the sweep reads the journal: the run's own
            // thread used to attach one after the sweep had looked (the suite saw one left,
            // and a second sweep half a second later was the stopgap).
            journal::close(std::time::Duration::from_secs(5));
            for run in &workdir::made_by_this_process(&work_root) {
                cleanup::cleanup_run(run, &mut cleanup::CleanupReport::default());
            }
            std::process::exit(128 + sig);
        }
    });
    Ok(())
}

/// The second signal, once one came: from then on the process exits `128 + signal`.
static FORCED: AtomicI32 = AtomicI32::new(0);

/// The exit code of a process whose run ended with `code`: after a second signal, the
/// signal's `128 + N`, once the forced cleanup had its time. The run, stopped by the first
/// signal, often ends before the cleanup the second started (a pg cell stops its server at
/// once): its own exit 1 used to win the race (issue 39).
pub fn exit_code(code: i32) -> i32 {
    let sig = FORCED.load(Ordering::SeqCst);
    if sig == 0 {
        return code;
    }
    // The signal's thread exits the process itself when its cleanup is done; a cleanup
    // stuck in the kernel does not keep the process alive for ever.
    std::thread::sleep(std::time::Duration::from_secs(60));
    128 + sig
}

/// Starts `fsarena cleanup --work-dir WORK --after-pid ME` in a process group of its own
/// with no terminal or pipes (a launcher that kills the rank's group, or closes its output,
/// does not end it).
fn spawn_cleaner(work_root: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::process::CommandExt;
    let exe = std::env::current_exe()?;
    std::process::Command::new(exe)
        .arg("cleanup")
        .arg("--work-dir")
        .arg(work_root)
        .arg("--after-pid")
        .arg(std::process::id().to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .map(|_| ())
}
