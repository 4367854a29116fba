//! Import loops between the files of one module. Each module's children (its files, and its
//! folders, each counted as one child with everything in it) and the module's own file
//! (`mod.rs`, or `x.rs` for a folder `x/`, named [`OWN`]) form a graph: an arrow A -> B when
//! code in A names sibling B (`super::b::X`, `super::{b::X}`, `crate::path::to::b`), an
//! arrow from the own file to a child it names (`create::Create` in a registry, a `pub use`),
//! and an arrow from a child to the own file when it names an item the own file holds
//! (`super::Ctx`). Declaring a child (`mod a;`) draws no arrow. Any cycle is a loop,
//! reported with the files and the names that tie it: a folder whose own file lists its
//! children while they take its types has an arrow that runs back up, and the shared types
//! go in a file of their own that both import.

use std::collections::{BTreeMap, BTreeSet};

use super::scan::paths_from;

/// The node of a module's own file in its graph (no module can be named `mod`).
pub const OWN: &str = "mod";

/// One source file for the loop check: its module path (`src/report/charts/bars.rs` →
/// `["report", "charts", "bars"]`, a `mod.rs` is its folder), its name as shown, and its
/// code outside tests.
pub struct Unit {
    pub module: Vec<String>,
    pub file: String,
    pub code: String,
}

/// What ties one child to another: per file, the first line and the names it uses.
type Ties = BTreeMap<String, (usize, BTreeSet<String>)>;

/// Arrows per module (its path joined by `::`): (from child, to child) → ties.
type Arrows = BTreeMap<Vec<String>, BTreeMap<(String, String), Ties>>;

/// The absolute module path a path means in the module `here`, or None if it leaves the
/// crate; a `relative` path starts at `here` (a child module's name). `self` inside a use tree (`use a::{self, b}`) and a trailing glob add nothing.
fn resolve(here: &[String], path: &[String], relative: bool) -> Option<Vec<String>> {
    let (mut abs, rest) = match path.first().map(String::as_str) {
        Some("crate") => (Vec::new(), &path[1..]),
        Some("self") => (here.to_vec(), &path[1..]),
        Some(_) if relative => (here.to_vec(), path),
        Some("super") => {
            let ups = path.iter().take_while(|s| *s == "super").count();
            (here[..here.len().checked_sub(ups)?].to_vec(), &path[ups..])
        }
        _ => return None,
    };
    abs.extend(rest.iter().filter(|s| *s != "self").cloned());
    Some(abs)
}

/// The children of every module: for each module path, the names of its child modules.
fn children(units: &[Unit]) -> BTreeMap<Vec<String>, BTreeSet<String>> {
    let mut out: BTreeMap<Vec<String>, BTreeSet<String>> = BTreeMap::new();
    for u in units {
        for j in 0..u.module.len() {
            out.entry(u.module[..j].to_vec())
                .or_default()
                .insert(u.module[j].clone());
        }
    }
    out
}

/// Where a path leads, seen from the module `here`: the module in which the two part, the
/// child of it that `here` lies in (or [`OWN`] where `here` is that module), and the child
/// named (or [`OWN`] for an item of that module's own file). None for a path into `here`
/// itself or one that names nothing below where it parts.
fn parting(
    kids: &BTreeMap<Vec<String>, BTreeSet<String>>,
    here: &[String],
    abs: &[String],
) -> Option<(Vec<String>, String, String)> {
    let j = (0..here.len().min(abs.len()))
        .find(|&j| here[j] != abs[j])
        .unwrap_or(here.len());
    if j >= abs.len() {
        return None;
    }
    let level = here[..j.min(here.len())].to_vec();
    let under = kids.get(&level);
    let to = if under.is_some_and(|k| k.contains(&abs[j])) {
        abs[j].clone()
    } else if j < here.len() && j > 0 {
        OWN.to_string()
    } else {
        return None;
    };
    let from = here.get(j).cloned().unwrap_or_else(|| OWN.to_string());
    (from != to).then_some((level, from, to))
}

/// Every arrow between siblings (the own file included), with what ties it.
fn arrows(units: &[Unit]) -> Arrows {
    let kids = children(units);
    let mut out = Arrows::new();
    for u in units {
        let roots: Vec<&str> = kids
            .get(&u.module)
            .map(|k| k.iter().map(String::as_str).collect())
            .unwrap_or_default();
        for (line, path) in paths_from(&u.code, &roots) {
            let relative = roots.contains(&path[0].as_str());
            let Some(abs) = resolve(&u.module, &path, relative) else {
                continue;
            };
            let Some((level, from, to)) = parting(&kids, &u.module, &abs) else {
                continue;
            };
            let j = level.len();
            let name = if to == OWN {
                abs[j..].join("::")
            } else if abs.len() > j + 1 {
                abs[j + 1..].join("::")
            } else {
                to.clone()
            };
            let tie = out
                .entry(level)
                .or_default()
                .entry((from, to))
                .or_default()
                .entry(u.file.clone())
                .or_insert((line, BTreeSet::new()));
            tie.1.insert(name);
        }
    }
    out
}

/// The nodes `from` reaches by arrows (itself not included unless on a cycle).
fn reach(edges: &BTreeMap<(String, String), Ties>, from: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![from.to_string()];
    while let Some(n) = todo.pop() {
        for (a, b) in edges.keys() {
            if *a == n && seen.insert(b.clone()) {
                todo.push(b.clone());
            }
        }
    }
    seen
}

/// Every import loop, one entry per set of files that reach each other: the module, the
/// children, and each arrow between them with the file, line and names that make it.
pub fn import_loops(units: &[Unit]) -> Vec<String> {
    let mut out = Vec::new();
    for (level, edges) in arrows(units) {
        let nodes: BTreeSet<&String> = edges.keys().map(|(a, _)| a).collect();
        let reaches: BTreeMap<&String, BTreeSet<String>> =
            nodes.iter().map(|n| (*n, reach(&edges, n))).collect();
        let mut done = BTreeSet::new();
        for n in &nodes {
            if done.contains(*n) || !reaches[n].contains(*n) {
                continue;
            }
            let ring: BTreeSet<&String> = nodes
                .iter()
                .copied()
                .filter(|m| reaches[n].contains(*m) && reaches[m].contains(*n))
                .collect();
            done.extend(ring.iter().map(|m| (*m).clone()));
            let names: Vec<&str> = ring.iter().map(|m| m.as_str()).collect();
            let mut text = format!("module `{}`: {}", module_name(&level), names.join(" <-> "));
            for ((a, b), ties) in &edges {
                if !(ring.contains(a) && ring.contains(b)) {
                    continue;
                }
                for (file, (line, used)) in ties {
                    let used: Vec<&str> = used.iter().map(String::as_str).collect();
                    text += &format!("\n    {a} -> {b}: {file}:{line} uses {}", used.join(", "));
                }
            }
            out.push(text);
        }
    }
    out
}

fn module_name(level: &[String]) -> String {
    if level.is_empty() {
        "crate".to_string()
    } else {
        level.join("::")
    }
}

/// How many arrows between siblings the code draws, for the check that the reader reads.
pub fn arrow_count(units: &[Unit]) -> usize {
    arrows(units).values().map(BTreeMap::len).sum()
}
