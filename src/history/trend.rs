//! The trend report's model: per plan, per workload point, per host, each target's key
//! metric at each step of the chosen axis (a date, a kernel, an fsarena version, a label's
//! value), with its geometric mean and 95 % interval. Runs that share a step (two runs on
//! one kernel) are pooled into it. The HTML, JSON and CSV outputs all read this.

use std::collections::BTreeMap;

use serde::Serialize;

use super::entry::{RunEntry, Value};
use super::series::{build, center, Series};

/// What the x axis is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum By {
    Date,
    Kernel,
    Version,
    Label(String),
}

impl By {
    /// `date`, `kernel`, `version` or `label:KEY`.
    pub fn parse(s: &str) -> Result<By, String> {
        match s {
            "date" => Ok(By::Date),
            "kernel" => Ok(By::Kernel),
            "version" => Ok(By::Version),
            _ => match s.strip_prefix("label:") {
                Some(k) if !k.is_empty() => Ok(By::Label(k.to_string())),
                _ => Err(format!(
                    "`{s}`: --by takes date, kernel, version or label:KEY"
                )),
            },
        }
    }

    /// The axis's name, as the report says it.
    pub fn name(&self) -> String {
        match self {
            By::Date => "date".into(),
            By::Kernel => "kernel".into(),
            By::Version => "fsarena version".into(),
            By::Label(k) => format!("label {k}"),
        }
    }

    /// Where `run` falls on the axis.
    pub fn step(&self, run: &RunEntry) -> String {
        match self {
            By::Date => date(run.started_unix),
            By::Kernel => run.kernel.clone(),
            By::Version if run.commit.is_empty() => run.version.clone(),
            By::Version => format!("{} ({})", run.version, run.commit),
            By::Label(k) => run
                .labels
                .get(k)
                .cloned()
                .unwrap_or_else(|| "(none)".into()),
        }
    }
}

/// `2026-11-29 00:43` (UTC).
pub fn date(unix: f64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs_f64(unix.max(0.0));
    let s = humantime::format_rfc3339_seconds(t).to_string();
    s.get(..16).unwrap_or(&s).replace('T', " ")
}

/// A target at one step of the axis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    pub x: String,
    /// The runs pooled into this step.
    pub runs: Vec<String>,
    pub values: Vec<f64>,
    pub center: Option<f64>,
    pub ci95: Option<(f64, f64)>,
}

/// One target's steps.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TargetLine {
    pub target: String,
    pub steps: Vec<Step>,
}

/// One host's chart of a workload point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostCell {
    pub host_key: String,
    pub targets: Vec<TargetLine>,
}

/// A workload point across the hosts that ran it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PointTrend {
    pub point: String,
    pub metric: String,
    pub higher_is_better: bool,
    pub hosts: Vec<HostCell>,
}

/// One plan: its hosts (one column each) and its workload points (one row each).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanTrend {
    pub plan_digest: String,
    pub plan_name: String,
    pub dataset: String,
    /// Host digest and fingerprint, in the order of the columns.
    pub hosts: Vec<(String, String)>,
    pub runs: usize,
    pub points: Vec<PointTrend>,
}

/// The whole trend report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trend {
    pub by: String,
    pub plans: Vec<PlanTrend>,
}

/// The trend of `runs` (oldest first) with their `values`, along `by`.
pub fn trend(runs: &[RunEntry], values: &[Value], by: &By) -> Trend {
    let by_id: BTreeMap<&str, &RunEntry> = runs.iter().map(|r| (r.id.as_str(), r)).collect();
    let mut plans: BTreeMap<String, PlanTrend> = BTreeMap::new();
    for r in runs {
        let p = plans
            .entry(r.plan_digest.clone())
            .or_insert_with(|| PlanTrend {
                plan_digest: r.plan_digest.clone(),
                plan_name: r.plan_name.clone(),
                dataset: r.dataset.clone(),
                hosts: Vec::new(),
                runs: 0,
                points: Vec::new(),
            });
        p.runs += 1;
        if !p.hosts.iter().any(|h| h.0 == r.host_key) {
            p.hosts.push((r.host_key.clone(), r.host.clone()));
        }
    }
    for s in build(runs, values) {
        let Some(p) = plans.get_mut(&s.key.plan_digest) else {
            continue;
        };
        let words = s.key.point_words();
        let at = match p.points.iter().position(|x| x.point == words) {
            Some(i) => i,
            None => {
                p.points.push(PointTrend {
                    point: words,
                    metric: s.key.metric.clone(),
                    higher_is_better: s.higher_is_better,
                    hosts: Vec::new(),
                });
                p.points.len() - 1
            }
        };
        let point = &mut p.points[at];
        let cell = match point
            .hosts
            .iter()
            .position(|h| h.host_key == s.key.host_key)
        {
            Some(i) => &mut point.hosts[i],
            None => {
                point.hosts.push(HostCell {
                    host_key: s.key.host_key.clone(),
                    targets: Vec::new(),
                });
                point.hosts.last_mut().expect("just pushed")
            }
        };
        let steps = steps(&s, &by_id, by);
        cell.targets.push(TargetLine {
            target: s.key.target.clone(),
            steps,
        });
    }
    Trend {
        by: by.name(),
        plans: plans.into_values().collect(),
    }
}

/// One series' runs placed on the axis: runs that share a step pooled into it, in the order
/// the steps are first met (oldest run first).
fn steps(s: &Series, by_id: &BTreeMap<&str, &RunEntry>, by: &By) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    for rp in &s.runs {
        let Some(run) = by_id.get(rp.run_id.as_str()) else {
            continue;
        };
        let x = by.step(run);
        match steps.iter_mut().find(|st| st.x == x) {
            Some(st) => {
                st.runs.push(rp.run_id.clone());
                st.values.extend(&rp.values);
            }
            None => steps.push(Step {
                x,
                runs: vec![rp.run_id.clone()],
                values: rp.values.clone(),
                center: None,
                ci95: None,
            }),
        }
    }
    for st in &mut steps {
        (st.center, st.ci95) = center(&st.values);
    }
    steps
}
