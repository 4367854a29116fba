//! The layout promised in docs/architecture.md, checked against the code on every test run:
//! top-level modules import only modules below them, the bottom layers stand alone, no
//! source file grows past ~600 lines, tests included, and the report never names a
//! workload. A failure here names the file and the import that broke the rule.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The top-level modules from the bottom up: each may import only those before it.
/// Keep in step with docs/architecture.md.
const LAYERS: &[&str] = &[
    "sys",
    "cluster",
    "fsops",
    "monitor",
    "fio",
    "dataset",
    "plan",
    "results",
    "provision",
    "workload",
    "golden",
    "cost",
    "stats",
    "report",
    "runner",
    "doctor",
    "bench_op",
    "cli",
];

/// Lines a source file may hold, its inline tests included: a module whose tests outgrow
/// that keeps them in a `tests.rs` beside it (`plan/resolve.rs` → `plan/resolve/tests.rs`).
const MAX_LINES: usize = 600;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .expect("read src")
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The top-level module a file belongs to (`src/workload/db/mod.rs` → `workload`).
fn module_of(file: &Path) -> String {
    let rel = file.strip_prefix(src()).expect("under src");
    let first = rel.components().next().expect("non-empty");
    first
        .as_os_str()
        .to_string_lossy()
        .trim_end_matches(".rs")
        .to_string()
}

/// The code of a file before its test module: what the rules are about.
fn non_test(text: &str) -> &str {
    text.find("#[cfg(test)]").map_or(text, |i| &text[..i])
}

/// Every top-level module named as `crate::NAME` in the code (imports and paths alike),
/// with the line it appears on. Comments are skipped.
fn crate_refs(code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let line = line.trim_start();
        if line.starts_with("//") {
            continue;
        }
        let mut rest = line;
        while let Some(i) = rest.find("crate::") {
            rest = &rest[i + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.push((n + 1, name));
            } else if let Some(braced) = rest.strip_prefix('{') {
                // `use crate::{a, b::c}`: every name at the top of the braces.
                let inner = braced.split('}').next().unwrap_or("");
                for part in inner.split(',') {
                    let name: String = part
                        .trim()
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    if !name.is_empty() {
                        out.push((n + 1, name));
                    }
                }
            }
        }
    }
    out
}

fn files() -> Vec<(PathBuf, String)> {
    let mut paths = Vec::new();
    rust_files(&src(), &mut paths);
    paths
        .into_iter()
        .map(|p| {
            let text = fs::read_to_string(&p).expect("read source");
            (p, text)
        })
        .collect()
}

#[test]
fn modules_import_only_layers_below_them() {
    let rank: BTreeMap<&str, usize> = LAYERS.iter().enumerate().map(|(i, m)| (*m, i)).collect();
    let mut broken = Vec::new();
    for (path, text) in files() {
        let module = module_of(&path);
        if module == "lib" || module == "main" {
            continue;
        }
        let Some(&own) = rank.get(module.as_str()) else {
            broken.push(format!(
                "{}: module `{module}` is not in LAYERS (add it, and to docs/architecture.md)",
                path.display()
            ));
            continue;
        };
        for (line, used) in crate_refs(non_test(&text)) {
            if used == module {
                continue;
            }
            match rank.get(used.as_str()) {
                Some(&r) if r < own => {}
                Some(_) => broken.push(format!(
                    "{}:{line}: `{module}` imports `{used}`, which sits above it",
                    path.display()
                )),
                None => broken.push(format!(
                    "{}:{line}: `{module}` imports unknown module `{used}`",
                    path.display()
                )),
            }
        }
    }
    assert!(broken.is_empty(), "layering broken:\n{}", broken.join("\n"));
}

#[test]
fn bottom_layers_import_nothing_of_the_crate_but_sys() {
    for (path, text) in files() {
        let module = module_of(&path);
        if !["cluster", "fsops", "monitor", "fio", "sys"].contains(&module.as_str()) {
            continue;
        }
        for (line, used) in crate_refs(non_test(&text)) {
            assert!(
                used == module || used == "sys",
                "{}:{line}: bottom layer `{module}` imports `{used}`",
                path.display()
            );
        }
    }
}

#[test]
fn no_source_file_is_over_600_lines() {
    let long: Vec<String> = files()
        .iter()
        .filter_map(|(p, t)| {
            let n = t.lines().count();
            (n > MAX_LINES).then(|| format!("{} has {n} lines", p.display()))
        })
        .collect();
    assert!(long.is_empty(), "split these by job: {long:?}");
}

#[test]
fn the_report_and_statistics_never_name_a_workload() {
    let names: Vec<&'static str> = fsarena::workload::names();
    assert!(
        names.len() >= 10,
        "the registry lists the workloads: {names:?}"
    );
    for (path, text) in files() {
        let module = module_of(&path);
        if module != "report" && module != "stats" {
            continue;
        }
        for name in &names {
            let quoted = format!("\"{name}\"");
            assert!(
                !non_test(&text).contains(&quoted),
                "{} names the workload {quoted}: declare it on the workload instead",
                path.display()
            );
        }
    }
}

#[test]
fn the_rules_see_what_they_check() {
    // Guard against a checker that passes because it reads nothing.
    let all = files();
    assert!(all.len() > 40, "read {} source files", all.len());
    let refs: usize = all.iter().map(|(_, t)| crate_refs(non_test(t)).len()).sum();
    assert!(refs > 100, "found only {refs} crate:: references");
    assert_eq!(
        crate_refs("use crate::{plan::Plan, results};\nlet x = crate::sys::syncfs(p);"),
        vec![
            (1, "plan".to_string()),
            (1, "results".to_string()),
            (2, "sys".to_string())
        ]
    );
    assert_eq!(module_of(&src().join("workload/db/mod.rs")), "workload");
}
