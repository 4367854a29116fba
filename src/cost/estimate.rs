//! The estimate of a plan's minimum repetitions: every cell priced from the history of
//! earlier runs when they timed its target and workload, else from the coarse model; each
//! target's populated images priced once, however many cells copy them.

use super::history::History;
use super::model::{model_bytes, model_cell, model_image};
use crate::golden::layout::Layout;
use crate::plan::Plan;

/// The estimate and what it rests on.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Estimate {
    /// Seconds the minimum repetitions take.
    pub minimum_s: f64,
    /// Cells priced from history, and from the coarse model.
    pub from_history: usize,
    pub from_model: usize,
}

/// The populated image a cell of workload `w` on target `t` copies, if it copies one
/// instead of laying the data set down itself (only loop targets have images).
pub fn copied_layout(plan: &Plan, t: usize, w: &str) -> Option<Layout> {
    let loop_target = matches!(plan.targets[t].location, crate::plan::Location::Loop);
    loop_target
        .then(|| crate::workload::by_name(w))
        .flatten()
        .and_then(|w| Layout::copied_by(w.as_ref()))
}

/// What a workload's cells start from at one scale: its files (what most cells' cost grows
/// with) and its bytes (what a copy's grows with: [`model_bytes`]).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Size {
    pub files: f64,
    pub bytes: f64,
}

/// One cell to price: the target (an index into `plan.targets`), the data set (an index
/// into [`Plan::datasets`]) and the workload's name.
pub type Priced<'w> = (usize, usize, &'w str);

/// Prices `cells`: history first, else the model. `sizes` is what a workload's cells start
/// from at a scale of the series ([`Plan::scale_index`]), in files and bytes (the largest
/// data set's at that scale, or the workload's own state's: `workload::initial`); a
/// target's images grow with the largest. Each scale of a `--scale` series is priced as a plan of that
/// scale alone would be, and the series as their sum: every scale has its own cells and its
/// own images, so pricing them all at one scale misprices a series.
pub fn estimate(
    plan: &Plan,
    cells: &[Priced],
    sizes: &dyn Fn(&str, usize) -> Size,
    history: &History,
) -> Estimate {
    let mut e = Estimate::default();
    for (s, scale) in plan.scales().into_iter().enumerate() {
        let of_s: Vec<(usize, &str)> = (cells.iter())
            .filter(|c| plan.scale_index(c.1) == s)
            .map(|&(t, _, w)| (t, w))
            .collect();
        if of_s.is_empty() {
            continue;
        }
        let one = one_scale(plan, &of_s, &|w| sizes(w, s), scale, history);
        e.minimum_s += one.minimum_s;
        e.from_history += one.from_history;
        e.from_model += one.from_model;
    }
    e
}

/// Prices the `cells` (target index, workload name) of one scale, `scale`, whose
/// workloads start from `sizes`.
fn one_scale(
    plan: &Plan,
    cells: &[(usize, &str)],
    sizes: &dyn Fn(&str) -> Size,
    scale: f64,
    history: &History,
) -> Estimate {
    let mut e = Estimate::default();
    e.minimum_s += images(plan, cells, &|w| sizes(w).files, history);
    for &(t, w) in cells {
        let target = &plan.targets[t];
        let Size { files, bytes } = sizes(w);
        match history.cell(&target.name, w, files, plan.phase_floor) {
            Some(s) => {
                e.minimum_s += s;
                e.from_history += 1;
            }
            None => {
                let lays_down = copied_layout(plan, t, w).is_none();
                e.minimum_s += model_cell(target.fs, files, lays_down)
                    + model_bytes(target.fs, bytes, byte_passes(plan, w))
                    + fixed_seconds(plan, w, scale);
                e.from_model += 1;
            }
        }
    }
    e
}

