//! Which configurations of a space are raced: the defaults always, then the whole space
//! when it holds no more than the candidates asked for; else each parameter's other values
//! one at a time (when they fill at most half the candidates), then a Latin hypercube sample for the rest (McKay,
//! Beckman & Conover 1979): every parameter's values spread evenly over the candidates,
//! paired at random, so a few candidates still see every value of every parameter; of
//! several such draws, the one that identifies every parameter's effect best (D-optimal for
//! the main-effects model the race picks its answer with).

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::model::design_score;
use super::space::Space;

/// How the candidates were chosen, for the answer's reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Design {
    /// Every configuration of the space.
    Exhaustive,
    /// The defaults, each other value one at a time, then a Latin hypercube sample.
    OneAtATimeThenLatin,
    /// The defaults, then a Latin hypercube sample.
    Latin,
}

impl Design {
    pub fn describe(self) -> &'static str {
        match self {
            Design::Exhaustive => "every configuration of the space",
            Design::OneAtATimeThenLatin => {
                "the defaults, each other value one at a time, then a Latin hypercube sample"
            }
            Design::Latin => "the defaults, then a Latin hypercube sample",
        }
    }
}

/// The number of configurations the space holds (saturating).
pub fn size(space: &Space) -> usize {
    space
        .params
        .iter()
        .fold(1usize, |n, p| n.saturating_mul(p.values.len()))
}

/// Up to `n` distinct candidates (each a value index per parameter), the defaults first.
pub fn candidates(space: &Space, n: usize, seed: u64) -> (Vec<Vec<usize>>, Design) {
    let defaults: Vec<usize> = space.params.iter().map(|p| p.default_index()).collect();
    let n = n.max(2);
    if size(space) <= n {
        let mut all = vec![defaults.clone()];
        all.extend(factorial(space).into_iter().filter(|c| *c != defaults));
        return (all, Design::Exhaustive);
    }
    let mut out = vec![defaults.clone()];
    let oat = one_at_a_time(space, &defaults);
    // One at a time only while it leaves at least half the candidates to the sample,
    // which is what sees parameters together.
    let design = if oat.len() < n / 2 {
        out.extend(oat);
        Design::OneAtATimeThenLatin
    } else {
        Design::Latin
    };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // Of several Latin draws, the one that pins down every parameter's effect best (the
    // race's main-effects model, `super::model`, is fitted on them); the first when none
    // identifies them all (fewer candidates than effects).
    let values: Vec<usize> = space.params.iter().map(|p| p.values.len()).collect();
    let mut chosen: Option<(Vec<Vec<usize>>, f64)> = None;
    for _ in 0..DRAWS {
        let draw = fill_latin(space, out.clone(), n, &mut rng);
        let score = design_score(&draw, &values, &defaults).unwrap_or(f64::NEG_INFINITY);
        if chosen.as_ref().map_or(true, |(_, s)| score > *s) {
            chosen = Some((draw, score));
        }
    }
    out = chosen.map_or(out, |(d, _)| d);
    // Still short in a small space (the sample kept hitting taken places): the rest at
    // random from the configurations not taken.
    if out.len() < n && size(space) <= 100_000 {
        let mut rest: Vec<Vec<usize>> = factorial(space)
            .into_iter()
            .filter(|c| !out.contains(c))
            .collect();
        rest.shuffle(&mut rng);
        out.extend(rest.into_iter().take(n - out.len()));
    }
    (out, design)
}

/// Latin draws compared for the design that identifies the effects best.
const DRAWS: usize = 32;

/// `out` filled up to `n` distinct candidates from Latin samples (a sample may repeat a
/// candidate; a few more draws fill the places it took).
fn fill_latin(
    space: &Space,
    mut out: Vec<Vec<usize>>,
    n: usize,
    rng: &mut ChaCha8Rng,
) -> Vec<Vec<usize>> {
    for _ in 0..8 {
        if out.len() >= n {
            break;
        }
        for c in latin(space, n - out.len(), rng) {
            if !out.contains(&c) && out.len() < n {
                out.push(c);
            }
        }
    }
    out
}

/// Every configuration, in odometer order (the last parameter turning fastest).
fn factorial(space: &Space) -> Vec<Vec<usize>> {
    let mut all = vec![Vec::new()];
    for p in &space.params {
        all = all
            .into_iter()
            .flat_map(|c| {
                (0..p.values.len()).map(move |i| {
                    let mut c = c.clone();
                    c.push(i);
                    c
                })
            })
            .collect();
    }
    all
}

