//! `--dry-run`: what a run would create, format, mount and measure, after the same checks a
//! real run makes. Touches nothing. A summary by default (the default plan has over a
//! thousand command lines); every cell's commands with `--verbose`.

use std::fmt::Write;
use std::path::PathBuf;

use super::preflight::{self, measured_in_turn, pairs_in_turn, Checked, Sized};
use super::schedule;
use super::terms::{RunError, RunOptions};
use crate::cost::estimate::{copied_layout, estimate, Priced, Size};
use crate::cost::history::History;
use crate::plan::size::human_bytes;
use crate::plan::{Location, Plan, Runs};
use crate::provision::planned::planned_commands;
use crate::provision::InstanceSpec;
use crate::results::store;

/// "a, b, c" of anything printable.
fn list<T: std::fmt::Display>(items: impl IntoIterator<Item = T>) -> String {
    items
        .into_iter()
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// "s" for a count other than one.
fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The plan as text: what is measured and how many cells that makes, the data set, the
/// images, the estimate, then (with `verbose`) every cell's commands.
pub fn dry_run(plan: &Plan, opts: &RunOptions, verbose: bool) -> Result<String, RunError> {
    let checked = preflight::check(plan, opts)?;
    let sized = preflight::size(plan, opts)?;
    let preview = Preview::new(plan, opts, &checked, &sized);
    let mut s = String::new();
    preview.cells(&mut s);
    preview.targets_and_workloads(&mut s);
    preview.data_and_disk(&mut s);
    preview.estimate(&mut s);
    if verbose {
        preview.commands(&mut s);
    } else {
        let _ = writeln!(s, "each cell's commands: add --verbose");
    }
    Ok(s)
}

/// What every part of the summary reads: the plan as the run's own checks leave it, and
/// the cells its minimum repetitions make, in the order a run would make them.
struct Preview<'p> {
    plan: &'p Plan,
    opts: &'p RunOptions,
    checked: &'p Checked,
    sized: &'p Sized,
    /// Per workload, whether it takes `--threads` ([`schedule::takes_threads`]).
    takes_threads: Vec<bool>,
    datasets: usize,
    /// Every cell of the minimum repetitions: (target index, data set index, workload).
    minimum: Vec<Priced<'static>>,
    /// Per data set, per workload: the points a cell measures ([`cell_points`]).
    points: Vec<Vec<Result<Vec<String>, String>>>,
    /// The work directory a run would make, its time and process id left as placeholders.
    run_dir: PathBuf,
}

impl<'p> Preview<'p> {
    /// Lays the minimum repetitions out as a run would.
    fn new(plan: &'p Plan, opts: &'p RunOptions, checked: &'p Checked, sized: &'p Sized) -> Self {
        let takes_threads = schedule::takes_threads(&checked.workloads);
        let datasets = plan.dataset_count();
        let minimum = (plan.cells(0..plan.runs.min(), checked.usable.len(), &takes_threads))
            .into_iter()
            .map(|c| {
                (
                    checked.usable[c.target],
                    c.dataset,
                    checked.workloads[c.workload].spec().name,
                )
            })
            .collect();
        let points = (plan.datasets().iter())
            .map(|d| {
                (checked.workloads.iter())
                    .map(|w| cell_points(plan, w.as_ref(), d, &opts.work_root))
                    .collect()
            })
            .collect();
        Preview {
            plan,
            opts,
            checked,
            sized,
            takes_threads,
            datasets,
            minimum,
            points,
            run_dir: opts.work_root.join("run-<time>-<pid>"),
        }
    }

