use super::*;
use crate::results::Measurement;
use crate::stats::decision::Decision::{Better, Equivalent, Undecided, Worse};
use crate::stats::verdicts::{decide, Looks};

#[test]
fn the_rule_holds_flips_or_stays_undecided() {
    assert_eq!(outcome(&[Better, Undecided, Better]), Outcome::Holds);
    assert_eq!(outcome(&[Worse, Worse]), Outcome::Holds);
    assert_eq!(outcome(&[Equivalent, Equivalent]), Outcome::Holds);
    assert_eq!(outcome(&[Better, Worse]), Outcome::Flips);
    assert_eq!(outcome(&[Undecided, Better, Equivalent]), Outcome::Flips);
    assert_eq!(outcome(&[Better, Undecided]), Outcome::Undecided);
    assert_eq!(outcome(&[Undecided, Undecided]), Outcome::Undecided);
    assert_eq!(outcome(&[]), Outcome::Undecided);
}

/// Five runs of `target` at data set `dataset` of variant `variant`, taking `secs`.
fn runs(target: &str, dataset: &str, variant: &str, secs: &[f64]) -> Vec<Measurement> {
    secs.iter()
        .enumerate()
        .map(|(rep, &s)| Measurement {
            target: target.to_string(),
            fs: format!("{target}-fs"),
            workload: "w".to_string(),
            dataset: Some(dataset.to_string()),
            variant: variant.to_string(),
            threads: 1,
            repetition: rep as u32,
            metrics: [("seconds".to_string(), s)].into(),
            ..Default::default()
        })
        .collect()
}

const BASE: &[f64] = &[10.0, 10.1, 9.9, 10.05, 9.95];
const FAST: &[f64] = &[5.0, 5.1, 4.9, 5.05, 4.95];
const SLOW: &[f64] = &[20.0, 20.2, 19.8, 20.1, 19.9];
const NOISY: &[f64] = &[5.0, 20.0, 10.0, 15.0, 8.0];

#[test]
fn synthetic_verdicts_hold_flip_or_stay_undecided_across_sizes() {
    // Variant "h": faster at both sizes; "f": faster small, slower large; "u": decided at
    // the small size only.
    let mut ms = Vec::new();
    for (variant, small, large) in [("h", FAST, FAST), ("f", FAST, SLOW), ("u", FAST, NOISY)] {
        for (ds, b) in [("s1", small), ("s2", large)] {
            ms.extend(runs("a", ds, variant, BASE));
            ms.extend(runs("b", ds, variant, b));
        }
    }
    let points = decide(&ms, "a", 5.0, &Looks::fixed(), &|_| None);
    let steps = vec![vec!["s1".to_string(), "s2".to_string()]];
    let checks = check(&points, "a", &steps);
    assert_eq!(checks.len(), 3, "{checks:#?}");
    let of = |v: &str| checks.iter().find(|c| c.variant == v).unwrap();
    assert_eq!(of("h").outcome, Outcome::Holds);
    let f = of("f");
    assert_eq!(f.outcome, Outcome::Flips);
    let named: Vec<(&str, Decision)> = f
        .per_scale
        .iter()
        .map(|s| (s.dataset.as_str(), s.decision))
        .collect();
    assert_eq!(named, [("s1", Better), ("s2", Worse)]);
    assert_eq!(of("u").outcome, Outcome::Undecided);
    assert_eq!(of("u").per_scale[1].decision, Undecided);
    assert_eq!(tally(&checks), (1, 1, 1));
    // Nothing to check with one size, or with labels the points do not carry.
    assert!(check(&points, "a", &[vec!["s1".to_string()]]).is_empty());
    let none = check(&points, "a", &[vec!["x".to_string(), "y".to_string()]]);
    assert!(none.is_empty());
}
