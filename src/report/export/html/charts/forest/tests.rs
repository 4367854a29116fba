use super::*;
use crate::report::export::html::matrix::{Cell, Column, MatrixRow};

fn cell(state: State, pct: f64, interval: Interval) -> Cell {
    Cell {
        state,
        pct: Some(pct),
        interval,
        text: format!("{pct:+.1} %"),
        title: String::new(),
    }
}

fn baseline_cell() -> Cell {
    Cell {
        state: State::Baseline,
        pct: None,
        interval: Interval::None,
        text: "1000".into(),
        title: String::new(),
    }
}

/// ext4 (baseline), xfs, btrfs and tmpfs (reference) on create and scan [cold]/[warm].
fn matrix() -> Matrix {
    let col = |t: &str, role| Column {
        target: t.into(),
        role,
    };
    let row = |w: &str, p: &str, cells| MatrixRow {
        workload: w.into(),
        point: p.into(),
        threads: None,
        metric: "files/s ↑".into(),
        cells,
    };
    let better = State::Decided(Decision::Better);
    let worse = State::Decided(Decision::Worse);
    let undecided = State::Decided(Decision::Undecided);
    Matrix {
        baseline: "ext4".into(),
        columns: vec![
            col("ext4", Role::Baseline),
            col("xfs", Role::Candidate),
            col("btrfs", Role::Candidate),
            col("tmpfs", Role::Reference),
        ],
        rows: vec![
            row(
                "create",
                "",
                vec![
                    baseline_cell(),
                    cell(better, 100.0, Interval::Bounded(80.0, 120.0)),
                    cell(worse, -50.0, Interval::Bounded(-60.0, -40.0)),
                    cell(better, 1000.0, Interval::Bounded(900.0, 1100.0)),
                ],
            ),
            row(
                "scan",
                "cold",
                vec![
                    baseline_cell(),
                    cell(undecided, -3.0, Interval::Wide),
                    cell(undecided, 5.0, Interval::Bounded(-120.0, 40.0)),
                    cell(better, 900.0, Interval::None),
                ],
            ),
            row(
                "scan",
                "warm",
                vec![
                    baseline_cell(),
                    cell(State::Untested, 10.0, Interval::None),
                    cell(State::Missing, f64::NAN, Interval::None),
                    cell(better, 200.0, Interval::Bounded(150.0, 250.0)),
                ],
            ),
        ],
    }
}

#[test]
fn entries_are_grouped_by_workload_with_the_references_apart_and_last() {
    let g = groups(&matrix());
    let names: Vec<&str> = g.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["create", "scan", "reference (RAM): not ranked"]);
    let labels = |i: usize| g[i].1.iter().map(|e| e.label.clone()).collect::<Vec<_>>();
    assert_eq!(labels(0), ["xfs", "btrfs"]);
    // The missing btrfs cell of scan [warm] has no line.
    assert_eq!(labels(1), ["cold · xfs", "cold · btrfs", "warm · xfs"]);
    assert_eq!(
        labels(2),
        [
            "create · tmpfs",
            "scan [cold] · tmpfs",
            "scan [warm] · tmpfs"
        ]
    );
}

#[test]
fn the_axis_is_a_log_ratio_axis_set_by_the_disk_targets() {
    let g = groups(&matrix());
    let axis = Axis::covering(&g, 1);
    let x = |p: f64| axis.x(p).unwrap();
    // Halving and doubling lie the same distance either side of 0.
    assert!(((x(0.0) - x(-50.0)) - (x(100.0) - x(0.0))).abs() < 1e-9);
    // The disk targets' intervals fit (btrfs's −120 % end is unbounded: no log); the
    // references' +1000 % does not stretch the axis.
    assert!(x(-60.0) >= PL && x(120.0) <= PR, "{axis:?}");
    assert!(x(1000.0) > PR);
    assert!(axis.x(-120.0).is_none());
    let t = ticks(&axis);
    assert!(
        t.contains(&0.0) && t.contains(&-50.0) && t.contains(&100.0),
        "{t:?}"
    );
    let labels: Vec<String> = t.iter().map(|&p| tick_label(p)).collect();
    assert!(labels.contains(&"-50 %".to_string()) && labels.contains(&"+100 %".to_string()));
    assert!(labels.contains(&"0".to_string()));
    // Kept ticks never crowd each other's labels.
    for w in t.windows(2) {
        let gap = x(w[1]) - x(w[0]);
        let need =
            (text_width(&tick_label(w[0]), FONT) + text_width(&tick_label(w[1]), FONT)) / 2.0;
        assert!(gap > need, "{w:?}: {gap} < {need}");
    }
}

