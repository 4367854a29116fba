//! The studies fsarena grew from, as runnable plans: `fsarena run study:NAME`.
//!
//! Each study is a plan file embedded in the binary (`src/plan/studies/NAME.toml`), parsed
//! exactly like a user's plan file, so flags override it the same way (`--scale 1`,
//! `--profile medium`, `--runs 5`). Its defaults finish in under 15 minutes on a small
//! machine; the full scale that matches the original study is documented in each file and in
//! the README's "Studies" section.

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
        description: "copy, sync, scan, dupes, touch, chmod, delete at 1-4 threads; 4 KiB vs 64 KiB clusters",
        plan: include_str!("studies/file-management.toml"),
    },
    Study {
        name: "database",
        description: "db (SQLite) 3 fresh runs: integrity (btrfs vs btrfs-nodatasum), encryption (ext4 vs ext4-fscrypt)",
        plan: include_str!("studies/database.toml"),
    },
    Study {
        name: "fio-sweep",
        description: "fio read/randread/write/randwrite x block size x jobs x queue depth, cache- and device-sized file",
        plan: include_str!("studies/fio-sweep.toml"),
    },
    Study {
        name: "copy-verify",
        description: "copy with and without verify, and a cold application load",
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

    #[test]
    fn study_names_resolve_and_unknown_ones_are_refused() {
        assert!(get("study:database").is_some());
        assert!(plan_for("plan.toml").is_none());
        let e = plan_for("study:nope").unwrap().unwrap_err().to_string();
        assert!(e.contains("file-management") && e.contains("nope"), "{e}");
    }
}