    /// The names of the targets this host can run.
    fn targets(&self) -> Vec<&'p str> {
        self.checked
            .usable
            .iter()
            .map(|&i| self.plan.targets[i].name.as_str())
            .collect()
    }

    /// How many cells the minimum makes, and of what, and the points those cells measure:
    /// first, because it is what a reader weighs before anything else (and what changes with
    /// every option). A cell measures every point of its workload (a database's thread counts
    /// and maintenance variants, fio's shapes, scan's cold and warm walks) one after another.
    fn cells(&self, s: &mut String) {
        let (plan, checked) = (self.plan, self.checked);
        let datasets = self.datasets;
        let per_target = plan.cells(0..1, 1, &self.takes_threads).len();
        let min_runs = plan.runs.min();
        let targets = self.targets();
        let ignoring = self.takes_threads.iter().filter(|&&t| !t).count();
        let points: usize = (self.minimum.iter())
            .map(|&(_, d, name)| {
                let w = (checked.workloads.iter()).position(|w| w.spec().name == name);
                w.map_or(1, |w| self.points_of(d, w).map_or(1, Vec::len))
            })
            .sum();
        let _ = writeln!(
            s,
            "dry run: nothing is created, formatted or mounted.\n\
             cells: {} target{} × {per_target} cell{} each × {min_runs} repetition{} = {} cells, \
             {points} points measured",
            targets.len(),
            plural(targets.len()),
            plural(per_target),
            plural(min_runs as usize),
            self.minimum.len()
        );
        let _ = writeln!(
            s,
            "  a target's cells in a repetition: {}{} workload{} × threads {}{}",
            if datasets > 1 {
                format!("{datasets} data sets × ")
            } else {
                String::new()
            },
            checked.workloads.len(),
            plural(checked.workloads.len()),
            list(&plan.threads),
            if ignoring > 0 && plan.threads.len() > 1 {
                format!(" ({ignoring} of them run their own thread count once)")
            } else {
                String::new()
            }
        );
        let each: Vec<String> = (checked.workloads.iter().enumerate())
            .map(|(w, wl)| {
                let name = wl.spec().name;
                match self.points_of(0, w) {
                    Ok(labels) => format!("{name} {}{}", labels.len(), labelled(labels)),
                    Err(why) => format!("{name} ? (its points are known once it runs: {why})"),
                }
            })
            .collect();
        let _ = writeln!(s, "  points a cell measures: {}", each.join(", "));
    }

    /// The points a cell of workload `w` measures on data set `d`.
    fn points_of(&self, d: usize, w: usize) -> Result<&Vec<String>, &String> {
        match self.points.get(d).and_then(|p| p.get(w)) {
            Some(Ok(labels)) => Ok(labels),
            Some(Err(why)) => Err(why),
            None => unreachable!("a point list per data set and workload"),
        }
    }

    /// The targets and workloads measured, what this host cannot run (and why), and how
    /// many repetitions.
    fn targets_and_workloads(&self, s: &mut String) {
        let (plan, checked) = (self.plan, self.checked);
        let _ = writeln!(
            s,
            "targets: {}; baseline {}",
            list(self.targets()),
            plan.baseline
        );
        for (name, why) in &checked.skipped {
            let _ = writeln!(s, "  skipped here: {name} ({why})");
        }
        let _ = writeln!(
            s,
            "workloads: {}",
            list(checked.workloads.iter().map(|w| w.spec().name))
        );
        for (name, why) in &checked.skipped_workloads {
            let _ = writeln!(s, "  skipped here: workload {name} ({why})");
        }
        let runs = match plan.runs {
            Runs::Fixed(n) => format!("{n}"),
            Runs::Auto { min, max, budget } => format!(
                "auto: {min}, then up to {max} per group for the comparisons still undecided, \
                 within {}",
                humantime::format_duration(budget)
            ),
        };
        let _ = writeln!(s, "repetitions: {runs}");
        let named: Vec<(&str, bool, Option<usize>)> = (checked.workloads.iter())
            .map(|w| {
                let options = plan.workload_options.get(w.spec().name);
                let own = options.and_then(|o| w.own_threads(o));
                (w.spec().name, w.spec().uses_threads, own)
            })
            .collect();
        let _ = writeln!(s, "CPUs: {}", plan.placement_sentence(&named));
    }

    /// The data set, the images and disk it takes, and where the run would write.
    fn data_and_disk(&self, s: &mut String) {
        let (plan, opts, sized) = (self.plan, self.opts, self.sized);
        let mut profiles: Vec<&str> = plan
            .datasets()
            .iter()
            .map(|d| crate::dataset::profile_name(d.profile))
            .collect();
        profiles.dedup();
        let scales: Vec<String> = plan.scales().iter().map(f64::to_string).collect();
        if sized.starts.dataset {
            let _ = writeln!(
                s,
                "data set{}: {} at scale {} (seed {}): {} files, {}{}",
                plural(plan.dataset_count()),
                profiles.join(", "),
                scales.join(", "),
                plan.dataset.seed,
                sized.files,
                human_bytes(sized.data_bytes),
                if plan.dataset_count() > 1 {
                    " (the largest; each cell runs on every one)"
                } else {
                    ""
                }
            );
        }
        for (name, own) in sized.starts.known() {
            // Neither counted nor sized before the run (an fio file sized on the target):
            // what it is says it all.
            let size = match (own.files, own.bytes) {
                (Some(n), b) => format!("{n} file{}, {}, ", plural(n as usize), human_bytes(b)),
                (None, 0) => String::new(),
                (None, b) => format!("{}, ", human_bytes(b)),
            };
            let peak = match own.peak_bytes {
                0 => String::new(),
                b => format!(" (up to {} with what its phase adds)", human_bytes(b)),
            };
            let _ = writeln!(s, "initial state of {name}: {size}{}{peak}", own.what);
        }
        let _ = writeln!(
            s,
            "images: {}; disk: up to {} at once in {}",
            images_line(plan, &self.minimum, sized.image),
            human_bytes(sized.disk_bytes),
            opts.work_root.display()
        );
        if let Some(pct) = plan.age_pct {
            let _ = writeln!(
                s,
                "aging: each aged image filled to {pct} % of its size, its free space cut into \
                 {} pieces (the whole device written once): about {} written in all (in the \
                 disk figure)",
                human_bytes(
                    plan.age_free_extent
                        .unwrap_or(crate::provision::fragment::DEFAULT_FREE_EXTENT)
                ),
                human_bytes(super::fs_sizes::aged_writes(plan, sized.data_bytes))
            );
        }
        if plan.targets.iter().any(|t| t.location == Location::Memory) {
            let _ = writeln!(
                s,
                "tmpfs: up to {} (from the data set) unless a target sets its size",
                human_bytes(sized.memory)
            );
        }
        let _ = writeln!(
            s,
            "work directory: {} (removed at the end{}); results: {}",
            self.run_dir.display(),
            if opts.keep { " unless --keep" } else { "" },
            opts.out.join(store::FILE_NAME).display()
        );
    }

    /// What the minimum will take, priced from earlier runs beside the results directory
    /// (else the coarse model), and whether an `auto` budget leaves room after it.
    fn estimate(&self, s: &mut String) {
        let history = History::beside(&self.opts.out, 20);
        let (starts, sized) = (&self.sized.starts, self.sized);
        let sizes = |w: &str, s: usize| {
            let data_files = sized.scale_files.get(s).copied().unwrap_or(sized.files) as u64;
            let data_bytes = sized
                .scale_bytes
                .get(s)
                .copied()
                .unwrap_or(sized.data_bytes);
            Size {
                files: starts.files_of(w, data_files).unwrap_or(data_files) as f64,
                bytes: starts.bytes_of(w, data_bytes).unwrap_or(data_bytes) as f64,
            }
        };
        let e = estimate(self.plan, &self.minimum, &sizes, &history);
        let basis = match (e.from_history, e.from_model) {
            (_, 0) => "priced from earlier runs on this host".to_string(),
            (0, _) => "a coarse model: no earlier run of these targets here".to_string(),
            (h, m) => format!("{h} cells from earlier runs here, {m} from a coarse model"),
        };
        let took =
            |secs: f64| humantime::format_duration(std::time::Duration::from_secs(secs as u64));
        let _ = writeln!(s, "estimate: about {} ({basis})", took(e.minimum_s));
        if let Runs::Auto { budget, .. } = self.plan.runs {
            if e.minimum_s > budget.as_secs_f64() {
                let _ = writeln!(
                    s,
                    "budget: the minimum alone needs more than the {} budget: no further runs \
                     (lower --scale, fewer targets, or a larger --budget)",
                    humantime::format_duration(budget),
                );
            } else {
                let _ = writeln!(
                    s,
                    "budget: about {} left after the minimum for comparisons still undecided",
                    took(budget.as_secs_f64() - e.minimum_s)
                );
            }
        }
    }

    /// Every cell of the minimum with the commands that make, mount and remove its file
    /// system (`--verbose`: the default plan has over a thousand of them).
    fn commands(&self, s: &mut String) {
        let (plan, opts, checked) = (self.plan, self.opts, self.checked);
        let mut seq = 0;
        let cells = plan.cells(
            0..plan.runs.min(),
            checked.usable.len(),
            &self.takes_threads,
        );
        for cell in cells {
            seq += 1;
            let t = &plan.targets[checked.usable[cell.target]];
            let spec = InstanceSpec {
                target: t,
                seq,
                size: crate::plan::fs_size::for_target(t, self.sized.image, self.sized.memory),
                allow_device: opts.allow_device,
                wipe: opts.wipe,
                daemon_cpus: None,
            };
            let _ = writeln!(
                s,
                "cell {seq}: repetition {} target {} workload {}{} threads {}",
                cell.repetition + 1,
                t.name,
                checked.workloads[cell.workload].spec().name,
                plan.dataset_label(cell.dataset)
                    .map(|l| format!(" on {l}"))
                    .unwrap_or_default(),
                cell.threads
            );
            for c in planned_commands(&spec, &self.run_dir) {
                let _ = writeln!(s, "    {c}");
            }
        }
    }
}

