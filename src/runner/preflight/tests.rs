use super::*;
use crate::plan::catalogue;

fn plan(targets: &[&str], workloads: &[&str]) -> Plan {
    let targets = targets.iter().map(|t| catalogue::get(t).unwrap()).collect();
    Plan::of(targets, workloads, Default::default())
}

#[test]
fn the_space_check_counts_one_populated_image_per_loop_target_that_needs_one() {
    assert_eq!(
        populated_images(&plan(&["ext4", "xfs", "tmpfs"], &["scan"])),
        2
    );
    assert_eq!(populated_images(&plan(&["ext4", "xfs"], &["create"])), 0);
    assert_eq!(populated_images(&plan(&["tmpfs"], &["delete"])), 0);
}

/// Defect: a point's `log_target` file system (a fresh sparse image in the work
/// directory, holding PostgreSQL's WAL) was left out of the space check and the dry
/// run's disk figure.
#[test]
fn the_space_check_counts_the_log_target_image() {
    let mut p = plan(&["ext4", "xfs"], &["pg"]);
    let without = disk_need(&p, 1 << 30);
    let mut table = toml::Table::new();
    table.insert("log_target".into(), toml::Value::String("xfs".into()));
    p.workload_options.insert("pg".into(), table);
    assert_eq!(log_images(&p), 1);
    assert_eq!(disk_need(&p, 1 << 30), without + LOG_IMAGE_BYTES);
    // A log on a workload the plan does not run costs nothing.
    let mut q = plan(&["ext4", "xfs"], &["scan"]);
    q.workload_options = p.workload_options.clone();
    assert_eq!(log_images(&q), 0);
}

/// Defect (scale-1 study of issue 16): a plan whose estimated peak (69.2 GiB) was just
/// under the free space (72.8 GiB) was let through and filled the host's disk. A plan
/// is now refused unless the free space exceeds its peak by the margin.
#[test]
fn a_plan_within_the_margin_of_the_free_space_is_refused() {
    let p = plan(&["ext4", "xfs"], &["scan"]);
    let dir = tempfile::tempdir().unwrap();
    let free = crate::provision::workdir::free_bytes(dir.path()).unwrap();
    // The need grows linearly with the data set: the one whose peak is 95 % of the
    // free space (refused), and half of it (with room).
    let (fixed, data) = (disk_need(&p, 0), 64 << 20);
    let per_byte = (disk_need(&p, data) - fixed) / data;
    let tight = (free - free / 20).saturating_sub(fixed) / per_byte;
    assert!(
        disk_need(&p, tight) < free,
        "within the free space, not above it"
    );
    let err = size_check(&p, tight, dir.path(), true)
        .unwrap_err()
        .to_string();
    assert!(err.contains(&format!("plus {SPACE_MARGIN_PCT} %")), "{err}");
    assert!(size_check(&p, tight / 2, dir.path(), true).is_ok());
}

/// Defect (issue 40): seed 001 kept each file system's logs on volumes of their own, which
/// one plan-wide log target could not say. `log_target = "own"` makes the cell's own
/// target again for the log, is counted in the space check, and is refused where a
/// second file system of a target cannot be made.
#[test]
fn an_own_log_target_is_the_cells_target_again() {
    let mut p = plan(&["ext4", "xfs"], &["pg"]);
    let table: toml::Table = "log_target = \"own\"".parse().unwrap();
    p.workload_options.insert("pg".into(), table);
    assert_eq!(log_images(&p), 1);
    assert!(check_log_targets(&p, &[]).is_ok());
    let home = log_home(&p, "pg", &p.targets[1], &p.targets).unwrap();
    assert_eq!((home.0.name.as_str(), home.1), ("xfs", true));
    p.targets[1].location = Location::Memory;
    let e = check_log_targets(&p, &[]).unwrap_err().to_string();
    assert!(e.contains("\"own\"") && e.contains("xfs"), "{e}");
}
