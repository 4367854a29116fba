use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::*;

fn run(i: usize) -> RunEntry {
    RunEntry {
        id: format!("run{i}"),
        started_unix: 1_000.0 + i as f64,
        host_key: "h".into(),
        host: "a host".into(),
        kernel: "6.18".into(),
        version: "0.1.0".into(),
        commit: String::new(),
        plan_digest: "p".into(),
        plan_name: "create on ext4".into(),
        dataset: String::new(),
        dataset_bytes: 0,
        results_path: format!("/r/{i}"),
        measured: 3,
        failed: 0,
        labels: Default::default(),
    }
}

/// A standard normal draw (Box–Muller).
fn normal(rng: &mut impl Rng) -> f64 {
    let u: f64 = rng.gen_range(f64::EPSILON..1.0);
    let v: f64 = rng.gen();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// `runs` runs of 3 repetitions of files_per_s around 1000 (3 % spread), the last one
/// scaled by `last`.
fn history(rng: &mut ChaCha8Rng, runs: usize, last: f64) -> (Vec<RunEntry>, Vec<Value>) {
    let entries: Vec<RunEntry> = (0..runs).map(run).collect();
    let mut values = Vec::new();
    for (i, r) in entries.iter().enumerate() {
        for rep in 0..3 {
            let f = if i + 1 == runs { last } else { 1.0 };
            values.push(Value {
                run_id: r.id.clone(),
                target: "ext4".into(),
                fs: "ext4".into(),
                workload: "create".into(),
                point: String::new(),
                threads: 1,
                repetition: rep,
                metric: "files_per_s".into(),
                higher_is_better: true,
                value: Some(1000.0 * f * (0.03 * normal(rng)).exp()),
                status: "ok".into(),
            });
        }
    }
    (entries, values)
}

fn checked(runs: &[RunEntry], values: &[Value]) -> Outcome {
    let o = CheckOptions::default();
    check(&groups(runs, &o), values, &o)
}

/// The check's false-alarm rate, measured over 1,000 unchanged series of six runs: at
/// most 5 %.
#[test]
fn aa_series_raise_a_false_alarm_in_at_most_5_pct() {
    let mut rng = ChaCha8Rng::seed_from_u64(59);
    let n = 1000;
    let alarms = (0..n)
        .filter(|_| {
            let (runs, values) = history(&mut rng, 6, 1.0);
            !checked(&runs, &values).regressions.is_empty()
        })
        .count();
    let rate = alarms as f64 / n as f64;
    assert!(rate <= 0.05, "false alarms in {rate} of A/A series");
}

#[test]
fn a_30_pct_loss_in_the_third_run_is_flagged_and_began_there() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let (runs, values) = history(&mut rng, 3, 0.7);
    let out = checked(&runs, &values);
    assert_eq!(out.regressions.len(), 1, "{out:?}");
    let r = &out.regressions[0];
    assert_eq!(r.began.id, "run2");
    assert!((r.pct + 30.0).abs() < 6.0, "{r:?}");
}

#[test]
fn a_gain_is_not_a_regression() {
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let (runs, values) = history(&mut rng, 3, 1.3);
    assert!(checked(&runs, &values).regressions.is_empty());
}

#[test]
fn a_newest_run_with_no_ok_value_is_unmeasured() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let (runs, mut values) = history(&mut rng, 3, 1.0);
    for v in values.iter_mut().filter(|v| v.run_id == "run2") {
        v.value = None;
        v.status = "eio".into();
    }
    let out = checked(&runs, &values);
    assert_eq!(out.unmeasured.len(), 1);
    assert!(out.regressions.is_empty());
}

#[test]
fn the_gate_lets_a_smaller_loss_pass() {
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    let (runs, values) = history(&mut rng, 4, 0.85);
    let o = CheckOptions {
        fail_if_worse_pct: 25.0,
        ..CheckOptions::default()
    };
    assert!(check(&groups(&runs, &o), &values, &o)
        .regressions
        .is_empty());
    assert!(!checked(&runs, &values).regressions.is_empty());
}