/// Seconds each target's images take, once: as earlier runs priced them apart from their
/// cells, else one model image per layout the target's cells copy.
fn images(
    plan: &Plan,
    cells: &[(usize, &str)],
    files: &dyn Fn(&str) -> f64,
    history: &History,
) -> f64 {
    let mut imaged: Vec<(usize, Layout, u64)> = cells
        .iter()
        .filter_map(|&(t, w)| copied_layout(plan, t, w).map(|l| (t, l, files(w) as u64)))
        .collect();
    imaged.sort_unstable();
    imaged.dedup_by_key(|i| (i.0, i.1));
    let mut priced: Vec<usize> = Vec::new();
    let mut seconds = 0.0;
    for &(t, _, _) in &imaged {
        if priced.contains(&t) {
            continue;
        }
        priced.push(t);
        let target = &plan.targets[t];
        let layouts = imaged.iter().filter(|i| i.0 == t);
        let largest = layouts.clone().map(|i| i.2).max().unwrap_or(0) as f64;
        seconds += match history.images(&target.name, largest) {
            Some(s) => s,
            None => layouts.map(|i| model_image(target.fs, i.2 as f64)).sum(),
        };
    }
    seconds
}

/// What `plan`'s options for `w` fix of its cells' length on a data set at `scale` ([`Workload::fixed_seconds`]),
/// which the model's file count does not see.
///
/// [`Workload::fixed_seconds`]: crate::workload::Workload::fixed_seconds
fn fixed_seconds(plan: &Plan, w: &str, scale: f64) -> f64 {
    let empty = toml::Table::new();
    let options = plan.workload_options.get(w).unwrap_or(&empty);
    crate::workload::by_name(w).map_or(0.0, |wl| wl.fixed_seconds(options, scale))
}

/// How many times `plan`'s cells of `w` move their starting bytes ([`Workload::byte_passes`]).
///
/// [`Workload::byte_passes`]: crate::workload::Workload::byte_passes
fn byte_passes(plan: &Plan, w: &str) -> f64 {
    let empty = toml::Table::new();
    let options = plan.workload_options.get(w).unwrap_or(&empty);
    crate::workload::by_name(w).map_or(0.0, |wl| wl.byte_passes(options))
}

#[cfg(test)]
mod tests {
    use super::super::history::tests::{files_of, past_run, AT};
    use super::*;
    use crate::plan::FsKind;

    /// `files` files of no bytes worth pricing.
    fn of(files: f64) -> Size {
        Size { files, bytes: 0.0 }
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
        let files = files_of(&h, "ext4", "touch");
        assert_eq!(h.cell("ext4", "touch", files, AT), Some(1.0), "{h:?}");
        assert_eq!(h.images("ext4", files), Some(4.0));
        assert_eq!(h.images("ext4", 2.0 * files), Some(8.0));
        assert_eq!(h.images("xfs", files), None);
        // A plan of three touch cells on ext4 pays for the image once.
        let ext4 = crate::plan::catalogue::get("ext4").unwrap();
        let plan = Plan::of(vec![ext4], &["touch"], Default::default());
        let cells = [(0, 0, "touch"), (0, 0, "touch"), (0, 0, "touch")];
        let e = estimate(&plan, &cells, &|_, _| of(files), &h);
        assert_eq!(e.minimum_s, 4.0 + 3.0);
    }

