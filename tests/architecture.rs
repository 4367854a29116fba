//! The layout promised in docs/architecture.md, checked against the code on every test run:
//! top-level modules import only modules below them, the bottom layers stand alone, no
//! source file grows past ~600 lines, tests included, no function outside tests past 80,
//! the files of one module import each other without a loop, and the report never names a
//! workload. Whole files are read, only their `#[cfg(test)]` items left out (the reading
//! lives in `architecture/scan.rs`, the loop search in `architecture/loops.rs`, the
//! checkers' own checks in `architecture/checks.rs`). A failure here names the file, the
//! line and what broke the rule.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

#[path = "architecture/checks.rs"]
mod checks;
#[path = "architecture/loops.rs"]
mod loops;
#[path = "architecture/scan.rs"]
mod scan;

/// The top-level modules from the bottom up: each may import only those before it.
/// Keep in step with docs/architecture.md.
const LAYERS: &[&str] = &[
    "sys",
    "cluster",
    "fsops",
    "monitor",
    "fio",
    "trace",
    "dataset",
    "plan",
    "results",
    "provision",
    "workload",
    "golden",
    "cost",
    "stats",
    "report",
    "history",
    "runner",
    "tune",
    "doctor",
    "bench_op",
    "cli",
];

/// Lines past which a source file (its inline tests included) is named in a warning: a file
/// is split by concept, never by count, so the figure is a prompt to look, not a rule.
const WARN_LINES: usize = 600;

/// Lines no source file may pass: by then it holds more than one concept whatever it says.
const MAX_LINES: usize = 900;

/// Lines past which a function outside tests is named in a warning: a function long enough
/// to need that many is usually several steps, each of which wants a name.
const WARN_FN_LINES: usize = 80;

/// Lines no function outside tests may span, from its `fn` line to its closing brace.
const MAX_FN_LINES: usize = 120;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// A file's path from the crate's root, as a finding names it (`src/stats/mod.rs`).
fn rel(file: &Path) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    file.strip_prefix(root)
        .unwrap_or(file)
        .display()
        .to_string()
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

/// The module path a file holds (`src/report/charts/bars.rs` → `report::charts::bars`; a
/// `mod.rs` is its folder, `lib.rs` the crate).
fn module_path(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src()).expect("under src");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| {
            c.as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_string()
        })
        .collect();
    if parts.last().is_some_and(|p| p == "mod") || parts == ["lib"] {
        parts.pop();
    }
    parts
}

/// Every top-level module named as `crate::NAME` in the code (imports and paths alike, use
/// trees spelled out), with the line it appears on. Comments and literals are skipped.
fn crate_refs(code: &str) -> Vec<(usize, String)> {
    scan::paths(code)
        .into_iter()
        .filter(|(_, p)| p.first().is_some_and(|s| s == "crate") && p.len() > 1)
        .map(|(line, p)| (line, p[1].clone()))
        .collect()
}

/// A source file as the rules read it.
struct Source {
    path: PathBuf,
    /// The whole file.
    text: String,
    /// The file with its test-only items blanked, line numbers kept; empty for a file that
    /// is test code as a whole.
    code: String,
}

/// The files that are test code as a whole: every `tests.rs`, and every file (or folder) a
/// `#[cfg(test)] mod NAME;` declares, `#[path]` honoured.
fn test_files(files: &[(PathBuf, String)]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = files
        .iter()
        .filter(|(p, _)| p.file_name().is_some_and(|n| n == "tests.rs"))
        .map(|(p, _)| p.clone())
        .collect();
    for (p, text) in files {
        let dir = p.parent().expect("in a folder");
        let own = ["mod.rs", "lib.rs", "main.rs"]
            .iter()
            .any(|n| p.ends_with(n));
        let base = if own {
            dir.to_path_buf()
        } else {
            p.with_extension("")
        };
        for item in scan::test_items(text) {
            match item.module_file {
                Some((_, Some(path))) => out.push(dir.join(path)),
                Some((name, None)) => {
                    out.push(base.join(format!("{name}.rs")));
                    out.push(base.join(name));
                }
                None => {}
            }
        }
    }
    out
}

fn files() -> Vec<Source> {
    let mut paths = Vec::new();
    rust_files(&src(), &mut paths);
    let texts: Vec<(PathBuf, String)> = paths
        .into_iter()
        .map(|p| {
            let text = fs::read_to_string(&p).expect("read source");
            (p, text)
        })
        .collect();
    let tests = test_files(&texts);
    texts
        .into_iter()
        .map(|(path, text)| {
            let test = tests.iter().any(|t| path.starts_with(t));
            let code = if test {
                String::new()
            } else {
                scan::non_test(&text)
            };
            Source { path, text, code }
        })
        .collect()
}

