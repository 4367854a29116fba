//! Reading a workload's `[workload.NAME]` options: typed getters with one-line errors, shared
//! so every workload words a bad value the same way.

use super::{Ctx, WorkloadError};

/// A boolean option, or `default` when absent.
pub fn bool_or(ctx: &Ctx, key: &str, default: bool) -> Result<bool, WorkloadError> {
    match ctx.options.get(key) {
        None => Ok(default),
        Some(toml::Value::Boolean(b)) => Ok(*b),
        Some(v) => Err(WorkloadError::Option(format!(
            "{key} must be true or false, got {v}"
        ))),
    }
}

/// A number option (integer or float), or `default` when absent.
pub fn f64_or(ctx: &Ctx, key: &str, default: f64) -> Result<f64, WorkloadError> {
    match ctx.options.get(key) {
        None => Ok(default),
        Some(toml::Value::Float(f)) => Ok(*f),
        Some(toml::Value::Integer(i)) => Ok(*i as f64),
        Some(v) => Err(WorkloadError::Option(format!(
            "{key} must be a number, got {v}"
        ))),
    }
}

/// Refuses keys a workload does not know, naming the valid ones. The runner calls this for
/// every workload before anything is provisioned, so a typo is bad input, not a failed run.
pub fn check_keys(workload: &str, table: &toml::Table, valid: &[&str]) -> Result<(), String> {
    match table.keys().find(|k| !valid.contains(&k.as_str())) {
        None => Ok(()),
        Some(bad) if valid.is_empty() => Err(format!(
            "[workload.{workload}]: unknown option `{bad}`; {workload} takes no options"
        )),
        Some(bad) => Err(format!(
            "[workload.{workload}]: unknown option `{bad}`; valid: {}",
            valid.join(", ")
        )),
    }
}
