use super::*;
use crate::results::Measurement;

/// `create` measurements of candidates whose files/s are `levels` × 1000, with a few
/// percent of run-to-run jitter, `runs` each.
fn measured(levels: &[(&str, f64)], runs: u32) -> Vec<Measurement> {
    let jitter = [1.0, 1.02, 0.98, 1.01, 0.99, 1.015];
    let mut out = Vec::new();
    for rep in 0..runs {
        for (name, level) in levels {
            let v = 1000.0 * level * jitter[rep as usize % jitter.len()];
            out.push(Measurement {
                target: name.to_string(),
                fs: "ext4".into(),
                workload: "create".into(),
                threads: 1,
                repetition: rep,
                metrics: [
                    ("files_per_s".to_string(), v),
                    ("seconds".to_string(), 1.0 / v),
                ]
                .into(),
                ..Default::default()
            });
        }
    }
    out
}

fn names(levels: &[(&str, f64)]) -> Vec<String> {
    levels.iter().map(|(n, _)| n.to_string()).collect()
}

#[test]
fn a_planted_large_effect_leads_and_the_clearly_worse_are_dropped() {
    let levels = [("defaults", 1.0), ("c01", 1.5), ("c02", 1.0), ("c03", 0.5)];
    let s = standing(&measured(&levels, 3), &names(&levels), 5.0, &Looks::fixed());
    assert_eq!(s.leader.as_deref(), Some("c01"));
    assert_eq!(s.fates["c01"], Fate::Leader);
    for n in ["defaults", "c02", "c03"] {
        assert_eq!(s.fates[n], Fate::Dropped, "{n}: {:?}", s.fates);
    }
    assert!(s.open.is_empty());
}

#[test]
fn a_close_runner_up_stays_open_and_its_comparison_is_with_the_leader() {
    let levels = [("defaults", 1.0), ("c01", 1.5), ("c02", 1.47)];
    let s = standing(
        &measured(&levels, 2),
        &names(&levels),
        1.0,
        &Looks::schedule(2, 12),
    );
    assert_eq!(s.leader.as_deref(), Some("c01"));
    assert_eq!(s.fates["c02"], Fate::Open, "{:?}", s.fates);
    assert_eq!(s.open.len(), 1);
    assert_eq!(s.open[0].group.target, "c02");
}

#[test]
fn a_candidate_without_measurements_failed_and_cannot_lead() {
    let levels = [("defaults", 1.0), ("c01", 0.9)];
    let mut all = names(&levels);
    all.push("c02".into());
    let s = standing(&measured(&levels, 3), &all, 5.0, &Looks::fixed());
    assert_eq!(s.leader.as_deref(), Some("defaults"));
    assert_eq!(s.fates["c02"], Fate::Failed);
    let none = standing(&[], &all, 5.0, &Looks::fixed());
    assert_eq!(none.leader, None);
}
