//! Resolution: a parsed [`PlanFile`] plus command-line [`Overrides`] become a [`Plan`] with
//! nothing left to defaults. Flags win over the file, the file over the built-in defaults;
//! every value is checked here, so the runner only ever sees a plan that makes sense.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;

use super::file::{custom_target, parse_target_spec, DatasetTable, PlanFile, RunsValue};
use super::size::parse_size;
use super::target::TargetConfig;
use super::{catalogue, Plan, PlanError, Runs};
use crate::dataset::{DatasetSpec, Profile};

/// Command-line values; `None`/empty means "not given".
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    pub targets: Vec<String>,
    pub workloads: Vec<String>,
    pub threads: Option<String>,
    pub runs: Option<String>,
    pub scale: Option<f64>,
    pub baseline: Option<String>,
    pub profile: Option<String>,
    pub seed: Option<u64>,
    pub dataset_dir: Option<PathBuf>,
    pub compressibility: Option<f64>,
    /// `--content typed|random`.
    pub content: Option<String>,
    pub timeout: Option<f64>,
    pub size: Option<String>,
    pub margin: Option<f64>,
    /// `--budget`: wall time an `auto` run may spend (implies `auto` when runs are not given).
    pub budget: Option<String>,
    /// `--phase-floor`: the shortest measured phase a key metric may come from.
    pub phase_floor: Option<String>,
    /// `--io-hosts`: the fio servers the io workloads run on.
    pub io_hosts: Option<Vec<String>>,
    /// `--age PCT`: age every file system to PCT % full before measuring.
    pub age: Option<f64>,
    /// `--rank-dirs own|shared`: where the ranks of an MPI job work in a `dir:` target.
    pub rank_dirs: Option<String>,
}

/// Resolves file + flags into a plan. `workload_names` are the valid workloads; `available`
/// filters the default targets to those the host supports (explicit targets are kept, so
/// the runner can say why one cannot run).
pub fn resolve(
    file: Option<PlanFile>,
    o: &Overrides,
    workload_names: &[&str],
    available: &dyn Fn(&TargetConfig) -> bool,
) -> Result<Plan, PlanError> {
    let f = file.unwrap_or_default();
    let targets = targets(&f, o, available)?;
    let workloads = workloads(&f, o, workload_names)?;
    let threads = threads(&f, o)?;
    let runs = runs(&f, o)?;
    let phase_floor = phase_floor(&f, o)?;
    let scale = scale(&f, o)?;
    let (dataset, extra_profiles) = dataset(f.dataset.unwrap_or_default(), o, scale)?;
    let baseline = baseline(&targets, f.baseline.as_ref(), o)?;
    let timeout = timeout(f.timeout, o)?;
    let margin_pct =
        super::check_margin(o.margin.or(f.margin).unwrap_or(super::DEFAULT_MARGIN_PCT))?;
    let mut workload_options = f.workload;
    super::io_hosts::apply(
        o.io_hosts.as_ref(),
        f.io_hosts.as_ref(),
        &targets,
        &workloads,
        &mut workload_options,
    )?;
    let age_pct = age(o.age.or(f.age), &targets)?;
    if age_pct.is_some() && !extra_profiles.is_empty() {
        return Err(PlanError::Invalid {
            what: "age",
            value: format!("{}", o.age.or(f.age).unwrap_or_default()),
            why: "aging runs with one data set: name one profile".into(),
        });
    }
    let rank_dirs = super::RankDirs::resolve(o.rank_dirs.as_ref().or(f.rank_dirs.as_ref()))?;
    Ok(Plan {
        targets,
        workloads,
        threads,
        runs,
        dataset,
        extra_profiles,
        baseline,
        timeout,
        margin_pct,
        phase_floor,
        workload_options,
        age_pct,
        rank_dirs,
    })
}

