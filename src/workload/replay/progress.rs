//! How far each replaying thread has got, and the wake-up of the threads waiting on it.
//!
//! A waiter is woken only by the thread it waits on, and only once that thread has reached
//! the call it waits for. One condition variable for all threads, notified at every call
//! while anyone waited, woke every waiter at every call of every thread: git's trace keeps
//! ten threads waiting for the end of its clone while one thread makes 77,000 calls, and
//! the replay spent its time switching between them (bench/journal/replay-fidelity.md,
//! "Programs long enough to measure").

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use super::deps::Wait;

/// How often a waiter looks at `give_up` (the run's cancellation and deadline).
const LOOK_EVERY: Duration = Duration::from_millis(20);

/// One thread's progress: its completed calls, and the waiters on it.
struct Lane {
    done: AtomicUsize,
    /// The least count of completed calls some waiter needs (`usize::MAX`: none waits).
    wake_at: AtomicUsize,
    lock: Mutex<()>,
    wake: Condvar,
}

/// Every thread's progress in one phase.
pub struct Progress {
    lanes: Vec<Lane>,
    /// Raised when a thread stops early (cancelled, past the deadline): no one waits on.
    stop: AtomicBool,
    /// Times a thread's completed call woke its waiters (for the tests).
    notified: AtomicUsize,
}

impl Progress {
    pub fn new(threads: usize) -> Progress {
        let lane = || Lane {
            done: AtomicUsize::new(0),
            wake_at: AtomicUsize::new(usize::MAX),
            lock: Mutex::new(()),
            wake: Condvar::new(),
        };
        Progress {
            lanes: (0..threads).map(|_| lane()).collect(),
            stop: AtomicBool::new(false),
            notified: AtomicUsize::new(0),
        }
    }

    fn reached(&self, w: &Wait) -> bool {
        self.lanes[w.thread as usize].done.load(Ordering::SeqCst) > w.pos
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Blocks until every call in `waits` has completed; false when the phase stops (another
    /// thread stopped, or `give_up` says so: the run is cancelled or past its deadline).
    pub fn wait_for(&self, waits: &[Wait], give_up: impl Fn() -> bool) -> bool {
        for w in waits {
            if !self.reached(w) && !self.wait_one(w, &give_up) {
                return false;
            }
        }
        true
    }

    /// Waits for one call. The need is registered under the lane's lock before `reached` is
    /// read again, and `advance` reads it after counting the call: whichever comes second
    /// sees the other, so no wake-up is lost (all of it `SeqCst`).
    fn wait_one(&self, w: &Wait, give_up: &impl Fn() -> bool) -> bool {
        let lane = &self.lanes[w.thread as usize];
        let mut guard = lane.lock.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            lane.wake_at.fetch_min(w.pos + 1, Ordering::SeqCst);
            if self.reached(w) {
                return true;
            }
            if self.stopped() {
                return false;
            }
            if give_up() {
                self.stop.store(true, Ordering::SeqCst);
                drop(guard);
                self.halt();
                return false;
            }
            guard = match lane.wake.wait_timeout(guard, LOOK_EVERY) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
    }

    /// Marks thread `thread`'s next call complete and wakes its waiters once one of them
    /// can go on (they register again if they cannot yet).
    pub fn advance(&self, thread: usize) {
        let lane = &self.lanes[thread];
        let done = lane.done.fetch_add(1, Ordering::SeqCst) + 1;
        if done >= lane.wake_at.load(Ordering::SeqCst) {
            let _guard = lane.lock.lock().unwrap_or_else(|p| p.into_inner());
            lane.wake_at.store(usize::MAX, Ordering::SeqCst);
            self.notified.fetch_add(1, Ordering::Relaxed);
            lane.wake.notify_all();
        }
    }

    /// Stops the phase: every waiter returns.
    pub fn halt(&self) {
        self.stop.store(true, Ordering::SeqCst);
        for lane in &self.lanes {
            let _guard = lane.lock.lock().unwrap_or_else(|p| p.into_inner());
            lane.wake.notify_all();
        }
    }

    #[cfg(test)]
    fn notified(&self) -> usize {
        self.notified.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This thread's voluntary context switches so far (each a sleep it woke from).
    fn switches() -> i64 {
        // SAFETY: getrusage writes one `rusage` into the zeroed value it is given.
        let mut r: libc::rusage = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut r) }, 0);
        r.ru_nvcsw
    }

    /// Defect: every call of every thread woke every waiting thread. Ten threads waiting
    /// for the end of a thread of 20,000 calls must sleep through them: each wakes for its
    /// call and for its 20 ms looks at the run's cancellation, not at every call.
    #[test]
    fn waiters_are_woken_once_the_call_they_wait_for_is_done_not_at_every_call() {
        const CALLS: usize = 20_000;
        let p = Progress::new(2);
        let last = Wait {
            thread: 0,
            pos: CALLS - 1,
        };
        let started = AtomicUsize::new(0);
        std::thread::scope(|s| {
            let waiters: Vec<_> = (0..10)
                .map(|_| {
                    s.spawn(|| {
                        let before = switches();
                        started.fetch_add(1, Ordering::SeqCst);
                        let went_on = p.wait_for(std::slice::from_ref(&last), || false);
                        (went_on, switches() - before)
                    })
                })
                .collect();
            while started.load(Ordering::SeqCst) < 10 {
                std::thread::yield_now();
            }
            std::thread::sleep(Duration::from_millis(30));
            let t0 = std::time::Instant::now();
            for _ in 0..CALLS {
                p.advance(0);
            }
            // Its 20 ms looks: one for each 20 ms the calls took, and the sleep's.
            let looks = 3 + (t0.elapsed().as_millis() / 20) as i64;
            for w in waiters {
                let (went_on, woke) = w.join().unwrap();
                assert!(went_on);
                assert!(
                    woke <= looks + 3,
                    "a waiter woke {woke} times for {CALLS} calls"
                );
            }
        });
        assert_eq!(p.notified(), 1, "wake-ups for {CALLS} calls");
    }

    /// Waiters on different calls of one thread are each woken in time, and a halt frees
    /// a waiter whose call never comes.
    #[test]
    fn each_waiter_goes_on_at_its_own_call_and_a_halt_frees_the_rest() {
        let p = Progress::new(1);
        std::thread::scope(|s| {
            let early = s.spawn(|| p.wait_for(&[Wait { thread: 0, pos: 9 }], || false));
            let late = s.spawn(|| p.wait_for(&[Wait { thread: 0, pos: 99 }], || false));
            let never = s.spawn(|| {
                p.wait_for(
                    &[Wait {
                        thread: 0,
                        pos: 1000,
                    }],
                    || false,
                )
            });
            for _ in 0..100 {
                p.advance(0);
                std::thread::yield_now();
            }
            assert!(early.join().unwrap());
            assert!(late.join().unwrap());
            p.halt();
            assert!(!never.join().unwrap());
        });
    }

    /// A waiter whose run is cancelled returns false, and stops the others.
    #[test]
    fn a_waiter_that_gives_up_stops_the_phase() {
        let p = Progress::new(2);
        assert!(!p.wait_for(&[Wait { thread: 1, pos: 0 }], || true));
        assert!(!p.wait_for(&[Wait { thread: 0, pos: 5 }], || false));
    }
}
