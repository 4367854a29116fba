//! Whether two results directories ran the same plan, read from the plan each one recorded:
//! `fsarena compare` decides B against A point by point, and points of two different plans
//! (another trace replayed, another data set) match by name while measuring different
//! things (issue 57.7: a git trace against a SQLite trace passed the gate).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// What differs between two recorded plans.
#[derive(Debug, Default)]
pub struct PlanDiff {
    /// One line per difference, as `compare` names it.
    pub lines: Vec<String>,
    /// Workloads both plans ran with other options (another trace, another mix): their
    /// points share a name but not what they measure, so none of them is compared.
    pub workloads_apart: Vec<String>,
}

impl PlanDiff {
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
}

/// The differences between plan `a` and plan `b` in what their points measure: the
/// workloads, the targets, the data set (profiles and scales included), and each common
/// workload's options (a replay's trace compared by content, so one trace at two paths
/// is the same trace). Timeouts, budgets, runs and margins are not what a point measures
/// and are left out.
pub fn differences(a: &Value, b: &Value) -> PlanDiff {
    let mut d = PlanDiff::default();
    let (wa, wb) = (names(a, "workloads", None), names(b, "workloads", None));
    if wa != wb {
        d.lines
            .push(format!("workloads: A ran {}, B {}", list(&wa), list(&wb)));
    }
    let (ta, tb) = (
        names(a, "targets", Some("name")),
        names(b, "targets", Some("name")),
    );
    if ta != tb {
        d.lines
            .push(format!("targets: A ran {}, B {}", list(&ta), list(&tb)));
    }
    let mut data = fields_apart(a.get("dataset"), b.get("dataset"));
    for k in ["extra_profiles", "extra_scales"] {
        let (va, vb) = (a.get(k), b.get(k));
        if va.unwrap_or(&Value::Null) != vb.unwrap_or(&Value::Null) {
            data.push(format!("{k} A {}, B {}", shown(va), shown(vb)));
        }
    }
    if !data.is_empty() {
        d.lines.push(format!("data set: {}", data.join("; ")));
    }
    for w in wa.intersection(&wb) {
        let (oa, ob) = (options(a, w), options(b, w));
        if let Some(why) = options_differ(&oa, &ob) {
            d.lines.push(format!("{w}: {why}"));
            d.workloads_apart.push(w.clone());
        }
    }
    d
}

/// The names in `plan[key]` (strings, or each entry's `field`).
fn names(plan: &Value, key: &str, field: Option<&str>) -> BTreeSet<String> {
    let items = plan.get(key).and_then(Value::as_array);
    items
        .into_iter()
        .flatten()
        .filter_map(|v| match field {
            Some(f) => v.get(f)?.as_str(),
            None => v.as_str(),
        })
        .map(str::to_string)
        .collect()
}

fn list(s: &BTreeSet<String>) -> String {
    match s.len() {
        0 => "none".into(),
        _ => s.iter().cloned().collect::<Vec<_>>().join(", "),
    }
}

/// A recorded value as one line of JSON, `(default)` when absent.
fn shown(v: Option<&Value>) -> String {
    v.filter(|v| !v.is_null())
        .map_or("(default)".to_string(), |v| {
            serde_json::to_string(v).unwrap_or_default()
        })
}

/// `key A value, B value` for each field of two recorded tables that differs.
fn fields_apart(a: Option<&Value>, b: Option<&Value>) -> Vec<String> {
    let empty = serde_json::Map::new();
    let table = |v: Option<&Value>| {
        v.and_then(Value::as_object)
            .cloned()
            .unwrap_or(empty.clone())
    };
    let (ta, tb) = (table(a), table(b));
    let keys: BTreeSet<&String> = ta.keys().chain(tb.keys()).collect();
    keys.into_iter()
        .filter(|k| ta.get(*k) != tb.get(*k))
        .map(|k| format!("{k} A {}, B {}", shown(ta.get(k)), shown(tb.get(k))))
        .collect()
}

/// A workload's option table as recorded (`workload_options.NAME`), empty when none.
fn options(plan: &Value, workload: &str) -> serde_json::Map<String, Value> {
    plan.get("workload_options")
        .and_then(|o| o.get(workload))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// Why two option tables of one workload measure different things, or `None`. A `trace`
/// at another path is the same trace when both files are readable and hold the same bytes.
fn options_differ(
    a: &serde_json::Map<String, Value>,
    b: &serde_json::Map<String, Value>,
) -> Option<String> {
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    let mut why = Vec::new();
    for k in keys {
        let (va, vb) = (a.get(k), b.get(k));
        if va == vb {
            continue;
        }
        if k == "trace" && same_file_content(va, vb) {
            continue;
        }
        let what = if k == "trace" { "another trace: " } else { "" };
        why.push(format!("{what}{k} A {}, B {}", shown(va), shown(vb)));
    }
    (!why.is_empty()).then(|| why.join("; "))
}

/// Whether two recorded paths name files with the same contents (the trace's digest).
fn same_file_content(a: Option<&Value>, b: Option<&Value>) -> bool {
    let path = |v: Option<&Value>| v.and_then(Value::as_str).map(PathBuf::from);
    let (Some(pa), Some(pb)) = (path(a), path(b)) else {
        return false;
    };
    matches!((digest(&pa), digest(&pb)), (Some(x), Some(y)) if x == y)
}

fn digest(p: &Path) -> Option<(u64, u64)> {
    let mut buf = vec![0u8; crate::fsops::hash::HASH_BUF];
    let h = crate::fsops::hash::hash_path(p, &mut buf).ok()?;
    Some((h.hash, h.len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plan(workloads: &[&str], trace: &str) -> Value {
        json!({
            "targets": [{"name": "ext4"}, {"name": "xfs"}],
            "workloads": workloads,
            "dataset": {"profile": "small", "scale": 0.01, "seed": 42},
            "workload_options": {"replay": {"trace": trace, "timing": "fast"}},
            "timeout": 600,
        })
    }

    #[test]
    fn another_trace_sets_the_replay_apart_and_the_same_plan_differs_in_nothing() {
        let a = plan(&["replay"], "/nonexistent/git.fstrace");
        assert!(differences(&a, &a).is_empty());
        let d = differences(&a, &plan(&["replay"], "/nonexistent/sqlite.fstrace"));
        assert_eq!(d.workloads_apart, vec!["replay"]);
        assert!(d.lines[0].contains("another trace"), "{:?}", d.lines);
    }

    #[test]
    fn workloads_targets_and_data_set_are_each_named() {
        let a = plan(&["create", "replay"], "t");
        let mut b = plan(&["create"], "t");
        b["targets"] = json!([{"name": "ext4"}]);
        b["dataset"]["scale"] = json!(0.1);
        let d = differences(&a, &b);
        assert_eq!(d.lines.len(), 3, "{:?}", d.lines);
        assert!(d.workloads_apart.is_empty());
    }
}
