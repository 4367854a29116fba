//! What the statistics tests share: a relative-tolerance comparison for figures pasted from
//! scipy, and the two small samples several tests use.

/// Whether `a` equals the reference `b` within `rel` of `b` (absolute near zero).
pub fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-300)
}

/// Six runs of a baseline.
pub const A: [f64; 6] = [12.1, 11.8, 12.6, 12.0, 11.9, 12.3];
/// Five runs of a clearly slower candidate.
pub const B: [f64; 5] = [13.0, 12.4, 13.5, 12.9, 13.2];
