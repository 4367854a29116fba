//! The flags that choose runs: `--plan`, `--host`, `--label`, `--target`, `--since`,
//! shared by `history list`, `report` and `check`.

use anyhow::Result;
use clap::Args;

use super::place::parse_label;
use crate::history::{Filter, RunEntry, Store};

#[derive(Debug, Clone, Default, Args)]
pub struct FilterArgs {
    /// Only runs of this plan: a digest's first characters, or a word of its name (a
    /// workload, a target).
    #[arg(long, value_name = "PLAN")]
    pub plan: Option<String>,
    /// Only runs on this host: a digest's first characters, or a word of its fingerprint.
    #[arg(long, value_name = "HOST")]
    pub host: Option<String>,
    /// Only runs carrying this label (repeatable: all of them).
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = parse_label)]
    pub labels: Vec<(String, String)>,
    /// Only runs that measured this target.
    #[arg(long, value_name = "TARGET")]
    pub target: Option<String>,
    /// Only runs started since this date (2026-11-01) or this long ago (30d, 12h).
    #[arg(long, value_name = "WHEN", value_parser = parse_since)]
    pub since: Option<f64>,
}

/// A date (`YYYY-MM-DD`, `YYYY-MM-DD HH:MM:SS`, UTC) or a duration back from now, as
/// seconds since the epoch.
pub fn parse_since(s: &str) -> Result<f64, String> {
    let now = crate::history::store::now();
    if let Ok(d) = humantime::parse_duration(s) {
        return Ok(now - d.as_secs_f64());
    }
    let full = if s.len() == 10 {
        format!("{s} 00:00:00")
    } else {
        s.to_string()
    };
    humantime::parse_rfc3339_weak(&full)
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs_f64())
        .ok_or_else(|| format!("`{s}` is neither a date (2026-11-01) nor a duration (30d)"))
}

impl FilterArgs {
    /// The runs that pass, oldest first.
    pub fn runs(&self, store: &mut dyn Store) -> Result<Vec<RunEntry>> {
        let f = Filter {
            plan: self.plan.clone(),
            host: self.host.clone(),
            labels: self.labels.clone(),
            target: self.target.clone(),
            since_unix: self.since,
        };
        let mut runs: Vec<RunEntry> = store.runs()?.into_iter().filter(|r| f.keeps(r)).collect();
        if let Some(t) = &self.target {
            let ids: Vec<String> = runs.iter().map(|r| r.id.clone()).collect();
            let with: std::collections::BTreeSet<String> = store
                .values(&ids)?
                .into_iter()
                .filter(|v| &v.target == t)
                .map(|v| v.run_id)
                .collect();
            runs.retain(|r| with.contains(&r.id));
        }
        Ok(runs)
    }
}
