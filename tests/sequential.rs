//! The run's decisions hold under `--runs auto`'s adaptive stopping: simulated budgeted runs
//! of synthetic samples through the same functions the runner and the report call
//! (`runner::budget::open_questions` and `plan_round` choose the next round,
//! `stats::verdicts::decide` gives the final verdicts), with a fixed-seed generator.
//!
//! A simulated run: one workload point at 1, 2 and 4 threads, a baseline and two candidates
//! (6 comparisons with the baseline, plus the ranking pairs, in one family), 3 runs each,
//! then rounds of one more repetition for every open comparison until none is open or the
//! groups reach 30 runs. Run times are lognormal around each target's true mean, times the
//! round's drift: the machine's speed in that round, the same for every target (what
//! blocking by round takes out of a comparison), none unless a test says so.

use std::collections::HashMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use fsarena::plan::{Plan, Runs};
use fsarena::report::key_metric;
use fsarena::results::store::Loaded;
use fsarena::results::{HostFacts, Measurement};
use fsarena::runner::budget::{open_questions, plan_round, Group};
use fsarena::stats::verdicts;
use fsarena::stats::Decision;

const TARGETS: [&str; 3] = ["base", "c1", "c2"];
const THREADS: [u32; 3] = [1, 2, 4];
const MIN_RUNS: u32 = 3;
const MAX_RUNS: u32 = 30;

/// One simulated lab: each target's true mean run time and run-to-run CV, the spread
/// (on the log scale) of the machine's speed from one round to the next, and the CPU time
/// a hypervisor steals from each phase, if any.
#[derive(Clone, Copy)]
struct Lab {
    mean: [f64; 3],
    cv: [f64; 3],
    drift: f64,
    steal: Option<Steal>,
}

/// A hypervisor that steals CPU time from each phase in bursts, independently of the
/// target: mostly 0–5 % of the CPUs' time, in [`BURST_SHARE`] of the phases 20–40 % (what
/// the dev VM's default runs showed: median 2–4 %, 90th percentile 20–30 %). Each run's log
/// time grows by `slope` per unit of stolen fraction × [`CPUS`] (1.2 is the middle of the
/// slopes measured on three default runs, 0.5–2.2); `recorded` says whether the records
/// carry the figure (`cpu_steal_pct`), so that the same data can be judged with and
/// without the adjustment.
#[derive(Clone, Copy)]
struct Steal {
    slope: f64,
    recorded: bool,
}

/// The simulated machine's CPUs (the steal figure is a share of all of them).
const CPUS: f64 = 2.0;
/// The share of phases hit by a burst of steal.
const BURST_SHARE: f64 = 0.15;
/// The slope of the log run time on the stolen fraction × CPUs.
const STEAL_SLOPE: f64 = 1.2;

