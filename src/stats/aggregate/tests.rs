use super::*;

fn m(target: &str, workload: &str, variant: &str, threads: u32, rep: u32) -> Measurement {
    Measurement {
        target: target.to_string(),
        fs: format!("{target}-fs"),
        workload: workload.to_string(),
        variant: variant.to_string(),
        threads,
        repetition: rep,
        ..Default::default()
    }
}

fn with(mut meas: Measurement, metrics: &[(&str, f64)]) -> Measurement {
    meas.metrics = metrics.iter().map(|&(k, v)| (k.to_string(), v)).collect();
    meas
}

fn failed(mut meas: Measurement, status: Status, error: &str) -> Measurement {
    meas.status = status;
    meas.error = Some(error.to_string());
    meas
}

fn keys(groups: &[Group]) -> Vec<(String, String, u32, String)> {
    groups
        .iter()
        .map(|g| {
            let k = &g.key;
            (
                k.workload.clone(),
                k.variant.clone(),
                k.threads,
                k.target.clone(),
            )
        })
        .collect()
}

/// ext4 is the baseline with three clean runs; xfs has three clean runs, one ENOSPC and
/// one run whose health check failed (with an absurd number that must not be averaged).
fn two_targets() -> Vec<Measurement> {
    vec![
        with(
            m("ext4", "create", "", 1, 0),
            &[("files_per_s", 1000.0), ("seconds", 1.0)],
        ),
        with(
            m("xfs", "create", "", 1, 0),
            &[("files_per_s", 1200.0), ("seconds", 0.83)],
        ),
        with(
            m("ext4", "create", "", 1, 1),
            &[("files_per_s", 1010.0), ("seconds", 0.99)],
        ),
        failed(
            m("xfs", "create", "", 1, 1),
            Status::Enospc,
            "No space left on device",
        ),
        with(
            m("ext4", "create", "", 1, 2),
            &[("files_per_s", 990.0), ("seconds", 1.01)],
        ),
        failed(
            with(m("xfs", "create", "", 1, 2), &[("files_per_s", 99999.0)]),
            Status::Invalid,
            "xfs_repair -n found problems",
        ),
        with(
            m("xfs", "create", "", 1, 3),
            &[("files_per_s", 1210.0), ("seconds", 0.82)],
        ),
        with(
            m("xfs", "create", "", 1, 4),
            &[("files_per_s", 1190.0), ("seconds", 0.84)],
        ),
    ]
}

#[test]
fn failed_and_invalid_runs_are_counted_not_averaged() {
    let groups = aggregate(&two_targets(), "ext4", 0.05);
    assert_eq!(keys(&groups).len(), 2);
    let xfs = &groups[1];
    assert_eq!(xfs.key.target, "xfs");
    assert_eq!(xfs.fs, "xfs-fs");
    assert_eq!(xfs.ok, 3);
    assert_eq!(
        xfs.failed,
        vec![(
            1,
            Status::Enospc,
            Some("No space left on device".to_string())
        )]
    );
    assert_eq!(xfs.invalid, 1);
    let fps = &xfs.metrics["files_per_s"];
    assert_eq!(fps.raw, vec![1200.0, 1210.0, 1190.0]);
    assert_eq!(fps.summary.n, 3);
    assert_eq!(fps.summary.mean, 1200.0);
    assert!(xfs.warnings.contains(&Warning::Failed { count: 1 }));
    assert!(xfs.warnings.contains(&Warning::Invalid { count: 1 }));
    assert!(!xfs
        .warnings
        .iter()
        .any(|w| matches!(w, Warning::TooFewRuns { .. })));
}

#[test]
fn each_target_is_compared_with_the_baseline() {
    let groups = aggregate(&two_targets(), "ext4", 0.05);
    let (ext4, xfs) = (&groups[0], &groups[1]);
    assert_eq!(ext4.key.target, "ext4");
    assert!(ext4.metrics.values().all(|s| s.vs_baseline.is_none()));
    assert!(ext4.warnings.is_empty(), "{:?}", ext4.warnings);
    let c = xfs.metrics["files_per_s"].vs_baseline.as_ref().unwrap();
    // Same numbers through compare() directly: the wiring, not the maths, is under test.
    let direct = compare(&[1000.0, 1010.0, 990.0], &[1200.0, 1210.0, 1190.0], 0.05).unwrap();
    assert_eq!(c, &direct);
    // The ratio of geometric means: 20 % to within 0.01 % for spreads this small.
    assert!((c.pct_diff - 20.0).abs() < 0.01, "{}", c.pct_diff);
    assert!(c.significant);
    let s = xfs.metrics["seconds"].vs_baseline.as_ref().unwrap();
    assert!(s.pct_diff < -15.0 && s.significant);
}

