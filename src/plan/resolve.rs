//! Resolution: the plan file's [`Settings`] plus the command line's become a [`Plan`] with
//! nothing left to defaults. Flags win over the file, the file over the built-in defaults;
//! each value was read and checked by its type (see [`super::value`]), and what needs the
//! whole plan is checked here, so the runner only ever sees a plan that makes sense.

use std::collections::HashSet;

use super::file::{custom_target, parse_target_spec};
use super::settings::{DatasetSettings, Settings};
use super::target::TargetConfig;
use super::trace_flags::REPLAY;
use super::value::{AgeFreeExtent, RankDirsChoice, RunCount};
use super::{catalogue, Plan, PlanError, Runs};
use crate::dataset::{DatasetSpec, Profile};

/// Resolves file + flags into a plan. `workload_names` are the valid workloads; `available`
/// filters the default targets to those the host supports (explicit targets are kept, so
/// the runner can say why one cannot run).
pub fn resolve(
    file: Option<Settings>,
    o: &Settings,
    workload_names: &[&str],
    available: &dyn Fn(&TargetConfig) -> bool,
) -> Result<Plan, PlanError> {
    let f = file.unwrap_or_default();
    let targets = targets(&f, o, available)?;
    let workloads = workloads(&f, o, workload_names)?;
    let threads =
        (o.threads.as_ref().or(f.threads.as_ref())).map_or_else(|| vec![1], |t| t.0.clone());
    let runs = runs(&f, o)?;
    let phase_floor = o
        .phase_floor
        .or(f.phase_floor)
        .map_or(super::DEFAULT_PHASE_FLOOR, |p| p.0);
    let (mut dataset, extra_profiles) = dataset(&f.dataset, &o.dataset, super::DEFAULT_SCALE)?;
    let extra_scales =
        super::series::resolve_scales(&f, o, &mut dataset, !extra_profiles.is_empty())?;
    let baseline = baseline(&targets, o.baseline.as_ref().or(f.baseline.as_ref()))?;
    let timeout = o
        .timeout
        .or(f.timeout)
        .map_or(super::DEFAULT_TIMEOUT, |t| t.0);
    let margin_pct = o
        .margin
        .or(f.margin)
        .map_or(super::DEFAULT_MARGIN_PCT, |m| m.0);
    let mut workload_options = f.workload;
    super::io_hosts::apply(
        o.io_hosts.as_ref(),
        f.io_hosts.as_ref(),
        &targets,
        &workloads,
        &mut workload_options,
    )?;
    let (trace, timing) = (o.trace.as_ref(), o.timing.as_ref());
    let (trace, timing) = (trace.or(f.trace.as_ref()), timing.or(f.timing.as_ref()));
    super::trace_flags::apply(trace, timing, &workloads, &mut workload_options)?;
    let age_pct = age(o.age.or(f.age).map(|a| a.0), &targets)?;
    if let (Some(age), false) = (
        age_pct,
        extra_profiles.is_empty() && extra_scales.is_empty(),
    ) {
        return Err(PlanError::Invalid {
            what: "age",
            value: format!("{age}"),
            why: "aging runs with one data set: name one profile and one scale".into(),
        });
    }
    let age_free_extent = age_free_extent(o.age_free_extent.or(f.age_free_extent), age_pct)?;
    let fs_size = fs_size(o.fs_size.or(f.fs_size).map(|s| s.0), &targets)?;
    let rank_dirs = o
        .rank_dirs
        .or(f.rank_dirs)
        .map_or(super::RankDirs::Own, |RankDirsChoice(r)| r);
    let plan = Plan {
        max_steal_pct: max_steal(o.max_steal.or(f.max_steal)),
        targets,
        workloads,
        threads,
        runs,
        dataset,
        extra_profiles,
        extra_scales,
        baseline,
        timeout,
        margin_pct,
        phase_floor,
        workload_options,
        age_pct,
        age_free_extent,
        fs_size,
        rank_dirs,
        cpus: o.cpus.or(f.cpus).map_or(super::cpus::Cpus::Auto, |c| c.0),
        in_turn: o.in_turn.or(f.in_turn).map_or(true, |c| c.0),
    };
    super::series::check_distinct(&plan)?;
    Ok(plan)
}

/// `--max-steal`: the share given, or `off` (`None`), which is also the default: the rule
/// retries measurements, so a run's count of phases changes with the hypervisor's mood,
/// and a user opts in (`--max-steal 20`, the threshold docs/statistics.md justifies).
fn max_steal(given: Option<super::value::MaxSteal>) -> Option<f64> {
    given.and_then(|m| m.0)
}

/// The free-space pieces of aging: only for an aged plan (alone it would be silently
/// ignored).
fn age_free_extent(
    size: Option<AgeFreeExtent>,
    age_pct: Option<f64>,
) -> Result<Option<u64>, PlanError> {
    match (size, age_pct) {
        (Some(AgeFreeExtent(v)), None) => Err(PlanError::Invalid {
            what: "age_free_extent",
            value: v.to_string(),
            why: "it shapes aging: give --age too".into(),
        }),
        (s, _) => Ok(s.map(|s| s.0)),
    }
}