    /// Without history, a cell on a copy of a populated image is not charged for creating
    /// the data set: the image is, once per target and layout.
    #[test]
    fn the_model_prices_each_image_once_and_cells_on_copies_without_it() {
        let ext4 = crate::plan::catalogue::get("ext4").unwrap();
        let plan = Plan::of(vec![ext4], &["create", "touch", "copy"], Default::default());
        let files = 11_000.0; // one second of creating at ext4's model rate
        let cells = [
            (0, 0, "create"),
            (0, 0, "touch"),
            (0, 0, "touch"),
            (0, 0, "copy"),
        ];
        let e = estimate(&plan, &cells, &|_, _| of(files), &History::default());
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

    /// The database study's dry run said "about 46 s" of a 97-minute run: each point of a
    /// db cell lasts its `duration`, which no file count prices.
    #[test]
    fn the_seconds_a_plan_fixes_for_a_cells_points_are_in_the_estimate() {
        let ext4 = crate::plan::catalogue::get("ext4").unwrap();
        let with = |options: &str| {
            let mut plan = Plan::of(vec![ext4.clone()], &["db"], Default::default());
            plan.workload_options
                .insert("db".into(), toml::from_str(options).unwrap());
            estimate(
                &plan,
                &[(0, 0, "db")],
                &|_, _| of(1000.0),
                &History::default(),
            )
            .minimum_s
        };
        let one = with("threads = 16\nduration = 1");
        // Two counts, each also with maintenance: four points of 10 s, each with its 3 s of
        // setup (the one point of `one`: 1 s and 3 s).
        let four = with("threads = [16, 8]\nduration = 10\nmaintenance = true");
        assert!((four - one - 48.0).abs() < 1e-9, "{four} - {one}");
        // An auto-tuned count searches 1, 2, 4 … 32 clients for a second each first.
        let auto = with("threads = \"auto\"\nduration = 1\nauto_max_threads = 32");
        assert!((auto - one - 6.0).abs() < 1e-9, "{auto} - {one}");
    }

    /// A `--scale` series was priced at one scale: each of its data sets has its own cells
    /// and its own images, so the series costs what its scales cost one by one.
    #[test]
    fn a_scale_series_is_priced_at_every_scale() {
        let ext4 = crate::plan::catalogue::get("ext4").unwrap();
        let scales = [0.001, 0.01, 0.1];
        let mut series = Plan::of(vec![ext4], &["create", "scan", "db"], Default::default());
        series.dataset.scale = scales[0];
        series.extra_scales = scales[1..].to_vec();
        let files = |d: usize| 1000.0 * 10f64.powi(d as i32);
        let cells = |d: usize| [(0, d, "create"), (0, d, "scan"), (0, d, "db")];
        let all: Vec<Priced> = (0..3).flat_map(cells).collect();
        let whole = estimate(&series, &all, &|_, d| of(files(d)), &History::default());
        let mut sum = 0.0;
        for (d, &scale) in scales.iter().enumerate() {
            let mut one = series.clone();
            one.dataset.scale = scale;
            one.extra_scales.clear();
            let e = estimate(&one, &cells(0), &|_, _| of(files(d)), &History::default());
            assert!(e.minimum_s > 0.0);
            sum += e.minimum_s;
        }
        assert!(
            (whole.minimum_s - sum).abs() < 1e-9,
            "{} != {sum}",
            whole.minimum_s
        );
        assert_eq!(whole.from_model, 9);
        let first = estimate(
            &series,
            &all[..3],
            &|_, _| of(files(0)),
            &History::default(),
        );
        assert!(
            whole.minimum_s > 3.0 * first.minimum_s,
            "the larger scales cost more"
        );
    }

    /// Defect (issue 60): the dry run priced copy-verify at ten times its default size at
    /// 0.23 of what it took, from the file count alone. At the same file count, a plan of
    /// copy-verify over ten times the bytes costs more by ten times the first's byte term;
    /// a workload that moves no bytes (`touch`) costs the same.
    #[test]
    fn a_copy_is_priced_by_its_bytes_as_well_as_its_files() {
        let ext4 = crate::plan::catalogue::get("ext4").unwrap();
        let plan = Plan::of(vec![ext4], &["copy-verify", "touch"], Default::default());
        let price = |w: &str, bytes: f64| {
            let size = Size {
                files: 10_000.0,
                bytes,
            };
            estimate(&plan, &[(0, 0, w)], &|_, _| size, &History::default()).minimum_s
        };
        let gib = (1u64 << 30) as f64;
        let (none, one, ten) = (
            price("copy-verify", 0.0),
            price("copy-verify", gib),
            price("copy-verify", 10.0 * gib),
        );
        assert!(one > none, "{one} > {none}");
        assert!(
            ((ten - none) - 10.0 * (one - none)).abs() < 1e-6,
            "{none} {one} {ten}"
        );
        assert_eq!(price("touch", 10.0 * gib), price("touch", 0.0));
    }
}
