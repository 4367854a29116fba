//! File- and append-size distributions of a mix, drawn with the data set's portable math
//! ([`crate::dataset::draw`]) so a seed gives the same sizes on every machine.

use rand_chacha::ChaCha8Rng;

use crate::dataset::draw;
use crate::plan::size::parse_size;

/// A gamma draw is capped at this many means, so one unlucky draw cannot fill a disk.
const GAMMA_CAP: f64 = 64.0;

/// How the sizes of files (or appends) spread.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SizeDist {
    /// Always this many bytes (`"16K"`, or `{ dist = "fixed", size = "16K" }`).
    Fixed(u64),
    /// Uniform in `min..=max` bytes.
    Uniform { min: u64, max: u64 },
    /// Gamma with this mean (bytes) and shape, as Filebench draws file sizes; at least one
    /// byte, at most 64 means.
    Gamma { mean: f64, shape: f64 },
}

impl SizeDist {
    /// Reads `"16K"`, `4096`, or a table `{ dist = "fixed" | "uniform" | "gamma", … }`;
    /// the error is the reason, without the key (the caller names it).
    pub fn parse(v: &toml::Value) -> Result<SizeDist, String> {
        let toml::Value::Table(t) = v else {
            return size_value(v).map(SizeDist::Fixed);
        };
        let dist = t
            .get("dist")
            .and_then(toml::Value::as_str)
            .ok_or("a size table needs dist = \"fixed\", \"uniform\" or \"gamma\"")?;
        let keys: &[&str] = match dist {
            "fixed" => &["dist", "size"],
            "uniform" => &["dist", "min", "max"],
            "gamma" => &["dist", "mean", "shape"],
            other => {
                return Err(format!(
                    "unknown dist `{other}`; valid: fixed, uniform, gamma"
                ))
            }
        };
        if let Some(k) = t.keys().find(|k| !keys.contains(&k.as_str())) {
            return Err(format!(
                "unknown key `{k}` for dist = \"{dist}\"; valid: {}",
                keys.join(", ")
            ));
        }
        let get = |k: &str| {
            t.get(k)
                .ok_or_else(|| format!("dist = \"{dist}\" needs `{k}`"))
                .and_then(|v| size_value(v).map_err(|e| format!("`{k}`: {e}")))
        };
        match dist {
            "fixed" => Ok(SizeDist::Fixed(get("size")?)),
            "uniform" => {
                let (min, max) = (get("min")?, get("max")?);
                if min > max {
                    return Err(format!("min {min} is above max {max}"));
                }
                Ok(SizeDist::Uniform { min, max })
            }
            _ => {
                let mean = get("mean")? as f64;
                let shape = t
                    .get("shape")
                    .and_then(|v| v.as_float().or(v.as_integer().map(|i| i as f64)))
                    .ok_or("dist = \"gamma\" needs a number `shape`, e.g. 1.5")?;
                if !(shape.is_finite() && (0.05..=1000.0).contains(&shape)) {
                    return Err(format!("shape {shape} is not in 0.05..=1000"));
                }
                Ok(SizeDist::Gamma { mean, shape })
            }
        }
    }

    /// The expected size in bytes (before the gamma cap).
    pub fn mean(&self) -> f64 {
        match *self {
            SizeDist::Fixed(n) => n as f64,
            SizeDist::Uniform { min, max } => (min as f64 + max as f64) / 2.0,
            SizeDist::Gamma { mean, .. } => mean,
        }
    }

    /// One size drawn from `rng`.
    pub fn draw(&self, rng: &mut ChaCha8Rng) -> u64 {
        match *self {
            SizeDist::Fixed(n) => n,
            SizeDist::Uniform { min, max } => min + draw::below(rng, max - min + 1),
            SizeDist::Gamma { mean, shape } => {
                let x = gamma(rng, shape) * (mean / shape);
                x.clamp(1.0, mean * GAMMA_CAP).round() as u64
            }
        }
    }
}

/// A size written as `"16K"` or a whole number of bytes.
pub fn size_value(v: &toml::Value) -> Result<u64, String> {
    match v {
        toml::Value::String(s) => parse_size(s),
        toml::Value::Integer(n) if *n >= 1 => Ok(*n as u64),
        other => Err(format!("`{other}` is not a size (examples: 4096, \"16K\")")),
    }
}

/// ln(x) from the portable base-2 logarithm.
fn ln(x: f64) -> f64 {
    draw::log2_det(x) * draw::LN2
}

/// A Gamma(shape, 1) draw: Marsaglia and Tsang's method (ACM TOMS 26(3), 2000), with the
/// `shape < 1` boost `Gamma(a) = Gamma(a + 1) · U^(1/a)`.
fn gamma(rng: &mut ChaCha8Rng, shape: f64) -> f64 {
    if shape < 1.0 {
        let u = draw::unit(rng).max(f64::MIN_POSITIVE);
        return gamma(rng, shape + 1.0) * draw::exp2_det(draw::log2_det(u) / shape);
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = draw::normal(rng);
        let v = 1.0 + c * x;
        if v <= 0.0 {
            continue;
        }
        let v = v * v * v;
        let u = draw::unit(rng).max(f64::MIN_POSITIVE);
        if ln(u) < 0.5 * x * x + d - d * v + d * ln(v) {
            return d * v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::seed::workload_rng;

    #[test]
    fn gamma_draws_have_the_asked_mean_and_repeat_per_seed() {
        for shape in [0.5, 1.5, 4.0] {
            let d = SizeDist::Gamma {
                mean: 16384.0,
                shape,
            };
            let mut rng = workload_rng(1, 2);
            let n = 20_000;
            let sum: u64 = (0..n).map(|_| d.draw(&mut rng)).sum();
            let mean = sum as f64 / n as f64;
            assert!((mean / 16384.0 - 1.0).abs() < 0.05, "shape {shape}: {mean}");
            let a: Vec<u64> = (0..5).map(|_| d.draw(&mut workload_rng(3, 4))).collect();
            assert!(a.windows(2).all(|w| w[0] == w[1]));
        }
    }

    #[test]
    fn uniform_stays_in_bounds_and_tables_are_strict() {
        let v: toml::Value =
            toml::from_str::<toml::Table>("x = { dist = \"uniform\", min = 10, max = \"1K\" }")
                .unwrap()["x"]
                .clone();
        let d = SizeDist::parse(&v).unwrap();
        let mut rng = workload_rng(1, 1);
        assert!((0..1000)
            .map(|_| d.draw(&mut rng))
            .all(|s| (10..=1024).contains(&s)));
        let bad: toml::Value = toml::from_str::<toml::Table>("x = { dist = \"fixed\", sise = 1 }")
            .unwrap()["x"]
            .clone();
        assert!(SizeDist::parse(&bad).unwrap_err().contains("`sise`"));
    }
}
