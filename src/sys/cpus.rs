//! Which CPUs a thread, or a helper and everything it starts, may run on
//! (`sched_setaffinity`). A cell of fewer threads than CPUs runs its workload and its file
//! system's user-space daemon on one set of CPUs: on a virtual machine every wake-up across
//! vCPUs is an interrupt to a halted vCPU that the hypervisor must schedule again, so a FUSE
//! request bouncing between two vCPUs measures the host's scheduler, not the file system
//! (docs/statistics.md, "Where a cell runs").

use std::fmt;
use std::io;

use rustix::thread::{sched_getaffinity, sched_setaffinity, CpuSet};

/// A set of CPUs by number, ascending and distinct.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CpuList(Vec<usize>);

impl CpuList {
    /// The CPUs numbered `cpus` (sorted, duplicates dropped).
    pub fn new(mut cpus: Vec<usize>) -> CpuList {
        cpus.sort_unstable();
        cpus.dedup();
        CpuList(cpus)
    }

    /// The CPUs this process may run on: its main thread's set, which is what `taskset`
    /// or a container gave it (`None` where the kernel will not say).
    pub fn of_process() -> Option<CpuList> {
        let main = rustix::process::getpid();
        sched_getaffinity(Some(main))
            .ok()
            .map(|s| Self::from_set(&s))
    }

    fn from_set(set: &CpuSet) -> CpuList {
        CpuList((0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect())
    }

    fn to_set(&self) -> CpuSet {
        let mut set = CpuSet::new();
        for &c in self.0.iter().filter(|&&c| c < CpuSet::MAX_CPU) {
            set.set(c);
        }
        set
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn cpus(&self) -> &[usize] {
        &self.0
    }

    /// The last `n` CPUs of this set (all of it when it holds fewer).
    pub fn last(&self, n: usize) -> CpuList {
        CpuList(self.0[self.0.len().saturating_sub(n)..].to_vec())
    }

    /// The CPUs of this set that are not in `other`.
    pub fn without(&self, other: &CpuList) -> CpuList {
        CpuList(
            self.0
                .iter()
                .copied()
                .filter(|c| !other.0.contains(c))
                .collect(),
        )
    }

    /// Reads the kernel's list form, as `Cpus_allowed_list` and `taskset -c` write it:
    /// `0-3,6,8-9`.
    pub fn parse(s: &str) -> Option<CpuList> {
        let mut cpus = Vec::new();
        for part in s.trim().split(',').filter(|p| !p.is_empty()) {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            let (a, b): (usize, usize) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
            if b < a || b - a > CpuSet::MAX_CPU {
                return None;
            }
            cpus.extend(a..=b);
        }
        Some(CpuList::new(cpus))
    }
}

/// The kernel's list form: ranges of consecutive CPUs joined by commas (`1`, `0-3,6`).
impl fmt::Display for CpuList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut i = 0;
        while i < self.0.len() {
            let mut j = i;
            while j + 1 < self.0.len() && self.0[j + 1] == self.0[j] + 1 {
                j += 1;
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            match j > i {
                true => write!(f, "{}-{}", self.0[i], self.0[j])?,
                false => write!(f, "{}", self.0[i])?,
            }
            i = j + 1;
        }
        Ok(())
    }
}

/// The calling thread bound to a set of CPUs until this is dropped, when its earlier set
/// is put back. Threads and processes it starts meanwhile inherit the set and keep it.
#[must_use = "the thread is unbound again when this is dropped"]
pub struct Bound {
    saved: CpuSet,
}

/// Binds the calling thread to `cpus`, undone when the returned guard is dropped.
pub fn bind_thread(cpus: &CpuList) -> io::Result<Bound> {
    let saved = sched_getaffinity(None)?;
    sched_setaffinity(None, &cpus.to_set())?;
    Ok(Bound { saved })
}

impl Drop for Bound {
    fn drop(&mut self) {
        // Nothing to do if it fails: the set was the thread's own a moment ago.
        let _ = sched_setaffinity(None, &self.saved);
    }
}

/// Runs `f` on the calling thread bound to `cpus` (as it was, if it cannot be bound):
/// what `f` starts — a thread that should run apart from the bound work — keeps `cpus`.
pub fn on<T>(cpus: &CpuList, f: impl FnOnce() -> T) -> T {
    let _bound = bind_thread(cpus);
    f()
}

/// Makes `cmd` start bound to `cpus`, set between fork and exec, so the program and every
/// process it starts (a FUSE mount helper's daemon) inherit the set.
pub fn bind_command(cmd: &mut std::process::Command, cpus: &CpuList) {
    use std::os::unix::process::CommandExt;
    let set = cpus.to_set();
    // SAFETY: only sched_setaffinity, a plain system call, runs between fork and exec.
    unsafe {
        cmd.pre_exec(move || sched_setaffinity(None, &set).map_err(io::Error::from));
    }
}

/// The CPUs thread `tid` of process `pid` may run on, from its `Cpus_allowed_list`.
pub fn allowed(pid: i32, tid: i32) -> Option<CpuList> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .and_then(CpuList::parse)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_read_and_print_as_the_kernel_writes_them() {
        let l = CpuList::parse("0-3,6,8-9").unwrap();
        assert_eq!(l.cpus(), &[0, 1, 2, 3, 6, 8, 9]);
        assert_eq!(l.to_string(), "0-3,6,8-9");
        assert_eq!(CpuList::new(vec![1]).to_string(), "1");
        assert_eq!(CpuList::parse("3-1"), None);
        assert_eq!(CpuList::parse("x"), None);
    }

    #[test]
    fn the_last_cpus_and_the_rest_split_a_set() {
        let all = CpuList::new(vec![0, 1, 2, 3]);
        assert_eq!(all.last(1).cpus(), &[3]);
        assert_eq!(all.last(9), all);
        assert_eq!(all.without(&all.last(2)).to_string(), "0-1");
    }

    #[test]
    fn a_bound_thread_and_a_bound_command_run_on_the_set_and_the_thread_is_put_back() {
        let mine = CpuList::of_process().unwrap();
        let one = mine.last(1);
        let before = sched_getaffinity(None).unwrap();
        {
            let _b = bind_thread(&one).unwrap();
            let tid = rustix::thread::gettid().as_raw_nonzero().get();
            let pid = rustix::process::getpid().as_raw_nonzero().get();
            assert_eq!(allowed(pid, tid), Some(one.clone()));
        }
        assert_eq!(
            CpuList::from_set(&sched_getaffinity(None).unwrap()),
            CpuList::from_set(&before)
        );
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", "grep Cpus_allowed_list /proc/self/status"]);
        bind_command(&mut cmd, &one);
        let out = String::from_utf8(cmd.output().unwrap().stdout).unwrap();
        assert_eq!(
            out.split(':').nth(1).map(str::trim),
            Some(one.to_string().as_str())
        );
    }
}
