//! Reports (in progress): terminal summary of a results directory.

use std::path::Path;

use anyhow::Result;

/// Prints the report of a results directory.
pub fn report_dir(dir: &Path) -> Result<()> {
    let loaded = crate::results::store::load(dir)?;
    for (n, why) in &loaded.skipped {
        eprintln!("fsarena: {}: line {n} skipped: {why}", dir.display());
    }
    println!(
        "{} measurements in {}",
        loaded.measurements.len(),
        dir.display()
    );
    Ok(())
}

/// Compares two results directories.
pub fn compare_dirs(a: &Path, b: &Path) -> Result<()> {
    report_dir(a)?;
    report_dir(b)
}
