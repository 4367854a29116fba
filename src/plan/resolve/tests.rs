use super::*;
use crate::plan::file::parse_plan_file;
use crate::plan::{FsKind, RankDirs};

const W: &[&str] = &["create", "scan", "delete"];

fn all(_: &TargetConfig) -> bool {
    true
}

#[test]
fn rank_dirs_come_from_the_file_or_the_flag_and_default_to_own() {
    let f = || parse_plan_file("rank_dirs = \"shared\"\n", "p").unwrap();
    let o = Overrides::default();
    assert_eq!(resolve(None, &o, W, &all).unwrap().rank_dirs, RankDirs::Own);
    assert_eq!(
        resolve(Some(f()), &o, W, &all).unwrap().rank_dirs,
        RankDirs::Shared
    );
    let own = Overrides {
        rank_dirs: Some("own".into()),
        ..Default::default()
    };
    assert_eq!(
        resolve(Some(f()), &own, W, &all).unwrap().rank_dirs,
        RankDirs::Own
    );
    let bad = parse_plan_file("rank_dirs = \"mine\"\n", "p").unwrap();
    let e = resolve(Some(bad), &o, W, &all).unwrap_err().to_string();
    assert!(e.contains("rank_dirs") && e.contains("shared"), "{e}");
}

#[test]
fn flags_override_file() {
    let f = parse_plan_file(
        "runs = 5\nthreads = [1, 2]\nworkloads = [\"scan\"]\ntargets = [\"xfs\", \"ext4\"]\n",
        "p",
    )
    .unwrap();
    let o = Overrides {
        runs: Some("2".into()),
        ..Default::default()
    };
    let p = resolve(Some(f), &o, W, &all).unwrap();
    assert_eq!(p.runs, Runs::Fixed(2));
    assert_eq!(p.threads, vec![1, 2]);
    assert_eq!(p.workloads, vec!["scan"]);
    assert_eq!(p.baseline, "xfs");
}

#[test]
fn runs_default_to_auto_within_a_budget_and_a_budget_with_a_fixed_count_is_refused() {
    let o = Overrides {
        targets: vec!["ext4".into()],
        ..Default::default()
    };
    let p = resolve(None, &o, W, &all).unwrap();
    assert_eq!(
        p.runs,
        Runs::Auto {
            min: 3,
            max: super::super::MAX_AUTO_RUNS,
            budget: Duration::from_secs(300)
        }
    );
    assert_eq!(p.phase_floor, Duration::from_millis(500));
    let with = |runs: Option<&str>, budget: Option<&str>| {
        resolve(
            None,
            &Overrides {
                runs: runs.map(String::from),
                budget: budget.map(String::from),
                ..o.clone()
            },
            W,
            &all,
        )
    };
    let p = with(None, Some("1h 30m")).unwrap();
    assert!(matches!(p.runs, Runs::Auto { budget, .. } if budget == Duration::from_secs(5400)));
    let p = with(Some("auto"), Some("90")).unwrap();
    assert!(matches!(p.runs, Runs::Auto { budget, .. } if budget == Duration::from_secs(90)));
    assert_eq!(with(Some("4"), None).unwrap().runs, Runs::Fixed(4));
    let e = with(Some("3"), Some("5m")).unwrap_err().to_string();
    assert!(e.contains("applies to `--runs auto`"), "{e}");
    for bad in ["soon", "0", "-5m", ""] {
        assert!(with(None, Some(bad)).is_err(), "{bad}");
    }
    let f = parse_plan_file("budget = \"2m\"\nphase_floor = \"250ms\"\n", "p").unwrap();
    let p = resolve(Some(f), &o, W, &all).unwrap();
    assert!(matches!(p.runs, Runs::Auto { budget, .. } if budget == Duration::from_secs(120)));
    assert_eq!(p.phase_floor, Duration::from_millis(250));
    let slow = Overrides {
        phase_floor: Some("2m".into()),
        ..o.clone()
    };
    assert!(resolve(None, &slow, W, &all).is_err());
}

