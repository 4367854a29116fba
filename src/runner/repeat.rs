//! `--runs auto`: after the minimum repetitions, whether the spread of what was recorded so
//! far calls for one more.

use std::collections::BTreeMap;
use std::path::Path;

use crate::plan::Runs;
use crate::results::store;
use crate::results::Status;
use crate::stats::adaptive::{needs_another_run, AdaptiveRule};
use crate::workload::Workload;

/// With `--runs auto`, why one more repetition is needed (None: stop). Looks at each
/// group's key metric over the `ok` repetitions recorded so far.
pub fn extra_repetition_reason(
    runs: Runs,
    out: &Path,
    workloads: &[Box<dyn Workload>],
) -> Option<String> {
    let Runs::Auto { min, max } = runs else {
        return None;
    };
    let loaded = store::load(out).ok()?;
    let mut groups: BTreeMap<(String, String, String, u32), Vec<f64>> = Default::default();
    for m in loaded
        .measurements
        .iter()
        .filter(|m| m.status == Status::Ok)
    {
        let Some(w) = workloads.iter().find(|w| w.name() == m.workload) else {
            continue;
        };
        if let Some(v) = m.metrics.get(w.key_metric().0) {
            groups
                .entry((
                    m.target.clone(),
                    m.workload.clone(),
                    m.variant.clone(),
                    m.threads,
                ))
                .or_default()
                .push(*v);
        }
    }
    let rule = AdaptiveRule {
        min_runs: min as usize,
        max_runs: max as usize,
        target_cv: 0.05,
    };
    groups.iter().find_map(|((t, w, v, th), samples)| {
        needs_another_run(samples, &rule).map(|why| {
            let variant = if v.is_empty() {
                String::new()
            } else {
                format!(" [{v}]")
            };
            format!("{t} {w}{variant} threads {th}: {why}")
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::store::Store;
    use crate::results::{HostFacts, Measurement};
    use crate::workload;

    fn store_with(values: &[f64]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::create(dir.path(), &HostFacts::default()).unwrap();
        for (rep, v) in values.iter().enumerate() {
            s.append(&Measurement {
                target: "ext4".into(),
                workload: "create".into(),
                repetition: rep as u32,
                threads: 1,
                metrics: [("files_per_s".to_string(), *v)].into_iter().collect(),
                ..Default::default()
            })
            .unwrap();
        }
        dir
    }

    #[test]
    fn auto_runs_repeat_while_the_key_metric_spreads() {
        let w: Vec<Box<dyn Workload>> = vec![workload::by_name("create").unwrap()];
        let auto = Runs::Auto { min: 3, max: 10 };
        let noisy = store_with(&[100.0, 130.0, 80.0]);
        let why = extra_repetition_reason(auto, noisy.path(), &w).expect("another run");
        assert!(why.starts_with("ext4 create threads 1:"), "{why}");
        let steady = store_with(&[100.0, 101.0, 99.5]);
        assert_eq!(extra_repetition_reason(auto, steady.path(), &w), None);
        let capped = store_with(&[
            100.0, 130.0, 80.0, 120.0, 90.0, 100.0, 130.0, 80.0, 120.0, 90.0,
        ]);
        assert_eq!(extra_repetition_reason(auto, capped.path(), &w), None);
        assert_eq!(
            extra_repetition_reason(Runs::Fixed(3), noisy.path(), &w),
            None
        );
    }
}
