//! What a plan will cost before it runs: `--dry-run` prints the estimated wall time of the
//! minimum repetitions (and whether it fits an `auto` budget) and the disk it needs.
//!
//! **The model.** A cell costs what cells of the same target and workload cost in the most
//! recent earlier runs on this host (`cell_seconds` in their results, looked up in the
//! results directory's parent, e.g. `fsarena-results/`), rescaled to this plan's data set:
//! `overhead + (cost − overhead) × files_now / files_then`, where `overhead` is that run's
//! cheapest cell of the target (provisioning and teardown, which do not grow with the data
//! set). Without such history it falls back to a coarse per-file-system model, stated in the
//! output, at the rate the development machine created files (ext4 ~11,000 files/s, btrfs
//! ~3,300, FUSE ~3,500), with weights fitted to the default run's cells: each populated image
//! costs 1.5× creating the data set's files (write, then check and copy), a cell that lays the
//! data set down itself (`create`, a target without images) 0.8 s plus 1.2× that, and a cell
//! on a copy of an image 0.8 s plus 0.4× that. Either way it is an estimate; the progress
//! bar's ETA corrects it as cells are timed.
//!
//! A phase that repeated its pass to the floor (`passes` > 1) does not grow with the data
//! set: it lasts the floor until one pass alone is longer. Its part of the cell is priced
//! as `max(phase, one pass × files_now / files_then)`, the rest as above.
//!
//! A target's populated images are built once per run, whatever the number of cells that
//! copy them. Runs that record it (`image_seconds` on the cell that built or was charged for
//! an image) have it taken out of that cell and priced once per target, in proportion to the
//! files; older runs leave it inside their first cells.

use std::collections::HashMap;
use std::path::Path;

use crate::golden::layout::Layout;
use crate::golden::populate::create_rate;
use crate::plan::{FsKind, Plan};
use crate::results::store;

