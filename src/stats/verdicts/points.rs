//! The unit a run's decisions are made in: one workload point (workload, data set, variant,
//! thread count) with a group of repetitions per target, and the metric the point is decided
//! on. Plain data and the questions asked of it; the deciding is in [`super::family`].

use crate::plan::FsKind;
use crate::stats::aggregate::Group;
use crate::stats::decision::{Decision, Verdict};
use crate::stats::significance::Comparison;
use crate::stats::steal::{fractions, STEAL_METRIC};

/// The metric a point is decided on, and its direction. The caller names it per workload
/// (the statistics never know a workload); results of a workload the caller does not know
/// are decided on their wall time ([`Default`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyMetric {
    pub name: String,
    pub higher_is_better: bool,
}

impl Default for KeyMetric {
    fn default() -> Self {
        KeyMetric {
            name: "seconds".to_string(),
            higher_is_better: false,
        }
    }
}

impl From<(&str, bool)> for KeyMetric {
    fn from((name, higher_is_better): (&str, bool)) -> Self {
        KeyMetric {
            name: name.to_string(),
            higher_is_better,
        }
    }
}

/// Whether a target of file-system type `fs` is a reference (a memory file system, tmpfs):
/// compared with the baseline, but never ranked, marked, or a reason to run more.
pub fn is_reference(fs: &str) -> bool {
    FsKind::parse(fs).is_some_and(FsKind::is_memory)
}

/// One side of a comparison: a group's key-metric values in repetition order, and the
/// repetition number of each; and the group's CPU steal figures ([`STEAL_METRIC`]) with
/// theirs (empty when its records carry none).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Sample<'a> {
    pub values: &'a [f64],
    pub reps: &'a [u32],
    pub steal: &'a [f64],
    pub steal_reps: &'a [u32],
    /// The baseline's key metric measured in turn with each run, when it was
    /// ([`crate::stats::aggregate::Group::in_turn`]), with those runs' repetition numbers.
    pub in_turn: &'a [f64],
    pub in_turn_reps: &'a [u32],
}

impl<'a> Sample<'a> {
    /// The first `n` runs (all of them when there are fewer).
    pub fn first(&self, n: usize) -> Sample<'a> {
        Sample {
            values: &self.values[..n.min(self.values.len())],
            reps: &self.reps[..n.min(self.reps.len())],
            steal: &self.steal[..n.min(self.steal.len())],
            steal_reps: &self.steal_reps[..n.min(self.steal_reps.len())],
            in_turn: &self.in_turn[..n.min(self.in_turn.len())],
            in_turn_reps: &self.in_turn_reps[..n.min(self.in_turn_reps.len())],
        }
    }

    /// This side without the baseline's figures measured beside it: for a comparison with
    /// another side than the baseline.
    pub fn alone(self) -> Sample<'a> {
        Sample {
            in_turn: &[],
            in_turn_reps: &[],
            ..self
        }
    }

    /// The per-run differences `ln self − ln baseline` of a side measured in turn with
    /// the baseline in every one of its runs (every value positive); else `None`.
    pub fn in_turn_differences(&self) -> Option<Vec<f64>> {
        if self.in_turn_reps != self.reps || self.values.len() != self.reps.len() {
            return None;
        }
        let own = crate::stats::estimators::log_values(self.values)?;
        let base = crate::stats::estimators::log_values(self.in_turn)?;
        Some(own.iter().zip(&base).map(|(c, b)| c - b).collect())
    }

    /// The stolen fraction of every run, when each of them has a steal figure (its
    /// records were measured by a monitor that reads it, in a phase long enough to count
    /// it): the covariate of [`crate::stats::steal`]; `None` otherwise.
    pub fn stolen(&self) -> Option<Vec<f64>> {
        (self.values.len() == self.reps.len()
            && self.steal_reps.len() >= self.reps.len()
            && self.steal_reps[..self.reps.len()] == *self.reps)
            .then(|| fractions(&self.steal[..self.reps.len()]))
    }
}

/// Two neighbours in a point's ranking of the disk targets: `win` leads `next` by the key
/// metric's mean (indices into [`Point::groups`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RankedPair {
    pub win: usize,
    pub next: usize,
    /// `next` as baseline, `win` as candidate, with its verdict once decided.
    pub cmp: Option<Comparison>,
    /// The group whose comparison with the baseline holds the same samples, when one of the
    /// two is the baseline: the pair then shares that comparison's place in the family.
    pub(super) same_as: Option<usize>,
}

impl RankedPair {
    /// Whether `win` is the run's baseline: the pair is then `next`'s comparison with the
    /// baseline read from the other side, and its figures are that row's.
    pub fn baseline_leads(&self) -> bool {
        self.same_as == Some(self.next)
    }

