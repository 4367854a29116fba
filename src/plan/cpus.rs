//! `--cpus auto|all`: where a cell's work runs. With `auto` (the default) a cell of T
//! threads, T below the CPUs fsarena may use, runs its workload's threads and the processes
//! they start, and its file system's user-space daemon (ntfs-3g, exfat-fuse), on the last T
//! of those CPUs, and the harness (the monitor's sampler) on the others. On a virtual
//! machine a wake-up from one vCPU to another is an interrupt to a halted vCPU that the
//! hypervisor must schedule again; a FUSE request is two of them, so unbound FUSE phases
//! measured the host's scheduling (CPU steal) more than the file system. `all` runs
//! everything anywhere, as before. docs/statistics.md ("Where a cell runs") has the
//! measurements and the reasons for the last CPUs.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::sys::cpus::CpuList;

/// The `--cpus` choice.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Cpus {
    /// A cell of fewer threads than CPUs on CPUs of its own, with its file system's daemon.
    #[default]
    Auto,
    /// Every thread and process anywhere the scheduler puts it.
    All,
}

/// Where one cell ran: its work (the workload's threads, what they start, the file
/// system's daemon) on `work`, the harness on `harness`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    #[serde(serialize_with = "list_out", deserialize_with = "list_in")]
    pub work: CpuList,
    #[serde(serialize_with = "list_out", deserialize_with = "list_in")]
    pub harness: CpuList,
}

fn list_out<S: Serializer>(l: &CpuList, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&l.to_string())
}

fn list_in<'de, D: Deserializer<'de>>(d: D) -> Result<CpuList, D::Error> {
    let s = String::deserialize(d)?;
    CpuList::parse(&s).ok_or_else(|| serde::de::Error::custom(format!("bad CPU list `{s}`")))
}

impl Cpus {
    /// What a plan recorded before `--cpus` existed ran with: everything anywhere.
    pub fn before_binding() -> Cpus {
        Cpus::All
    }

    pub fn is_auto(&self) -> bool {
        *self == Cpus::Auto
    }

    pub fn parse(s: &str) -> Option<Cpus> {
        match s {
            "auto" => Some(Cpus::Auto),
            "all" => Some(Cpus::All),
            _ => None,
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Cpus::Auto => "auto",
            Cpus::All => "all",
        }
    }

    /// Where a cell of `threads` threads runs among the `allowed` CPUs, or `None`: anywhere
    /// (`all`, or `threads` not below the CPUs there are). The last CPUs are the work's:
    /// CPU 0 is where a machine's housekeeping lands first (boot-time interrupts, timers,
    /// unbound kernel work), so the harness stays there.
    pub fn place(self, threads: usize, allowed: &CpuList) -> Option<Placement> {
        if self == Cpus::All || threads == 0 || threads >= allowed.len() {
            return None;
        }
        let work = allowed.last(threads);
        let harness = allowed.without(&work);
        Some(Placement { work, harness })
    }
}

/// How the header names a workload whose cells ran anywhere: "cold-read (1 thread)".
pub fn unbound(workload: &str, threads: u32) -> String {
    let s = if threads == 1 { "" } else { "s" };
    format!("{workload} ({threads} thread{s})")
}

/// "CPU 1" or "CPUs 2-3".
fn cpus_word(l: &CpuList) -> String {
    match l.len() {
        1 => format!("CPU {l}"),
        _ => format!("CPUs {l}"),
    }
}

/// The sentence a report header and the dry run state: where the cells of each thread
/// count ran (`placed`: thread count and placement, one each), and which workloads ran
/// anywhere (`anywhere`), or that nothing was bound.
pub fn sentence(placed: &[(u32, Placement)], anywhere: &[String], policy: Cpus) -> String {
    let mut parts: Vec<String> = placed
        .iter()
        .map(|(t, p)| {
            format!(
                "{t}-thread cells on {} with their file system's daemon, the harness on {}",
                cpus_word(&p.work),
                cpus_word(&p.harness)
            )
        })
        .collect();
    if placed.is_empty() {
        let why = match policy {
            Cpus::All => "--cpus all",
            Cpus::Auto => "no cell has fewer threads than CPUs",
        };
        return format!("every cell on any CPU ({why})");
    }
    if !anywhere.is_empty() {
        parts.push(format!("{} on any CPU", anywhere.join(", ")));
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_gives_a_cell_below_the_cpu_count_the_last_cpus_and_all_gives_none() {
        let two = CpuList::new(vec![0, 1]);
        let p = Cpus::Auto.place(1, &two).unwrap();
        assert_eq!(
            (p.work.to_string(), p.harness.to_string()),
            ("1".into(), "0".into())
        );
        assert_eq!(Cpus::Auto.place(2, &two), None);
        assert_eq!(Cpus::Auto.place(4, &two), None);
        assert_eq!(Cpus::All.place(1, &two), None);
        let eight = CpuList::new((0..8).collect());
        let p = Cpus::Auto.place(3, &eight).unwrap();
        assert_eq!(
            (p.work.to_string(), p.harness.to_string()),
            ("5-7".into(), "0-4".into())
        );
    }

    #[test]
    fn the_sentence_says_where_each_thread_count_ran() {
        let p = Cpus::Auto.place(1, &CpuList::new(vec![0, 1])).unwrap();
        assert_eq!(
            sentence(&[(1, p.clone())], &[], Cpus::Auto),
            "1-thread cells on CPU 1 with their file system's daemon, the harness on CPU 0"
        );
        assert!(sentence(&[(1, p)], &["db".into()], Cpus::Auto).ends_with("; db on any CPU"));
        assert_eq!(
            sentence(&[], &[], Cpus::All),
            "every cell on any CPU (--cpus all)"
        );
        let json =
            serde_json::to_string(&Cpus::Auto.place(2, &CpuList::new((0..4).collect()))).unwrap();
        assert_eq!(json, r#"{"work":"2-3","harness":"0-1"}"#);
    }
}
