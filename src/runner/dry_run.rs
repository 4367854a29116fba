//! `--dry-run`: exactly what a run would create, format, mount and measure, cell by cell,
//! after the same checks a real run makes. Touches nothing.

use std::fmt::Write;

use super::estimate::{estimate, History};
use super::{preflight, schedule, RunError, RunOptions};
use crate::plan::size::human_bytes;
use crate::plan::{Plan, Runs};
use crate::provision::planned::planned_commands;
use crate::provision::InstanceSpec;
use crate::results::store;

/// The plan as text: work directory, results file, data set, then every cell's commands.
pub fn dry_run(plan: &Plan, opts: &RunOptions) -> Result<String, RunError> {
    let checked = preflight::check(plan, opts)?;
    let sized = preflight::size(plan, opts)?;
    let run_dir = opts.work_root.join("run-<time>-<pid>");
    let mut s = String::new();
    let _ = writeln!(
        s,
        "work directory: {} (created, removed at the end{})",
        run_dir.display(),
        if opts.keep { " unless --keep" } else { "" }
    );
    let _ = writeln!(s, "results: {}", opts.out.join(store::FILE_NAME).display());
    let _ = writeln!(
        s,
        "data set: {:?} scale {} seed {}: {} files, {}",
        plan.dataset.profile,
        plan.dataset.scale,
        plan.dataset.seed,
        sized.files,
        human_bytes(sized.data_bytes)
    );
    let runs = match plan.runs {
        Runs::Fixed(n) => format!("{n}"),
        Runs::Auto { min, max, budget } => format!(
            "auto: {min}, then up to {max} per group for the comparisons still undecided, \
             within a budget of {}",
            humantime::format_duration(budget)
        ),
    };
    let _ = writeln!(
        s,
        "repetitions: {runs}; threads: {:?}; baseline: {}",
        plan.threads, plan.baseline
    );
    for (name, why) in &checked.skipped {
        let _ = writeln!(s, "skip target {name}: {why}");
    }
    let wl = schedule::thread_lists(plan, &checked.workloads);
    let minimum: Vec<(usize, &str)> = (0..plan.runs.min())
        .flat_map(|rep| schedule::repetition(rep, checked.usable.len(), &wl))
        .map(|c| {
            (
                checked.usable[c.target],
                checked.workloads[c.workload].name(),
            )
        })
        .collect();
    let history = opts
        .out
        .parent()
        .map(|root| History::load(root, 20))
        .unwrap_or_default();
    let e = estimate(plan, &minimum, sized.files, &history);
    let basis = match (e.from_history, e.from_model) {
        (_, 0) => "priced from earlier runs on this host".to_string(),
        (0, _) => "from a coarse model: no earlier run of these targets here".to_string(),
        (h, m) => format!("{h} cells priced from earlier runs here, {m} from a coarse model"),
    };
    let took = |secs: f64| humantime::format_duration(std::time::Duration::from_secs(secs as u64));
    let _ = writeln!(
        s,
        "estimate: {} cells of the minimum {} repetition{} take about {} ({basis}); \
         disk: up to {} in {}",
        minimum.len(),
        plan.runs.min(),
        if plan.runs.min() == 1 { "" } else { "s" },
        took(e.minimum_s),
        human_bytes(sized.disk_bytes),
        opts.work_root.display()
    );
    if let Runs::Auto { budget, .. } = plan.runs {
        if e.minimum_s > budget.as_secs_f64() {
            let _ = writeln!(
                s,
                "budget: the minimum alone needs more than the {} budget: the run will take \
                 about {} and make no further runs (lower --scale, fewer targets, or a larger \
                 --budget)",
                humantime::format_duration(budget),
                took(e.minimum_s)
            );
        } else {
            let _ = writeln!(
                s,
                "budget: about {} left after the minimum for comparisons still undecided",
                took(budget.as_secs_f64() - e.minimum_s)
            );
        }
    }
    let mut seq = 0;
    for rep in 0..plan.runs.min() {
        for cell in schedule::repetition(rep, checked.usable.len(), &wl) {
            seq += 1;
            let t = &plan.targets[checked.usable[cell.target]];
            let spec = InstanceSpec {
                target: t,
                seq,
                size: t.size.unwrap_or(sized.image),
                allow_device: opts.allow_device,
                wipe: opts.wipe,
            };
            let _ = writeln!(
                s,
                "cell {seq}: repetition {} target {} workload {} threads {}",
                rep + 1,
                t.name,
                checked.workloads[cell.workload].name(),
                cell.threads
            );
            for c in planned_commands(&spec, &run_dir) {
                let _ = writeln!(s, "    {c}");
            }
        }
    }
    Ok(s)
}
