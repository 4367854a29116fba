use super::*;

#[test]
fn civil_dates() {
    assert_eq!(out_dir::civil_from_days(0), (1970, 1, 1));
    assert_eq!(out_dir::civil_from_days(20_778), (2026, 11, 21));
}

#[test]
fn cli_parses_the_fixed_interface() {
    let c = Cli::try_parse_from([
        "fsarena",
        "run",
        "p.toml",
        "--target",
        "ext4",
        "--target",
        "dir:/x",
        "--workload",
        "scan,delete",
        "--threads",
        "1,2",
        "--runs",
        "auto",
        "--scale",
        "0.1",
        "--baseline",
        "ext4",
        "--out",
        "o",
        "--work-dir",
        "w",
        "--keep",
        "--dry-run",
        "--quiet",
    ])
    .unwrap();
    let Command::Run(a) = c.command else {
        panic!("not run")
    };
    assert_eq!(a.settings.targets, vec!["ext4", "dir:/x"]);
    assert!(a.keep && a.dry_run && a.quiet);
    assert!(Cli::try_parse_from(["fsarena", "run", "--wipe"]).is_err());
    assert!(Cli::try_parse_from(["fsarena", "doctor", "--json"]).is_ok());
    assert!(Cli::try_parse_from(["fsarena", "cleanup", "--work-dir", "/w"]).is_ok());
    assert!(Cli::try_parse_from(["fsarena", "compare", "a", "b"]).is_ok());
}

/// Issue 57.5: `tune` without a file system said "required arguments were not provided:"
/// and stopped there, without naming the argument.
#[test]
fn a_missing_argument_is_named_in_the_one_line() {
    let e = Cli::try_parse_from(["fsarena", "tune", "--workload", "create"]).unwrap_err();
    let line = clap_line(&e);
    assert!(line.contains("<FS>"), "{line}");
    assert!(!line.contains('\n'), "{line}");
    let e = Cli::try_parse_from(["fsarena", "compare", "a"]).unwrap_err();
    assert!(clap_line(&e).contains("<DIR_B>"), "{}", clap_line(&e));
}
