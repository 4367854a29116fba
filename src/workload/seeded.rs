//! Seed-determined choices (which files to change, in which order to read them), written
//! out rather than taken from `rand`, whose algorithms may change between versions: a seed
//! must pick the same files on every build, or two runs of one plan measure different work.

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A uniform draw in `0..n` (`n` ≥ 1) from the raw stream.
pub fn below(rng: &mut impl RngCore, n: u64) -> u64 {
    // Modulo bias is below 2^-40 for the sizes used here; irrelevant for picking files.
    rng.next_u64() % n.max(1)
}

/// Fisher–Yates shuffle driven by [`below`].
pub fn shuffle<T>(rng: &mut impl RngCore, items: &mut [T]) {
    for i in (1..items.len()).rev() {
        let j = below(rng, i as u64 + 1) as usize;
        items.swap(i, j);
    }
}

/// A ChaCha8 stream keyed by the data-set seed and a per-purpose salt, so each workload's
/// choices are fixed by the seed yet independent of the generator's streams.
pub fn rng_for(seed: u64, salt: u64) -> ChaCha8Rng {
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    key[8..16].copy_from_slice(&salt.to_le_bytes());
    key[16..24].copy_from_slice(b"fsarena!");
    ChaCha8Rng::from_seed(key)
}
