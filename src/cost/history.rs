//! What earlier runs on this host cost, read back from their results: per target and
//! workload, the cell's seconds and what of them does not grow with the data set; per
//! target, the seconds its populated images took. The estimate prices a plan from it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::plan::Plan;
use crate::results::{store, Measurement};
use crate::workload::initial::Starts;

/// What one (target, workload) cost in an earlier run, per cell on average.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Cost {
    /// The whole cell, seconds.
    cell: f64,
    /// The target's cheapest cell in that run: what does not grow with the data set.
    overhead: f64,
    /// That run's data-set size in files.
    files: f64,
    /// Seconds of the cell's phases that repeated a pass to the floor, and of one pass of
    /// each (summed over the cell's points).
    repeated: f64,
    one_pass: f64,
    /// That run's phase floor, seconds: what its repeated phases lasted at least.
    floor: f64,
}

/// Cell costs of earlier runs, per (target, workload): one per run that timed the pair,
/// newest first; and per target, what building its populated images cost in each run that
/// recorded it (`image_seconds`), as (files, seconds).
#[derive(Debug, Default, Clone)]
pub struct History {
    per: HashMap<(String, String), Vec<Cost>>,
    images: HashMap<String, Vec<(f64, f64)>>,
}

impl History {
    /// The earlier runs beside the results directory `out`: up to `limit` of them, read
    /// from the directory that holds it. A bare name (`--out after`) has the empty path as
    /// its parent, which names no directory: its runs are the current directory's.
    pub fn beside(out: &Path, limit: usize) -> History {
        match out.parent() {
            Some(p) if p.as_os_str().is_empty() => History::load(Path::new("."), limit),
            Some(p) => History::load(p, limit),
            None => History::default(),
        }
    }

    /// Reads up to `limit` earlier runs under `root`, newest first: newest by the time its
    /// results file was last written, not by name (`--out before`, `--out after` name runs
    /// in no order of time).
    pub fn load(root: &Path, limit: usize) -> History {
        let mut h = History::default();
        for dir in runs_newest_first(root).iter().take(limit) {
            let Ok(loaded) = store::load(dir) else {
                continue;
            };
            let Some((starts, files, floor)) = recorded_plan(&loaded.host.plan) else {
                continue;
            };
            let (cells, images) = cell_times(&loaded.measurements);
            let of = |w: &str| starts.files_of(w, files).map(|f| f as f64);
            h.add_cells(&cells, &of, floor);
            h.add_images(images, starts.largest_files(files) as f64);
        }
        h
    }

    /// Adds one run's cells (each workload's starting `files`: the data set's, or its own
    /// state's) as one [`Cost`] per (target, workload): the mean of its cells, over the
    /// target's cheapest cell as its overhead, measured at the phase floor `floor` (seconds).
    /// A workload whose start is unknown is left out.
    fn add_cells(
        &mut self,
        cells: &HashMap<CellKey, CellTime>,
        files: &dyn Fn(&str) -> Option<f64>,
        floor: f64,
    ) {
        let mut cheapest: HashMap<String, f64> = HashMap::new();
        let mut sums: HashMap<(String, String), (Cost, u32)> = HashMap::new();
        for ((t, w, _, _), &(c, repeated, one_pass)) in cells {
            let e = cheapest.entry(t.clone()).or_insert(f64::INFINITY);
            *e = e.min(c);
            let s = sums.entry((t.clone(), w.clone())).or_default();
            s.0.cell += c;
            s.0.repeated += repeated;
            s.0.one_pass += one_pass;
            s.1 += 1;
        }
        for ((t, w), (sum, n)) in sums {
            let Some(files) = files(&w).filter(|&f| f > 0.0) else {
                continue;
            };
            let n = f64::from(n);
            let cost = Cost {
                cell: sum.cell / n,
                overhead: cheapest.get(&t).copied().unwrap_or(0.0),
                files,
                repeated: sum.repeated / n,
                one_pass: sum.one_pass / n,
                floor,
            };
            self.per.entry((t, w)).or_default().push(cost);
        }
    }