/// `--age PCT` / `age = PCT`: above 0 and below [`super::MAX_AGE_PCT`], and only for
/// targets on a loop image — a `dir:`, tmpfs or named device has no image to age once and
/// clone per cell.
fn age(pct: Option<f64>, targets: &[TargetConfig]) -> Result<Option<f64>, PlanError> {
    let Some(pct) = pct else { return Ok(None) };
    if !(pct.is_finite() && pct > 0.0 && pct < super::MAX_AGE_PCT) {
        return Err(PlanError::Invalid {
            what: "age",
            value: pct.to_string(),
            why: format!(
                "use a fill level in % above 0 and below {}",
                super::MAX_AGE_PCT
            ),
        });
    }
    if let Some(t) = targets.iter().find(|t| t.location != super::Location::Loop) {
        let kind = match &t.location {
            super::Location::Dir(_) => "a dir: target",
            super::Location::Memory => "a memory file system (tmpfs)",
            _ => "a named device",
        };
        return Err(PlanError::Invalid {
            what: "age",
            value: pct.to_string(),
            why: format!(
                "target {} is {kind}: there is no image to age (aging works on loop-image targets only; drop it from the plan or run it without --age)",
                t.name
            ),
        });
    }
    Ok(Some(pct))
}

/// Targets: flags replace the file's list; custom `[[target]]` tables are always added;
/// with neither, the catalogue's defaults this host supports. `--size` applies to all.
/// Names must be distinct, since results are keyed by them.
fn targets(
    f: &PlanFile,
    o: &Overrides,
    available: &dyn Fn(&TargetConfig) -> bool,
) -> Result<Vec<TargetConfig>, PlanError> {
    let mut targets = Vec::new();
    let specs = if !o.targets.is_empty() {
        Some(&o.targets)
    } else {
        f.targets.as_ref()
    };
    // The plan's own `[[target]]`s are named like catalogue entries: by `--target NAME`
    // or the file's `targets = [...]`. Unnamed ones run too, unless `--target` chose.
    let mut custom = Vec::new();
    for t in &f.custom_targets {
        let c = custom_target(t)?;
        if catalogue::get(&c.name).is_some() {
            return Err(PlanError::Invalid {
                what: "target name",
                value: c.name.clone(),
                why: "a catalogue target has that name and this [[target]] would shadow it; name it differently".into(),
            });
        }
        custom.push(c);
    }
    let mut named = HashSet::new();
    for spec in specs.into_iter().flatten() {
        match custom.iter().find(|c| &c.name == spec) {
            Some(c) => {
                named.insert(c.name.clone());
                targets.push(c.clone());
            }
            None => targets.push(parse_target_spec(spec).map_err(|e| match e {
                PlanError::UnknownTarget { name, valid } if !custom.is_empty() => {
                    let mine: Vec<&str> = custom.iter().map(|c| c.name.as_str()).collect();
                    PlanError::UnknownTarget {
                        name,
                        valid: format!("{}, {valid}", mine.join(", ")),
                    }
                }
                e => e,
            })?),
        }
    }
    if o.targets.is_empty() {
        targets.extend(custom.into_iter().filter(|c| !named.contains(&c.name)));
    }
    if targets.is_empty() {
        targets = catalogue::defaults()
            .into_iter()
            .filter(|t| available(t))
            .collect();
    }
    if targets.is_empty() {
        return Err(PlanError::NoTargets);
    }
    if let Some(s) = &o.size {
        let bytes = parse_size(s).map_err(|why| PlanError::Invalid {
            what: "size",
            value: s.clone(),
            why,
        })?;
        for t in &mut targets {
            t.size = Some(bytes);
        }
    }
    for t in &targets {
        check_min_size(t)?;
    }
    let mut seen = HashSet::new();
    for t in &targets {
        if !seen.insert(t.name.clone()) {
            return Err(PlanError::DuplicateTarget(t.name.clone()));
        }
    }
    Ok(targets)
}

/// A size below what the target's mkfs accepts is refused now, not by mkfs mid-run.
fn check_min_size(t: &TargetConfig) -> Result<(), PlanError> {
    let (Some(size), Some(min)) = (t.size, t.fs.min_size()) else {
        return Ok(());
    };
    if size < min {
        return Err(PlanError::Invalid {
            what: "size",
            value: super::size::human_bytes(size),
            why: format!(
                "{} needs at least {} (target {})",
                t.fs.name(),
                super::size::human_bytes(min),
                t.name
            ),
        });
    }
    Ok(())
}