/// The most point names the summary lists for one workload before "and N more".
const LISTED_POINTS: usize = 4;

/// " (a, b, c and 5 more)" of a cell's point names, the unnamed one "default"; nothing for
/// one unnamed point.
fn labelled(labels: &[String]) -> String {
    if labels.len() <= 1 && labels.iter().all(String::is_empty) {
        return String::new();
    }
    let named = labels.iter().map(|l| match l.as_str() {
        "" => "default",
        l => l,
    });
    let shown = list(named.take(LISTED_POINTS));
    match labels.len().saturating_sub(LISTED_POINTS) {
        0 => format!(" ({shown})"),
        more => format!(" ({shown} and {more} more)"),
    }
}

/// The points a cell of `workload` measures on `dataset` under the plan's options, named,
/// as the run asks for them ([`Workload::points`]), so the count cannot drift from what a
/// run does. Nothing is created: the workload reads its options, and fio's `large` file
/// the free space under the nearest existing directory of `work_root` (the run sizes it
/// on the target instead). An error (a block size larger than its file) is the reason.
///
/// [`Workload::points`]: crate::workload::Workload::points
fn cell_points(
    plan: &Plan,
    workload: &dyn crate::workload::Workload,
    dataset: &crate::dataset::DatasetSpec,
    work_root: &std::path::Path,
) -> Result<Vec<String>, String> {
    let empty = toml::Table::new();
    let options = (plan.workload_options)
        .get(workload.spec().name)
        .unwrap_or(&empty);
    let existing = work_root
        .ancestors()
        .find(|p| p.is_dir())
        .unwrap_or(std::path::Path::new("/"));
    let cancel = std::sync::atomic::AtomicBool::new(false);
    let ctx = crate::workload::Ctx {
        threads: plan.threads.first().copied().unwrap_or(1),
        ..crate::workload::Ctx::new(existing, existing, dataset, options, &cancel)
    };
    let points = workload.points(&ctx).map_err(|e| e.to_string())?;
    Ok(points.into_iter().map(|p| p.variant).collect())
}