    /// Adds what building each target's images cost in one run (of `files` files): the
    /// seconds of every cell that built or was charged for one, summed per target.
    fn add_images(&mut self, images: HashMap<CellKey, f64>, files: f64) {
        let mut built: HashMap<String, f64> = HashMap::new();
        for ((t, _, _, _), image) in images {
            *built.entry(t).or_default() += image;
        }
        for (t, seconds) in built {
            self.images.entry(t).or_default().push((files, seconds));
        }
    }

    /// Seconds building `target`'s populated images costs for a data set of `files` files,
    /// from the earlier run nearest in size, in proportion to the files (a populate writes
    /// every one); `None` when no earlier run recorded it (its cells then carry it).
    pub fn images(&self, target: &str, files: f64) -> Option<f64> {
        let &(then, seconds) = nearest(self.images.get(target)?, files, |r| r.0)?;
        Some(seconds * files / then)
    }

    /// Seconds a cell of `workload` on `target` costs for a data set of `files` files at the
    /// phase floor `floor`, priced from the earlier run whose data set was nearest in size
    /// (the newest of equals): rescaling a run of 2,500 files twentyfold misses what a run of
    /// 50,000 measured. Its phases repeated to that run's floor last the plan's floor instead
    /// (a run recorded at 0.5 s priced for 0.25 s would count every repeated phase twice), or
    /// one pass where a pass outlasts it.
    pub fn cell(&self, target: &str, workload: &str, files: f64, floor: Duration) -> Option<f64> {
        let costs = self.per.get(&(target.to_string(), workload.to_string()))?;
        let c = nearest(costs, files, |c| c.files)?;
        let overhead = c.overhead.min(c.cell);
        let grows = (c.cell - overhead - c.repeated).max(0.0);
        let ratio = files / c.files;
        // A run with no floor recorded repeated nothing to one (every phase was one pass).
        let repeated = if c.floor > 0.0 {
            c.repeated * floor.as_secs_f64() / c.floor
        } else {
            c.repeated
        };
        Some(overhead + grows * ratio + repeated.max(c.one_pass * ratio))
    }
}

/// Of earlier runs' figures (newest first), the one whose data set (`size`, in files) was
/// nearest to `files` on a log scale, the newest among equals.
fn nearest<T>(runs: &[T], files: f64, size: impl Fn(&T) -> f64) -> Option<&T> {
    let distance = |r: &T| (files / size(r)).ln().abs();
    runs.iter().reduce(|best, r| {
        if distance(r) < distance(best) {
            r
        } else {
            best
        }
    })
}

/// One cell of an earlier run: (target, workload, threads, repetition).
type CellKey = (String, String, u32, u32);
/// One cell's cost: (the cell less any image it built, its repeated phases, one pass of
/// each), seconds.
type CellTime = (f64, f64, f64);

/// The run directories under `root` that hold a results file, the one written last first:
/// by time, because names (`--out before`, `--out after`) say nothing of it.
fn runs_newest_first(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut dirs: Vec<(SystemTime, PathBuf)> = entries
        .flatten()
        .map(|e| e.path())
        .filter_map(|p| {
            let written = std::fs::metadata(p.join(store::FILE_NAME))
                .ok()
                .filter(|m| m.is_file())?
                .modified()
                .ok()?;
            Some((written, p))
        })
        .collect();
    dirs.sort();
    dirs.into_iter().rev().map(|(_, p)| p).collect()
}

/// What the workloads of the run whose plan was recorded as `plan` start from, the number
/// of files in its data set, and its phase floor in seconds; `None` when the plan cannot be
/// read back or made no files (nothing to rescale by).
fn recorded_plan(plan: &serde_json::Value) -> Option<(Starts, u64, f64)> {
    let plan = serde_json::from_value::<Plan>(plan.clone()).ok()?;
    let files = plan.dataset.plan().ok()?.files.len() as u64;
    (files > 0).then(|| (Starts::of(&plan), files, plan.phase_floor.as_secs_f64()))
}