/// The flags `--resume DIR` accepts besides the run's own plan, which it continues
/// unchanged: `--budget` (for an `auto` plan; what it changed is returned, one line
/// each). Every other flag that would change the plan is refused, naming it.
pub fn on_resume(plan: &mut super::Plan, o: &Overrides) -> Result<Vec<String>, PlanError> {
    let given: [(&'static str, bool); 17] = [
        ("--target", !o.targets.is_empty()),
        ("--workload", !o.workloads.is_empty()),
        ("--threads", o.threads.is_some()),
        ("--runs", o.runs.is_some()),
        ("--scale", o.scale.is_some()),
        ("--baseline", o.baseline.is_some()),
        ("--profile", o.profile.is_some()),
        ("--seed", o.seed.is_some()),
        ("--dataset", o.dataset_dir.is_some()),
        ("--compressibility", o.compressibility.is_some()),
        ("--content", o.content.is_some()),
        ("--timeout", o.timeout.is_some()),
        ("--size", o.size.is_some()),
        ("--margin", o.margin.is_some()),
        ("--phase-floor", o.phase_floor.is_some()),
        ("--io-hosts", o.io_hosts.is_some()),
        ("--age", o.age.is_some()),
    ];
    if let Some((flag, _)) = given.iter().find(|(_, g)| *g) {
        return Err(PlanError::ResumeConflict(flag));
    }
    let mut said = Vec::new();
    if let Some(b) = &o.budget {
        let budget = super::parse_duration("budget", b)?;
        match &mut plan.runs {
            Runs::Auto { budget: old, .. } => {
                said.push(format!(
                    "--budget: the budget is now {} (it was {})",
                    humantime::format_duration(budget),
                    humantime::format_duration(*old)
                ));
                *old = budget;
            }
            Runs::Fixed(_) => return Err(PlanError::ResumeConflict("--budget")),
        }
    }
    Ok(said)
}

/// The workload that runs the mixes a plan describes (`[workload.mix.NAME]`).
const MIX: &str = "mix";

/// Workloads: each flag may hold a comma list; `all` means every workload. Every name, and
/// every `[workload.NAME]` table, must name a known workload.
fn workloads(
    f: &PlanFile,
    o: &Overrides,
    workload_names: &[&str],
) -> Result<Vec<String>, PlanError> {
    let mut workloads: Vec<String> = if !o.workloads.is_empty() {
        o.workloads
            .iter()
            .flat_map(|w| w.split(','))
            .map(|w| w.trim().to_string())
            .filter(|w| !w.is_empty())
            .collect()
    } else if let Some(w) = &f.workloads {
        w.clone()
    } else {
        super::DEFAULT_WORKLOADS
            .iter()
            .filter(|w| workload_names.contains(w))
            .map(|w| w.to_string())
            .collect()
    };
    if workloads.iter().any(|w| w == "all") {
        // `mix` runs the plan's own `[workload.mix.NAME]` tables: part of `all` only when
        // there are some, so `all` stays runnable without them.
        workloads = workload_names
            .iter()
            .filter(|w| **w != MIX || f.workload.contains_key(MIX))
            .map(|w| w.to_string())
            .collect();
    }
    for w in &workloads {
        if !workload_names.contains(&w.as_str()) {
            return Err(PlanError::UnknownWorkload {
                name: w.clone(),
                valid: workload_names.join(", "),
            });
        }
    }
    if workloads.is_empty() {
        return Err(PlanError::Invalid {
            what: "workload list",
            value: String::new(),
            why: format!("name at least one of: {}", workload_names.join(", ")),
        });
    }
    for name in f.workload.keys() {
        if !workload_names.contains(&name.as_str()) {
            return Err(PlanError::UnknownWorkload {
                name: name.clone(),
                valid: workload_names.join(", "),
            });
        }
    }
    Ok(workloads)
}

/// Thread counts from `--threads 1,2,4` or the file's list; 1 when neither gives any.
fn threads(f: &PlanFile, o: &Overrides) -> Result<Vec<usize>, PlanError> {
    let threads = match (&o.threads, &f.threads) {
        (Some(s), _) => parse_threads(s)?,
        (None, Some(list)) => list
            .iter()
            .map(|&n| {
                check_threads(n).map_err(|why| PlanError::Invalid {
                    what: "threads",
                    value: n.to_string(),
                    why,
                })
            })
            .collect::<Result<Vec<_>, _>>()?,
        (None, None) => vec![1],
    };
    if threads.is_empty() {
        return Err(PlanError::Invalid {
            what: "threads",
            value: "[]".into(),
            why: "give at least one thread count".into(),
        });
    }
    Ok(threads)
}

/// Repetitions: a count or `auto`, from the flag, the file, or the default.
/// Repetitions: `--runs N` (or `runs = N`) is fixed; `auto`, or nothing at all, is `auto`
/// with the budget (`--budget`, `budget = "5m"`, else 5 minutes). A budget with a fixed
/// count is a contradiction and is refused.
fn runs(f: &PlanFile, o: &Overrides) -> Result<Runs, PlanError> {
    let runs = match (&o.runs, &f.runs) {
        (Some(s), _) => parse_runs(s)?,
        (None, Some(RunsValue::Count(n))) => parse_runs(&n.to_string())?,
        (None, Some(RunsValue::Word(w))) => parse_runs(w)?,
        (None, None) => parse_runs("auto")?,
    };
    let budget = match o.budget.as_ref().or(f.budget.as_ref()) {
        None => return Ok(runs),
        Some(b) => super::parse_duration("budget", b)?,
    };
    if budget.is_zero() {
        return Err(PlanError::Invalid {
            what: "budget",
            value: "0".into(),
            why: "use a positive duration such as 5m".into(),
        });
    }
    match runs {
        Runs::Auto { min, max, .. } => Ok(Runs::Auto { min, max, budget }),
        Runs::Fixed(n) => Err(PlanError::Invalid {
            what: "budget",
            value: o.budget.clone().or(f.budget.clone()).unwrap_or_default(),
            why: format!("a budget applies to `--runs auto`; `--runs {n}` is a fixed count"),
        }),
    }
}

/// The phase floor: a positive duration of at most a minute.
fn phase_floor(f: &PlanFile, o: &Overrides) -> Result<Duration, PlanError> {
    let Some(s) = o.phase_floor.as_ref().or(f.phase_floor.as_ref()) else {
        return Ok(super::DEFAULT_PHASE_FLOOR);
    };
    let d = super::parse_duration("phase floor", s)?;
    if d > Duration::from_secs(60) {
        return Err(PlanError::Invalid {
            what: "phase floor",
            value: s.clone(),
            why: "use at most 60s (0 turns the floor off)".into(),
        });
    }
    Ok(d)
}

/// The data-set scale: above 0 and at most 100 (1 = the full-size data sets).
fn scale(f: &PlanFile, o: &Overrides) -> Result<f64, PlanError> {
    let scale = o.scale.or(f.scale).unwrap_or(super::DEFAULT_SCALE);
    if !(scale.is_finite() && scale > 0.0 && scale <= 100.0) {
        return Err(PlanError::Invalid {
            what: "scale",
            value: scale.to_string(),
            why: "use a number above 0 and at most 100 (1 = the full-size data sets)".into(),
        });
    }
    Ok(scale)
}

/// The data set: the file's `[dataset]` table with flags over it, at `scale`.
/// The data set, and the further profiles every cell also runs on (`--profile a,b` or
/// `profile = [..]`): each is the same spec with another profile.
fn dataset(
    ds: DatasetTable,
    o: &Overrides,
    scale: f64,
) -> Result<(DatasetSpec, Vec<Profile>), PlanError> {
    let mut dataset = DatasetSpec {
        scale,
        ..DatasetSpec::default()
    };
    let names = match &o.profile {
        Some(p) => p.split(',').map(|s| s.trim().to_string()).collect(),
        None => ds.profile.as_ref().map(|p| p.names()).unwrap_or_default(),
    };
    let mut profiles = Vec::new();
    for p in &names {
        let profile: Profile = serde_json::from_value(serde_json::Value::String(p.clone()))
            .map_err(|_| PlanError::Invalid {
                what: "profile",
                value: p.clone(),
                why: "use small, medium, large, huge, bigfolder or smallfolder".into(),
            })?;
        if profiles.contains(&profile) {
            return Err(PlanError::Invalid {
                what: "profile",
                value: p.clone(),
                why: "named twice".into(),
            });
        }
        profiles.push(profile);
    }
    if names.is_empty() && ds.profile.is_some() {
        return Err(PlanError::Invalid {
            what: "profile",
            value: "[]".into(),
            why: "name at least one profile".into(),
        });
    }
    let mut extra = Vec::new();
    if let Some((first, rest)) = profiles.split_first() {
        dataset.profile = *first;
        extra = rest.to_vec();
    }
    if !extra.is_empty() && (o.dataset_dir.is_some() || ds.dir.is_some()) {
        return Err(PlanError::Invalid {
            what: "profile",
            value: names.join(","),
            why: "a data set from your own directory has no profile: name one profile or none"
                .into(),
        });
    }
    if let Some(seed) = o.seed.or(ds.seed) {
        dataset.seed = seed;
    }
    if let Some(v) = ds.duplicate_fraction {
        dataset.duplicate_fraction = check_fraction("duplicate_fraction", v)?;
    }
    if let Some(v) = o.compressibility.or(ds.compressibility) {
        dataset.compressibility = check_fraction("compressibility", v)?;
    }
    if let Some(c) = o.content.as_ref().or(ds.content.as_ref()) {
        dataset.content =
            crate::dataset::spec::ContentMix::parse(c).ok_or_else(|| PlanError::Invalid {
                what: "content",
                value: c.clone(),
                why: "valid: typed (bytes by file type), random".into(),
            })?;
    }
    dataset.source_dir = o.dataset_dir.clone().or(ds.dir);
    Ok((dataset, extra))
}

/// The target the others are compared with: named by flag or file, else the first disk
/// target (a memory target such as tmpfs is a reference, not a candidate), else the first.
fn baseline(
    targets: &[TargetConfig],
    from_file: Option<&String>,
    o: &Overrides,
) -> Result<String, PlanError> {
    match o.baseline.as_ref().or(from_file) {
        Some(b) if targets.iter().any(|t| &t.name == b) => Ok(b.clone()),
        Some(b) => Err(PlanError::UnknownBaseline(b.clone())),
        None => targets
            .iter()
            .find(|t| !t.fs.is_memory())
            .or(targets.first())
            .map(|t| t.name.clone())
            .ok_or(PlanError::NoTargets),
    }
}

/// The per-measurement time limit: a positive number of seconds.
fn timeout(from_file: Option<f64>, o: &Overrides) -> Result<Duration, PlanError> {
    let timeout_s = o
        .timeout
        .or(from_file)
        .unwrap_or(super::DEFAULT_TIMEOUT.as_secs_f64());
    Duration::try_from_secs_f64(timeout_s)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| PlanError::Invalid {
            what: "timeout",
            value: timeout_s.to_string(),
            why: "use a positive number of seconds".into(),
        })
}

