//! The job as a run sees it: its ranks, their hosts, and how they share `dir:` targets.

use crate::cluster::World;
use crate::results::Measurement;

/// The job as a run sees it, when it has more than one rank.
#[derive(Debug, Clone)]
pub struct Ranks {
    pub world: World,
    /// Each rank's host name, in rank order.
    pub hosts: Vec<String>,
    /// All ranks work in one tree of each `dir:` target (`--rank-dirs shared`).
    pub shared: bool,
}

impl Ranks {
    /// The distinct hosts, in order of first appearance.
    pub fn distinct_hosts(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for h in &self.hosts {
            if !out.contains(h) {
                out.push(h.clone());
            }
        }
        out
    }

    /// Adds the job's shape to a record.
    pub fn stamp(&self, m: &mut Measurement) {
        m.ranks = Some(self.world.size as u32);
        m.hosts = self.distinct_hosts();
        m.rank_dirs = Some(if self.shared { "shared" } else { "own" }.into());
    }

    /// A rank as messages name it: its number and host.
    pub fn who(&self, rank: usize) -> String {
        match self.hosts.get(rank) {
            Some(h) => format!("rank {rank} ({h})"),
            None => format!("rank {rank}"),
        }
    }
}