/// The defaults with one parameter changed, for each other value of each parameter.
fn one_at_a_time(space: &Space, defaults: &[usize]) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    for (j, p) in space.params.iter().enumerate() {
        for i in (0..p.values.len()).filter(|&i| i != defaults[j]) {
            let mut c = defaults.to_vec();
            c[j] = i;
            out.push(c);
        }
    }
    out
}

/// `n` candidates of a Latin hypercube over discrete values: parameter j's column holds
/// value ⌊k·i/n⌋ for i in 0..n (each value as often as the others, within one), shuffled.
fn latin(space: &Space, n: usize, rng: &mut ChaCha8Rng) -> Vec<Vec<usize>> {
    let columns: Vec<Vec<usize>> = space
        .params
        .iter()
        .map(|p| {
            let k = p.values.len();
            let mut col: Vec<usize> = (0..n).map(|i| i * k / n.max(1)).collect();
            col.shuffle(rng);
            col
        })
        .collect();
    (0..n)
        .map(|i| columns.iter().map(|col| col[i]).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::FsKind;

    #[test]
    fn a_small_space_is_raced_whole_and_a_large_one_sampled() {
        let mut s = super::super::space::load(FsKind::Ext4, None).unwrap();
        let (c, d) = candidates(&s, 16, 1);
        assert_eq!(d, Design::Latin);
        assert_eq!(c.len(), 16);
        assert_eq!(
            c[0],
            s.params
                .iter()
                .map(|p| p.default_index())
                .collect::<Vec<_>>()
        );
        let mut dedup = c.clone();
        dedup.sort();
        dedup.dedup();
        assert_eq!(dedup.len(), c.len(), "distinct");
        // Every value of every parameter appears in a 16-candidate sample.
        for (j, p) in s.params.iter().enumerate() {
            for i in 0..p.values.len() {
                assert!(c.iter().any(|x| x[j] == i), "{} {i}", p.name);
            }
        }
        s.params.truncate(3); // 3 × 2 × 3 = 18 configurations, 5 one-at-a-time
        let (c, d) = candidates(&s, 12, 1);
        assert_eq!((c.len(), d), (12, Design::OneAtATimeThenLatin));
        s.params.truncate(2);
        let (c, d) = candidates(&s, 12, 1);
        assert_eq!((c.len(), d), (6, Design::Exhaustive));
        assert_eq!(candidates(&s, 12, 1), candidates(&s, 12, 1), "seeded");
    }

    /// Four two-valued parameters: the 16-configuration space of the tune-vs-sweep
    /// measurement (BENCHMARKS.md).
    fn binary_space() -> Space {
        let param = |name: &str| super::super::space::Param {
            name: name.into(),
            kind: super::super::space::Kind::Mount,
            about: String::new(),
            values: vec![format!("{name}=0"), format!("{name}=1")],
            default: format!("{name}=0"),
            unsafe_: Default::default(),
        };
        Space {
            fs: FsKind::Ext4,
            params: ["a", "b", "c", "d"].into_iter().map(param).collect(),
        }
    }

    /// Six candidates of 16 configurations (a budget that pays for 12 cells): a single
    /// Latin draw often gives two parameters the same column, and then the race's model
    /// cannot tell their effects apart; the sampler keeps a draw that identifies them all.
    #[test]
    fn a_sample_of_a_small_space_identifies_every_parameter_effect() {
        let s = binary_space();
        let values = [2, 2, 2, 2];
        let defaults = [0, 0, 0, 0];
        let mut single_draw_failed = 0;
        for seed in 1..=20 {
            let (c, d) = candidates(&s, 6, seed);
            assert_eq!((c.len(), d), (6, Design::Latin));
            assert!(
                design_score(&c, &values, &defaults).is_some(),
                "seed {seed}: {c:?}"
            );
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let first = fill_latin(&s, vec![defaults.to_vec()], 6, &mut rng);
            single_draw_failed += usize::from(design_score(&first, &values, &defaults).is_none());
        }
        assert!(
            single_draw_failed > 0,
            "the fixture shows the failure it guards"
        );
        let (c, _) = candidates(&s, 8, 1);
        assert!(design_score(&c, &values, &defaults).is_some());
    }
}
