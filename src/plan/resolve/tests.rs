use std::time::Duration;

use clap::Parser;

use super::*;
use crate::plan::file::parse_plan_file;
use crate::plan::{FsKind, RankDirs};

const W: &[&str] = &["create", "scan", "delete"];

fn all(_: &TargetConfig) -> bool {
    true
}

/// The run options alone, as `fsarena run` reads them.
#[derive(Parser)]
struct Flags {
    #[command(flatten)]
    settings: Settings,
}

/// The run options of a command line such as `--runs 2 --target ext4`.
fn try_flags(args: &[&str]) -> Result<Settings, String> {
    Flags::try_parse_from(std::iter::once("run").chain(args.iter().copied()))
        .map(|f| f.settings)
        .map_err(|e| e.to_string())
}

fn flags(args: &[&str]) -> Settings {
    try_flags(args).expect("flags")
}

/// Why these flags make no plan: refused by their parser, or by resolution.
fn refused(args: &[&str]) -> String {
    match try_flags(args) {
        Err(e) => e,
        Ok(o) => resolve(None, &o, W, &all)
            .map(|_| ())
            .unwrap_err()
            .to_string(),
    }
}

#[test]
fn rank_dirs_come_from_the_file_or_the_flag_and_default_to_own() {
    let f = || parse_plan_file("rank_dirs = \"shared\"\n", "p").unwrap();
    let o = Settings::default();
    assert_eq!(resolve(None, &o, W, &all).unwrap().rank_dirs, RankDirs::Own);
    assert_eq!(
        resolve(Some(f()), &o, W, &all).unwrap().rank_dirs,
        RankDirs::Shared
    );
    let own = flags(&["--rank-dirs", "own"]);
    assert_eq!(
        resolve(Some(f()), &own, W, &all).unwrap().rank_dirs,
        RankDirs::Own
    );
    let e = parse_plan_file("rank_dirs = \"mine\"\n", "p")
        .unwrap_err()
        .to_string();
    assert!(e.contains("rank_dirs") && e.contains("shared"), "{e}");
}

#[test]
fn flags_override_file() {
    let f = parse_plan_file(
        "runs = 5\nthreads = [1, 2]\nworkloads = [\"scan\"]\ntargets = [\"xfs\", \"ext4\"]\n",
        "p",
    )
    .unwrap();
    let p = resolve(Some(f), &flags(&["--runs", "2"]), W, &all).unwrap();
    assert_eq!(p.runs, Runs::Fixed(2));
    assert_eq!(p.threads, vec![1, 2]);
    assert_eq!(p.workloads, vec!["scan"]);
    assert_eq!(p.baseline, "xfs");
}

#[test]
fn runs_default_to_auto_within_a_budget_and_a_budget_with_a_fixed_count_is_refused() {
    let p = resolve(None, &flags(&["--target", "ext4"]), W, &all).unwrap();
    assert_eq!(
        p.runs,
        Runs::Auto {
            min: 3,
            max: super::super::MAX_AUTO_RUNS,
            budget: Duration::from_secs(300)
        }
    );
    assert_eq!(p.phase_floor, Duration::from_millis(250));
    let with = |runs: Option<&str>, budget: Option<&str>| {
        let mut args = vec!["--target", "ext4"];
        args.extend(runs.map(|r| ["--runs", r]).into_iter().flatten());
        args.extend(budget.map(|b| ["--budget", b]).into_iter().flatten());
        try_flags(&args).and_then(|o| resolve(None, &o, W, &all).map_err(|e| e.to_string()))
    };
    let p = with(None, Some("1h 30m")).unwrap();
    assert!(matches!(p.runs, Runs::Auto { budget, .. } if budget == Duration::from_secs(5400)));
    let p = with(Some("auto"), Some("90")).unwrap();
    assert!(matches!(p.runs, Runs::Auto { budget, .. } if budget == Duration::from_secs(90)));
    assert_eq!(with(Some("4"), None).unwrap().runs, Runs::Fixed(4));
    let e = with(Some("3"), Some("5m")).unwrap_err();
    assert!(e.contains("applies to `--runs auto`"), "{e}");
    for bad in ["soon", "0", "-5m", ""] {
        assert!(with(None, Some(bad)).is_err(), "{bad}");
    }
    let f = parse_plan_file("budget = \"2m\"\nphase_floor = \"250ms\"\n", "p").unwrap();
    let p = resolve(Some(f), &flags(&["--target", "ext4"]), W, &all).unwrap();
    assert!(matches!(p.runs, Runs::Auto { budget, .. } if budget == Duration::from_secs(120)));
    assert_eq!(p.phase_floor, Duration::from_millis(250));
    assert!(try_flags(&["--phase-floor", "2m"]).is_err());
}

#[test]
fn a_memory_target_is_never_the_default_baseline_and_the_margin_is_checked() {
    let three = ["--target", "tmpfs", "--target", "xfs", "--target", "ext4"];
    let o = flags(&three);
    let p = resolve(None, &o, W, &all).unwrap();
    assert_eq!(p.baseline, "xfs");
    assert_eq!(p.margin_pct, super::super::DEFAULT_MARGIN_PCT);
    // Named explicitly, tmpfs may still be the baseline; alone, it is the only choice.
    let named = flags(&[&three[..], &["--baseline", "tmpfs"]].concat());
    assert_eq!(resolve(None, &named, W, &all).unwrap().baseline, "tmpfs");
    let alone = flags(&["--target", "tmpfs"]);
    assert_eq!(resolve(None, &alone, W, &all).unwrap().baseline, "tmpfs");
    let f = parse_plan_file("margin = 2.5\n", "p").unwrap();
    assert_eq!(resolve(Some(f), &o, W, &all).unwrap().margin_pct, 2.5);
    for bad in ["0", "100", "-1", "NaN", "inf"] {
        assert!(
            refused(&[&three[..], &["--margin", bad]].concat()).contains("margin"),
            "{bad}"
        );
        let file = parse_plan_file(&format!("margin = {bad}\n"), "p");
        assert!(file.is_err(), "{bad}");
    }
}

