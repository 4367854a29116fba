//! Warm, read-only phases long enough to measure. A warm `scan` of a small tree takes a few
//! milliseconds, where the timer, the scheduler and one page fault are a large share of the
//! figure. Such a pass changes nothing, so it can be run again and again inside one measured
//! phase until the phase lasts at least the run's floor ([`super::Harness::phase_floor`]);
//! the phase's figures are then totals over the passes (rates stay per second), and the
//! per-pass figures are reported beside them.
//!
//! Only for passes that leave the file system as they found it: a cold pass repeated would
//! be warm after the first, and a mutating one would not do the same work twice.

use std::time::Instant;

use super::{Harness, Outcome, WorkloadError};

/// Passes never exceed this, whatever the floor: a pass so fast that this many do not reach
/// it is measured over this many.
pub const MAX_PASSES: u64 = 100_000;

/// Runs `pass` inside one measured phase, once, then again until the phase reaches the
/// harness's floor. Each pass returns its own [`Outcome`]; the phase's outcome sums their
/// seconds, files and bytes, keeps the last pass's other metrics (the same every pass for a
/// read-only walk: matches, dirs, …), and adds `passes`, `seconds_per_pass` and
/// `files_per_pass`.
pub fn measure_passes(
    harness: &mut dyn Harness,
    pass: &mut dyn FnMut() -> Result<Outcome, WorkloadError>,
) -> Result<Outcome, WorkloadError> {
    let floor = harness.phase_floor();
    harness.measure(&mut || {
        let t0 = Instant::now();
        let mut total = pass()?;
        let mut passes = 1u64;
        while t0.elapsed() < floor && passes < MAX_PASSES {
            let next = pass()?;
            total.seconds += next.seconds;
            total.files += next.files;
            total.logical_read_bytes += next.logical_read_bytes;
            total.logical_write_bytes += next.logical_write_bytes;
            total.metrics.extend(next.metrics);
            passes += 1;
        }
        let n = passes as f64;
        total.metrics.insert("passes".into(), n);
        total
            .metrics
            .insert("seconds_per_pass".into(), total.seconds / n);
        total
            .metrics
            .insert("files_per_pass".into(), total.files as f64 / n);
        if passes > 1 {
            total.notes.push(format!(
                "{passes} warm passes in one phase of {:.2} s (floor {:.2} s)",
                total.seconds,
                floor.as_secs_f64()
            ));
        }
        Ok(total)
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    struct Floor(Duration, usize);
    impl Harness for Floor {
        fn drop_caches(&mut self) -> std::io::Result<()> {
            Ok(())
        }
        fn measure(
            &mut self,
            work: &mut dyn FnMut() -> Result<Outcome, WorkloadError>,
        ) -> Result<Outcome, WorkloadError> {
            self.1 += 1;
            work()
        }
        fn phase_floor(&self) -> Duration {
            self.0
        }
    }

    fn pass(sleep: Duration) -> impl FnMut() -> Result<Outcome, WorkloadError> {
        move || {
            let t = Instant::now();
            std::thread::sleep(sleep);
            Ok(Outcome {
                seconds: t.elapsed().as_secs_f64(),
                files: 10,
                ..Default::default()
            })
        }
    }

    #[test]
    fn passes_repeat_until_the_floor_and_sum_their_work() {
        let mut h = Floor(Duration::from_millis(50), 0);
        let o = measure_passes(&mut h, &mut pass(Duration::from_millis(4))).unwrap();
        assert_eq!(h.1, 1, "one measured phase");
        let n = o.metrics["passes"];
        assert!(n >= 2.0, "{n} passes");
        assert!(o.seconds >= 0.05, "{}", o.seconds);
        assert_eq!(o.files as f64, 10.0 * n);
        assert_eq!(o.metrics["files_per_pass"], 10.0);
        assert!((o.metrics["seconds_per_pass"] - o.seconds / n).abs() < 1e-12);
    }

    #[test]
    fn without_a_floor_one_pass_is_the_phase() {
        let mut h = Floor(Duration::ZERO, 0);
        let o = measure_passes(&mut h, &mut pass(Duration::from_millis(1))).unwrap();
        assert_eq!(o.metrics["passes"], 1.0);
        assert!(o.notes.is_empty());
    }

    #[test]
    fn a_failing_pass_fails_the_phase() {
        let mut h = Floor(Duration::from_secs(5), 0);
        let mut k = 0;
        let r = measure_passes(&mut h, &mut || {
            k += 1;
            if k == 3 {
                Err(WorkloadError::Option("third pass broke".into()))
            } else {
                Ok(Outcome::default())
            }
        });
        assert!(r.is_err());
    }
}
