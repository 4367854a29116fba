//! CPU accounting: the machine-wide split from `/proc/stat` and this process's own CPU time.
//!
//! Machine-wide figures say whether a phase was CPU-bound or waiting on I/O; the process
//! figure says what the harness plus its children (fio) spent, so a slow harness shows up.

use std::io;

/// The aggregate `cpu` line of `/proc/stat`, in clock ticks (USER_HZ) summed over all CPUs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimes {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

/// Shares of all CPUs' time over an interval, in percent (0–100 for the whole machine).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuPercent {
    /// `user + nice`.
    pub user: f64,
    /// `system + irq + softirq`: all kernel work, including completing I/O interrupts.
    pub system: f64,
    pub iowait: f64,
    /// Time a virtual machine's CPUs were ready to run but the hypervisor ran something
    /// else: a phase on a VM with busy neighbours loses this much, and loses it unevenly,
    /// which shows as spread between repetitions that no file system caused.
    pub steal: f64,
}

/// Why the `cpu` line of `/proc/stat` could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpuStatError {
    #[error("/proc/stat has no aggregate `cpu` line first")]
    NoCpuLine,
    #[error("/proc/stat `cpu` line has {found} counters; expected at least 8")]
    TooFew { found: usize },
    #[error("/proc/stat `cpu` counter {index} is not an unsigned number")]
    BadNumber { index: usize },
}

/// Counters read from the `cpu` line; later ones (guest, guest_nice) are already included
/// in `user`/`nice`, so adding them would count guest time twice.
const COUNTERS: usize = 8;

/// Parses the first line of `/proc/stat`, which must be the aggregate `cpu` line.
pub fn parse_stat(text: &str) -> Result<CpuTimes, CpuStatError> {
    let line = text.lines().next().ok_or(CpuStatError::NoCpuLine)?;
    let mut it = line.split_ascii_whitespace();
    if it.next() != Some("cpu") {
        return Err(CpuStatError::NoCpuLine);
    }
    let mut v = [0u64; COUNTERS];
    let mut found = 0;
    for (index, token) in it.take(COUNTERS).enumerate() {
        if token.is_empty() || !token.bytes().all(|b| b.is_ascii_digit()) {
            return Err(CpuStatError::BadNumber { index });
        }
        v[index] = token
            .parse()
            .map_err(|_| CpuStatError::BadNumber { index })?;
        found += 1;
    }
    if found < COUNTERS {
        return Err(CpuStatError::TooFew { found });
    }
    Ok(CpuTimes {
        user: v[0],
        nice: v[1],
        system: v[2],
        idle: v[3],
        iowait: v[4],
        irq: v[5],
        softirq: v[6],
        steal: v[7],
    })
}

impl CpuTimes {
    /// Field by field `self - other`, saturating: the ticks of a span set aside
    /// (`Aside`) taken out of a phase's total.
    pub fn minus(&self, other: &CpuTimes) -> CpuTimes {
        self.zip(other, u64::saturating_sub)
    }

    /// Field by field `self + other`, saturating: spans set aside, added up.
    pub fn plus(&self, other: &CpuTimes) -> CpuTimes {
        self.zip(other, u64::saturating_add)
    }

    fn zip(&self, o: &CpuTimes, f: fn(u64, u64) -> u64) -> CpuTimes {
        CpuTimes {
            user: f(self.user, o.user),
            nice: f(self.nice, o.nice),
            system: f(self.system, o.system),
            idle: f(self.idle, o.idle),
            iowait: f(self.iowait, o.iowait),
            irq: f(self.irq, o.irq),
            softirq: f(self.softirq, o.softirq),
            steal: f(self.steal, o.steal),
        }
    }

    /// Percentages of the time elapsed between `earlier` and `self`, or `None` when no clock
    /// tick elapsed (an interval shorter than one tick has no meaningful split).
    ///
    /// A counter that went backwards counts as zero rather than wrapping: these are 64-bit
    /// tick counts that do not wrap in practice, but `iowait` is known to step back slightly
    /// on NO_HZ kernels (proc(5)), and a wrap-style delta would make that enormous.
    pub fn percent_since(&self, earlier: &CpuTimes) -> Option<CpuPercent> {
        let d = |new: u64, old: u64| new.saturating_sub(old);
        let user = d(self.user, earlier.user).saturating_add(d(self.nice, earlier.nice));
        let system = d(self.system, earlier.system)
            .saturating_add(d(self.irq, earlier.irq))
            .saturating_add(d(self.softirq, earlier.softirq));
        let iowait = d(self.iowait, earlier.iowait);
        let steal = d(self.steal, earlier.steal);
        let total = user
            .saturating_add(system)
            .saturating_add(iowait)
            .saturating_add(d(self.idle, earlier.idle))
            .saturating_add(steal);
        if total == 0 {
            return None;
        }
        let pct = |part: u64| 100.0 * part as f64 / total as f64;
        Some(CpuPercent {
            user: pct(user),
            system: pct(system),
            iowait: pct(iowait),
            steal: pct(steal),
        })
    }
}

/// User plus system CPU seconds of this process (all threads, the sampler included) plus its
/// reaped children. A child counts only once it has been waited for, so callers stop the
/// monitor after waiting for fio, not before.
pub fn process_cpu_seconds() -> io::Result<f64> {
    Ok(rusage_seconds(libc::RUSAGE_SELF)? + rusage_seconds(libc::RUSAGE_CHILDREN)?)
}