/// One cost per cell of a run: its last record's `cell_seconds` (each record carries the
/// cell's time up to it) less the image it built, with the repeated phases of its points
/// summed; and apart, the seconds of the images the cells built.
fn cell_times(measurements: &[Measurement]) -> (HashMap<CellKey, CellTime>, HashMap<CellKey, f64>) {
    let mut cells: HashMap<CellKey, CellTime> = HashMap::new();
    let mut images: HashMap<CellKey, f64> = HashMap::new();
    for m in measurements {
        let Some(c) = m.cell_seconds else {
            continue;
        };
        let key = (
            m.target.clone(),
            m.workload.clone(),
            m.threads,
            m.repetition,
        );
        let image = m.image_seconds.unwrap_or(0.0);
        if image > 0.0 {
            images.insert(key.clone(), image);
        }
        let e = cells.entry(key).or_insert((0.0, 0.0, 0.0));
        e.0 = e.0.max(c - image);
        let passes = m.metrics.get("passes").copied().unwrap_or(1.0);
        if let Some(secs) = m.metrics.get("seconds").filter(|_| passes > 1.0) {
            e.1 += secs;
            e.2 += secs / passes;
        }
    }
    (cells, images)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// The phase floor the tests' runs were recorded at and are priced for.
    pub(crate) const AT: Duration = Duration::from_millis(500);

    /// A history of one run on ext4 at the floor [`AT`] with 1,000 files: `workload`'s cells
    /// cost 3 s, 1 s of it the target's overhead, `repeated` seconds of phases repeated to
    /// the floor by passes adding up to `one_pass` seconds.
    fn one_run(workload: &str, repeated: f64, one_pass: f64) -> History {
        let mut h = History::default();
        h.per.insert(
            ("ext4".into(), workload.into()),
            vec![Cost {
                cell: 3.0,
                overhead: 1.0,
                files: 1000.0,
                repeated,
                one_pass,
                floor: AT.as_secs_f64(),
            }],
        );
        h
    }

    #[test]
    fn history_rescales_only_what_grows_with_the_data_set() {
        // A cell cost 3 s; the target's cheapest cell 1 s; the run had 1,000 files.
        let h = one_run("scan", 0.0, 0.0);
        assert_eq!(h.cell("ext4", "scan", 1000.0, AT), Some(3.0));
        assert_eq!(h.cell("ext4", "scan", 10_000.0, AT), Some(21.0));
        assert_eq!(h.cell("xfs", "scan", 10.0, AT), None);
    }

    #[test]
    fn a_phase_repeated_to_the_floor_does_not_grow_until_one_pass_outlasts_it() {
        // 3 s cells, 1 s of it the target's overhead and 0.5 s a phase of 32 passes of 1/64 s.
        let h = one_run("dupes", 0.5, 0.015625);
        assert_eq!(h.cell("ext4", "dupes", 1000.0, AT), Some(3.0));
        // Ten times the files: the rest grows tenfold, the phase still lasts the floor.
        assert_eq!(
            h.cell("ext4", "dupes", 10_000.0, AT),
            Some(1.0 + 15.0 + 0.5)
        );
        // A thousand times: one pass (15.6 s) is the phase.
        assert_eq!(
            h.cell("ext4", "dupes", 1_000_000.0, AT),
            Some(1.0 + 1500.0 + 15.625)
        );
    }

    #[test]
    fn a_run_recorded_at_another_phase_floor_prices_its_repeated_phases_at_the_plans() {
        // 3 s cells, 1 s overhead, two phases repeated to a 0.5 s floor by passes of 0.1 s.
        let h = one_run("scan", 1.0, 0.2);
        let quarter = Duration::from_millis(250);
        assert_eq!(h.cell("ext4", "scan", 1000.0, AT), Some(3.0));
        assert_eq!(h.cell("ext4", "scan", 1000.0, quarter), Some(2.5));
        // No floor: each phase is one pass.
        assert_eq!(h.cell("ext4", "scan", 1000.0, Duration::ZERO), Some(2.2));
        // Ten times the files: one pass of each (2 s) outlasts either floor.
        assert_eq!(
            h.cell("ext4", "scan", 10_000.0, quarter),
            Some(1.0 + 10.0 + 2.0)
        );
    }

    /// Writes into `dir` a run on ext4 of `cells` (workload, repetition, cell seconds,
    /// image seconds), its results file last written at `written`.
    pub(crate) fn past_run(
        dir: &Path,
        cells: &[(&str, u32, f64, Option<f64>)],
        written: std::time::SystemTime,
    ) {
        use crate::results::{HostFacts, Measurement};
        std::fs::create_dir(dir).unwrap();
        let dataset = crate::dataset::DatasetSpec {
            scale: 0.002,
            ..Default::default()
        };
        let plan = Plan::of(Vec::new(), &["scan"], dataset);
        let host = HostFacts {
            plan: serde_json::to_value(&plan).unwrap(),
            ..HostFacts::default()
        };
        let mut s = store::Store::create(dir, &host).unwrap();
        for &(workload, repetition, cell_s, image_s) in cells {
            let m = Measurement {
                target: "ext4".into(),
                workload: workload.into(),
                repetition,
                cell_seconds: Some(cell_s),
                image_seconds: image_s,
                ..Measurement::default()
            };
            s.append(&m).unwrap();
        }
        drop(s);
        let f = std::fs::File::options()
            .write(true)
            .open(dir.join(store::FILE_NAME))
            .unwrap();
        f.set_modified(written).unwrap();
    }

    /// The data-set size, in files, of the runs `h` priced `workload` on `target` from
    /// (all of [`past_run`]'s runs have the same).
    pub(crate) fn files_of(h: &History, target: &str, workload: &str) -> f64 {
        h.per[&(target.to_string(), workload.to_string())][0].files
    }

    #[test]
    fn history_takes_the_run_written_last_not_the_last_name() {
        let root = tempfile::tempdir().unwrap();
        let now = std::time::SystemTime::now();
        let hour = std::time::Duration::from_secs(3600);
        past_run(
            &root.path().join("z-before"),
            &[("scan", 0, 9.0, None)],
            now - hour,
        );
        past_run(&root.path().join("a-after"), &[("scan", 0, 2.0, None)], now);
        let h = History::load(root.path(), 20);
        let files = h.per[&("ext4".to_string(), "scan".to_string())][0].files;
        assert_eq!(h.cell("ext4", "scan", files, AT), Some(2.0), "{h:?}");
    }

    #[test]
    fn history_prices_from_the_run_nearest_in_size_before_the_newest() {
        let cost = |cell: f64, files: f64| Cost {
            cell,
            overhead: 0.0,
            files,
            ..Cost::default()
        };
        let mut h = History::default();
        // Newest first: a small run (2,500 files), then a run of the planned size.
        h.per.insert(
            ("ext4".into(), "touch".into()),
            vec![cost(0.1, 2_500.0), cost(1.5, 50_000.0)],
        );
        assert_eq!(h.cell("ext4", "touch", 50_000.0, AT), Some(1.5));
        assert_eq!(h.cell("ext4", "touch", 2_500.0, AT), Some(0.1));
        // Equally near: the newest.
        h.per.insert(
            ("xfs".into(), "touch".into()),
            vec![cost(2.0, 1_000.0), cost(9.0, 1_000.0)],
        );
        assert_eq!(h.cell("xfs", "touch", 1_000.0, AT), Some(2.0));
    }
}
