//! Wall seconds of the harness's own steps (mkfs, attaching a loop device, a mount, a
//! clone's copy, the check, each teardown step, …), summed per step name on the calling
//! thread until taken. The runner takes them into each record (`harness_seconds`), so a
//! run says where its time outside the measured phases goes, per step and per file system
//! (issue 41: the harness's own time was half of the default run's wall time). A clock
//! read and a map insert per step: nothing a measurement would see.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::time::Instant;

thread_local! {
    static STEPS: RefCell<BTreeMap<&'static str, f64>> = const { RefCell::new(BTreeMap::new()) };
}

/// Runs `f`, adding its wall seconds to step `name` on this thread.
pub fn timed<T>(name: &'static str, f: impl FnOnce() -> T) -> T {
    let t0 = Instant::now();
    let out = f();
    add(name, t0.elapsed().as_secs_f64());
    out
}

/// Adds `seconds` to step `name` on this thread.
pub fn add(name: &'static str, seconds: f64) {
    STEPS.with(|s| *s.borrow_mut().entry(name).or_insert(0.0) += seconds);
}

/// The steps timed on this thread since the last call, emptied.
pub fn take() -> BTreeMap<String, f64> {
    STEPS.with(|s| {
        std::mem::take(&mut *s.borrow_mut())
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect()
    })
}

/// Runs `f` with this thread's steps set aside, and returns with its result the steps `f`
/// timed, apart from them: the steps of work done for something other than the record the
/// thread is timing (a populated image built on a cell's thread), so that they are counted
/// where they belong and not in that record's steps.
pub fn apart<T>(f: impl FnOnce() -> T) -> (T, BTreeMap<String, f64>) {
    let kept = STEPS.with(|s| std::mem::take(&mut *s.borrow_mut()));
    let out = f();
    let own = take();
    STEPS.with(|s| *s.borrow_mut() = kept);
    (out, own)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_summed_per_name_and_emptied_when_taken() {
        let _ = take();
        timed("mkfs", || {
            std::thread::sleep(std::time::Duration::from_millis(5))
        });
        add("mkfs", 1.0);
        add("mount", 0.25);
        let got = take();
        assert!(got["mkfs"] >= 1.005 && got["mkfs"] < 2.0, "{got:?}");
        assert_eq!(got["mount"], 0.25);
        assert!(take().is_empty());
        // Another thread's steps are its own.
        std::thread::spawn(|| add("check", 1.0)).join().unwrap();
        assert!(take().is_empty());
    }

    #[test]
    fn steps_timed_apart_are_returned_and_leave_the_threads_own_alone() {
        let _ = take();
        add("mount", 0.5);
        let ((), image) = apart(|| {
            add("mkfs", 1.0);
            add("mount", 0.25);
        });
        assert_eq!(image.len(), 2, "{image:?}");
        assert_eq!((image["mkfs"], image["mount"]), (1.0, 0.25));
        let own = take();
        assert_eq!(own.len(), 1, "{own:?}");
        assert_eq!(own["mount"], 0.5);
    }
}
