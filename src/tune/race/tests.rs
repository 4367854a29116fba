use super::*;
use crate::results::Measurement;
use crate::tune::setup::Candidate;

/// One `create` run of `target`: `files_per_s` (and its `seconds`), plus `extra` metrics.
fn run(target: &str, repetition: u32, files_per_s: f64, extra: &[(&str, f64)]) -> Measurement {
    let mut metrics: std::collections::BTreeMap<String, f64> = [
        ("files_per_s".to_string(), files_per_s),
        ("seconds".to_string(), 1.0 / files_per_s),
    ]
    .into();
    metrics.extend(extra.iter().map(|(k, v)| (k.to_string(), *v)));
    Measurement {
        target: target.to_string(),
        fs: "ext4".into(),
        workload: "create".into(),
        threads: 1,
        repetition,
        metrics,
        ..Default::default()
    }
}

/// `create` measurements of candidates whose files/s are `levels` × 1000, with a few
/// percent of run-to-run jitter, `runs` each.
fn measured(levels: &[(&str, f64)], runs: u32) -> Vec<Measurement> {
    let jitter = [1.0, 1.02, 0.98, 1.01, 0.99, 1.015];
    let mut out = Vec::new();
    for rep in 0..runs {
        for (name, level) in levels {
            let v = 1000.0 * level * jitter[rep as usize % jitter.len()];
            out.push(run(name, rep, v, &[]));
        }
    }
    out
}

/// The candidates of `levels`, each its own value of one parameter (so the main-effects
/// model is each one's own mean and the race is decided by means alone).
fn names(levels: &[(&str, f64)]) -> Vec<Candidate> {
    levels
        .iter()
        .enumerate()
        .map(|(i, (n, _))| Candidate {
            name: n.to_string(),
            levels: vec![i],
        })
        .collect()
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
    all.push(Candidate {
        name: "c02".into(),
        levels: vec![2],
    });
    let s = standing(&measured(&levels, 3), &all, 5.0, &Looks::fixed());
    assert_eq!(s.leader.as_deref(), Some("defaults"));
    assert_eq!(s.fates["c02"], Fate::Failed);
    let none = standing(&[], &all, 5.0, &Looks::fixed());
    assert_eq!(none.leader, None);
}

/// `create` runs of a full factorial of three two-valued parameters, two runs each: `a`
/// adds 30 % (log 0.30), `b` 4 %, `c` costs 2 %; the true best is a=1 b=1 c=0 (`c06`).
/// Noise (log, per run) leaves most means where they belong, but `c05` (a=1 c=1, 2 % below
/// the best) drew two high runs and the best two low ones, so `c05` has the best mean.
fn lucky_factorial() -> (Vec<Candidate>, Vec<Measurement>) {
    let mut candidates = Vec::new();
    let mut out = Vec::new();
    for k in 0..8usize {
        let l = vec![k >> 2 & 1, k >> 1 & 1, k & 1];
        let name = if k == 0 {
            "defaults".to_string()
        } else {
            format!("c{k:02}")
        };
        let truth = 0.30 * l[0] as f64 + 0.04 * l[1] as f64 - 0.02 * l[2] as f64;
        let noise = match k {
            5 => [0.08, 0.02],
            6 => [-0.04, 0.0],
            _ => [0.03, -0.03],
        };
        for (rep, e) in noise.iter().enumerate() {
            let v = 1000.0 * (truth + e).exp();
            out.push(run(&name, rep as u32, v, &[]));
        }
        candidates.push(Candidate { name, levels: l });
    }
    (candidates, out)
}

/// The winner's curse (BENCHMARKS, "tune against an exhaustive sweep": the tuner's best
/// mean of 2 runs was 6.5 % below the sweep's best): among the candidates the tests cannot
/// separate, the best mean of two runs is the luckiest; the main-effects model, which sees
/// each parameter in half of all runs, picks the truly best one.
#[test]
fn among_the_not_separated_the_model_picks_the_best_not_the_luckiest() {
    let (candidates, ms) = lucky_factorial();
    let looks = Looks::schedule(2, 12);
    let by_mean = best(
        &scores(
            &crate::stats::verdicts::decide(&ms, "defaults", 5.0, &looks, &key_metric),
            &candidates
                .iter()
                .map(|c| c.name.clone())
                .collect::<Vec<_>>(),
            "defaults",
        ),
        &candidates
            .iter()
            .map(|c| c.name.clone())
            .collect::<Vec<_>>(),
    );
    assert_eq!(by_mean.as_deref(), Some("c05"), "the fixture's lucky mean");
    let s = standing(&ms, &candidates, 5.0, &looks);
    assert_eq!(s.leader.as_deref(), Some("c06"), "{:?}", s.fates);
    assert!(s.pooled);
    assert_eq!(s.fates["c05"], Fate::Open, "{:?}", s.fates);
    // The model never revives a candidate the tests dropped: with every run exact, the
    // leader is the best mean and the model agrees.
    let exact: Vec<Measurement> = ms
        .iter()
        .cloned()
        .map(|mut m| {
            let k = candidates.iter().position(|c| c.name == m.target).unwrap();
            let l = &candidates[k].levels;
            let v = 1000.0 * (0.30 * l[0] as f64 + 0.04 * l[1] as f64 - 0.02 * l[2] as f64).exp();
            let jitter = if m.repetition == 0 { 1.001 } else { 0.999 };
            m.metrics.insert("files_per_s".into(), v * jitter);
            m
        })
        .collect();
    let s = standing(&exact, &candidates, 5.0, &looks);
    assert_eq!(s.leader.as_deref(), Some("c06"));
    assert!(!s.pooled);
}

/// Defect (issue 38's measurement, ext4 create): the race chose its leader by raw means
/// while its verdicts were at equal CPU steal, so the leader was a candidate whose runs had
/// merely lost less CPU to the hypervisor, judged 3.1 % slower than the defaults at equal
/// steal. Here the defaults lose ~10 % of the CPUs and c01 ~2 %: c01's raw mean is ~9 %
/// higher, but at equal steal it is 7 % slower, and the defaults lead.
#[test]
fn the_leader_is_the_best_at_equal_steal_not_the_one_that_lost_least_cpu() {
    let steal = [
        ("defaults", 1000.0, [6.0, 14.0, 8.0, 12.0, 10.0, 10.0]),
        ("c01", 930.0, [0.0, 4.0, 1.0, 3.0, 2.0, 2.0]),
    ];
    let jitter = [1.0, 1.01, 0.99, 1.005, 0.995, 1.0];
    let mut ms = Vec::new();
    for rep in 0..6 {
        for (name, level, pct) in &steal {
            let v = level * (-2.0 * pct[rep] / 100.0_f64).exp() * jitter[(rep + name.len()) % 6];
            ms.push(run(name, rep as u32, v, &[("cpu_steal_pct", pct[rep])]));
        }
    }
    let levels = [("defaults", 1.0), ("c01", 1.0)];
    let s = standing(&ms, &names(&levels), 5.0, &Looks::fixed());
    assert_eq!(s.leader.as_deref(), Some("defaults"), "{:?}", s.fates);
    let sc = scores(&s.points, &["defaults".into(), "c01".into()], "defaults");
    let c01 = sc["c01"].expect("c01 has a score");
    assert!(
        (c01.exp() - 0.93).abs() < 0.02,
        "c01 at equal steal: {}",
        c01.exp()
    );
    assert_eq!(s.fates["c01"], Fate::Dropped, "{:?}", s.fates);
}