/// The aging every file system gets: the fill level was checked by its type; here only
/// targets on a loop image are let through — a `dir:`, tmpfs or named device has no
/// image to age once and clone per cell.
fn age(pct: Option<f64>, targets: &[TargetConfig]) -> Result<Option<f64>, PlanError> {
    let Some(pct) = pct else { return Ok(None) };
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
/// with neither, the catalogue's defaults this host supports.
/// Names must be distinct, since results are keyed by them.
fn targets(
    f: &Settings,
    o: &Settings,
    available: &dyn Fn(&TargetConfig) -> bool,
) -> Result<Vec<TargetConfig>, PlanError> {
    let specs = if o.targets.is_empty() {
        &f.targets
    } else {
        &o.targets
    };
    let custom = custom_targets(f)?;
    let mut named = HashSet::new();
    let mut targets = Vec::new();
    for spec in specs {
        match custom.iter().find(|c| &c.name == spec) {
            Some(c) => {
                named.insert(c.name.clone());
                targets.push(c.clone());
            }
            None => targets.push(spec_target(spec, &custom)?),
        }
    }
    // The plan's own `[[target]]`s are named like catalogue entries: by `--target NAME`
    // or the file's `targets = [...]`. Unnamed ones run too, unless `--target` chose.
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
    for t in &targets {
        check_size_limits(t, t.size)?;
    }
    let mut seen = HashSet::new();
    for t in &targets {
        if !seen.insert(t.name.clone()) {
            return Err(PlanError::DuplicateTarget(t.name.clone()));
        }
    }
    Ok(targets)
}

/// The plan file's `[[target]]` tables, each built; none may shadow a catalogue name.
fn custom_targets(f: &Settings) -> Result<Vec<TargetConfig>, PlanError> {
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
    Ok(custom)
}

/// A target spec that names no `[[target]]`: an unknown name lists the plan's own
/// targets before the catalogue's.
fn spec_target(spec: &str, custom: &[TargetConfig]) -> Result<TargetConfig, PlanError> {
    parse_target_spec(spec).map_err(|e| match e {
        PlanError::UnknownTarget { name, valid } if !custom.is_empty() => {
            let mine: Vec<&str> = custom.iter().map(|c| c.name.as_str()).collect();
            PlanError::UnknownTarget {
                name,
                valid: format!("{}, {valid}", mine.join(", ")),
            }
        }
        e => e,
    })
}

/// `--fs-size`: sizes every loop target without a size of its own, so it must be one
/// their mkfs accepts (whether it holds the data set is checked once that is planned).
fn fs_size(size: Option<u64>, targets: &[TargetConfig]) -> Result<Option<u64>, PlanError> {
    for t in targets
        .iter()
        .filter(|t| t.location == super::Location::Loop && t.size.is_none())
    {
        check_size_limits(t, size)?;
    }
    Ok(size)
}

/// A size below what the target's mkfs accepts, or above the largest file system of its
/// kind, is refused now, not by mkfs mid-run (issue 57.8).
fn check_size_limits(t: &TargetConfig, size: Option<u64>) -> Result<(), PlanError> {
    let Some(size) = size else {
        return Ok(());
    };
    if let Some(max) = t.fs.max_size().filter(|&max| size > max) {
        return Err(PlanError::Invalid {
            what: "size",
            value: super::size::human_bytes(size),
            why: format!(
                "{} holds at most {} (target {})",
                t.fs.name(),
                super::size::human_bytes(max),
                t.name
            ),
        });
    }
    let Some(min) = t.fs.min_size() else {
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
/// each). Every other run option `given` on the command line (see
/// [`Settings::given_flags`]) would change the plan and is refused, naming it.
pub fn on_resume(
    plan: &mut super::Plan,
    o: &Settings,
    given: &[String],
) -> Result<Vec<String>, PlanError> {
    if let Some(flag) = given.iter().find(|f| *f != "--budget") {
        return Err(PlanError::ResumeConflict(flag.clone()));
    }
    let mut said = Vec::new();
    if let Some(b) = o.budget {
        match &mut plan.runs {
            Runs::Auto { budget: old, .. } => {
                said.push(format!(
                    "--budget: the budget is now {} (it was {})",
                    humantime::format_duration(b.0),
                    humantime::format_duration(*old)
                ));
                *old = b.0;
            }
            Runs::Fixed(_) => return Err(PlanError::ResumeConflict("--budget".into())),
        }
    }
    Ok(said)
}

/// The workload that runs the mixes a plan describes (`[workload.mix.NAME]`).
const MIX: &str = "mix";

/// Workloads: each name may be a comma list; `all` means every workload. Every name, and
/// every `[workload.NAME]` table, must name a known workload.
fn workloads(
    f: &Settings,
    o: &Settings,
    workload_names: &[&str],
) -> Result<Vec<String>, PlanError> {
    let given = if o.workloads.is_empty() {
        &f.workloads
    } else {
        &o.workloads
    };
    let mut workloads: Vec<String> = if given.is_empty() {
        super::DEFAULT_WORKLOADS
            .iter()
            .filter(|w| workload_names.contains(w))
            .map(|w| w.to_string())
            .collect()
    } else {
        given
            .iter()
            .flat_map(|w| w.split(','))
            .map(|w| w.trim().to_string())
            .filter(|w| !w.is_empty())
            .collect()
    };
    if workloads.iter().any(|w| w == "all") {
        // `mix` runs the plan's own `[workload.mix.NAME]` tables: part of `all` only when
        // there are some, so `all` stays runnable without them.
        workloads = workload_names
            .iter()
            .filter(|w| **w != MIX || f.workload.contains_key(MIX))
            // `replay` replays a trace: part of `all` only when one is named.
            .filter(|w| {
                **w != REPLAY
                    || f.workload.contains_key(REPLAY)
                    || o.trace.is_some()
                    || f.trace.is_some()
            })
            .map(|w| w.to_string())
            .collect();
    }
    if workloads.is_empty() {
        return Err(PlanError::Invalid {
            what: "workload list",
            value: String::new(),
            why: format!("name at least one of: {}", workload_names.join(", ")),
        });
    }
    for name in workloads.iter().chain(f.workload.keys()) {
        if !workload_names.contains(&name.as_str()) {
            return Err(PlanError::UnknownWorkload {
                name: name.clone(),
                valid: workload_names.join(", "),
            });
        }
    }
    Ok(workloads)
}

/// Repetitions: `--runs N` (or `runs = N`) is fixed; `auto`, or nothing at all, is `auto`
/// with the budget (`--budget`, `budget = "5m"`, else 5 minutes). A budget with a fixed
/// count is a contradiction and is refused.
fn runs(f: &Settings, o: &Settings) -> Result<Runs, PlanError> {
    let budget = o.budget.or(f.budget);
    match o.runs.or(f.runs).unwrap_or(RunCount::Auto) {
        RunCount::Auto => Ok(Runs::Auto {
            min: super::DEFAULT_RUNS,
            max: super::MAX_AUTO_RUNS,
            budget: budget.map_or(super::DEFAULT_BUDGET, |b| b.0),
        }),
        RunCount::Fixed(n) => match budget {
            None => Ok(Runs::Fixed(n)),
            Some(b) => Err(PlanError::Invalid {
                what: "budget",
                value: humantime::format_duration(b.0).to_string(),
                why: format!("a budget applies to `--runs auto`; `--runs {n}` is a fixed count"),
            }),
        },
    }
}

/// The data set: the file's `[dataset]` table with flags over it, at `scale`, and the
/// further profiles every cell also runs on (`--profile a,b` or `profile = [..]`): each is
/// the same spec with another profile.
fn dataset(
    f: &DatasetSettings,
    o: &DatasetSettings,
    scale: f64,
) -> Result<(DatasetSpec, Vec<Profile>), PlanError> {
    let mut dataset = DatasetSpec {
        scale,
        ..DatasetSpec::default()
    };
    let profiles = o.profile.as_ref().or(f.profile.as_ref());
    let mut extra = Vec::new();
    if let Some((first, rest)) = profiles.and_then(|p| p.0.split_first()) {
        dataset.profile = *first;
        extra = rest.to_vec();
    }
    let source_dir = o.dir.clone().or(f.dir.clone());
    if !extra.is_empty() && source_dir.is_some() {
        let names: Vec<&str> = profiles
            .map(|p| {
                p.0.iter()
                    .map(|p| crate::dataset::profile_name(*p))
                    .collect()
            })
            .unwrap_or_default();
        return Err(PlanError::Invalid {
            what: "profile",
            value: names.join(","),
            why: "a data set from your own directory has no profile: name one profile or none"
                .into(),
        });
    }
    if let Some(seed) = o.seed.or(f.seed) {
        dataset.seed = seed;
    }
    if let Some(v) = o.duplicate_fraction.or(f.duplicate_fraction) {
        dataset.duplicate_fraction = v.0;
    }
    if let Some(v) = o.compressibility.or(f.compressibility) {
        dataset.compressibility = v.0;
    }
    if let Some(c) = o.content.or(f.content) {
        dataset.content = c.0;
    }
    dataset.source_dir = source_dir;
    Ok((dataset, extra))
}

/// The target the others are compared with: named by flag or file, else the first disk
/// target (a memory target such as tmpfs is a reference, not a candidate), else the first.
fn baseline(targets: &[TargetConfig], named: Option<&String>) -> Result<String, PlanError> {
    match named {
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

#[cfg(test)]
mod tests;

#[cfg(test)]
mod fuzz;
