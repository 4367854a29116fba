//! `--fail-if-worse PCT`, which `compare` and `history check` both take.

/// `--fail-if-worse PCT`: a finite percentage of 0 or more.
pub fn parse_pct(s: &str) -> Result<f64, String> {
    match s.trim().trim_end_matches('%').parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("`{s}` is not a percentage of 0 or more")),
    }
}
