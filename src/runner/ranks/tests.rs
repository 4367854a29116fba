use super::start::{digest, rank_targets, shared_refusal};
use super::steps::combine;
use crate::cluster::World;
use crate::plan::Location;
use crate::runner::phase::{Figures, Observed};
use crate::workload::Outcome;

fn fig(work: f64, sync: f64, files: u64) -> Figures {
    Figures {
        work_seconds: work,
        syncfs_seconds: sync,
        files,
        read_bytes: files * 10,
        write_bytes: files * 100,
    }
}

#[test]
fn the_phase_lasts_as_long_as_its_slowest_rank_and_counts_add_up() {
    let mut o = Outcome::default();
    let mut seen = Observed::default();
    combine(
        &mut o,
        &mut seen,
        &[
            fig(1.0, 0.5, 10),
            fig(2.0, 0.1, 20),
            fig(0.5, 0.1, 30),
            fig(1.0, 0.0, 40),
        ],
    );
    assert_eq!(o.seconds, 2.0);
    assert_eq!(seen.syncfs_seconds, 0.1);
    assert_eq!(o.files, 100);
    assert_eq!(o.logical_read_bytes, 1000);
    assert_eq!(o.logical_write_bytes, 10_000);
    assert_eq!(o.metrics["rank_seconds_min"], 0.6);
    assert_eq!(o.metrics["rank_seconds_median"], 1.25);
    assert_eq!(o.metrics["rank_seconds_max"], 2.1);
    assert_eq!(o.metrics["ranks"], 4.0);
}

#[test]
fn shared_rank_dirs_keep_the_target_and_refuse_what_cannot_share_it() {
    let plan = |targets: &[&str], workloads: &[&str]| {
        let mut p = crate::plan::resolve::resolve(
            None,
            &crate::plan::settings::Settings {
                targets: targets.iter().map(|s| s.to_string()).collect(),
                workloads: workloads.iter().map(|s| s.to_string()).collect(),
                rank_dirs: Some(crate::plan::value::RankDirsChoice(
                    crate::plan::RankDirs::Shared,
                )),
                ..Default::default()
            },
            &crate::workload::names(),
            &|_| true,
        )
        .expect("plan");
        p.targets.truncate(1);
        p
    };
    let all = crate::workload::all();
    let ok = plan(&["dir:/shared"], &["create", "scan", "delete"]);
    assert_eq!(shared_refusal(&ok, &all), None);
    let t = rank_targets(&ok, World { rank: 2, size: 4 });
    assert_eq!(t[0].location, Location::Dir("/shared".into()));
    let why = shared_refusal(&plan(&["dir:/shared"], &["create", "dupes", "touch"]), &all)
        .unwrap_or_default();
    assert!(why.contains("does not support dupes, touch"), "{why}");
    let why = shared_refusal(&plan(&["ext4"], &["create"]), &all).unwrap_or_default();
    assert!(
        why.contains("needs dir: targets") && why.contains("ext4"),
        "{why}"
    );
}

#[test]
fn each_rank_works_in_its_own_subtree_of_a_dir_target() {
    let mut plan = crate::plan::resolve::resolve(
        None,
        &crate::plan::settings::Settings {
            targets: vec!["dir:/shared".into()],
            ..Default::default()
        },
        &crate::workload::names(),
        &|_| true,
    )
    .expect("plan");
    plan.targets.truncate(1);
    let t = rank_targets(&plan, World { rank: 2, size: 4 });
    assert_eq!(
        t[0].location,
        Location::Dir("/shared/fsarena-rank-2".into())
    );
    assert_eq!(digest(&plan), digest(&plan.clone()));
}
