//! The keys every seeded stream is drawn from. One seed feeds several streams (the layout,
//! each content); a domain number per use keeps them apart, and a generator version keeps
//! data of an older byte generator from ever looking like the current one's.

use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Key domains, so the layout stream never equals a content stream: file contents…
pub const DOMAIN_CONTENT: u64 = 1;
/// …and the layout (names, sizes, duplicates).
pub const DOMAIN_LAYOUT: u64 = 2;
/// …and the choices workloads make from the seed (which files to change, in which order to
/// read them), each purpose under its own id.
pub const DOMAIN_WORKLOAD: u64 = 3;
/// Bumped if the byte generator ever changes, so old and new data never look alike.
const GENERATOR_VERSION: u64 = 2;

/// The 32-byte ChaCha key for a (seed, id, domain) triple.
pub fn key(seed: u64, id: u64, domain: u64) -> [u8; 32] {
    let mut k = [0u8; 32];
    k[0..8].copy_from_slice(&seed.to_le_bytes());
    k[8..16].copy_from_slice(&id.to_le_bytes());
    k[16..24].copy_from_slice(&domain.to_le_bytes());
    k[24..32].copy_from_slice(&GENERATOR_VERSION.to_le_bytes());
    k
}

/// The stream a workload draws its seed-determined choices from, one per `purpose`, so they
/// are fixed by the seed yet independent of the data set's own streams. Draw from it with
/// [`super::draw`], whose algorithms do not change with dependency versions.
pub fn workload_rng(seed: u64, purpose: u64) -> ChaCha8Rng {
    ChaCha8Rng::from_seed(key(seed, purpose, DOMAIN_WORKLOAD))
}
