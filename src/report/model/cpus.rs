//! Where the measured phases ran, in one sentence for the report's header: with `--cpus
//! auto` a cell of fewer threads than CPUs runs with its file system's daemon on CPUs of its
//! own (`plan::cpus`), which changes what a FUSE target's figures mean. Read from the
//! records' provenance, so it says what was bound, not what was asked.

use std::collections::BTreeMap;

use crate::plan::cpus::{self, Cpus, Placement};
use crate::results::{Measurement, Status};

/// "1-thread cells on CPU 1 with their file system's daemon, the harness on CPU 0", with
/// the workloads whose phases ran anywhere named; `None` for a run with no measured phase.
pub fn describe(measurements: &[Measurement], policy: Option<Cpus>) -> Option<String> {
    let measured: Vec<&Measurement> = measurements
        .iter()
        .filter(|m| matches!(m.status, Status::Ok | Status::Disturbed))
        .collect();
    if measured.is_empty() {
        return None;
    }
    let mut placed: BTreeMap<u32, Placement> = BTreeMap::new();
    let mut anywhere: Vec<String> = Vec::new();
    for m in &measured {
        match &m.provenance.cpus {
            Some(p) => {
                placed.entry(m.threads).or_insert_with(|| p.clone());
            }
            None => {
                let name = cpus::unbound(&m.workload, m.threads);
                if !anywhere.contains(&name) {
                    anywhere.push(name);
                }
            }
        }
    }
    let placed: Vec<(u32, Placement)> = placed.into_iter().collect();
    let policy = policy.unwrap_or(Cpus::All);
    Some(format!(
        "CPUs: {}",
        cpus::sentence(&placed, &anywhere, policy)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::cpus::CpuList;

    fn record(workload: &str, threads: u32, p: Option<Placement>) -> Measurement {
        let mut m = Measurement {
            workload: workload.into(),
            threads,
            ..Default::default()
        };
        m.provenance.cpus = p;
        m
    }

    #[test]
    fn the_header_says_where_each_thread_count_ran_and_what_ran_anywhere() {
        let two = CpuList::new(vec![0, 1]);
        let one = Cpus::Auto.place(1, &two);
        let ms = [
            record("create", 1, one.clone()),
            record("scan", 1, one),
            record("create", 2, None),
        ];
        assert_eq!(
            describe(&ms, Some(Cpus::Auto)).unwrap(),
            "CPUs: 1-thread cells on CPU 1 with their file system's daemon, the harness on CPU 0; create (2 threads) on any CPU"
        );
        let all = [record("create", 1, None)];
        assert_eq!(
            describe(&all, Some(Cpus::All)).unwrap(),
            "CPUs: every cell on any CPU (--cpus all)"
        );
        assert_eq!(describe(&[], Some(Cpus::Auto)), None);
    }
}