/// A lab whose targets all have the same `cv`, on a steady machine without steal.
fn lab(mean: [f64; 3], cv: f64) -> Lab {
    Lab {
        mean,
        cv: [cv; 3],
        drift: 0.0,
        steal: None,
    }
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

/// One run of target `t` in a round whose drift is `shift` (a log factor).
fn measure(
    lab: &Lab,
    (t, threads, rep): (usize, u32, u32),
    shift: f64,
    rng: &mut ChaCha8Rng,
) -> Measurement {
    let sigma = (1.0 + lab.cv[t] * lab.cv[t]).ln().sqrt();
    let mut seconds = lab.mean[t] * (sigma * normal(rng) + shift).exp();
    let mut metrics: std::collections::BTreeMap<String, f64> = Default::default();
    if let Some(steal) = lab.steal {
        let stolen = if rng.gen_bool(BURST_SHARE) {
            rng.gen_range(0.20..0.40)
        } else {
            rng.gen_range(0.0..0.05)
        };
        seconds *= (steal.slope * stolen * CPUS).exp();
        if steal.recorded {
            metrics.insert("cpu_steal_pct".into(), stolen * 100.0);
        }
    }
    metrics.insert("seconds".into(), seconds);
    Measurement {
        target: TARGETS[t].into(),
        fs: "ext4".into(),
        workload: "sim".into(),
        threads,
        repetition: rep,
        metrics,
        ..Default::default()
    }
}

/// How one simulated run ended: per comparison with the baseline (c1, c2 at each thread
/// count) its decision, and whether any ranking pair was called.
struct Ended {
    decisions: Vec<(usize, Decision)>,
    pairs_called: usize,
    /// Calls (better/worse) among the family's own comparisons (with the baseline, and the
    /// ranking pairs that do not hold it), and those the lab's true means contradict.
    calls: usize,
    false_calls: usize,
    /// Runs measured, minimum included.
    measured: usize,
}

/// Whether a call that `win` (as candidate) is `d` against `next` is false in `lab`: the
/// direction is wrong, or the true means are equal (seconds: lower is better).
fn is_false(lab: &Lab, win: usize, next: usize, d: Decision) -> bool {
    let (w, n) = (lab.mean[win], lab.mean[next]);
    match d {
        Decision::Better => w >= n,
        Decision::Worse => w <= n,
        _ => false,
    }
}

fn run_once(lab: &Lab, runs: Runs, rng: &mut ChaCha8Rng) -> Ended {
    run_blocked(lab, (runs, MIN_RUNS), true, rng)
}

/// One simulated run of `first` runs per group, then rounds as `runs` allows; unless
/// `blocked`, the candidates' runs are numbered apart from the
/// baseline's (repetition + 1000), so that no run is paired with the baseline's run of its
/// round and every comparison is the unpaired one: the same data judged without blocking.
fn run_blocked(
    lab: &Lab,
    (runs, first): (Runs, u32),
    blocked: bool,
    rng: &mut ChaCha8Rng,
) -> Ended {
    let number = |t: usize, rep: u32| if blocked || t == 0 { rep } else { rep + 1000 };
    let mut state = Loaded {
        host: HostFacts {
            plan: plan(runs),
            ..HostFacts::default()
        },
        measurements: Vec::new(),
        skipped: Vec::new(),
        set_aside: Vec::new(),
        budget_stops: Vec::new(),
    };
    let mut done: HashMap<Group, u32> = HashMap::new();
    let target_of = |name: &str| TARGETS.iter().position(|t| *t == name).unwrap();
    for rep in 0..first {
        let shift = lab.drift * normal(rng);
        for threads in THREADS {
            for t in 0..3 {
                let m = measure(lab, (t, threads, number(t, rep)), shift, rng);
                state.measurements.push(m);
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
            done.insert(g, first);
        }
    }
    loop {
        let open = open_questions(&state, 5.0).unwrap();
        let round = plan_round(&open, "base", &done, runs.max(), &|_| 1.0, f64::MAX);
        if round.groups.is_empty() {
            break;
        }
        let shift = lab.drift * normal(rng);
        for g in round.groups {
            let rep = done[&g];
            let t = target_of(&g.target);
            let m = measure(lab, (t, g.threads, number(t, rep)), shift, rng);
            state.measurements.push(m);
            *done.get_mut(&g).unwrap() += 1;
        }
    }
    let looks = verdicts::planned_looks(&state);
    let points = verdicts::decide(&state.measurements, "base", 5.0, &looks, &key_metric);
    let mut decisions = Vec::new();
    let (mut pairs_called, mut calls, mut false_calls) = (0, 0, 0);
    let called = |d: Decision| matches!(d, Decision::Better | Decision::Worse);
    for p in &points {
        let target = |i: usize| target_of(&p.groups[i].key.target);
        for i in 0..p.groups.len() {
            if let Some(v) = p.vs_baseline(i).and_then(|c| c.verdict.as_ref()) {
                // An undecided range is at the level a call would need now, so it holds
                // zero (issue 58: a plain 95 % interval could leave it out).
                if let (Decision::Undecided, Some((lo, hi))) = (v.decision, v.within_pct) {
                    let level = v.within_level.unwrap_or(0.0);
                    assert!(lo <= 0.0 && 0.0 <= hi && level >= 0.95, "{v:?}");
                    // And the interval printed beside the % is that range, at its level.
                    let c = p.vs_baseline(i).unwrap();
                    assert!(c.pct_ci95 == v.within_pct && v.ci_level == v.within_level);
                }
                decisions.push((target(i), v.decision));
                calls += usize::from(called(v.decision));
                false_calls += usize::from(is_false(lab, target(i), 0, v.decision));
            }
        }
        pairs_called += p.pairs.iter().filter(|r| r.decisive()).count();
        for r in p.pairs.iter().filter(|r| r.decisive()) {
            let (win, next) = (target(r.win), target(r.next));
            let Some(v) = r.cmp.as_ref().and_then(|c| c.verdict.as_ref()) else {
                continue;
            };
            // A pair holding the baseline is its comparison with the baseline, counted above.
            if win != 0 && next != 0 {
                calls += 1;
                false_calls += usize::from(is_false(lab, win, next, v.decision));
            }
        }
    }
    Ended {
        decisions,
        pairs_called,
        calls,
        false_calls,
        measured: state.measurements.len(),
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
    false_call_rate_drifting(cv, 0.0, runs, n, seed)
}

/// [`false_call_rate`] on a machine whose speed drifts from round to round by `drift`.
fn false_call_rate_drifting(cv: [f64; 3], drift: f64, runs: Runs, n: usize, seed: u64) -> f64 {
    let lab = Lab {
        mean: [1.0; 3],
        cv,
        drift,
        steal: None,
    };
    false_call_rate_in(&lab, runs, n, seed)
}

/// [`false_call_rate`] in `lab` (whose means must all be equal).
fn false_call_rate_in(lab: &Lab, runs: Runs, n: usize, seed: u64) -> f64 {
    let half = |k: u64, count: usize| {
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

/// Each CV on a steady machine and on one whose speed drifts by 10 % (log scale) from round
/// to round, the same for every target: the drift is what blocking by round takes out, so
/// half of the runs exercise the paired test where it matters.
#[test]
fn a_budgeted_run_makes_few_false_calls_under_a_a() {
    let cases = [
        (0.05, 0.0, 1),
        (0.10, 0.0, 2),
        (0.20, 0.0, 3),
        (0.05, 0.10, 11),
        (0.10, 0.10, 12),
        (0.20, 0.10, 13),
    ]
    .map(|(cv, drift, seed)| {
        let lab = Lab {
            drift,
            ..lab([1.0; 3], cv)
        };
        let label = format!("CV {:.0} %, drift {:.0} %", cv * 100.0, drift * 100.0);
        (lab, seed, label)
    });
    assert_few_false_calls("A/A", &cases);
}

/// Runs [`SIMULATED_RUNS`] simulated budgeted A/A runs, shared out over `cases` (each a lab
/// with equal means, a seed and a label), says how many called a false difference, and
/// checks that no more than 5 % did.
fn assert_few_false_calls(what: &str, cases: &[(Lab, u64, String)]) {
    let n = SIMULATED_RUNS / cases.len() + 1;
    let mut false_runs = 0.0;
    let mut lines = Vec::new();
    for (lab, seed, label) in cases {
        let rate = false_call_rate_in(lab, auto(), n, *seed);
        false_runs += rate * n as f64;
        lines.push(format!("{label}: {:.2} % of {n}", rate * 100.0));
    }
    let total = cases.len() * n;
    let rate = false_runs / total as f64;
    eprintln!(
        "{what}: false calls in {:.2} % of {total} runs ({})",
        rate * 100.0,
        lines.join("; ")
    );
    assert!(
        rate <= 0.05,
        "{what}: {:.2} % of {total} runs called a false difference ({})",
        rate * 100.0,
        lines.join("; ")
    );
}

/// The same check with a hypervisor stealing CPU time in bursts (independent of the
/// target), each phase's steal recorded, so that every comparison is adjusted for it
/// (`stats::steal`): with the slope the dev VM showed and with none (the adjustment then
/// only costs its degree of freedom), each CV and drift as above; over at least 2,000
/// simulated budgeted runs no more than 5 % call a false difference.
#[test]
fn a_budgeted_run_adjusted_for_steal_makes_few_false_calls_under_a_a() {
    let mut cases = Vec::new();
    for (slope, seed) in [(STEAL_SLOPE, 20), (0.0, 40)] {
        for (k, (cv, drift)) in [0.05, 0.10, 0.20]
            .into_iter()
            .flat_map(|cv| [(cv, 0.0), (cv, 0.10)])
            .enumerate()
        {
            let lab = Lab {
                drift,
                steal: Some(Steal {
                    slope,
                    recorded: true,
                }),
                ..lab([1.0; 3], cv)
            };
            let label = format!(
                "slope {slope}, CV {:.0} %, drift {:.0} %",
                cv * 100.0,
                drift * 100.0
            );
            cases.push((lab, seed + k as u64, label));
        }
    }
    assert_few_false_calls("A/A with steal, adjusted", &cases);
}

/// Simulated A/A runs per case of unequal spreads (issue 58 asks for at least 2,000).
const UNEQUAL_RUNS: usize = 2_000;

/// The upper end of the 95 % Wilson score interval of a share `k / n`.
fn wilson_upper(k: f64, n: f64) -> f64 {
    let z: f64 = 1.959964;
    let p = k / n;
    let centre = p + z * z / (2.0 * n);
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
    (centre + half) / (1.0 + z * z / n)
}

/// Checks each case of unequal spreads (CVs of base, c1, c2; the plan's runs; a label; a
/// seed): at most 5 % of [`UNEQUAL_RUNS`] A/A runs call a false better/worse, and the upper
/// end of its 95 % Wilson interval is at most 6 % (docs/statistics.md's table has the
/// measured figures).
fn assert_unequal_spreads_hold(cases: &[([f64; 3], Runs, &str, u64)]) {
    let mut failed = Vec::new();
    for &(cv, runs, label, seed) in cases {
        let rate = false_call_rate(cv, runs, UNEQUAL_RUNS, seed);
        let n = UNEQUAL_RUNS as f64;
        let upper = wilson_upper((rate * n).round(), n);
        let line = format!(
            "A/A, {label}: false calls in {:.2} % of {UNEQUAL_RUNS} runs (95 % bound {:.2} %)",
            rate * 100.0,
            upper * 100.0
        );
        eprintln!("{line}");
        if rate > 0.05 || upper > 0.06 {
            failed.push(line);
        }
    }
    assert!(failed.is_empty(), "{failed:?}");
}

/// Unequal spreads must not let a noisy target borrow the steady ones' small variance
/// (issue 58: with 2 degrees of freedom a 20 % CV side's variance often fell below the
/// pooled prior, took it with 10–18 degrees of freedom, and 6.9 % of A/A runs at `--runs 3`
/// called a false difference), nor Welch–Satterthwaite's degrees of freedom overstate what
/// a noisy side of three runs holds: one noisy candidate (CV 20 % among 5 %) and a noisy
/// baseline at a fixed three runs ([`assert_unequal_spreads_hold`]).
#[test]
fn a_noisy_target_does_not_borrow_a_steady_targets_variance() {
    assert_unequal_spreads_hold(&[
        (
            [0.05, 0.20, 0.05],
            Runs::Fixed(3),
            "noisy candidate, 3 runs",
            41,
        ),
        (
            [0.20, 0.05, 0.05],
            Runs::Fixed(3),
            "noisy baseline, 3 runs",
            43,
        ),
    ]);
}

/// The same under `--runs auto` (looks up to 30 runs, where Mann–Whitney beside a noisy side
/// once called false differences too).
/// (40 s on the quiet 2-core machine: 2,000 budgeted runs per case, as issue 58 asks.)
#[test]
fn a_noisy_target_does_not_borrow_a_steady_targets_variance_under_the_budget() {
    assert_unequal_spreads_hold(&[
        ([0.05, 0.20, 0.05], auto(), "noisy candidate, budgeted", 42),
        ([0.20, 0.05, 0.05], auto(), "noisy baseline, budgeted", 44),
    ]);
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

/// The share of comparisons decided the right way over `n` simulated runs of `lab` (c1 true
/// mean above the baseline's, c2 below), those decided the wrong way, and the mean runs
/// measured per simulated run.
fn power(lab: &Lab, runs: (Runs, u32), blocked: bool, n: usize, seed: u64) -> (f64, usize, f64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut right, mut wrong, mut total, mut measured) = (0usize, 0usize, 0usize, 0usize);
    for _ in 0..n {
        let e = run_blocked(lab, runs, blocked, &mut rng);
        measured += e.measured;
        for (t, d) in e.decisions {
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
    (
        right as f64 / total as f64,
        wrong,
        measured as f64 / n as f64,
    )
}

#[test]
fn a_true_ten_percent_difference_is_found_within_the_budget() {
    // c1 10 % slower, c2 10 % faster than the baseline; CV 5 % everywhere.
    let lab = Lab {
        mean: [1.0, 1.1, 1.0 / 1.1],
        cv: [0.05; 3],
        drift: 0.0,
        steal: None,
    };
    for (drift, seed) in [(0.0, 7), (0.10, 10)] {
        let lab = Lab { drift, ..lab };
        let (share, wrong, _) = power(&lab, (auto(), MIN_RUNS), true, POWER_RUNS / 2, seed);
        let total = POWER_RUNS / 2 * 6;
        eprintln!(
            "10 % at CV 5 %, round drift {:.0} %: decided right in {:.2} % of {total}",
            drift * 100.0,
            share * 100.0
        );
        assert!(
            share >= 0.80 && wrong == 0,
            "drift {drift}: decided right in {:.2} % of {total} comparisons, {wrong} the wrong way",
            share * 100.0
        );
    }
}

/// Power at the fewest runs: a true ±10 % at CV 5 % with a fixed three runs a side, the
/// shape of issue 58's "~25 %", which it must not fall below. Borrowing variance is what
/// decides most of these; the homogeneity check before pooling cost some of it (24.32 % of
/// 6,000 comparisons, 25.58 % before it), and Hsu's degrees of freedom where it rejects
/// more (22.97 %); each side borrowing its own target's prior where it rejects won it back:
/// 25.63 % (docs/statistics.md).
#[test]
fn a_true_ten_percent_difference_is_found_at_three_runs_by_borrowing_variance() {
    let lab = lab([1.0, 1.1, 1.0 / 1.1], 0.05);
    let n = THREE_RUN_POWER_RUNS;
    let (share, wrong, _) = power(&lab, (Runs::Fixed(3), 3), true, n, 16);
    eprintln!(
        "10 % at CV 5 %, 3 runs: decided right in {:.2} % of {}",
        share * 100.0,
        n * 6
    );
    assert!(
        share >= THREE_RUN_POWER && wrong == 0,
        "3 runs: decided right in {:.2} % of {} comparisons, {wrong} the wrong way",
        share * 100.0,
        n * 6
    );
}

/// Issue 58 item 4: beside "undecided" every output printed the plain 95 % interval of the
/// difference ("+5.0 % ±3.0", `pct_ci95` with `ci_level` 0.95), which could leave zero out
/// beside a range ("within -0.5 to +10.5 %") at the level a call would need; summary.json
/// said 0.95 beside a `within_level` of 0.976. An undecided comparison's interval is now
/// its range at its level (asserted in every simulated run, [`run_blocked`]); here 300 runs
/// at a fixed 3 runs and a true 5 % at CV 5 %, most of whose comparisons stay undecided.
#[test]
fn an_undecided_comparisons_interval_is_its_range_at_its_level() {
    let lab = lab([1.0, 1.05, 1.0 / 1.05], 0.05);
    let mut rng = ChaCha8Rng::seed_from_u64(58);
    let undecided: usize = (0..300)
        .map(|_| run_once(&lab, Runs::Fixed(3), &mut rng).decisions)
        .map(|d| d.iter().filter(|(_, d)| *d == Decision::Undecided).count())
        .sum();
    assert!(undecided > 900, "{undecided} undecided of 1,800");
}

/// Simulated runs behind the three-run power check (six comparisons each).
const THREE_RUN_POWER_RUNS: usize = 1_000;
/// The least share of the three-run power check decided right (measured: 25.63 %): the
/// issue's "~25 %" (25.58 % before the homogeneity check).
const THREE_RUN_POWER: f64 = 0.25;

/// Adjusting for steal gains power at few runs: with bursts of steal slowing every target
/// alike (slope [`STEAL_SLOPE`]), a true 10 % difference at CV 5 % is judged on the same
/// simulated data with the steal recorded (adjusted) and without it (as old records are
/// judged): within the budget the adjusted runs decide at least 80 % the right way, none
/// the wrong way, with fewer runs; and with the minimum three runs alone, far more.
#[test]
fn adjusting_for_steal_finds_a_true_difference_with_fewer_runs() {
    let with = |recorded| Lab {
        steal: Some(Steal {
            slope: STEAL_SLOPE,
            recorded,
        }),
        ..lab([1.0, 1.1, 1.0 / 1.1], 0.05)
    };
    let total = STEAL_POWER_RUNS * 6;
    let mut shares = Vec::new();
    for (runs, name) in [
        ((auto(), MIN_RUNS), "budgeted"),
        ((Runs::Fixed(3), 3), "3 runs"),
    ] {
        let (adj, wrong, m_adj) = power(&with(true), runs, true, STEAL_POWER_RUNS, 15);
        let (raw, _, m_raw) = power(&with(false), runs, true, STEAL_POWER_RUNS, 15);
        eprintln!(
            "10 % at CV 5 % with steal, {name}: decided right in {:.2} % adjusted ({wrong} \
             wrong, {m_adj:.1} runs measured per simulated run), {:.2} % unadjusted \
             ({m_raw:.1} runs) of {total}",
            adj * 100.0,
            raw * 100.0
        );
        assert_eq!(wrong, 0, "{name}: {wrong} decided the wrong way");
        shares.push((adj, raw, m_adj, m_raw));
    }
    let ((budget_adj, _, m_adj, m_raw), (three_adj, three_raw, _, _)) = (shares[0], shares[1]);
    assert!(budget_adj >= 0.80 && m_adj < m_raw, "{shares:?}");
    // 19.67 % against 0.00 % since Hsu's degrees of freedom where the homogeneity check
    // rejects (issue 58); the bound was 20 points before that change.
    assert!(three_adj > three_raw + 0.15, "{shares:?}");
}

/// Simulated runs behind each power figure with steal.
const STEAL_POWER_RUNS: usize = 100;

/// The adaptive two-stage step-up (`stats::decision::two_stage`) judges a run by how many
/// of its differences look real, so the A/A runs above, where none is, cannot show what it
/// does when most are: here c2 is 10 % faster than the baseline and c1 the same as it (CV
/// 5 %, round drift 10 %), and over the simulated runs the share of false calls among the
/// calls (the false discovery rate the procedure promises, ranking pairs included) stays
/// within 5 %, while c2 is still found.
#[test]
fn a_run_with_real_differences_keeps_its_false_discoveries_within_five_percent() {
    let lab = Lab {
        mean: [1.0, 1.0, 1.0 / 1.1],
        cv: [0.05; 3],
        drift: 0.10,
        steal: None,
    };
    let mut rng = ChaCha8Rng::seed_from_u64(14);
    let (mut fdp, mut found) = (0.0, 0usize);
    for _ in 0..MIXED_RUNS {
        let e = run_blocked(&lab, (auto(), MIN_RUNS), true, &mut rng);
        fdp += e.false_calls as f64 / e.calls.max(1) as f64;
        found += e
            .decisions
            .iter()
            .filter(|&&(t, d)| t == 2 && d == Decision::Better)
            .count();
    }
    let (fdr, power) = (
        fdp / MIXED_RUNS as f64,
        found as f64 / (3 * MIXED_RUNS) as f64,
    );
    eprintln!(
        "c1 = baseline, c2 10 % faster, CV 5 %, drift 10 %: false discovery rate {:.2} %, \
         c2 found in {:.2} % of {} comparisons",
        fdr * 100.0,
        power * 100.0,
        3 * MIXED_RUNS
    );
    assert!(fdr <= 0.05 && power >= 0.80, "FDR {fdr}, power {power}");
}

/// Simulated runs behind the check with real and null differences side by side.
const MIXED_RUNS: usize = 200;

/// Blocking by round: on a machine whose speed drifts by 10 % from round to round (the
/// same for every target), with five runs a side a true 10 % difference at CV 5 % is
/// decided far more often than when the same data are judged unpaired (measured: 53.7 %
/// against 6.3 % of 1,800). The A/A false calls with that drift are half of
/// `a_budgeted_run_makes_few_false_calls_under_a_a`.
#[test]
fn blocking_by_round_takes_the_machine_drift_out_of_a_comparison() {
    let lab = Lab {
        mean: [1.0, 1.1, 1.0 / 1.1],
        cv: [0.05; 3],
        drift: 0.10,
        steal: None,
    };
    let five = (Runs::Fixed(5), 5);
    let (blocked, wrong, _) = power(&lab, five, true, DRIFT_POWER_RUNS, 9);
    let (unpaired, _, _) = power(&lab, five, false, DRIFT_POWER_RUNS, 9);
    eprintln!(
        "10 % at CV 5 %, round drift 10 %, 5 runs: decided right in {:.2} % blocked, \
         {:.2} % unpaired ({} comparisons)",
        blocked * 100.0,
        unpaired * 100.0,
        DRIFT_POWER_RUNS * 6
    );
    assert!(
        wrong == 0 && blocked > unpaired + 0.3,
        "5 runs with drift: blocked {:.2} % right ({wrong} wrong), unpaired {:.2} %",
        blocked * 100.0,
        unpaired * 100.0
    );
}

/// Simulated runs behind the drift check.
const DRIFT_POWER_RUNS: usize = 300;

/// Simulated budgeted runs behind the equivalence check (each gives six comparisons with the
/// baseline, so 2,400 comparisons).
const EQUIVALENCE_RUNS: usize = 400;

/// The share of comparisons with the baseline called equivalent over `n` simulated runs of
/// `lab` judged with `runs`, the runs shared out over two threads as in
/// [`false_call_rate_in`].
fn equivalent_rate(lab: &Lab, runs: Runs, n: usize, seed: u64) -> f64 {
    let half = |k: u64, count: usize| {
        move || {
            let mut rng = ChaCha8Rng::seed_from_u64(seed * 2 + k);
            (0..count)
                .map(|_| {
                    let e = run_once(lab, runs, &mut rng);
                    let eq = e
                        .decisions
                        .iter()
                        .filter(|(_, d)| *d == Decision::Equivalent);
                    (eq.count(), e.decisions.len())
                })
                .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
        }
    };
    let ((e0, n0), (e1, n1)) = std::thread::scope(|s| {
        let other = s.spawn(half(1, n / 2));
        (half(0, n - n / 2)(), other.join().unwrap())
    });
    (e0 + e1) as f64 / (n0 + n1) as f64
}

/// Equivalence under `--runs auto`: with each candidate's true difference on the ±5 %
/// margin (c1 5 % slower, c2 5 % faster: not equivalent), CV 5 %, the looks' shares of α
/// keep the share of comparisons called equivalent within 5 %. Re-checked after every
/// round at the full α, 11.7 % of 300 such comparisons were (issue 58, around the binary).
#[test]
fn a_difference_on_the_margin_is_rarely_called_equivalent() {
    let lab = lab([1.0, 1.05, 0.95], 0.05);
    let rate = equivalent_rate(&lab, auto(), EQUIVALENCE_RUNS, 31);
    eprintln!(
        "true difference on the ±5 % margin, CV 5 %, budgeted: called equivalent in {:.2} % of \
         {} comparisons",
        rate * 100.0,
        EQUIVALENCE_RUNS * 6
    );
    assert!(
        rate <= 0.05,
        "{:.2} % of comparisons on the margin called equivalent",
        rate * 100.0
    );
}