/// Parses `1,2,4` into thread counts.
pub fn parse_threads(s: &str) -> Result<Vec<usize>, PlanError> {
    let bad = |why: &str| PlanError::Invalid {
        what: "thread list",
        value: s.to_string(),
        why: why.to_string(),
    };
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim) {
        let n: i64 = part
            .parse()
            .map_err(|_| bad("use positive whole numbers separated by commas, e.g. 1,2,4"))?;
        out.push(check_threads(n).map_err(|why| bad(&why))?);
    }
    if out.is_empty() {
        return Err(bad("empty"));
    }
    Ok(out)
}

fn check_threads(n: i64) -> Result<usize, String> {
    if !(1..=1024).contains(&n) {
        return Err(format!("{n} threads: use 1 to 1024"));
    }
    Ok(n as usize)
}

fn parse_runs(s: &str) -> Result<Runs, PlanError> {
    if s == "auto" {
        return Ok(Runs::Auto {
            min: super::DEFAULT_RUNS,
            max: super::MAX_AUTO_RUNS,
            budget: super::DEFAULT_BUDGET,
        });
    }
    match s.parse::<i64>() {
        Ok(n) if (1..=1000).contains(&n) => Ok(Runs::Fixed(n as u32)),
        _ => Err(PlanError::Invalid {
            what: "runs",
            value: s.to_string(),
            why: "use a whole number from 1 to 1000, or `auto`".into(),
        }),
    }
}

fn check_fraction(what: &'static str, v: f64) -> Result<f64, PlanError> {
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(PlanError::Invalid {
            what,
            value: v.to_string(),
            why: "use a fraction from 0 to 1".into(),
        })
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod fuzz;