#[test]
fn a_memory_target_is_never_the_default_baseline_and_the_margin_is_checked() {
    let o = Overrides {
        targets: vec!["tmpfs".into(), "xfs".into(), "ext4".into()],
        ..Default::default()
    };
    let p = resolve(None, &o, W, &all).unwrap();
    assert_eq!(p.baseline, "xfs");
    assert_eq!(p.margin_pct, super::super::DEFAULT_MARGIN_PCT);
    // Named explicitly, tmpfs may still be the baseline; alone, it is the only choice.
    let named = Overrides {
        baseline: Some("tmpfs".into()),
        ..o.clone()
    };
    assert_eq!(resolve(None, &named, W, &all).unwrap().baseline, "tmpfs");
    let alone = Overrides {
        targets: vec!["tmpfs".into()],
        ..Default::default()
    };
    assert_eq!(resolve(None, &alone, W, &all).unwrap().baseline, "tmpfs");
    let f = parse_plan_file("margin = 2.5\n", "p").unwrap();
    assert_eq!(resolve(Some(f), &o, W, &all).unwrap().margin_pct, 2.5);
    for bad in [0.0, 100.0, -1.0, f64::NAN, f64::INFINITY] {
        let o = Overrides {
            margin: Some(bad),
            ..o.clone()
        };
        assert!(resolve(None, &o, W, &all).is_err(), "{bad}");
    }
}

#[test]
fn custom_target_from_base() {
    let f = parse_plan_file(
        "[[target]]\nname = \"mine\"\nbase = \"ext4\"\nmount = [\"noatime\"]\nsize = \"2G\"\n",
        "p",
    )
    .unwrap();
    let p = resolve(Some(f), &Overrides::default(), W, &all).unwrap();
    assert_eq!(p.targets.len(), 1);
    assert_eq!(p.targets[0].mount_options, vec!["noatime"]);
    assert_eq!(p.targets[0].size, Some(2 << 30));
}

#[test]
fn bad_inputs_are_refused() {
    let o = |f: fn(&mut Overrides)| {
        let mut o = Overrides::default();
        f(&mut o);
        resolve(None, &o, W, &all)
            .map(|_| ())
            .unwrap_err()
            .to_string()
    };
    assert!(o(|o| o.targets = vec!["zfs".into()]).contains("unknown target `zfs`"));
    assert!(o(|o| o.workloads = vec!["scan,frobnicate".into()]).contains("frobnicate"));
    assert!(o(|o| o.threads = Some("1,0".into())).contains("1 to 1024"));
    assert!(o(|o| o.threads = Some("two".into())).contains("thread list"));
    assert!(o(|o| o.runs = Some("0".into())).contains("runs"));
    assert!(o(|o| o.scale = Some(-1.0)).contains("scale"));
    assert!(o(|o| o.baseline = Some("zzz".into())).contains("baseline"));
    assert!(o(|o| o.targets = vec!["ext4".into(), "ext4".into()]).contains("two targets"));
    assert!(o(|o| o.targets = vec!["tmpfs@/dev/sdb".into()]).contains("block device"));
}

#[test]
fn all_takes_mix_only_when_the_plan_describes_mixes() {
    let names = ["create", "mix", "varmail"];
    let o = Overrides {
        workloads: vec!["all".into()],
        ..Overrides::default()
    };
    let p = resolve(None, &o, &names, &all).unwrap();
    assert_eq!(p.workloads, vec!["create", "varmail"]);
    let f = parse_plan_file("[workload.mix.m]\nfiles = 1\n", "p").unwrap();
    let p = resolve(Some(f), &o, &names, &all).unwrap();
    assert_eq!(p.workloads, vec!["create", "mix", "varmail"]);
}

#[test]
fn default_targets_follow_availability() {
    let only_ext4 = |t: &TargetConfig| t.fs == FsKind::Ext4;
    let p = resolve(None, &Overrides::default(), W, &only_ext4).unwrap();
    assert_eq!(p.targets.len(), 1);
    assert_eq!(p.workloads, vec!["create", "scan", "delete"]);
    let none = |_: &TargetConfig| false;
    assert!(matches!(
        resolve(None, &Overrides::default(), W, &none),
        Err(PlanError::NoTargets)
    ));
}
