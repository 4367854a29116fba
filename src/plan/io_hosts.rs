//! `--io-hosts` / `io_hosts = [...]`: the fio servers the io workloads run on.
//!
//! The list is handed to each io workload of the plan as its `hosts` option (so the record's
//! plan names the hosts, and the workload parses it like any option), after the checks that
//! need the whole plan: there is an io workload to run it, no workload table already names
//! other hosts, and every target is one the servers can reach. A server runs the job on its
//! own host in the directory the job names, so the target must be a path every host sees:
//! a `dir:` target (a shared path, the same on every host) — or, when every server is on this
//! machine's loopback, any target, since a loop image mounted here is then on their host too.
//! Whether each server answers, with this fio's version, is the workload's `check_options`.

use std::collections::BTreeMap;

use super::target::{Location, TargetConfig};
use super::PlanError;
use crate::fio::Server;

/// The workloads that run through fio and so take `hosts` (they check this list against
/// their own names in their tests).
pub const IO_WORKLOADS: [&str; 2] = ["io-quick", "io-sweep"];

/// Hands the io hosts (flag over file) to the plan's io workloads and checks them against
/// the plan's targets. Also checks `hosts` a `[workload.io-*]` table names by itself.
pub(super) fn apply(
    flag: Option<&Vec<String>>,
    file: Option<&Vec<String>>,
    targets: &[TargetConfig],
    workloads: &[String],
    options: &mut BTreeMap<String, toml::Table>,
) -> Result<(), PlanError> {
    let io: Vec<&str> = IO_WORKLOADS
        .into_iter()
        .filter(|w| workloads.iter().any(|p| p == w))
        .collect();
    if let Some(hosts) = flag.or(file) {
        let joined = hosts.join(",");
        let invalid = |why: String| PlanError::Invalid {
            what: "io hosts",
            value: joined.clone(),
            why,
        };
        if hosts.is_empty() {
            return Err(invalid("name at least one HOST[:PORT]".into()));
        }
        for h in hosts {
            Server::parse(h).map_err(invalid)?;
        }
        if io.is_empty() {
            return Err(invalid(format!(
                "they run only the io workloads ({}), and this plan runs neither",
                IO_WORKLOADS.join(", ")
            )));
        }
        let list = toml::Value::Array(hosts.iter().cloned().map(toml::Value::String).collect());
        for w in &io {
            let table = options.entry(w.to_string()).or_default();
            match table.get("hosts") {
                Some(own) if own != &list => {
                    return Err(invalid(format!(
                        "[workload.{w}] names other hosts ({own}); keep one list"
                    )))
                }
                _ => {
                    table.insert("hosts".into(), list.clone());
                }
            }
        }
    }
    for w in io {
        let Some(toml::Value::Array(hosts)) = options.get(w).and_then(|t| t.get("hosts")) else {
            continue;
        };
        // Bad entries are the workload's to refuse (`check_options`), with its wording.
        let remote = hosts
            .iter()
            .filter_map(|h| h.as_str().and_then(|s| Server::parse(s).ok()))
            .find(|s| !s.is_loopback());
        let Some(remote) = remote else { continue };
        if let Some(t) = targets
            .iter()
            .find(|t| !matches!(t.location, Location::Dir(_)))
        {
            return Err(PlanError::Invalid {
                what: "target",
                value: t.name.clone(),
                why: format!(
                    "{w} runs on fio server {remote}, beyond this machine, which cannot \
                     reach a file system mounted here; use a dir: target on a path shared \
                     by every host"
                ),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::catalogue;
    use crate::plan::file::parse_target_spec;

    fn run(
        flag: &[&str],
        targets: &[&str],
        workloads: &[&str],
        options: &mut BTreeMap<String, toml::Table>,
    ) -> Result<(), PlanError> {
        let flag: Vec<String> = flag.iter().map(|s| s.to_string()).collect();
        let targets: Vec<TargetConfig> = targets
            .iter()
            .map(|t| catalogue::get(t).unwrap_or_else(|| parse_target_spec(t).unwrap()))
            .collect();
        let workloads: Vec<String> = workloads.iter().map(|s| s.to_string()).collect();
        apply(
            (!flag.is_empty()).then_some(&flag),
            None,
            &targets,
            &workloads,
            options,
        )
    }

    #[test]
    fn hosts_reach_only_the_io_workloads_of_the_plan() {
        let mut o = BTreeMap::new();
        run(
            &["127.0.0.2", "127.0.0.3:8766"],
            &["dir:/tmp"],
            &["io-quick", "create"],
            &mut o,
        )
        .unwrap();
        let hosts = o["io-quick"]["hosts"].as_array().unwrap();
        assert_eq!(hosts.len(), 2);
        assert!(!o.contains_key("io-sweep") && !o.contains_key("create"));
        let e = run(
            &["127.0.0.2"],
            &["dir:/tmp"],
            &["create"],
            &mut BTreeMap::new(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("io-quick, io-sweep") && !e.contains('\n'), "{e}");
        let e = run(&["h:0"], &["dir:/tmp"], &["io-quick"], &mut BTreeMap::new())
            .unwrap_err()
            .to_string();
        assert!(e.contains("port"), "{e}");
    }

    #[test]
    fn provisioned_targets_need_loopback_hosts() {
        // Loopback servers see a loop image mounted here.
        run(
            &["127.0.0.2", "localhost:9000"],
            &["ext4"],
            &["io-quick"],
            &mut BTreeMap::new(),
        )
        .unwrap();
        let e = run(
            &["127.0.0.2", "10.1.2.3"],
            &["dir:/tmp", "ext4"],
            &["io-sweep"],
            &mut BTreeMap::new(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("`ext4`") && e.contains("10.1.2.3"), "{e}");
        run(
            &["10.1.2.3"],
            &["dir:/tmp"],
            &["io-sweep"],
            &mut BTreeMap::new(),
        )
        .unwrap();
        // The same check holds for hosts a workload table names by itself.
        let mut o = BTreeMap::new();
        o.insert(
            "io-quick".to_string(),
            "hosts = [\"node1\"]".parse::<toml::Table>().unwrap(),
        );
        assert!(run(&[], &["xfs"], &["io-quick"], &mut o).is_err());
        // And two different lists are refused rather than one silently winning.
        let e = run(&["127.0.0.2"], &["dir:/tmp"], &["io-quick"], &mut o)
            .unwrap_err()
            .to_string();
        assert!(e.contains("keep one list"), "{e}");
    }
}
