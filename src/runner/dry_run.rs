//! `--dry-run`: exactly what a run would create, format, mount and measure, cell by cell,
//! after the same checks a real run makes. Touches nothing.

use std::fmt::Write;

use super::{preflight, schedule, RunError, RunOptions};
use crate::plan::size::human_bytes;
use crate::plan::Plan;
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
    let _ = writeln!(
        s,
        "repetitions: {:?}; threads: {:?}; baseline: {}",
        plan.runs, plan.threads, plan.baseline
    );
    for (name, why) in &checked.skipped {
        let _ = writeln!(s, "skip target {name}: {why}");
    }
    let wl = schedule::thread_lists(plan, &checked.workloads);
    let mut seq = 0;
    for rep in 0..plan.runs.max() {
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
