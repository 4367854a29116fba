use super::*;

/// The images line says what a run makes: one populated image per target for the
/// cells that start from the data set, a fresh one per cell that starts empty.
#[test]
fn the_images_line_counts_populated_targets_and_fresh_images() {
    let get = |n| crate::plan::catalogue::get(n).unwrap();
    let plan = Plan::of(
        vec![get("ext4"), get("xfs")],
        &["create", "scan"],
        Default::default(),
    );
    let cells = [
        (0, 0, "create"),
        (0, 0, "scan"),
        (1, 0, "scan"),
        (1, 0, "scan"),
    ];
    let line = images_line(&plan, &cells, 1 << 30);
    assert!(
        line.contains(
            "2 written once with the data set (per target and layout) and copied for 3 cells"
        ),
        "{line}"
    );
    assert!(
        line.contains("1 fresh image for the cells that start empty"),
        "{line}"
    );
    let scan_only = images_line(&plan, &cells[1..], 1 << 30);
    assert!(!scan_only.contains("fresh"), "{scan_only}");
    // copy's `within` point starts from the dated data set: a second image of ext4.
    let plan = Plan::of(vec![get("ext4")], &["copy", "scan"], Default::default());
    let line = images_line(&plan, &[(0, 0, "copy"), (0, 0, "scan")], 1 << 30);
    assert!(line.contains("2 written once"), "{line}");
}

/// The dry run names every file system a run makes: a candidate's cells of read-only
/// points also mount the baseline's beside their own when they are measured in turn
/// (not the baseline's own cells, nor a mutating workload's, nor with `--in-turn off`).
#[test]
fn the_images_line_counts_the_baselines_file_systems_beside_the_candidates() {
    let get = |n| crate::plan::catalogue::get(n).unwrap();
    let mut plan = Plan::of(
        vec![get("ext4"), get("xfs")],
        &["create", "scan"],
        Default::default(),
    );
    plan.baseline = "ext4".into();
    plan.in_turn = true;
    let cells = [
        (0, 0, "scan"),
        (1, 0, "create"),
        (1, 0, "scan"),
        (1, 0, "scan"),
    ];
    let line = images_line(&plan, &cells, 1 << 30);
    let said = "2 candidate cells of read-only points also mount ext4's file system beside";
    assert!(line.contains(said), "{line}");
    plan.in_turn = false;
    assert!(!images_line(&plan, &cells, 1 << 30).contains("beside"));
}

/// Defect (issue 60): the database study's dry run said "2 workload points × threads 1"
/// of cells that measure db at four thread counts, each also with maintenance, and pg's
/// two modes each with maintenance. A cell's points are counted as the run asks for them.
#[test]
fn a_cells_own_thread_counts_and_maintenance_points_are_counted() {
    let ext4 = crate::plan::catalogue::get("ext4").unwrap();
    let mut plan = Plan::of(vec![ext4], &["db", "scan", "create"], Default::default());
    plan.workload_options.insert(
        "db".into(),
        toml::from_str("threads = [16, 12, 8, \"auto\"]\nmaintenance = true").unwrap(),
    );
    let dataset = &plan.datasets()[0];
    let points = |w: &str| {
        let w = crate::workload::by_name(w).unwrap();
        cell_points(
            &plan,
            w.as_ref(),
            dataset,
            std::path::Path::new("/nonexistent/w"),
        )
        .unwrap()
    };
    let db = points("db");
    assert_eq!(db.len(), 8, "{db:?}");
    assert!(db.iter().filter(|p| p.contains("maintenance")).count() == 4);
    assert_eq!(
        labelled(&db),
        " (16 threads, 16 threads + maintenance, 12 threads, 12 threads + maintenance \
         and 4 more)"
    );
    assert_eq!(points("scan"), ["cold", "warm"]);
    let create = points("create");
    assert_eq!(create.len(), 1);
    assert_eq!(labelled(&create), "");
}
