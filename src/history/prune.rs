//! `fsarena history prune`: which runs a retention rule lets go. A run's results directory
//! may be deleted at any time (the history keeps every repetition's key metric, which is
//! what trends and checks read); pruning removes runs from the history itself.

use std::collections::BTreeMap;

use super::entry::RunEntry;

/// A retention rule. Both parts may be given: a run goes when either lets it go.
#[derive(Debug, Clone, Copy, Default)]
pub struct Rule {
    /// Runs that started more than this many seconds before `now` go.
    pub older_than_s: Option<f64>,
    /// Of each plan on each host, only the newest N stay.
    pub keep_last: Option<usize>,
}

/// The ids of the runs `rule` removes from `runs` (any order), at time `now`.
pub fn doomed(runs: &[RunEntry], rule: Rule, now: f64) -> Vec<String> {
    let mut by: BTreeMap<(&str, &str), Vec<&RunEntry>> = BTreeMap::new();
    for r in runs {
        by.entry((&r.plan_digest, &r.host_key)).or_default().push(r);
    }
    let mut out = Vec::new();
    for mut rs in by.into_values() {
        rs.sort_by(|a, b| b.started_unix.total_cmp(&a.started_unix));
        for (i, r) in rs.iter().enumerate() {
            let old = rule.older_than_s.is_some_and(|s| r.started_unix < now - s);
            let beyond = rule.keep_last.is_some_and(|n| i >= n);
            if old || beyond {
                out.push(r.id.clone());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: &str, plan: &str, t: f64) -> RunEntry {
        RunEntry {
            id: id.into(),
            started_unix: t,
            host_key: "h".into(),
            host: String::new(),
            kernel: String::new(),
            version: String::new(),
            commit: String::new(),
            plan_digest: plan.into(),
            plan_name: String::new(),
            dataset: String::new(),
            dataset_bytes: 0,
            results_path: String::new(),
            measured: 0,
            failed: 0,
            labels: Default::default(),
        }
    }

    #[test]
    fn keep_last_counts_per_plan_and_age_counts_from_now() {
        let runs = [
            run("a1", "a", 10.0),
            run("a2", "a", 20.0),
            run("a3", "a", 30.0),
            run("b1", "b", 5.0),
        ];
        let mut ids = doomed(
            &runs,
            Rule {
                keep_last: Some(2),
                older_than_s: None,
            },
            100.0,
        );
        ids.sort();
        assert_eq!(ids, ["a1"]);
        let mut ids = doomed(
            &runs,
            Rule {
                keep_last: None,
                older_than_s: Some(85.0),
            },
            100.0,
        );
        ids.sort();
        assert_eq!(ids, ["a1", "b1"]);
    }
}
