use super::*;
use crate::stats::fixtures::close;

#[test]
fn the_two_stage_step_up_calls_more_when_most_differences_are_real() {
    // By hand: BH-adjusted 0.008 (×5), 0.04, 0.0514, 0.3; BH at 5 % calls 6, stage 1 at
    // q = 0.05/1.05 calls the same 6, so m0' = 2 and stage 2 is BH at q·8/2 = 0.19:
    // 0.045 is called too (adjusted max(0.0514·0.2625, 0.045)), 0.3 never (its own p).
    let p = [0.001, 0.002, 0.003, 0.004, 0.005, 0.03, 0.045, 0.3];
    let TwoStage {
        adjusted: adj,
        threshold,
        level,
    } = two_stage(&p, 0.05);
    assert!(close(level, 0.05 / 1.05 * 4.0, 1e-12), "{level}");
    let bh = benjamini_hochberg(&p);
    assert_eq!(bh.iter().filter(|&&a| a < 0.05).count(), 6);
    assert_eq!(adj.iter().filter(|&&a| a < 0.05).count(), 7, "{adj:?}");
    assert_eq!(adj[6], 0.045);
    assert_eq!(adj[7], 0.3);
    let q = 0.05 / 1.05;
    assert!(close(adj[0], 0.008 * 0.05 * 2.0 / (q * 8.0), 1e-12));
    assert_eq!(threshold, 0.05, "7·q/2 = 0.167, capped at α");
    // One clear difference among four: stage 1 calls it, m0' = 3, stage 2 is BH at
    // q·4/3, and a called p must be at most 1·q/3.
    let t = two_stage(&[0.004, 0.3, 0.5, 0.9], 0.05);
    assert!(close(t.adjusted[0], 0.016 * 0.05 * 3.0 / (q * 4.0), 1e-12));
    assert!(close(t.threshold, q / 3.0, 1e-12), "{t:?}");
    // Nothing clear: stage 1 calls nothing and it is BH at α/1.05, which calls less
    // than BH at α (0.0124·4 = 0.0496) would.
    let adj = two_stage(&[0.0124, 0.3, 0.5, 0.9], 0.05).adjusted;
    assert!(benjamini_hochberg(&[0.0124, 0.3, 0.5, 0.9])[0] < 0.05 && adj[0] > 0.05);
    assert!(two_stage(&[], 0.05).adjusted.is_empty());
}

/// What the "undecided: within" range rests on (`verdicts::family`'s `within`): a
/// comparison the two-stage step-up leaves uncalled has a p of at least the level the
/// family asks of its next call, so its interval at that level holds zero. Over random
/// families of 1 to 40 p-values, mixing clear, middling and null ones.
#[test]
fn an_uncalled_p_is_never_below_the_next_level() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(58);
    let mut uncalled_seen = 0;
    for _ in 0..20_000 {
        let m = rng.gen_range(1..=40);
        let p: Vec<f64> = (0..m)
            .map(|_| match rng.gen_range(0..3) {
                0 => rng.gen_range(0.0..0.01),
                1 => rng.gen_range(0.0..0.1),
                _ => rng.gen::<f64>(),
            })
            .collect();
        let f = crate::stats::verdicts::Family::adaptive(&p);
        let level = f.level;
        for (&raw, &adj) in p.iter().zip(&f.adjusted) {
            if adj >= ALPHA {
                uncalled_seen += 1;
                assert!(raw >= level, "p {raw} below {level} in {p:?}");
            }
        }
    }
    assert!(uncalled_seen > 10_000, "{uncalled_seen}");
}

