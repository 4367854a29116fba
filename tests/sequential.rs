//! The run's decisions hold under `--runs auto`'s adaptive stopping: simulated budgeted runs
//! of synthetic samples through the same functions the runner and the report call
//! (`runner::budget::open_questions` and `plan_round` choose the next round,
//! `stats::verdicts::decide` gives the final verdicts), with a fixed-seed generator.
//!
//! A simulated run: one workload point at 1, 2 and 4 threads, a baseline and two candidates
//! (6 comparisons with the baseline, plus the ranking pairs, in one family), 3 runs each,
//! then rounds of one more repetition for every open comparison until none is open or the
//! groups reach 30 runs. Run times are lognormal around each target's true mean.

use std::collections::HashMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use fsarena::plan::{Plan, Runs};
use fsarena::report::model::key_metric;
use fsarena::results::store::Loaded;
use fsarena::results::{HostFacts, Measurement};
use fsarena::runner::budget::{open_questions, plan_round, Group};
use fsarena::stats::verdicts;
use fsarena::stats::Decision;

const TARGETS: [&str; 3] = ["base", "c1", "c2"];
const THREADS: [u32; 3] = [1, 2, 4];
const MIN_RUNS: u32 = 3;
const MAX_RUNS: u32 = 30;

/// One simulated lab: each target's true mean run time and run-to-run CV.
struct Lab {
    mean: [f64; 3],
    cv: [f64; 3],
}

