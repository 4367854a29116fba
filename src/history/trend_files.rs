//! The trend report's files: `history.html` ([`super::trend_html`]), `history.json` (the
//! model as it is) and `history.csv` (one row per plan × host × workload point × target ×
//! step), each written to a temporary name and renamed, so a reader never sees half a
//! file.

use std::path::{Path, PathBuf};

use super::error::HistoryError;
use super::trend::Trend;

/// The files' names in the output directory.
pub const FILES: [&str; 3] = ["history.html", "history.json", "history.csv"];

/// Writes the three files into `dir` (created when missing); their paths.
pub fn write(dir: &Path, t: &Trend) -> Result<Vec<PathBuf>, HistoryError> {
    let err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| HistoryError::Write { path, source }
    };
    std::fs::create_dir_all(dir).map_err(err(dir))?;
    let json = serde_json::to_string_pretty(t).map_err(|e| err(dir)(std::io::Error::other(e)))?;
    let bodies = [super::trend_html::page(t), json + "\n", csv(t)];
    let mut out = Vec::new();
    for (name, body) in FILES.iter().zip(bodies) {
        let path = dir.join(name);
        let tmp = dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, body).map_err(err(&tmp))?;
        std::fs::rename(&tmp, &path).map_err(err(&path))?;
        out.push(path);
    }
    Ok(out)
}

/// The CSV text: a header, then a row per step of each target's line.
pub fn csv(t: &Trend) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record([
        "plan",
        "plan_name",
        "host",
        "point",
        "metric",
        "higher_is_better",
        "target",
        "by",
        "step",
        "runs",
        "n",
        "geomean",
        "ci95_low",
        "ci95_high",
    ]);
    let num = |x: Option<f64>| x.map(|v| format!("{v}")).unwrap_or_default();
    for p in &t.plans {
        for pt in &p.points {
            for cell in &pt.hosts {
                for line in &cell.targets {
                    for s in &line.steps {
                        let _ = w.write_record([
                            p.plan_digest.as_str(),
                            &p.plan_name,
                            &cell.host_key,
                            &pt.point,
                            &pt.metric,
                            if pt.higher_is_better { "true" } else { "false" },
                            &line.target,
                            &t.by,
                            &s.x,
                            &s.runs.join(" "),
                            &s.values.len().to_string(),
                            &num(s.center),
                            &num(s.ci95.map(|c| c.0)),
                            &num(s.ci95.map(|c| c.1)),
                        ]);
                    }
                }
            }
        }
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}
