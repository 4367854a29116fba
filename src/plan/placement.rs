//! Where a plan's cells run: the [`Plan`] methods that apply its `--cpus` choice to one
//! cell, and to all of them for the sentence the dry run states. They live apart from the
//! choice itself ([`super::cpus`]) because `Plan` holds that choice: the plan's definition
//! imports `cpus`, and this file imports both.

use super::cpus::{sentence, unbound, Placement};
use super::Plan;
use crate::sys::cpus::CpuList;

impl Plan {
    /// Where a cell of `workload` (which takes `--threads` if `uses_threads`) at `threads`
    /// threads runs. Its thread count is known when its options fix it (`own`: a replay
    /// runs its trace's recorded threads), or when the workload takes `--threads` and its
    /// options name no `threads` of their own (a database's clients, say): otherwise it
    /// runs anywhere, as it does when the CPUs this process may use cannot be read.
    pub fn placement(
        &self,
        workload: &str,
        uses_threads: bool,
        threads: usize,
        own: Option<usize>,
    ) -> Option<Placement> {
        let options = self.workload_options.get(workload);
        let threads = match own {
            Some(t) => t,
            None if !uses_threads || options.is_some_and(|t| t.contains_key("threads")) => {
                return None;
            }
            None => threads,
        };
        self.cpus.place(threads, &CpuList::of_process()?)
    }

    /// The sentence [`sentence`] for this plan's cells before they run: `workloads` are
    /// the names of the plan's workloads with whether each takes `--threads` and the
    /// threads its options fix, if they do.
    pub fn placement_sentence(&self, workloads: &[(&str, bool, Option<usize>)]) -> String {
        let mut placed: Vec<(u32, Placement)> = Vec::new();
        let mut anywhere = Vec::new();
        for &(name, uses, own) in workloads {
            let threads: Vec<usize> = match own {
                Some(t) => vec![t],
                None if uses => self.threads.clone(),
                None => vec![1],
            };
            for t in threads {
                match self.placement(name, uses, t, own) {
                    Some(p) if !placed.iter().any(|(n, _)| *n as usize == t) => {
                        placed.push((t as u32, p))
                    }
                    Some(_) => {}
                    None => anywhere.push(unbound(name, t as u32)),
                }
            }
        }
        placed.sort_by_key(|(t, _)| *t);
        sentence(&placed, &anywhere, self.cpus)
    }
}