#[test]
fn a_narrow_comparison_still_gets_an_axis_from_minus_20_to_plus_25() {
    let mut m = matrix();
    m.columns.truncate(2);
    for r in &mut m.rows {
        r.cells.truncate(2);
    }
    m.rows[0].cells[1] = cell(
        State::Decided(Decision::Equivalent),
        1.0,
        Interval::Bounded(-2.0, 4.0),
    );
    m.rows.truncate(1);
    let axis = Axis::covering(&groups(&m), 0);
    assert!(axis.x(-20.0).unwrap() >= PL && axis.x(25.0).unwrap() <= PR);
    assert!(ticks(&axis).len() >= 3, "{:?}", ticks(&axis));
}

#[test]
fn wide_and_unbounded_intervals_are_drawn_as_such() {
    let svg = forest(&matrix()).unwrap();
    assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
    assert!(svg.contains("class=\"chart forest\""));
    // One ±? line (scan [cold] xfs), dashed across the axis.
    assert_eq!(svg.matches("class=\"wide\"").count(), 1);
    assert!(svg.contains(&format!("class=\"wide\" x1=\"{PL}\" x2=\"{PR}\"")));
    // Arrowheads: btrfs's open lower end, and the references beyond the axis (two intervals
    // with both ends off it, one point without an interval: 2 × 2 + 2 × 1 points + 1).
    assert!(svg.matches("class=\"open\"").count() >= 5, "{svg}");
    // Decision colours, not target colours.
    assert!(svg.contains(decision_color(State::Decided(Decision::Better))));
    assert!(svg.contains(decision_color(State::Decided(Decision::Worse))));
    assert!(svg.contains("class=\"entry worse\""));
    assert!(svg.contains("class=\"entry untested\""));
}

#[test]
fn tick_labels_read_as_percentages() {
    assert_eq!(tick_label(0.0), "0");
    assert_eq!(tick_label(-50.0), "-50 %");
    assert_eq!(tick_label(100.0), "+100 %");
    assert_eq!(tick_label(-99.0), "-99 %");
    assert_eq!(tick_label(-0.00001), "0");
}

#[test]
fn nothing_compared_draws_no_plot() {
    let mut m = matrix();
    m.columns.truncate(1);
    for r in &mut m.rows {
        r.cells.truncate(1);
    }
    assert!(forest(&m).is_none());
}

/// Defect: a long label ("copy [from-outside], 4 threads · btrfs-nodatasum") was shrunk to
/// fit the label column, down to a 6 px font nobody could read. It now wraps before the
/// target (and, if the point is long too, before its thread count) onto more lines, in a
/// taller row, at a readable size; short labels keep one line.
#[test]
fn a_long_label_wraps_before_its_target_instead_of_shrinking() {
    let (lines, size) = label_lines("from-outside, 4 threads · btrfs-nodatasum");
    assert_eq!(lines, ["from-outside, 4 threads ·", "btrfs-nodatasum"]);
    assert!(size >= MIN_FONT, "{size}");
    let (lines, size) = label_lines("scan [from-outside], 4 threads · tmpfs");
    assert_eq!(lines, ["scan [from-outside],", "4 threads · tmpfs"]);
    assert!(size >= MIN_FONT, "{size}");
    let (lines, size) = label_lines("cold · xfs");
    assert_eq!((lines.len(), size), (1, FONT));
    let mut m = matrix();
    m.columns[2].target = "btrfs-nodatasum".into();
    m.rows[1].point = "from-outside".into();
    m.rows[1].threads = Some(4);
    let svg = forest(&m).unwrap();
    let sizes: Vec<f64> = svg
        .match_indices("class=\"label\" x=\"")
        .filter_map(|(i, _)| {
            let rest = &svg[i..];
            let at = rest.find("font-size=\"")? + "font-size=\"".len();
            rest[at..].split('"').next()?.parse().ok()
        })
        .collect();
    assert!(!sizes.is_empty());
    assert!(sizes.iter().all(|&f| f >= MIN_FONT), "{sizes:?}");
    assert!(svg.contains("<tspan") && svg.contains(">btrfs-nodatasum</tspan>"));
    // Each wrapped row is taller: the plot grows by WRAP per line beyond a label's first.
    let wrapped = svg.matches("<tspan").count() - sizes.len();
    assert!(wrapped >= 1, "{svg}");
    let height = |svg: &str| -> f64 {
        let at = svg.find("height=\"").unwrap() + "height=\"".len();
        svg[at..].split('"').next().unwrap().parse().unwrap()
    };
    let before = height(&forest(&matrix()).unwrap());
    assert_eq!(height(&svg), before + wrapped as f64 * WRAP);
}
