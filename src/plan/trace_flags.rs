//! `--trace FILE` / `--timing fast|think|original` (or `trace = …`, `timing = …` at the top of a
//! plan): handed to the `replay` workload as its `trace` and `timing` options, so the
//! record's plan names the trace and the workload reads it like any option (and checks
//! it, before anything is provisioned). A relative trace path is made absolute here, so a
//! `--resume` from another directory still finds it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::PlanError;

/// The workload these flags are for.
pub const REPLAY: &str = "replay";

/// Hands the trace and timing (flag over file) to the plan's replay workload.
pub(super) fn apply(
    trace: Option<&PathBuf>,
    timing: Option<&String>,
    workloads: &[String],
    options: &mut BTreeMap<String, toml::Table>,
) -> Result<(), PlanError> {
    let given = [
        ("trace", trace.map(|t| absolute(t).display().to_string())),
        ("timing", timing.cloned()),
    ];
    for (key, value) in given {
        let Some(value) = value else { continue };
        let invalid = |why: String| PlanError::Invalid {
            what: if key == "trace" { "trace" } else { "timing" },
            value: value.clone(),
            why,
        };
        if !workloads.iter().any(|w| w == REPLAY) {
            return Err(invalid(format!(
                "--{key} is for the replay workload, which this plan does not run (add --workload replay)"
            )));
        }
        let table = options.entry(REPLAY.to_string()).or_default();
        let value = toml::Value::String(value.clone());
        match table.get(key) {
            Some(own) if own != &value => {
                return Err(invalid(format!(
                    "[workload.replay] names another {key} ({own}); keep one"
                )))
            }
            _ => {
                table.insert(key.into(), value);
            }
        }
    }
    Ok(())
}

fn absolute(path: &PathBuf) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flags_become_the_replay_workloads_options() {
        let mut o = BTreeMap::new();
        let trace = PathBuf::from("/t/app.fstrace");
        let timing = "original".to_string();
        let w = vec!["replay".to_string()];
        apply(Some(&trace), Some(&timing), &w, &mut o).unwrap();
        assert_eq!(o["replay"]["trace"].as_str(), Some("/t/app.fstrace"));
        assert_eq!(o["replay"]["timing"].as_str(), Some("original"));
        let e = apply(Some(&trace), None, &["create".into()], &mut BTreeMap::new())
            .unwrap_err()
            .to_string();
        assert!(e.contains("--workload replay") && !e.contains('\n'), "{e}");
        let other = PathBuf::from("/t/other.fstrace");
        let e = apply(Some(&other), None, &w, &mut o)
            .unwrap_err()
            .to_string();
        assert!(e.contains("keep one"), "{e}");
    }
}
