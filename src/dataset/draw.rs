//! Portable random draws and math for the layout generator and the workloads' seeded choices.
//!
//! Only the ChaCha stream (specified to the byte) and IEEE-754 basic arithmetic (`+ - * /`,
//! `floor`, `sqrt`, which are exactly rounded everywhere) are used: `exp2`/`log2` are built
//! from those operations instead of the platform's libm, and integers are drawn without
//! `rand`'s version-dependent algorithms, so a seed gives the same tree on any machine and
//! after any dependency update.

use rand_chacha::rand_core::RngCore;
use rand_chacha::ChaCha8Rng;

/// A uniform integer in `0..n` (Lemire's multiply-shift; bias < n/2^64, irrelevant here).
pub fn below(rng: &mut ChaCha8Rng, n: u64) -> u64 {
    ((u128::from(rng.next_u64()) * u128::from(n)) >> 64) as u64
}

/// A uniform f64 in [0, 1) from 53 random bits (exact on every IEEE machine).
pub fn unit(rng: &mut ChaCha8Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Fisher–Yates shuffle with [`below`], so the order is the same on every machine.
pub fn shuffle<T>(rng: &mut ChaCha8Rng, v: &mut [T]) {
    for i in (1..v.len()).rev() {
        let j = below(rng, i as u64 + 1) as usize;
        v.swap(i, j);
    }
}

/// One item drawn with probability proportional to its weight.
pub fn pick_weighted(rng: &mut ChaCha8Rng, items: &'static [(&'static str, u32)]) -> &'static str {
    let total: u64 = items.iter().map(|&(_, w)| u64::from(w)).sum();
    let mut x = below(rng, total.max(1));
    for &(item, w) in items {
        if x < u64::from(w) {
            return item;
        }
        x -= u64::from(w);
    }
    items.first().map(|&(i, _)| i).unwrap_or("")
}

/// ln 2, the factor between natural and base-2 logarithms.
pub const LN2: f64 = std::f64::consts::LN_2;

/// 2^x from basic IEEE operations only (a Taylor series on the fractional part).
pub fn exp2_det(x: f64) -> f64 {
    let k = x.floor();
    let t = (x - k) * LN2;
    let mut term = 1.0;
    let mut sum = 1.0;
    for i in 1..=18 {
        term = term * t / f64::from(i);
        sum += term;
    }
    let k = (k as i64).clamp(-1000, 1000);
    sum * f64::from_bits(((k + 1023) as u64) << 52)
}

/// log2(x) for x > 0 from basic IEEE operations only (atanh series on the mantissa).
pub fn log2_det(x: f64) -> f64 {
    let bits = x.to_bits();
    let e = ((bits >> 52) & 0x7ff) as i64 - 1023;
    let m = f64::from_bits((bits & ((1u64 << 52) - 1)) | (1023u64 << 52)); // in [1, 2)
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let mut power = s;
    let mut sum = 0.0;
    for k in 0..30 {
        sum += power / f64::from(2 * k + 1);
        power *= s2;
    }
    e as f64 + 2.0 * sum / LN2
}

/// A standard normal draw (Irwin–Hall: the sum of 12 uniforms minus 6; tails cut at ±6σ,
/// which only trims absurd sizes).
pub fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let mut s = 0.0;
    for _ in 0..12 {
        s += unit(rng);
    }
    s - 6.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_math_is_close_to_libm() {
        for x in [-3.5, -1.0, 0.0, 0.3, 1.0, 7.25, 30.9] {
            let a = exp2_det(x);
            assert!((a / x.exp2() - 1.0).abs() < 1e-12, "exp2({x})");
        }
        for x in [1e-3, 0.7, 1.0, 3.0, 16384.0, 4.0e9] {
            let a = log2_det(x);
            assert!((a - x.log2()).abs() < 1e-12, "log2({x})");
        }
    }
}
