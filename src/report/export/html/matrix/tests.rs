use std::collections::BTreeMap;

use super::*;
use crate::results::store::Loaded;
use crate::results::{HostFacts, Measurement, Status};

/// `create` (files/s, higher is better) on ext4 (the baseline: first measured), a target
/// per decision and a memory reference; `create` again at 4 threads for ext4 and xfs.
fn report() -> Report {
    let runs: [(&str, &str, u32, [f64; 5]); 7] = [
        ("ext4", "ext4", 1, [1000.0, 1001.0, 999.0, 1000.5, 999.5]),
        ("xfs", "xfs", 1, [1500.0, 1502.0, 1498.0, 1501.0, 1499.0]),
        ("btrfs", "btrfs", 1, [500.0, 501.0, 499.0, 500.5, 499.5]),
        ("f2fs", "f2fs", 1, [1001.0, 1000.0, 1002.0, 1000.0, 1001.5]),
        ("nilfs", "nilfs2", 1, [600.0, 1400.0, 900.0, 1300.0, 800.0]),
        (
            "tmpfs",
            "tmpfs",
            1,
            [9000.0, 9010.0, 8990.0, 9005.0, 8995.0],
        ),
        ("ext4", "ext4", 4, [2000.0, 2002.0, 1998.0, 2001.0, 1999.0]),
    ];
    let mut loaded = Loaded::new(HostFacts::default());
    for (target, fs, threads, values) in runs {
        for (rep, v) in values.into_iter().enumerate() {
            loaded.measurements.push(Measurement {
                target: target.into(),
                fs: fs.into(),
                workload: "create".into(),
                repetition: rep as u32,
                threads,
                status: Status::Ok,
                metrics: BTreeMap::from([("files_per_s".to_string(), v)]),
                ..Default::default()
            });
        }
    }
    crate::report::model::report::build(&loaded, Some(5.0))
}

fn cell<'a>(m: &'a Matrix, row: usize, target: &str) -> &'a Cell {
    let i = m.columns.iter().position(|c| c.target == target).unwrap();
    &m.rows[row].cells[i]
}

#[test]
fn columns_put_the_baseline_first_and_the_references_last() {
    let m = build(&report());
    let names: Vec<(&str, Role)> = m
        .columns
        .iter()
        .map(|c| (c.target.as_str(), c.role))
        .collect();
    assert_eq!(names[0], ("ext4", Role::Baseline));
    assert_eq!(names.last().copied(), Some(("tmpfs", Role::Reference)));
    assert!(names[1..names.len() - 1]
        .iter()
        .all(|(_, r)| *r == Role::Candidate));
}

#[test]
fn each_cell_says_its_difference_its_mark_and_its_decision_class() {
    let m = build(&report());
    assert_eq!(m.rows.len(), 2, "one row per thread count");
    assert_eq!(m.rows[0].label(), "create, 1 thread");
    assert_eq!(m.rows[1].label(), "create, 4 threads");
    assert_eq!(m.rows[0].metric, "files/s ↑");
    let base = cell(&m, 0, "ext4");
    assert_eq!((base.class(), base.text.as_str()), ("baseline", "1000"));
    let xfs = cell(&m, 0, "xfs");
    assert_eq!((xfs.class(), xfs.text.as_str()), ("better", "+50.0 % ✓"));
    assert!(matches!(xfs.interval, Interval::Bounded(lo, hi) if lo < 50.0 && hi > 50.0));
    let btrfs = cell(&m, 0, "btrfs");
    assert_eq!((btrfs.class(), btrfs.text.as_str()), ("worse", "-50.0 % ✗"));
    let f2fs = cell(&m, 0, "f2fs");
    assert_eq!(f2fs.class(), "equivalent");
    assert!(f2fs.text.ends_with(" ="), "{}", f2fs.text);
    let nilfs = cell(&m, 0, "nilfs");
    assert_eq!(nilfs.class(), "undecided");
    assert!(!nilfs.text.contains(['✓', '✗', '=']), "{}", nilfs.text);
    assert!(nilfs.title.contains("undecided"), "{}", nilfs.title);
    // The reference is decided like any target, in its own column.
    assert_eq!(cell(&m, 0, "tmpfs").class(), "better");
    // Only ext4 ran at 4 threads: the others' cells say so.
    let missing = cell(&m, 1, "xfs");
    assert_eq!((missing.class(), missing.text.as_str()), ("missing", "—"));
    assert_eq!(cell(&m, 1, "ext4").class(), "baseline");
}

#[test]
fn a_single_run_is_a_ratio_of_means_without_a_test() {
    let mut r = report();
    for s in &mut r.sections {
        for row in &mut s.rows {
            for m in row.metrics.values_mut() {
                m.vs_baseline = None;
            }
        }
    }
    let m = build(&r);
    let xfs = cell(&m, 0, "xfs");
    assert_eq!(xfs.class(), "untested");
    assert_eq!(xfs.interval, Interval::None);
    assert_eq!(xfs.text, "+50.0 %");
}

#[test]
fn an_interval_wider_than_the_difference_means_is_wide_as_in_the_tables() {
    let m = build(&report());
    // nilfs: five runs scattered ±40 %: a bounded interval; two runs would make it ±?.
    assert!(matches!(
        cell(&m, 0, "nilfs").interval,
        Interval::Bounded(..)
    ));
    let mut r = report();
    let s = &mut r.sections[0];
    let row = s.rows.iter_mut().find(|r| r.target == "nilfs").unwrap();
    let m = row.metrics.get_mut("files_per_s").unwrap();
    m.summary.n = 2;
    assert_eq!(
        cell(&build(&r), 0, "nilfs").interval,
        Interval::Wide,
        "two runs: ±?"
    );
}