/// The estimate and what it rests on.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// Seconds the minimum repetitions take.
    pub minimum_s: f64,
    /// Cells priced from history, and from the coarse model.
    pub from_history: usize,
    pub from_model: usize,
}

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
        let Ok(entries) = std::fs::read_dir(root) else {
            return h;
        };
        let mut dirs: Vec<(std::time::SystemTime, std::path::PathBuf)> = entries
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
        for (_, dir) in dirs.iter().rev().take(limit) {
            let Ok(loaded) = store::load(dir) else {
                continue;
            };
            let files = serde_json::from_value::<Plan>(loaded.host.plan.clone())
                .ok()
                .and_then(|p| p.dataset.plan().ok())
                .map(|m| m.files.len() as f64);
            let Some(files) = files.filter(|&f| f > 0.0) else {
                continue;
            };
            // One cost per cell: its last record's cell_seconds (each record carries the
            // cell's time up to it) less the image it built, with the repeated phases of its
            // points summed.
            // (target, workload, threads, repetition) → (cell, repeated, one pass).
            type CellKey = (String, String, u32, u32);
            let mut cells: HashMap<CellKey, (f64, f64, f64)> = HashMap::new();
            let mut images: HashMap<CellKey, f64> = HashMap::new();
            for m in &loaded.measurements {
                if let Some(c) = m.cell_seconds {
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
            }
            let mut cheapest: HashMap<String, f64> = HashMap::new();
            let mut sums: HashMap<(String, String), (Cost, u32)> = HashMap::new();
            for ((t, w, _, _), &(c, repeated, one_pass)) in &cells {
                let e = cheapest.entry(t.clone()).or_insert(f64::INFINITY);
                *e = e.min(c);
                let s = sums.entry((t.clone(), w.clone())).or_default();
                s.0.cell += c;
                s.0.repeated += repeated;
                s.0.one_pass += one_pass;
                s.1 += 1;
            }
            for ((t, w), (sum, n)) in sums {
                let n = f64::from(n);
                let cost = Cost {
                    cell: sum.cell / n,
                    overhead: cheapest.get(&t).copied().unwrap_or(0.0),
                    files,
                    repeated: sum.repeated / n,
                    one_pass: sum.one_pass / n,
                };
                h.per.entry((t, w)).or_default().push(cost);
            }
            let mut built: HashMap<String, f64> = HashMap::new();
            for ((t, _, _, _), image) in images {
                *built.entry(t).or_default() += image;
            }
            for (t, seconds) in built {
                h.images.entry(t).or_default().push((files, seconds));
            }
        }
        h
    }

    /// Seconds building `target`'s populated images costs for a data set of `files` files,
    /// from the earlier run nearest in size, in proportion to the files (a populate writes
    /// every one); `None` when no earlier run recorded it (its cells then carry it).
    pub fn images(&self, target: &str, files: f64) -> Option<f64> {
        let &(then, seconds) = nearest(self.images.get(target)?, files, |r| r.0)?;
        Some(seconds * files / then)
    }

    /// Seconds a cell of `workload` on `target` costs for a data set of `files` files,
    /// priced from the earlier run whose data set was nearest in size (the newest of equals):
    /// rescaling a run of 2,500 files twentyfold misses what a run of 50,000 measured.
    pub fn cell(&self, target: &str, workload: &str, files: f64) -> Option<f64> {
        let costs = self.per.get(&(target.to_string(), workload.to_string()))?;
        let c = nearest(costs, files, |c| c.files)?;
        let overhead = c.overhead.min(c.cell);
        let grows = (c.cell - overhead - c.repeated).max(0.0);
        let ratio = files / c.files;
        Some(overhead + grows * ratio + c.repeated.max(c.one_pass * ratio))
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

/// What the coarse model charges every cell: attaching, mounting, checking and restoring its
/// file system around a short phase. With the weights below it prices the default plan's
/// minimum (198 cells and 10 images at scale 0.01) at ~220 s, what it took on 2026-11-25
/// (212 s of cells and 8 s of images a run, two runs; per kind of cell within 0.8–1.3×).
const MODEL_CELL_S: f64 = 0.8;
/// Creating the data set's files, as a share of what a cell that lays it down itself adds.
const MODEL_LAYS_DOWN: f64 = 1.2;
/// The same for a cell on a copy of an image (its phase walks or changes the files).
const MODEL_ON_COPY: f64 = 0.4;
/// The same for building one populated image (write, check, first copy).
const MODEL_IMAGE: f64 = 1.5;

/// The coarse model for one cell on `kind` with `files` files: the fixed part, plus a share
/// of creating the files, larger where the cell lays the data set down itself (`lays_down`:
/// `create`, or a target without populated images) than on a copy of an image (whose
/// building [`model_image`] prices, once).
pub fn model_cell(kind: FsKind, files: f64, lays_down: bool) -> f64 {
    let share = if lays_down {
        MODEL_LAYS_DOWN
    } else {
        MODEL_ON_COPY
    };
    MODEL_CELL_S + share * files / create_rate(kind)
}

/// The coarse model for one populated image: creating the data set's files, then its check
/// and first copy.
pub fn model_image(kind: FsKind, files: f64) -> f64 {
    MODEL_IMAGE * files / create_rate(kind)
}

/// The populated image a cell of workload `w` on target `t` copies, if it copies one
/// instead of laying the data set down itself (only loop targets have images).
pub(super) fn copied_layout(plan: &Plan, t: usize, w: &str) -> Option<Layout> {
    let loop_target = matches!(plan.targets[t].location, crate::plan::Location::Loop);
    loop_target
        .then(|| crate::workload::by_name(w))
        .flatten()
        .and_then(|w| Layout::copied_by(w.as_ref()))
}

/// Prices `cells` (target index into `plan.targets`, workload name): history first, else
/// the model.
pub fn estimate(plan: &Plan, cells: &[(usize, &str)], files: usize, history: &History) -> Estimate {
    let mut e = Estimate {
        minimum_s: 0.0,
        from_history: 0,
        from_model: 0,
    };
    // Each target's images once: as earlier runs priced them apart from their cells, else
    // one model image per layout the target's cells copy.
    let mut imaged: Vec<(usize, Layout)> = cells
        .iter()
        .filter_map(|&(t, w)| copied_layout(plan, t, w).map(|layout| (t, layout)))
        .collect();
    imaged.sort_unstable();
    imaged.dedup();
    let mut priced: Vec<usize> = Vec::new();
    for &(t, _) in &imaged {
        if priced.contains(&t) {
            continue;
        }
        priced.push(t);
        let target = &plan.targets[t];
        e.minimum_s += match history.images(&target.name, files as f64) {
            Some(s) => s,
            None => {
                let layouts = imaged.iter().filter(|i| i.0 == t).count() as f64;
                layouts * model_image(target.fs, files as f64)
            }
        };
    }
    for &(t, w) in cells {
        let target = &plan.targets[t];
        match history.cell(&target.name, w, files as f64) {
            Some(s) => {
                e.minimum_s += s;
                e.from_history += 1;
            }
            None => {
                let lays_down = copied_layout(plan, t, w).is_none();
                e.minimum_s += model_cell(target.fs, files as f64, lays_down);
                e.from_model += 1;
            }
        }
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_rescales_only_what_grows_with_the_data_set() {
        let mut h = History::default();
        // A cell cost 3 s; the target's cheapest cell 1 s; the run had 1,000 files.
        h.per.insert(
            ("ext4".into(), "scan".into()),
            vec![Cost {
                cell: 3.0,
                overhead: 1.0,
                files: 1000.0,
                ..Cost::default()
            }],
        );
        assert_eq!(h.cell("ext4", "scan", 1000.0), Some(3.0));
        assert_eq!(h.cell("ext4", "scan", 10_000.0), Some(21.0));
        assert_eq!(h.cell("xfs", "scan", 10.0), None);
    }

    #[test]
    fn a_phase_repeated_to_the_floor_does_not_grow_until_one_pass_outlasts_it() {
        let mut h = History::default();
        // 3 s cells, 1 s of it the target's overhead and 0.5 s a phase of 32 passes of 1/64 s.
        h.per.insert(
            ("ext4".into(), "dupes".into()),
            vec![Cost {
                cell: 3.0,
                overhead: 1.0,
                files: 1000.0,
                repeated: 0.5,
                one_pass: 0.015625,
            }],
        );
        assert_eq!(h.cell("ext4", "dupes", 1000.0), Some(3.0));
        // Ten times the files: the rest grows tenfold, the phase still lasts the floor.
        assert_eq!(h.cell("ext4", "dupes", 10_000.0), Some(1.0 + 15.0 + 0.5));
        // A thousand times: one pass (15.6 s) is the phase.
        assert_eq!(
            h.cell("ext4", "dupes", 1_000_000.0),
            Some(1.0 + 1500.0 + 15.625)
        );
    }

    /// Writes into `dir` a run on ext4 of `cells` (workload, repetition, cell seconds,
    /// image seconds), its results file last written at `written`.
    fn past_run(
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
        assert_eq!(h.cell("ext4", "scan", files), Some(2.0), "{h:?}");
    }

    #[test]
    fn an_image_is_priced_once_per_target_not_inside_the_cell_that_built_it() {
        let root = tempfile::tempdir().unwrap();
        // Two touch cells of 1 s; the first also built the image, in 4 s.
        let cells = [("touch", 0, 5.0, Some(4.0)), ("touch", 1, 1.0, None)];
        past_run(
            &root.path().join("run"),
            &cells,
            std::time::SystemTime::now(),
        );
        let h = History::load(root.path(), 20);
        let files = h.per[&("ext4".to_string(), "touch".to_string())][0].files;
        assert_eq!(h.cell("ext4", "touch", files), Some(1.0), "{h:?}");
        assert_eq!(h.images("ext4", files), Some(4.0));
        assert_eq!(h.images("ext4", 2.0 * files), Some(8.0));
        assert_eq!(h.images("xfs", files), None);
        // A plan of three touch cells on ext4 pays for the image once.
        let ext4 = crate::plan::catalogue::get("ext4").unwrap();
        let plan = Plan::of(vec![ext4], &["touch"], Default::default());
        let cells = [(0, "touch"), (0, "touch"), (0, "touch")];
        let e = estimate(&plan, &cells, files as usize, &h);
        assert_eq!(e.minimum_s, 4.0 + 3.0);
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
        assert_eq!(h.cell("ext4", "touch", 50_000.0), Some(1.5));
        assert_eq!(h.cell("ext4", "touch", 2_500.0), Some(0.1));
        // Equally near: the newest.
        h.per.insert(
            ("xfs".into(), "touch".into()),
            vec![cost(2.0, 1_000.0), cost(9.0, 1_000.0)],
        );
        assert_eq!(h.cell("xfs", "touch", 1_000.0), Some(2.0));
    }

    #[test]
    fn the_model_grows_with_the_files_and_is_slower_on_fuse() {
        assert!(model_cell(FsKind::Ext4, 0.0, true) == MODEL_CELL_S);
        for lays_down in [true, false] {
            let ntfs = model_cell(FsKind::Ntfs, 10_000.0, lays_down);
            assert!(ntfs > model_cell(FsKind::Ext4, 10_000.0, lays_down));
        }
    }

    /// Without history, a cell on a copy of a populated image is not charged for creating
    /// the data set: the image is, once per target and layout.
    #[test]
    fn the_model_prices_each_image_once_and_cells_on_copies_without_it() {
        let ext4 = crate::plan::catalogue::get("ext4").unwrap();
        let plan = Plan::of(vec![ext4], &["create", "touch", "copy"], Default::default());
        let files = 11_000.0; // one second of creating at ext4's model rate
        let cells = [(0, "create"), (0, "touch"), (0, "touch"), (0, "copy")];
        let e = estimate(&plan, &cells, files as usize, &History::default());
        let lays_down = model_cell(FsKind::Ext4, files, true);
        let on_copy = model_cell(FsKind::Ext4, files, false);
        // touch copies the data set's image, copy the dated one's: two images.
        let images = 2.0 * model_image(FsKind::Ext4, files);
        let want = lays_down + 3.0 * on_copy + images;
        assert!(
            (e.minimum_s - want).abs() < 1e-9,
            "{} != {want}",
            e.minimum_s
        );
        assert_eq!((e.from_history, e.from_model), (0, 4));
    }
}
