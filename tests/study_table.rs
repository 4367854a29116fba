//! `study.md`: every section as the studies printed it — metric rows, one column per
//! configuration, % difference against the baseline, ✓/✗ and ≈ from the same decisions.

mod common;

#[test]
fn study_table_has_metric_rows_and_a_column_per_configuration() {
    let dir = tempfile::tempdir().unwrap();
    common::fixture::write(dir.path(), true);
    fsarena::report::write_files(dir.path(), None).unwrap();
    let md = std::fs::read_to_string(dir.path().join("study.md")).unwrap();
    let create = md
        .split("\n## ")
        .find(|s| s.starts_with("create, 1 thread"))
        .unwrap_or_else(|| panic!("{md}"));
    assert!(
        create.contains("| metric | ext4 | xfs | btrfs |"),
        "{create}"
    );
    let key = create
        .lines()
        .find(|l| l.starts_with("| files/s"))
        .unwrap_or_else(|| panic!("{create}"));
    // btrfs is 4× slower in the fixture: worst, -74.8 %, significant (no ≈); its interval
    // written as every table writes it (issue 40: one ±? rule, one figure everywhere).
    let cells: Vec<&str> = key.split('|').map(str::trim).collect();
    assert!(
        cells[4].contains('✗') && cells[4].contains("(-74.8 % ±1.6)"),
        "{key}"
    );
    assert!(!cells[4].contains('≈'), "{key}");
    // xfs is within 1 % of ext4: not a difference.
    assert!(cells[3].contains('≈'), "{key}");
    assert!(
        !cells[2].contains('('),
        "the baseline has no difference: {key}"
    );
}