fn normal(rng: &mut ChaCha8Rng) -> f64 {
    // Box–Muller.
    let (u, v): (f64, f64) = (rng.gen_range(f64::EPSILON..1.0), rng.gen());
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

fn plan(runs: Runs) -> serde_json::Value {
    let mut plan = Plan::of(Vec::new(), &["sim"], Default::default());
    plan.baseline = "base".into();
    plan.runs = runs;
    serde_json::to_value(plan).unwrap()
}

fn measure(lab: &Lab, t: usize, threads: u32, rep: u32, rng: &mut ChaCha8Rng) -> Measurement {
    let sigma = (1.0 + lab.cv[t] * lab.cv[t]).ln().sqrt();
    let seconds = lab.mean[t] * (sigma * normal(rng)).exp();
    Measurement {
        target: TARGETS[t].into(),
        fs: "ext4".into(),
        workload: "sim".into(),
        threads,
        repetition: rep,
        metrics: [("seconds".to_string(), seconds)].into_iter().collect(),
        ..Default::default()
    }
}

/// How one simulated run ended: per comparison with the baseline (c1, c2 at each thread
/// count) its decision, and whether any ranking pair was called.
struct Ended {
    decisions: Vec<(usize, Decision)>,
    pairs_called: usize,
}

fn run_once(lab: &Lab, runs: Runs, rng: &mut ChaCha8Rng) -> Ended {
    let mut state = Loaded {
        host: HostFacts {
            plan: plan(runs),
            ..HostFacts::default()
        },
        measurements: Vec::new(),
        skipped: Vec::new(),
    };
    let mut done: HashMap<Group, u32> = HashMap::new();
    let target_of = |name: &str| TARGETS.iter().position(|t| *t == name).unwrap();
    for rep in 0..MIN_RUNS {
        for threads in THREADS {
            for t in 0..3 {
                state.measurements.push(measure(lab, t, threads, rep, rng));
            }
        }
    }
    for threads in THREADS {
        for t in TARGETS {
            let g = Group {
                target: t.into(),
                workload: "sim".into(),
                dataset: None,
                threads,
            };
            done.insert(g, MIN_RUNS);
        }
    }
    loop {
        let open = open_questions(&state, 5.0).unwrap();
        let round = plan_round(&open, "base", &done, MAX_RUNS, &|_| 1.0, f64::MAX);
        if round.groups.is_empty() {
            break;
        }
        for g in round.groups {
            let rep = done[&g];
            let m = measure(lab, target_of(&g.target), g.threads, rep, rng);
            state.measurements.push(m);
            *done.get_mut(&g).unwrap() += 1;
        }
    }
    let looks = verdicts::planned_looks(&state);
    let points = verdicts::decide(&state.measurements, "base", 5.0, &looks, &key_metric);
    let mut decisions = Vec::new();
    let mut pairs_called = 0;
    for p in &points {
        for (i, g) in p.groups.iter().enumerate() {
            if let Some(v) = p.vs_baseline(i).and_then(|c| c.verdict.as_ref()) {
                decisions.push((target_of(&g.key.target), v.decision));
            }
        }
        pairs_called += p.pairs.iter().filter(|r| r.decisive()).count();
    }
    Ended {
        decisions,
        pairs_called,
    }
}

fn auto() -> Runs {
    Runs::Auto {
        min: MIN_RUNS,
        max: MAX_RUNS,
        budget: std::time::Duration::from_secs(300),
    }
}

/// The share of `n` simulated A/A runs (every target the same) with any false better/worse,
/// among the comparisons with the baseline or the ranking pairs; the runs are shared out
/// over two threads, each with its own seeded generator, so the answer is the same on any
/// machine.
fn false_call_rate(cv: [f64; 3], runs: Runs, n: usize, seed: u64) -> f64 {
    let lab = Lab { mean: [1.0; 3], cv };
    let half = |k: u64, count: usize| {
        let lab = &lab;
        move || {
            let mut rng = ChaCha8Rng::seed_from_u64(seed * 2 + k);
            (0..count)
                .filter(|_| {
                    let e = run_once(lab, runs, &mut rng);
                    e.pairs_called > 0
                        || e.decisions
                            .iter()
                            .any(|(_, d)| matches!(d, Decision::Better | Decision::Worse))
                })
                .count()
        }
    };
    let false_runs = std::thread::scope(|s| {
        let other = s.spawn(half(1, n / 2));
        half(0, n - n / 2)() + other.join().unwrap()
    });
    false_runs as f64 / n as f64
}

/// What the issue asks: over at least 2,000 simulated budgeted A/A runs with run-to-run CVs
/// of 5 to 20 %, no more than 5 % call a false difference.
const SIMULATED_RUNS: usize = 2_000;

#[test]
fn a_budgeted_run_makes_few_false_calls_under_a_a() {
    let mut false_runs = 0.0;
    let mut lines = Vec::new();
    for (cv, seed) in [(0.05, 1), (0.10, 2), (0.20, 3)] {
        let n = SIMULATED_RUNS / 3 + 1;
        let rate = false_call_rate([cv; 3], auto(), n, seed);
        false_runs += rate * n as f64;
        lines.push(format!(
            "CV {:.0} %: {:.2} % of {n}",
            cv * 100.0,
            rate * 100.0
        ));
    }
    let total = 3 * (SIMULATED_RUNS / 3 + 1);
    let rate = false_runs / total as f64;
    eprintln!(
        "A/A: false calls in {:.2} % of {total} runs ({})",
        rate * 100.0,
        lines.join("; ")
    );
    assert!(
        rate <= 0.05,
        "{:.2} % of {total} A/A runs called a false difference ({})",
        rate * 100.0,
        lines.join("; ")
    );
}

/// Unequal spreads (a noisy candidate beside steady targets) must not borrow the steady ones'
/// small variance freely: a plain posterior variance made 12.5 % false calls here. This is a
/// known weakness, not a pass at 5 %: measured on 400 runs per case, the moderated test makes
/// 5.5 % (one 20 % target) and 7.0 % (two) false calls, above the 5 % the equal-spread runs
/// keep (README, "Statistics"). The bound catches a return to free borrowing.
#[test]
fn unequal_spreads_do_not_borrow_a_small_variance() {
    for (cv, seed) in [([0.05, 0.20, 0.05], 4), ([0.05, 0.20, 0.20], 5)] {
        let rate = false_call_rate(cv, auto(), 400, seed);
        eprintln!(
            "A/A, CVs {cv:?}: false calls in {:.2} % of 400 runs",
            rate * 100.0
        );
        assert!(
            rate <= 0.10,
            "CVs {cv:?}: {:.2} % of 400 A/A runs called a false difference",
            rate * 100.0
        );
    }
}

/// The check above can fail: the same runs judged every round at the full α, as a fixed-size
/// run is (what `--runs auto` did before the looks were accounted for), call false
/// differences far more often than α.
#[test]
fn looking_every_round_at_full_alpha_fails_the_a_a_check() {
    // A fixed plan is judged with all of α at every round; the loop still stops a
    // comparison when decided and repeats it up to 30 runs.
    let rate = false_call_rate([0.10; 3], Runs::Fixed(MAX_RUNS), 400, 6);
    assert!(
        rate > 0.05,
        "repeated looks at full α: only {:.2} % false",
        rate * 100.0
    );
    eprintln!(
        "A/A, CV 10 %, every round at full α: false calls in {:.2} % of runs",
        rate * 100.0
    );
}

/// Simulated runs behind the power check (each gives six comparisons).
const POWER_RUNS: usize = 300;

#[test]
fn a_true_ten_percent_difference_is_found_within_the_budget() {
    // c1 10 % slower, c2 10 % faster than the baseline; CV 5 % everywhere.
    let lab = Lab {
        mean: [1.0, 1.1, 1.0 / 1.1],
        cv: [0.05; 3],
    };
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let (mut right, mut wrong, mut total) = (0usize, 0usize, 0usize);
    for _ in 0..POWER_RUNS {
        for (t, d) in run_once(&lab, auto(), &mut rng).decisions {
            total += 1;
            // Seconds: lower is better.
            let want = if t == 1 {
                Decision::Worse
            } else {
                Decision::Better
            };
            if d == want {
                right += 1;
            } else if matches!(d, Decision::Better | Decision::Worse) {
                wrong += 1;
            }
        }
    }
    let share = right as f64 / total as f64;
    assert!(
        share >= 0.80 && wrong == 0,
        "decided right in {:.2} % of {total} comparisons, {wrong} the wrong way",
        share * 100.0
    );
    eprintln!(
        "10 % at CV 5 %: decided right in {:.2} % of {total}",
        share * 100.0
    );
}
