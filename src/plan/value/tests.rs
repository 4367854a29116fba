use super::*;

#[test]
fn flags_and_file_values_read_the_same() {
    assert_eq!("auto".parse(), Ok(RunCount::Auto));
    assert_eq!("4".parse(), Ok(RunCount::Fixed(4)));
    assert!("0".parse::<RunCount>().unwrap_err().contains("1 to 1000"));
    assert_eq!("1, 2,4".parse(), Ok(ThreadList(vec![1, 2, 4])));
    assert!("1,0"
        .parse::<ThreadList>()
        .unwrap_err()
        .contains("1 to 1024"));
    assert!("two"
        .parse::<ThreadList>()
        .unwrap_err()
        .contains("thread list"));
    assert_eq!("90".parse(), Ok(Budget(Duration::from_secs(90))));
    for bad in ["soon", "0", "-5m", ""] {
        assert!(bad.parse::<Budget>().is_err(), "{bad}");
    }
    assert!("2m".parse::<PhaseFloor>().is_err());
    assert!("-2".parse::<Scales>().is_err());
    for bad in ["0", "100", "-1", "nan", "inf", "abc"] {
        assert!(bad.parse::<Margin>().is_err(), "{bad}");
    }
    assert!("95".parse::<AgePct>().unwrap_err().contains("below 95"));
    assert_eq!("64K".parse(), Ok(AgeFreeExtent(64 << 10)));
    assert_eq!("1M".parse(), Ok(AgeFreeExtent(1 << 20)));
    assert!("1K"
        .parse::<AgeFreeExtent>()
        .unwrap_err()
        .contains("4K to 64M"));
    assert!("1G"
        .parse::<AgeFreeExtent>()
        .unwrap_err()
        .contains("4K to 64M"));
    assert!("small,small"
        .parse::<Profiles>()
        .unwrap_err()
        .contains("twice"));
    assert!("12Q".parse::<ImageSize>().is_err());
    assert!(dataset_dir("/x").is_err());
}

#[derive(Debug, serde::Deserialize)]
struct File {
    threads: Option<ThreadList>,
    runs: Option<RunCount>,
    profile: Option<Profiles>,
}

#[test]
fn plan_file_values_name_the_option_on_one_line() {
    let f: File = toml::from_str("threads = [1, 2]\nruns = 3\nprofile = [\"small\"]").unwrap();
    assert_eq!(f.threads, Some(ThreadList(vec![1, 2])));
    assert_eq!(f.runs, Some(RunCount::Fixed(3)));
    assert_eq!(f.profile, Some(Profiles(vec![Profile::Small])));
    let e = toml::from_str::<File>("threads = [0]").unwrap_err();
    assert!(e
        .message()
        .contains("thread list `[0]`: 0 threads: use 1 to 1024"));
    let e = toml::from_str::<File>("runs = \"lots\"").unwrap_err();
    assert!(
        e.message().starts_with("invalid runs `lots`"),
        "{}",
        e.message()
    );
}

#[test]
fn scale_files_and_data_lists_parse_and_refuse_on_one_line() {
    assert_eq!("0.01, 0.1,1".parse(), Ok(Scales(vec![0.01, 0.1, 1.0])));
    assert_eq!("0.5".parse(), Ok(Scales(vec![0.5])));
    for (bad, why) in [
        ("0.1,0.1", "named twice"),
        ("0.1,,1", "empty item"),
        ("0.1,0", "above 0"),
        ("0.1,x", "not a number"),
        ("", "empty item"),
    ] {
        let e = bad.parse::<Scales>().unwrap_err();
        assert!(e.contains(why), "{bad}: {e}");
    }
    assert_eq!("2500,25000".parse(), Ok(FileCounts(vec![2500, 25000])));
    assert!("0".parse::<FileCounts>().is_err());
    assert!("2.5".parse::<FileCounts>().is_err());
    assert_eq!("1K,2K".parse(), Ok(DataSizes(vec![1024, 2048])));
    assert_eq!("4k".parse(), Ok(FileSize(4096)));
    assert!("8".parse::<FileSize>().unwrap_err().contains("at least 32"));
    #[derive(Debug, serde::Deserialize)]
    struct F {
        scale: Scales,
    }
    let f: F = toml::from_str("scale = [0.01, 0.1]").unwrap();
    assert_eq!(f.scale, Scales(vec![0.01, 0.1]));
    let f: F = toml::from_str("scale = 0.01").unwrap();
    assert_eq!(f.scale, Scales(vec![0.01]));
    let e = toml::from_str::<F>("scale = [0.01, 0.01]").unwrap_err();
    assert!(
        e.message().starts_with("invalid scale `[0.01, 0.01]`"),
        "{}",
        e.message()
    );
}

#[test]
fn max_steal_is_a_share_of_the_cpu_or_off() {
    assert_eq!("20".parse(), Ok(MaxSteal(Some(20.0))));
    assert_eq!("off".parse(), Ok(MaxSteal(None)));
    assert_eq!("100".parse(), Ok(MaxSteal(Some(100.0))));
    for bad in ["0", "-5", "101", "nan", "never", ""] {
        assert!(
            bad.parse::<MaxSteal>().unwrap_err().contains("or off"),
            "{bad}"
        );
    }
}