/// rustix has no `getrusage`, hence libc.
fn rusage_seconds(who: libc::c_int) -> io::Result<f64> {
    // SAFETY: `rusage` is plain old data, so all-zero is a valid value, and the pointer we pass
    // is to a live, exclusively borrowed local that the kernel only writes into.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: see above; `who` is one of the RUSAGE_* constants.
    if unsafe { libc::getrusage(who, &mut usage) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    Ok(secs(usage.ru_utime) + secs(usage.ru_stime))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const REAL: &str = include_str!("testdata/stat_6.18.txt");

    #[test]
    fn captured_file() {
        let t = parse_stat(REAL).unwrap();
        // cpu  30428 0 5335 175426 843 0 62 26 0 0
        assert_eq!(
            t,
            CpuTimes {
                user: 30428,
                nice: 0,
                system: 5335,
                idle: 175426,
                iowait: 843,
                irq: 0,
                softirq: 62,
                steal: 26,
            }
        );
    }

    #[test]
    fn old_kernel_line_with_exactly_eight_counters() {
        let t = parse_stat("cpu  1 2 3 4 5 6 7 8\ncpu0 1 2 3 4 5 6 7 8\n").unwrap();
        assert_eq!(t.steal, 8);
    }

    #[test]
    fn percentages() {
        let a = CpuTimes::default();
        let b = CpuTimes {
            user: 20,
            nice: 10,
            system: 10,
            idle: 40,
            iowait: 15,
            irq: 2,
            softirq: 3,
            steal: 0,
        };
        let p = b.percent_since(&a).unwrap();
        assert!((p.user - 30.0).abs() < 1e-9);
        assert!((p.system - 15.0).abs() < 1e-9);
        assert!((p.iowait - 15.0).abs() < 1e-9);
        assert_eq!(p.steal, 0.0);
        assert_eq!(b.percent_since(&b), None, "no tick elapsed");
    }

    #[test]
    fn steal_is_a_share_of_all_the_time_like_the_others() {
        // 2 CPUs for 1 s (200 ticks): one busy 60 ticks and kept from running 40 by the
        // hypervisor, the other idle.
        let a = CpuTimes::default();
        let b = CpuTimes {
            user: 50,
            system: 10,
            idle: 100,
            steal: 40,
            ..CpuTimes::default()
        };
        let p = b.percent_since(&a).unwrap();
        assert!((p.steal - 20.0).abs() < 1e-9, "{}", p.steal);
        assert!((p.user + p.system - 30.0).abs() < 1e-9);
    }

    #[test]
    fn iowait_stepping_back_counts_as_zero() {
        let a = CpuTimes {
            iowait: 100,
            idle: 0,
            ..CpuTimes::default()
        };
        let b = CpuTimes {
            iowait: 99,
            idle: 50,
            user: 50,
            ..CpuTimes::default()
        };
        let p = b.percent_since(&a).unwrap();
        assert_eq!(p.iowait, 0.0);
        assert!((p.user - 50.0).abs() < 1e-9);
    }

    #[test]
    fn malformed_is_typed_error() {
        assert_eq!(parse_stat(""), Err(CpuStatError::NoCpuLine));
        assert_eq!(
            parse_stat("cpu0 1 2 3 4 5 6 7 8"),
            Err(CpuStatError::NoCpuLine)
        );
        assert_eq!(
            parse_stat("intr 1 2\ncpu 1 2 3 4 5 6 7 8"),
            Err(CpuStatError::NoCpuLine)
        );
        assert_eq!(
            parse_stat("cpu 1 2 3"),
            Err(CpuStatError::TooFew { found: 3 })
        );
        assert_eq!(
            parse_stat("cpu 1 2 -3 4 5 6 7 8"),
            Err(CpuStatError::BadNumber { index: 2 })
        );
        assert_eq!(
            parse_stat("cpu 1 2 3 4 5 6 7 99999999999999999999999"),
            Err(CpuStatError::BadNumber { index: 7 })
        );
    }

    #[test]
    fn process_cpu_time_grows_with_work() {
        // Spin until 50 ms of CPU is accounted, with a generous wall-clock limit because the
        // machine is shared: a broken reading fails by hitting the limit.
        let before = process_cpu_seconds().unwrap();
        let start = std::time::Instant::now();
        let mut x = 0u64;
        let mut after = before;
        while after < before + 0.05 && start.elapsed() < std::time::Duration::from_secs(20) {
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
            after = process_cpu_seconds().unwrap();
        }
        assert!(after >= before + 0.05, "{before} -> {after}");
    }

    proptest! {
        #[test]
        fn never_panics(s in "(\\PC{0,80}\n){0,4}") {
            let _ = parse_stat(&s);
        }

        #[test]
        fn cpu_lines_never_panic(fields in proptest::collection::vec("[0-9]{0,22}|-1|x", 0..12)) {
            let line = format!("cpu {}", fields.join(" "));
            if let Ok(t) = parse_stat(&line) {
                let _ = t.percent_since(&CpuTimes::default());
                let _ = CpuTimes::default().percent_since(&t);
            }
        }

        #[test]
        fn percentages_stay_in_range(a: [u32; 8], b: [u32; 8]) {
            let mk = |v: [u32; 8]| CpuTimes {
                user: v[0].into(), nice: v[1].into(), system: v[2].into(), idle: v[3].into(),
                iowait: v[4].into(), irq: v[5].into(), softirq: v[6].into(), steal: v[7].into(),
            };
            if let Some(p) = mk(b).percent_since(&mk(a)) {
                for x in [p.user, p.system, p.iowait] {
                    prop_assert!((0.0..=100.0).contains(&x));
                }
                prop_assert!(p.user + p.system + p.iowait <= 100.0 + 1e-9);
            }
        }
    }
}
