//! Defect: the db engine forks its confined child right after the phase's monitor starts.
//! `Monitor::start` returned as soon as its thread was created, while the thread could still
//! be starting, holding the standard library's lock on its registry of threads; a child
//! forked then inherited that lock held, and every thread it spawned waited forever (seen in
//! the suite: `db_reads_reach_the_device_in_every_repetition_at_the_default_scale` hung, all
//! twelve db workers of the child in `set_current_info`). `Monitor::start` now returns once
//! its thread runs its own code.
//!
//! In a test binary of its own: another test's threads starting or ending beside this one
//! would be the same hazard, not this defect.

use std::time::{Duration, Instant};

use fsarena::monitor::Monitor;

/// Forks right after the monitor starts; the child spawns a thread, joins it and exits.
/// Returns false when the child did not end within `limit` (it is killed).
fn child_spawns_a_thread_after_a_fork(limit: Duration) -> bool {
    let monitor = Monitor::start(&[], Duration::from_millis(10)).expect("the monitor starts");
    // SAFETY: the child only spawns and joins one thread, then leaves through `_exit`.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        let ok = std::thread::spawn(|| 1 + 1).join().is_ok();
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let t0 = Instant::now();
    let ended = loop {
        let mut status = 0;
        // SAFETY: waits for our own child without blocking.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            break libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
        }
        if t0.elapsed() > limit {
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            break false;
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    monitor.stop();
    ended
}

#[test]
fn a_child_forked_right_after_the_monitor_starts_can_spawn_threads() {
    for round in 0..300 {
        assert!(
            child_spawns_a_thread_after_a_fork(Duration::from_secs(5)),
            "round {round}: the child forked after Monitor::start hung spawning a thread"
        );
    }
}