/// What the plan's loop images are: one written with the data set per target and layout
/// (dated or not), copied for the cells that start from it and made equal to it again between
/// them, and a fresh one for each cell that starts from an empty file system.
fn images_line(plan: &Plan, cells: &[Priced], size: u64) -> String {
    use crate::golden::layout::Layout;
    let on_loop: Vec<(usize, Option<Layout>)> = cells
        .iter()
        .filter(|(t, _, _)| matches!(plan.targets[*t].location, Location::Loop))
        .map(|&(t, _, w)| (t, copied_layout(plan, t, w)))
        .collect();
    if on_loop.is_empty() {
        return "none (no target on a loop image)".into();
    }
    let why = match (plan.fs_size, plan.age_pct) {
        (Some(_), _) => "--fs-size",
        (None, Some(_)) => "an aged plan's default: 8× the data set, at least 4 GiB",
        (None, None) => "the default device size",
    };
    let each = format!(
        "sparse, {} each ({why}) unless a target sets its size",
        human_bytes(size)
    );
    if plan.age_pct.is_some() {
        return format!("{each}; every cell copies an aged image, made once per target");
    }
    let images: std::collections::BTreeSet<(usize, Layout)> = on_loop
        .iter()
        .filter_map(|&(t, layout)| layout.map(|l| (t, l)))
        .collect();
    let copied = on_loop.iter().filter(|c| c.1.is_some()).count();
    let fresh = on_loop.len() - copied;
    let mut parts = vec![each];
    if copied > 0 {
        let own = images
            .iter()
            .filter(|i| matches!(i.1, Layout::Own(_)))
            .count();
        let with = match (own, images.len() - own) {
            (0, _) => "the data set",
            (_, 0) => "a workload's initial state",
            _ => "the data set or a workload's initial state",
        };
        parts.push(format!(
            "{} written once with {with} (per target and layout) and copied for \
             {copied} cell{}, the copy made equal to it again between cells",
            images.len(),
            plural(copied)
        ));
    }
    if fresh > 0 {
        parts.push(format!(
            "{fresh} fresh image{} for the cells that start empty, each removed after its cell",
            plural(fresh)
        ));
    }
    let beside = beside_cells(plan, cells);
    if beside > 0 {
        parts.push(format!(
            "{beside} candidate cell{} of read-only points also mount {}'s file system beside \
             their own (measured in turn: a copy of its image, or a fresh one)",
            plural(beside),
            plan.baseline
        ));
    }
    parts.join("; ")
}

/// The cells that mount the baseline's file system beside their own, for the points they
/// measure in turn with it (`runner::walk`'s `beside`, which also leaves out MPI jobs and
/// log targets, which a dry run does not know of).
fn beside_cells(plan: &Plan, cells: &[Priced]) -> usize {
    if !pairs_in_turn(plan) {
        return 0;
    }
    (cells.iter())
        .filter(|&&(t, _, w)| {
            let target = &plan.targets[t];
            target.name != plan.baseline
                && matches!(target.location, Location::Loop)
                && measured_in_turn(w)
        })
        .count()
}

#[cfg(test)]
mod tests;