#[test]
fn order_follows_first_appearance() {
    let input = vec![
        with(m("t2", "b", "v2", 4, 0), &[("x", 1.0)]),
        with(m("t1", "a", "", 1, 0), &[("x", 1.0)]),
        with(m("t1", "b", "v1", 1, 0), &[("x", 1.0)]),
        with(m("t1", "b", "v2", 4, 0), &[("x", 1.0)]),
        with(m("t1", "b", "v2", 1, 0), &[("x", 1.0)]),
        with(m("t3", "a", "", 1, 0), &[("x", 1.0)]),
        with(m("t2", "a", "", 1, 0), &[("x", 1.0)]),
        with(m("t2", "b", "v2", 4, 1), &[("x", 1.0)]),
    ];
    let s = |x: &str| x.to_string();
    let want = vec![
        (s("b"), s("v2"), 4, s("t2")),
        (s("b"), s("v2"), 4, s("t1")),
        (s("b"), s("v2"), 1, s("t1")),
        (s("b"), s("v1"), 1, s("t1")),
        (s("a"), s(""), 1, s("t2")),
        (s("a"), s(""), 1, s("t1")),
        (s("a"), s(""), 1, s("t3")),
    ];
    let groups = aggregate(&input, "t1", 0.05);
    assert_eq!(keys(&groups), want);
    // Both repetitions of (b, v2, 4, t2) landed in one group.
    assert_eq!(groups[0].ok, 2);
}

#[test]
fn threads_are_never_compared_across() {
    let input = vec![
        with(m("ext4", "scan", "", 1, 0), &[("s", 10.0)]),
        with(m("ext4", "scan", "", 1, 1), &[("s", 10.2)]),
        with(m("ext4", "scan", "", 8, 0), &[("s", 3.0)]),
        with(m("ext4", "scan", "", 8, 1), &[("s", 3.1)]),
        with(m("xfs", "scan", "", 8, 0), &[("s", 3.05)]),
        with(m("xfs", "scan", "", 8, 1), &[("s", 3.0)]),
    ];
    let groups = aggregate(&input, "ext4", 0.05);
    let xfs = groups.iter().find(|g| g.key.target == "xfs").unwrap();
    let c = xfs.metrics["s"].vs_baseline.as_ref().unwrap();
    // Against the 8-thread baseline (mean 3.05) the difference is ~ −0.8 %, not −70 %.
    assert!(c.pct_diff.abs() < 2.0, "{}", c.pct_diff);
}

#[test]
fn missing_or_failed_baseline_is_said() {
    let groups = aggregate(&two_targets(), "btrfs", 0.05);
    for g in &groups {
        assert!(g.metrics.values().all(|s| s.vs_baseline.is_none()));
        assert!(g.warnings.contains(&Warning::NoBaseline {
            baseline: "btrfs".to_string()
        }));
    }

    let input = vec![
        failed(m("ext4", "copy", "", 1, 0), Status::Timeout, "timed out"),
        failed(m("ext4", "copy", "", 1, 1), Status::Eio, "I/O error"),
        with(m("xfs", "copy", "", 1, 0), &[("s", 1.0)]),
        with(m("xfs", "copy", "", 1, 1), &[("s", 1.1)]),
    ];
    let groups = aggregate(&input, "ext4", 0.05);
    let ext4 = &groups[0];
    assert_eq!(ext4.ok, 0);
    assert!(ext4.metrics.is_empty());
    assert_eq!(ext4.failed.len(), 2);
    assert_eq!(
        ext4.warnings,
        vec![Warning::TooFewRuns { n: 0 }, Warning::Failed { count: 2 }]
    );
    let xfs = &groups[1];
    assert!(xfs.metrics["s"].vs_baseline.is_none());
    assert_eq!(
        xfs.warnings,
        vec![
            Warning::TooFewRuns { n: 2 },
            Warning::NoBaseline {
                baseline: "ext4".to_string()
            }
        ]
    );
}

#[test]
fn non_finite_values_are_left_out_and_said() {
    let input = vec![
        with(m("ext4", "w", "", 1, 0), &[("rate", 5.0)]),
        with(m("ext4", "w", "", 1, 1), &[("rate", f64::INFINITY)]),
        with(m("ext4", "w", "", 1, 2), &[("rate", 5.1)]),
        with(
            m("ext4", "w", "", 1, 3),
            &[("rate", 5.05), ("only_nan", f64::NAN)],
        ),
    ];
    let g = &aggregate(&input, "ext4", 0.05)[0];
    assert_eq!(g.ok, 4);
    assert_eq!(g.metrics["rate"].raw, vec![5.0, 5.1, 5.05]);
    assert!(!g.metrics.contains_key("only_nan"));
    assert!(g.warnings.contains(&Warning::NonFinite {
        metric: "rate".to_string(),
        count: 1
    }));
    assert!(g.warnings.contains(&Warning::NonFinite {
        metric: "only_nan".to_string(),
        count: 1
    }));
}

#[test]
fn spread_and_outliers_are_warned_about() {
    let rates = [100.0, 104.0, 96.0, 101.0, 99.0, 100.5, 100.2, 400.0];
    let input: Vec<_> = rates
        .iter()
        .enumerate()
        .map(|(i, &r)| with(m("ext4", "w", "", 1, i as u32), &[("files_per_s", r)]))
        .collect();
    let g = &aggregate(&input, "ext4", 0.05)[0];
    let cv = g.metrics["files_per_s"].summary.cv;
    assert!(g.warnings.contains(&Warning::WideSpread {
        metric: "files_per_s".to_string(),
        cv
    }));
    assert!(g.warnings.contains(&Warning::Outliers {
        metric: "files_per_s".to_string(),
        count: 1
    }));
}

#[test]
fn empty_input_gives_no_groups() {
    assert!(aggregate(&[], "ext4", 0.05).is_empty());
}
