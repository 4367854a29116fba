//! `fsarena run study:NAME`: the built-in studies are listed, resolve like plan files, and a
//! study name that does not exist is refused in one line with exit 2 before anything is made.

mod common;

use std::process::Command;

use common::bin;

#[test]
fn list_shows_every_study() {
    let out = Command::new(bin()).arg("list").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for s in fsarena::plan::study::all() {
        assert!(text.contains(s.name), "{} missing from:\n{text}", s.name);
    }
}

#[test]
fn an_unknown_study_is_refused_with_exit_2_and_one_line() {
    let work = tempfile::tempdir().unwrap();
    let out = Command::new(bin())
        .args(["run", "study:no-such-study", "--work-dir"])
        .arg(work.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("no-such-study") && err.contains("database"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 0);
}

#[test]
fn every_study_resolves_to_a_plan_with_its_dry_run() {
    for s in fsarena::plan::study::all() {
        let out = Command::new(bin())
            .args(["run", &format!("study:{}", s.name), "--dry-run"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}: {out:?}", s.name);
    }
}

/// Defect (issue 41): the dry run of a plan of `db`, `pg` or fio sized and described the
/// generated data set ("data set: … 2500 files"), which none of them reads; and an fio file
/// sized only on the target was said as "0 B".
#[test]
fn a_database_or_fio_plans_dry_run_states_what_it_works_on() {
    let dry = |args: &[&str]| {
        let out = Command::new(bin())
            .args(["run"])
            .args(args)
            .arg("--dry-run")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).replace("\n  ", " ")
    };
    let db = dry(&["study:database"]);
    assert!(!db.contains("\ndata set"), "{db}");
    assert!(
        db.contains("initial state of db: 1 file, 64.0 MiB, a SQLite database")
            && db.contains("initial state of pg: 16.0 MiB, a pgbench database at scale 1"),
        "{db}"
    );
    // Defect (issue 40): the fio study's small file was fsarena's 16 MiB, not the seed's 50 MB.
    let fio = dry(&["study:fio-sweep"]);
    assert!(
        fio.contains("initial state of io-sweep: 1 file, 50.0 MiB, a fio data file"),
        "{fio}"
    );
    let root = common::TestRoot::new("dry-io");
    let plan = root.path.join("large.toml");
    std::fs::write(
        &plan,
        "workloads = [\"io-quick\"]\ntargets = [\"ext4\"]\n[workload.io-quick]\nsize = \"large\"\n",
    )
    .unwrap();
    let io = dry(&[plan.to_str().unwrap()]);
    assert!(
        io.contains("initial state of io-quick: a fio data file of up to 2 × RAM × scale, sized on the target\n"),
        "{io}"
    );
}

/// Defect (issue 40): study.md left out what the seeds showed: copy and verify apart (004),
/// free memory (000), one table per block size rather than a section per fio point (002).
/// A small real run shows them.
#[test]
fn study_md_shows_the_seeds_figures() {
    common::require_root();
    let root = common::TestRoot::new("study-md");
    let (out, work) = root.out_work();
    let plan = root.path.join("plan.toml");
    std::fs::write(
        &plan,
        "runs = 1\nscale = 0.001\nworkloads = [\"copy-verify\", \"io-sweep\"]\n\
         targets = [\"ext4\"]\n[workload.io-sweep]\nrw = [\"read\"]\nbs = [\"8k\", \"64k\"]\n\
         numjobs = [1, 2]\niodepth = [1]\nsize = [\"small\"]\nruntime = 1\n",
    )
    .unwrap();
    let run = common::run_quiet(&[plan.to_str().unwrap()], &out, &work);
    assert!(run.status.success(), "{run:?}");
    let md = std::fs::read_to_string(out.join("study.md")).unwrap();
    for row in [
        "| copy seconds |",
        "| verify seconds |",
        "| min free memory |",
    ] {
        assert!(md.contains(row), "{row} missing:\n{md}");
    }
    // Two block sizes, two points each: two tables, not four sections.
    let io: Vec<&str> = md
        .lines()
        .filter(|l| l.starts_with("## io-sweep"))
        .collect();
    assert_eq!(
        io,
        [
            "## io-sweep [block size 8k]",
            "## io-sweep [block size 64k]"
        ],
        "{md}"
    );
    assert_eq!(md.matches("| read-bs64k-j").count(), 2, "{md}");
    assert!(md.contains("IOPS · MB/s"), "{md}");
}