    /// Whether the pair's verdict decides that `win` is better than `next`: what a ✓ or ✗
    /// rests on. A verdict the other way (the runs ranked them one way, the test at equal
    /// CPU steal the other) marks nothing: the findings' cold load put ✗ on exFAT, which
    /// that test found faster than ntfs-3g.
    pub fn decisive(&self) -> bool {
        self.cmp
            .as_ref()
            .and_then(|c| c.verdict.as_ref())
            .is_some_and(|v| v.decision == Decision::Better)
    }
}

/// One workload point: every target's group of repetitions, decided on one metric.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub workload: String,
    /// The data set's profile, when the run had several (each is its own point).
    pub dataset: Option<String>,
    pub variant: String,
    pub threads: u32,
    pub key: KeyMetric,
    /// One group per target, in the order [`crate::stats::aggregate`] gives them. Once
    /// decided, the key metric's `vs_baseline` carries its verdict.
    pub groups: Vec<Group>,
    /// The ranking's pairs among the disk targets: first the leader and the runner-up, then
    /// (when different) the second-to-last and the last. Empty below two ranked targets.
    pub pairs: Vec<RankedPair>,
}

impl Point {
    /// Whether group `g` belongs to this point.
    fn holds(&self, g: &Group) -> bool {
        self.workload == g.key.workload
            && self.dataset == g.key.dataset
            && self.variant == g.key.variant
            && self.threads == g.key.threads
    }

    /// The key metric's values of group `i` (empty when it has none).
    pub fn raw(&self, i: usize) -> &[f64] {
        self.groups[i]
            .metrics
            .get(&self.key.name)
            .map_or(&[][..], |m| m.raw.as_slice())
    }

    /// The repetition number of each of [`Point::raw`]`(i)`.
    pub fn reps(&self, i: usize) -> &[u32] {
        self.groups[i]
            .metrics
            .get(&self.key.name)
            .map_or(&[][..], |m| m.reps.as_slice())
    }