#[test]
fn custom_target_from_base() {
    let f = parse_plan_file(
        "[[target]]\nname = \"mine\"\nbase = \"ext4\"\nmount = [\"noatime\"]\nsize = \"2G\"\n",
        "p",
    )
    .unwrap();
    let p = resolve(Some(f), &Settings::default(), W, &all).unwrap();
    assert_eq!(p.targets.len(), 1);
    assert_eq!(p.targets[0].mount_options, vec!["noatime"]);
    assert_eq!(p.targets[0].size, Some(2 << 30));
}

#[test]
fn bad_inputs_are_refused() {
    assert!(refused(&["--target", "zfs"]).contains("unknown target `zfs`"));
    assert!(refused(&["--workload", "scan,frobnicate"]).contains("frobnicate"));
    assert!(refused(&["--threads", "1,0"]).contains("1 to 1024"));
    assert!(refused(&["--threads", "two"]).contains("thread list"));
    assert!(refused(&["--runs", "0"]).contains("runs"));
    assert!(refused(&["--scale", "-1"]).contains("scale"));
    assert!(refused(&["--baseline", "zzz"]).contains("baseline"));
    assert!(refused(&["--target", "ext4", "--target", "ext4"]).contains("two targets"));
    assert!(refused(&["--target", "tmpfs@/dev/sdb"]).contains("block device"));
}

#[test]
fn a_plan_file_value_is_checked_where_it_is_written() {
    let e = parse_plan_file("scale = 1\nthreads = [0]\n", "p.toml")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("p.toml:2:") && e.contains("1 to 1024"), "{e}");
    let e = parse_plan_file("workloads = []\n", "p.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("name at least one"), "{e}");
    let e = parse_plan_file("[dataset]\ncompressibility = 2\n", "p.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("invalid compressibility `2`"), "{e}");
}

#[test]
fn all_takes_mix_only_when_the_plan_describes_mixes() {
    let names = ["create", "mix", "varmail"];
    let o = flags(&["--workload", "all"]);
    let p = resolve(None, &o, &names, &all).unwrap();
    assert_eq!(p.workloads, vec!["create", "varmail"]);
    let f = parse_plan_file("[workload.mix.m]\nfiles = 1\n", "p").unwrap();
    let p = resolve(Some(f), &o, &names, &all).unwrap();
    assert_eq!(p.workloads, vec!["create", "mix", "varmail"]);
}

#[test]
fn default_targets_follow_availability() {
    let only_ext4 = |t: &TargetConfig| t.fs == FsKind::Ext4;
    let p = resolve(None, &Settings::default(), W, &only_ext4).unwrap();
    assert_eq!(p.targets.len(), 1);
    assert_eq!(p.workloads, vec!["create", "scan", "delete"]);
    let none = |_: &TargetConfig| false;
    assert!(matches!(
        resolve(None, &Settings::default(), W, &none),
        Err(PlanError::NoTargets)
    ));
}

#[test]
fn a_scale_series_or_a_stated_size_resolves_and_conflicts_are_refused() {
    let r = |args: &[&str]| resolve(None, &flags(args), W, &all).unwrap();
    let p = r(&["--scale", "0.01,0.1"]);
    assert_eq!((p.dataset.scale, p.extra_scales.clone()), (0.01, vec![0.1]));
    assert_eq!(p.dataset_count(), 2);
    let p = r(&["--files", "2500"]);
    assert!((p.dataset.scale - 0.01).abs() < 1e-4, "{}", p.dataset.scale);
    let p = r(&["--data", "1G,4G", "--file-size", "64K"]);
    assert_eq!(p.dataset.file_size, Some(65536));
    let files = crate::dataset::sizing::files(&p.datasets()[1]).unwrap();
    assert!((files as f64 / 65536.0 - 1.0).abs() < 0.01, "{files}");
    // The file's scale series, and a flag that states the size instead.
    let file: Settings = toml::from_str("scale = [0.002, 0.004]").unwrap();
    let p = resolve(Some(file.clone()), &flags(&[]), W, &all).unwrap();
    assert_eq!(p.scales(), [0.002, 0.004]);
    let p = resolve(Some(file), &flags(&["--files", "5000"]), W, &all).unwrap();
    assert!(p.extra_scales.is_empty() && (p.dataset.scale - 0.02).abs() < 1e-3);
    for (args, why) in [
        (
            &["--scale", "0.1", "--files", "100"][..],
            "--files also states",
        ),
        (&["--files", "100", "--data", "1G"], "--data also states"),
        (
            &["--files", "100", "--profile", "small,large"],
            "one generated profile",
        ),
        (&["--scale", "0.1,0.1"], "named twice"),
        (&["--scale", "0.01,abc"], "not a number"),
        (&["--files", "0"], "above 0"),
        (&["--file-size", "1"], "at least 32"),
        (
            &["--profile", "huge", "--scale", "1e-8,2e-8"],
            "same data set",
        ),
        (
            &["--scale", "0.01,0.1", "--age", "40", "--target", "ext4"],
            "one scale",
        ),
    ] {
        let e = refused(args);
        assert!(e.contains(why), "{args:?}: {e}");
    }
}
