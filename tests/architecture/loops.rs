//! Import loops between the files of one module. Each module's children (its files, and its
//! folders, each counted as one child with everything in it) form a graph: an arrow A -> B
//! when code in A names sibling B (`super::b::X`, `super::{b::X}`, `crate::path::to::b`).
//! The module's own file (`mod.rs`, or `x.rs` for a folder `x/`) is the parent, not a
//! sibling: a parent naming its children and a child naming its parent draw no arrow. Any
//! cycle is a loop, reported with the files and the names that tie it.

use std::collections::{BTreeMap, BTreeSet};

use super::scan::paths;

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
/// crate. `self` inside a use tree (`use a::{self, b}`) and a trailing glob add nothing.
fn resolve(here: &[String], path: &[String]) -> Option<Vec<String>> {
    let (mut abs, rest) = match path.first().map(String::as_str) {
        Some("crate") => (Vec::new(), &path[1..]),
        Some("self") => (here.to_vec(), &path[1..]),
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

/// Every arrow between siblings, with what ties it.
fn arrows(units: &[Unit]) -> Arrows {
    let kids = children(units);
    let mut out = Arrows::new();
    for u in units {
        for (line, path) in paths(&u.code) {
            let Some(abs) = resolve(&u.module, &path) else {
                continue;
            };
            // The module where the two paths part: `u` lies in its child `from`, the path
            // names its child `to`.
            let Some(j) = (0..u.module.len().min(abs.len())).find(|&j| u.module[j] != abs[j])
            else {
                continue;
            };
            let level = u.module[..j].to_vec();
            let to = &abs[j];
            if !kids.get(&level).is_some_and(|k| k.contains(to)) {
                continue;
            }
            let name = if abs.len() > j + 1 {
                abs[j + 1..].join("::")
            } else {
                to.clone()
            };
            let tie = out
                .entry(level)
                .or_default()
                .entry((u.module[j].clone(), to.clone()))
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