#[test]
fn benjamini_hochberg_matches_statsmodels() {
    // python: from statsmodels.stats.multitest import multipletests; print(multipletests([0.01,0.04,0.03,0.005,0.2], method='fdr_bh')[1])
    let cases: [(&[f64], &[f64]); 3] = [
        (
            &[0.01, 0.04, 0.03, 0.005, 0.2],
            &[0.025, 0.05, 0.05, 0.025, 0.2],
        ),
        // python: print(multipletests([0.0001,0.02,0.021,0.5], method='fdr_bh')[1])
        (&[0.0001, 0.02, 0.021, 0.5], &[0.0004, 0.028, 0.028, 0.5]),
        // python: print(multipletests([0.5,0.5,0.01,0.9], method='fdr_bh')[1])
        (
            &[0.5, 0.5, 0.01, 0.9],
            &[0.6666666666666666, 0.6666666666666666, 0.04, 0.9],
        ),
    ];
    for (p, want) in cases {
        let got = benjamini_hochberg(p);
        for (g, w) in got.iter().zip(want) {
            assert!(close(*g, *w, 1e-12), "{got:?} vs {want:?}");
        }
    }
    assert!(benjamini_hochberg(&[]).is_empty());
    assert_eq!(benjamini_hochberg(&[f64::NAN, 0.01]), vec![1.0, 0.02]);
    assert!(close(next_level(0.05, 0, 50), 0.001, 1e-12));
    assert!(close(next_level(0.05, 9, 50), 0.01, 1e-12));
}

// Reference values for TOST come from (base, cand as in the call, margin 5 %), on logs:
// python: import numpy as np; from scipy import stats; from statsmodels.stats.weightstats import ttost_ind; lb,lc=np.log(base),np.log(cand); r=ttost_ind(lc,lb,np.log(0.95),np.log(1.05),usevar='unequal'); ci=stats.ttest_ind(lc,lb,equal_var=False).confidence_interval(0.90); print(repr(float(r[0])), repr(float((np.exp(ci.low)-1)*100)), repr(float((np.exp(ci.high)-1)*100)))
#[test]
fn tost_and_the_90_interval_match_statsmodels() {
    let cases: [(&[f64], &[f64], [f64; 3]); 3] = [
        // base=[1000.0,1010.0,990.0,1005.0,995.0]; cand=[1002.0,1012.0,992.0,1001.0,998.0]
        (
            &[1000.0, 1010.0, 990.0, 1005.0, 995.0],
            &[1002.0, 1012.0, 992.0, 1001.0, 998.0],
            [
                4.623981595242897e-06,
                -0.7901638165200398,
                0.9989347188849029,
            ],
        ),
        // base=[1000.0,1010.0,990.0]; cand=[1000.0,1020.0,985.0]
        (
            &[1000.0, 1010.0, 990.0],
            &[1000.0, 1020.0, 985.0],
            [0.012109473034440025, -2.48693637063343, 2.8782942130363365],
        ),
        // base=[10.0,10.1,10.2]; cand=[12.0,12.3,11.8]
        (
            &[10.0, 10.1, 10.2],
            &[12.0, 12.3, 11.8],
            [0.9984759769016646, 15.371623841244997, 23.007674335804396],
        ),
    ];
    for (base, cand, [p, lo, hi]) in cases {
        let got = tost_p(base, cand, 5.0).unwrap();
        assert!(close(got, p, 1e-8), "tost {got} vs {p}");
        let c = super::super::compare(base, cand, 0.05).unwrap();
        let (glo, ghi) = c.pct_ci90.unwrap();
        assert!(close(glo, lo, 1e-8) && close(ghi, hi, 1e-8), "{glo} {ghi}");
        // TOST rejects at 5 % exactly when the 90 % interval is inside the margin.
        assert_eq!(got < 0.05, -5.0 < glo && ghi < 5.0);
    }
    assert_eq!(tost_p(&[1.0], &[1.0, 2.0], 5.0), None);
    assert_eq!(tost_p(&[2.0, 2.0], &[2.0, 2.0], 5.0), None);
}