#[test]
fn modules_import_only_layers_below_them() {
    let rank: BTreeMap<&str, usize> = LAYERS.iter().enumerate().map(|(i, m)| (*m, i)).collect();
    let mut broken = Vec::new();
    for Source { path, code, .. } in files() {
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
        for (line, used) in crate_refs(&code) {
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
    for Source { path, code, .. } in files() {
        let module = module_of(&path);
        if !["cluster", "fsops", "monitor", "fio", "sys"].contains(&module.as_str()) {
            continue;
        }
        for (line, used) in crate_refs(&code) {
            assert!(
                used == module || used == "sys",
                "{}:{line}: bottom layer `{module}` imports `{used}`",
                path.display()
            );
        }
    }
}

/// Every file of `all` over `limit` lines, as `file has N lines`.
fn long_files(all: &[Source], limit: usize) -> Vec<String> {
    all.iter()
        .filter_map(|f| {
            let n = f.text.lines().count();
            (n > limit).then(|| format!("{} has {n} lines", rel(&f.path)))
        })
        .collect()
}

/// Prints what passes a soft cap, so `cargo test -- --nocapture` lists where to look.
fn warn(what: &str, found: &[String]) {
    for f in found {
        println!("warning: {what}: {f}");
    }
}

#[test]
fn no_source_file_is_past_the_hard_cap() {
    let all = files();
    warn(
        "a long file (split by concept, if it holds two)",
        &long_files(&all, WARN_LINES),
    );
    let long = long_files(&all, MAX_LINES);
    assert!(long.is_empty(), "split these by concept: {long:?}");
}

/// Every function outside tests longer than `limit`, as `file:line: fn NAME is N lines`.
fn long_functions(all: &[Source], limit: usize) -> Vec<String> {
    let mut long = Vec::new();
    for f in all {
        for (name, line, len) in scan::fn_lengths(&f.code) {
            if len > limit {
                long.push(format!("{}:{line}: fn {name} is {len} lines", rel(&f.path)));
            }
        }
    }
    long
}

#[test]
fn no_function_outside_tests_is_past_the_hard_cap() {
    let all = files();
    warn(
        "a long function (name its steps)",
        &long_functions(&all, WARN_FN_LINES),
    );
    let long = long_functions(&all, MAX_FN_LINES);
    assert!(
        long.is_empty(),
        "split these by step, each step a named function ({} found):\n{}",
        long.len(),
        long.join("\n")
    );
}

/// The files of the library as the loop check reads them (the binary's `main.rs` is a crate
/// of its own).
fn units(all: &[Source]) -> Vec<loops::Unit> {
    all.iter()
        .filter(|f| !f.code.is_empty() && !f.path.ends_with("main.rs"))
        .map(|f| loops::Unit {
            module: module_path(&f.path),
            file: rel(&f.path),
            code: f.code.clone(),
        })
        .collect()
}

#[test]
fn no_import_loop_between_the_files_of_a_module() {
    let found = loops::import_loops(&units(&files()));
    assert!(
        found.is_empty(),
        "import loops inside modules ({} found; `mod` is the folder's own file, so a loop \
         through it is an arrow that runs back up to it): move what both sides need to one \
         of them, or to a file below both:\n{}",
        found.len(),
        found.join("\n")
    );
}

/// The folders of `src/` that hold code outside tests, as docs/architecture.md names them
/// (`workload/db/`).
fn code_folders(all: &[Source]) -> std::collections::BTreeSet<String> {
    all.iter()
        .filter(|f| !f.code.is_empty())
        .filter_map(|f| {
            f.path
                .parent()?
                .strip_prefix(src())
                .ok()
                .map(Path::to_path_buf)
        })
        .filter(|d| !d.as_os_str().is_empty())
        .map(|d| format!("{}/", d.display()))
        .collect()
}

#[test]
fn every_module_and_folder_is_described_in_the_architecture_doc() {
    let doc_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md");
    let doc = fs::read_to_string(&doc_path).expect("read docs/architecture.md");
    let mut missing: Vec<String> = LAYERS
        .iter()
        .filter(|m| !doc.contains(&format!("**`{m}`**")))
        .map(|m| format!("module `{m}` (a paragraph starting **`{m}`**)"))
        .collect();
    let folders = code_folders(&files());
    assert!(folders.len() > 20, "read only {} folders", folders.len());
    missing.extend(
        folders
            .iter()
            .filter(|d| !doc.contains(&format!("`{d}`")))
            .map(|d| format!("folder `{d}`")),
    );
    assert!(
        missing.is_empty(),
        "docs/architecture.md does not describe:\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_report_and_statistics_never_name_a_workload() {
    let names: Vec<&'static str> = fsarena::workload::names();
    assert!(
        names.len() >= 10,
        "the registry lists the workloads: {names:?}"
    );
    for Source { path, code, .. } in files() {
        let module = module_of(&path);
        if module != "report" && module != "stats" {
            continue;
        }
        for name in &names {
            let quoted = format!("\"{name}\"");
            assert!(
                !code.contains(&quoted),
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
    let refs: usize = all.iter().map(|f| crate_refs(&f.code).len()).sum();
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
    checks::whole_files_are_read(&all);
    checks::test_items_are_left_out();
    checks::function_lengths_are_measured();
    checks::import_loops_are_found();
}
