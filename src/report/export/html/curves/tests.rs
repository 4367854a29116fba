use super::*;

fn m(target: &str, rep: u32, params: &[(&str, Value)], y: f64) -> Measurement {
    let params: BTreeMap<String, Value> = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    let variant = params
        .iter()
        .filter(|(k, _)| k.as_str() != "fitted_bytes")
        .map(|(k, v)| format!("{k}{v}"))
        .collect::<Vec<_>>()
        .join("-");
    Measurement {
        target: target.into(),
        workload: "sweep".into(),
        variant,
        params,
        repetition: rep,
        status: Status::Ok,
        metrics: [("y".to_string(), y)].into_iter().collect(),
        ..Default::default()
    }
}

const CURVE: Curve = Curve {
    x: "depth",
    x_label: "depth",
    metric: "y",
    y_label: "y",
    log_x: true,
    key: false,
};

#[test]
fn one_chart_per_other_params_one_line_per_target_median_of_repetitions() {
    let mut ms = Vec::new();
    for (target, fitted) in [("a", 100u64), ("b", 200)] {
        for mode in ["r", "w"] {
            for depth in [1u64, 4] {
                for rep in 0..2 {
                    ms.push(m(
                        target,
                        rep,
                        &[
                            ("mode", Value::from(mode)),
                            ("depth", Value::from(depth)),
                            ("depth_label", Value::from(format!("qd{depth}"))),
                            ("fitted_bytes", Value::from(fitted)),
                        ],
                        (depth * 10 + rep as u64) as f64,
                    ));
                }
            }
        }
    }
    let refs: Vec<&Measurement> = ms.iter().collect();
    let skip = not_splitting(&refs, "depth");
    // Fitted per target within a variant, and a label of x: neither splits.
    assert_eq!(
        skip.into_iter().collect::<Vec<_>>(),
        ["depth_label", "fitted_bytes"]
    );
    let g = groups(&refs, "depth", &[&CURVE]);
    let keys: Vec<String> = g.keys().map(|k| title("sweep", k)).collect();
    assert_eq!(keys, ["sweep mode=r", "sweep mode=w"]);
    for per_curve in g.values() {
        let lines = lines(&per_curve[0], false, &BTreeMap::new());
        assert_eq!(lines.len(), 2);
        for l in lines {
            assert_eq!(l.points, [(1.0, 10.5), (4.0, 40.5)]);
        }
    }
}

/// Issue 40 item 3: the curves drew the arithmetic mean of the repetitions while the
/// tables print the key metric's geometric mean and the other columns' medians, so one
/// point read two values. A curve of the key metric now draws the geometric mean (its
/// bars the geometric mean's interval), any other curve the median.
#[test]
fn a_curve_draws_the_figure_the_tables_print() {
    let mut samples = Samples::new();
    samples.insert("a".into(), vec![(1.0, vec![100.0, 400.0, 250.0])]);
    let key = lines(&samples, true, &BTreeMap::new());
    let geo = (100.0f64 * 400.0 * 250.0).powf(1.0 / 3.0);
    assert!(
        (key[0].points[0].1 - geo).abs() < 1e-9,
        "{:?}",
        key[0].points
    );
    let side = lines(&samples, false, &BTreeMap::new());
    assert_eq!(side[0].points, [(1.0, 250.0)]);
    let legend = [("a".to_string(), 0usize)];
    let bars = |is_key| {
        point_bars(
            &GroupKey::new(),
            &BTreeSet::new(),
            (&samples, is_key),
            "x",
            &legend,
        )
        .bars
    };
    let (k, s) = (bars(true), bars(false));
    assert!((k[0].value - geo).abs() < 1e-9 && k[0].ci.is_some());
    assert_eq!((s[0].value, s[0].ci), (250.0, None));
}

#[test]
fn byte_counts_and_strings_read_well_in_titles() {
    assert_eq!(shown("size_bytes", &Value::from(1048576u64)), "1.0 MiB");
    assert_eq!(shown("mode", &Value::from("r")), "r");
    assert_eq!(shown("direct", &Value::from(true)), "true");
}