#[test]
fn decide_gives_each_of_the_four_words() {
    // Significant after adjustment: direction from higher_is_better.
    assert_eq!(
        decide(10.0, Some((5.0, 15.0)), 0.01, 0.05, 5.0, true),
        Decision::Better
    );
    assert_eq!(
        decide(10.0, Some((5.0, 15.0)), 0.01, 0.05, 5.0, false),
        Decision::Worse
    );
    assert_eq!(
        decide(-10.0, Some((-15.0, -5.0)), 0.01, 0.05, 5.0, false),
        Decision::Better
    );
    // Not significant, 90 % interval inside ±5 %.
    assert_eq!(
        decide(0.2, Some((-2.5, 2.9)), 0.6, 0.05, 5.0, true),
        Decision::Equivalent
    );
    // Same interval, tighter margin: cannot tell.
    assert_eq!(
        decide(0.2, Some((-2.5, 2.9)), 0.6, 0.05, 2.0, true),
        Decision::Undecided
    );
    // Raw p 0.03 would be significant, but not after adjustment.
    assert_eq!(
        decide(6.0, Some((0.5, 11.5)), 0.09, 0.05, 5.0, true),
        Decision::Undecided
    );
    assert_eq!(decide(1.0, None, 0.5, 0.05, 5.0, true), Decision::Undecided);
}

// Reference values come from the same rule written independently with scipy:
// python: import numpy as np; from scipy import stats
//   def rtd(b,c,m,a):
//     b,c=np.log(b),np.log(c); sb=np.std(b,ddof=1); sc=np.std(c,ddof=1); d=abs(np.mean(c)-np.mean(b)); v=sb**2+sc**2; k=v**2/(sb**4+sc**4); now=min(len(b),len(c)); bound=np.log1p(m/100)
//     for n in range(max(now,2),1001):
//       se=np.sqrt(v/n); df=(n-1)*k
//       if d-stats.t.ppf(1-a/2,df)*se>0 or d+stats.t.ppf(0.95,df)*se<bound: return n-now
//   print(rtd(b,c,margin,alpha_strict)) with the arguments of each call
#[test]
fn runs_to_decide_matches_an_independent_computation() {
    // b=[100,104,96]; c=[103,108,98]: 3 % apart with 4–5 % spread → significance or equivalence needs more runs
    let b = [100.0, 104.0, 96.0];
    let c = [103.0, 108.0, 98.0];
    assert_eq!(runs_to_decide(&b, &c, 5.0, 0.005), Some(27));
    // b=[1000,1010,990]; c=[1000,1020,985]: nearly equal, wide spread
    let b2 = [1000.0, 1010.0, 990.0];
    let c2 = [1000.0, 1020.0, 985.0];
    assert_eq!(runs_to_decide(&b2, &c2, 1.0, 0.005), Some(14));
    // b=[100,103,97]; c=[104,108,101]: 4.3 % apart, spread 3 %
    let b3 = [100.0, 103.0, 97.0];
    let c3 = [104.0, 108.0, 101.0];
    assert_eq!(runs_to_decide(&b3, &c3, 5.0, 0.005), Some(9));
    // b=[100,101,99]; c=[105,106,104]: already decided at this level
    assert_eq!(
        runs_to_decide(&[100.0, 101.0, 99.0], &[105.0, 106.0, 104.0], 5.0, 0.005),
        Some(0)
    );
    assert_eq!(runs_to_decide(&[1.0, 1.0], &[1.0, 1.0], 5.0, 0.05), None);
    assert_eq!(runs_to_decide(&[1.0], &[1.0, 2.0], 5.0, 0.05), None);
}

#[test]
fn next_run_side_repeats_the_noisy_side() {
    let steady = [100.0, 101.0, 99.0];
    let noisy = [60.0, 40.0, 58.0];
    assert_eq!(next_run_side(&steady, &noisy), Side::Candidate);
    assert_eq!(next_run_side(&noisy, &steady), Side::Baseline);
    // Alike spreads: both sides.
    assert_eq!(
        next_run_side(&[100.0, 110.0, 90.0], &[50.0, 55.0, 45.0]),
        Side::Both
    );
    // A side with more runs already gains less from one more.
    let many = [100.0, 110.0, 90.0, 100.0, 110.0, 90.0, 100.0, 110.0, 90.0];
    assert_eq!(next_run_side(&many, &[50.0, 55.0, 45.0]), Side::Candidate);
    // Nothing to go on.
    assert_eq!(next_run_side(&[1.0], &[2.0, 3.0]), Side::Both);
    assert_eq!(next_run_side(&[1.0, f64::NAN], &[2.0, 3.0]), Side::Both);
}