    /// Group `i`'s key metric with its repetition numbers, and its steal figures.
    pub fn sample(&self, i: usize) -> Sample<'_> {
        let steal = self.groups[i].metrics.get(STEAL_METRIC);
        let in_turn = self.groups[i].in_turn.get(&self.key.name);
        Sample {
            values: self.raw(i),
            reps: self.reps(i),
            steal: steal.map_or(&[][..], |m| m.raw.as_slice()),
            steal_reps: steal.map_or(&[][..], |m| m.reps.as_slice()),
            in_turn: in_turn.map_or(&[][..], |(v, _)| v.as_slice()),
            in_turn_reps: in_turn.map_or(&[][..], |(_, r)| r.as_slice()),
        }
    }

    /// The key metric's mean of group `i`.
    pub fn mean(&self, i: usize) -> Option<f64> {
        self.groups[i]
            .metrics
            .get(&self.key.name)
            .map(|m| m.summary.mean)
    }

    /// The key metric's centre of group `i` as every table shows it: the geometric mean when
    /// every run is positive (the scale the comparisons work on), else the arithmetic mean.
    /// The ranking behind ✓ and ✗ follows it, so one run the machine slowed cannot make a
    /// target "worst" while its row reads a smaller difference than another's. At no CPU
    /// steal when the point's comparisons are adjusted for it ([`MetricStats::at_no_steal`]):
    /// the leader is then the one the adjusted % says leads.
    ///
    /// [`MetricStats::at_no_steal`]: crate::stats::MetricStats::at_no_steal
    pub fn centre(&self, i: usize) -> Option<f64> {
        let m = self.groups[i].metrics.get(&self.key.name)?;
        let runs = (m.in_turn.as_deref())
            .or(m.at_no_steal.as_deref())
            .unwrap_or(&m.raw);
        match crate::stats::estimators::log_values(runs) {
            Some(logs) if !logs.is_empty() => Some(crate::stats::estimators::mean(&logs).exp()),
            _ => Some(m.summary.mean),
        }
    }

    /// Sets each group's key-metric runs at the baseline's level ([`MetricStats::in_turn`])
    /// where its comparison with `baseline` is measured in turn, every run paired
    /// ([`Sample::in_turn_differences`]): the baseline row's centre times each run's ratio
    /// to the baseline beside it, so the centre shown and ranked on is the one the paired %
    /// is a ratio of; clears them elsewhere.
    ///
    /// [`MetricStats::in_turn`]: crate::stats::MetricStats::in_turn
    pub fn mark_in_turn(&mut self, baseline: &str) {
        let b = self.baseline_index(baseline);
        let level = b.and_then(|b| self.centre(b));
        let runs: Vec<Option<Vec<f64>>> = (0..self.groups.len())
            .map(|g| {
                let level = level.filter(|_| Some(g) != b)?;
                let d = self.sample(g).in_turn_differences()?;
                Some(d.iter().map(|x| level * x.exp()).collect())
            })
            .collect();
        let key = self.key.name.clone();
        for (group, runs) in self.groups.iter_mut().zip(runs) {
            if let Some(m) = group.metrics.get_mut(&key) {
                m.in_turn = runs;
            }
        }
    }

    /// Group `i`'s key metric as its row shows it (at the baseline's level when measured
    /// in turn: [`Point::mark_in_turn`]), without the baseline's figures beside it: one side
    /// of a comparison with another target than the baseline, on the figures the rows show.
    pub fn shown_sample(&self, i: usize) -> Sample<'_> {
        Sample {
            values: self.shown_runs(i),
            ..self.sample(i).alone()
        }
    }

    /// Group `i`'s key-metric runs as its row shows them: at the baseline's level when
    /// measured in turn ([`Point::mark_in_turn`]), else as measured.
    pub fn shown_runs(&self, i: usize) -> &[f64] {
        let m = self.groups[i].metrics.get(&self.key.name);
        m.and_then(|m| m.in_turn.as_deref())
            .unwrap_or_else(|| self.raw(i))
    }

    /// Whether group `i` is a reference target ([`is_reference`]).
    pub fn reference(&self, i: usize) -> bool {
        is_reference(&self.groups[i].fs)
    }

    /// Group `i`'s key metric against the baseline.
    pub fn vs_baseline(&self, i: usize) -> Option<&Comparison> {
        self.groups[i]
            .metrics
            .get(&self.key.name)?
            .vs_baseline
            .as_ref()
    }

    /// The index of the baseline's group.
    pub fn baseline_index(&self, baseline: &str) -> Option<usize> {
        self.groups.iter().position(|g| g.key.target == baseline)
    }

    /// The leader and the runner-up, when at least two disk targets were measured.
    pub fn leaders(&self) -> Option<&RankedPair> {
        self.pairs.first()
    }

    /// The group that is best among the disk targets, when its lead is a decided difference.
    pub fn best(&self) -> Option<usize> {
        self.pairs.first().filter(|p| p.decisive()).map(|p| p.win)
    }

    /// The group that is worst among the disk targets, when it trails by a decided
    /// difference.
    pub fn worst(&self) -> Option<usize> {
        self.pairs.last().filter(|p| p.decisive()).map(|p| p.next)
    }

    /// The disk targets whose comparison with the baseline is still undecided, with its
    /// verdict: what further repetitions are for.
    pub fn undecided(&self) -> impl Iterator<Item = (usize, &Verdict)> + '_ {
        (0..self.groups.len()).filter_map(|i| {
            let v = self.vs_baseline(i)?.verdict.as_ref()?;
            (!self.reference(i) && v.decision == Decision::Undecided).then_some((i, v))
        })
    }
}

/// The groups gathered into points, in the order of their first group; each point decided on
/// the metric `key_of` names for its workload (the default when it names none).
pub fn gather(groups: Vec<Group>, key_of: &dyn Fn(&str) -> Option<KeyMetric>) -> Vec<Point> {
    let mut points: Vec<Point> = Vec::new();
    for g in groups {
        match points.iter_mut().find(|p| p.holds(&g)) {
            Some(p) => p.groups.push(g),
            None => points.push(Point {
                workload: g.key.workload.clone(),
                dataset: g.key.dataset.clone(),
                variant: g.key.variant.clone(),
                threads: g.key.threads,
                key: key_of(&g.key.workload).unwrap_or_default(),
                groups: vec![g],
                pairs: Vec::new(),
            }),
        }
    }
    points
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::decision::Adjustment;
    use crate::stats::significance::compare;

    fn pair(higher_is_better: bool) -> RankedPair {
        let mut cmp = compare(&[1.0, 1.1, 1.05], &[2.0, 2.1, 2.05], 0.05);
        if let Some(c) = cmp.as_mut() {
            let v = super::super::verdict(
                c,
                (0.001, Adjustment::TwoStage),
                higher_is_better,
                5.0,
                || None,
            );
            c.verdict = Some(v);
        }
        RankedPair {
            win: 0,
            next: 1,
            cmp,
            same_as: None,
        }
    }

    #[test]
    fn a_pair_marks_only_when_its_verdict_says_the_leader_is_better() {
        // The candidate (win) is twice the baseline (next): better for a rate...
        assert!(pair(true).decisive());
        // ...worse for a time: the ranking and the test disagree, so no ✓ or ✗.
        assert!(!pair(false).decisive());
    }
}
