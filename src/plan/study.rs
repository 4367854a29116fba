//! The studies fsarena grew from, as runnable plans: `fsarena run study:NAME`.
//!
//! Each study is a plan file embedded in the binary (`src/plan/studies/NAME.toml`), parsed
//! exactly like a user's plan file, so flags override it the same way (`--scale 1`,
//! `--profile medium`, `--runs 5`). Its defaults take 7 to 80 minutes on a small machine
//! (docs/studies.md); the full scale that matches the original study is documented in each
//! file and in the README's "Studies" section.

use super::file::parse_plan_file;
use super::settings::Settings;
use super::PlanError;

/// A study: its name, one line for `fsarena list`, and its plan text.
pub struct Study {
    pub name: &'static str,
    pub description: &'static str,
    pub plan: &'static str,
}

/// The prefix that names a study where a plan file is expected.
pub const PREFIX: &str = "study:";

const STUDIES: &[Study] = &[
    Study {
        name: "file-management",
        description: "seed 000: copy, sync, scan, search, dupes, touch, chmod, delete at 1-4 threads on ext4, ntfs-3g, xfs, btrfs; 4 KiB vs 64 KiB clusters; cache and free memory",
        plan: include_str!("studies/file-management.toml"),
    },
    Study {
        name: "database",
        description: "seeds 001 + 003 (one plan): db (SQLite) at 16, 12, 8 and auto-tuned threads and pg (PostgreSQL), with maintenance and logs on their own volumes; integrity, encryption, both",
        plan: include_str!("studies/database.toml"),
    },
    Study {
        name: "fio-sweep",
        description: "seed 002: fio read/randread/write/randwrite x 8k/64k/512k x 1 and 4 jobs x queue depth; IOPS and MB/s per block size",
        plan: include_str!("studies/fio-sweep.toml"),
    },
    Study {
        name: "copy-verify",
        description: "seed 004: copy and verify timed apart, a cold application load; integrity pair btrfs vs btrfs-nodatasum",
        plan: include_str!("studies/copy-verify.toml"),
    },
];

/// Every study.
pub fn all() -> &'static [Study] {
    STUDIES
}

/// The study `name` names (`study:NAME` or `NAME`), if any.
pub fn get(name: &str) -> Option<&'static Study> {
    let name = name.strip_prefix(PREFIX).unwrap_or(name);
    STUDIES.iter().find(|s| s.name == name)
}

/// The plan of the study a plan argument names, or `None` when the argument is not
/// `study:…` (then it is a path). An unknown study is an error listing the known ones.
pub fn plan_for(arg: &str) -> Option<Result<Settings, PlanError>> {
    let name = arg.strip_prefix(PREFIX)?;
    Some(match get(name) {
        Some(s) => parse_plan_file(s.plan, arg),
        None => Err(PlanError::Invalid {
            what: "study",
            value: name.to_string(),
            why: format!(
                "one of {}",
                STUDIES
                    .iter()
                    .map(|s| s.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_study_plan_parses_and_names_only_catalogue_targets() {
        for s in all() {
            let f = plan_for(&format!("study:{}", s.name))
                .unwrap()
                .unwrap_or_else(|e| panic!("{}: {e}", s.name));
            for t in f.targets {
                assert!(
                    super::super::catalogue::get(&t).is_some(),
                    "{}: {t} is not in the catalogue",
                    s.name
                );
            }
            assert!(!f.workloads.is_empty(), "{}", s.name);
        }
    }

    fn plan(name: &str) -> Settings {
        plan_for(&format!("study:{name}")).unwrap().unwrap()
    }

    fn option(s: &Settings, workload: &str, key: &str) -> toml::Value {
        s.workload[workload].get(key).cloned().unwrap_or_else(|| {
            panic!("{workload}.{key} missing");
        })
    }

    /// Defect (issue 40): the plans left out cases their seeds ran. Each plan holds them.
    #[test]
    fn each_study_plan_holds_its_seeds_cases() {
        let has = |s: &Settings, t: &str| s.targets.iter().any(|x| x == t);
        let db = plan("database");
        let threads: toml::Value =
            toml::from_str::<toml::Table>("t = [16, 12, 8, \"auto\"]").unwrap()["t"].clone();
        assert_eq!(
            option(&db, "db", "threads"),
            threads,
            "001: 16, 8, autotune; 003: 12"
        );
        for w in ["db", "pg"] {
            assert_eq!(
                option(&db, w, "maintenance"),
                toml::Value::Boolean(true),
                "003"
            );
        }
        assert_eq!(option(&db, "pg", "log_target").as_str(), Some("own"), "001");
        for t in [
            "btrfs",
            "btrfs-nodatasum",
            "ext4-fscrypt",
            "ext4-nocsum-fscrypt",
        ] {
            assert!(has(&db, t), "database: {t}");
        }
        assert!(get("database").unwrap().description.contains("pg"));
        let fio = plan("fio-sweep");
        let jobs = option(&fio, "io-sweep", "numjobs");
        assert!(
            jobs.as_array().unwrap().contains(&toml::Value::Integer(4)),
            "002: 4 threads"
        );
        assert_eq!(option(&fio, "io-sweep", "bs").as_array().unwrap().len(), 3);
        let cv = plan("copy-verify");
        assert!(
            has(&cv, "btrfs") && has(&cv, "btrfs-nodatasum"),
            "004's integrity pair"
        );
        let fm = plan("file-management");
        assert!(has(&fm, "ntfs"), "000 compared NTFS");
        assert!(
            fm.workloads.iter().any(|w| w == "search"),
            "000 searched files"
        );
    }

    /// Every study plan says where each choice comes from: a comment names its seed.
    #[test]
    fn every_study_plan_names_its_seed() {
        for s in all() {
            assert!(s.plan.contains("seed"), "{}", s.name);
            assert!(s.description.contains("seed"), "{}", s.name);
        }
    }

    #[test]
    fn study_names_resolve_and_unknown_ones_are_refused() {
        assert!(get("study:database").is_some());
        assert!(plan_for("plan.toml").is_none());
        let e = plan_for("study:nope").unwrap().unwrap_err().to_string();
        assert!(e.contains("file-management") && e.contains("nope"), "{e}");
    }
}
