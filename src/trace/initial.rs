//! A trace's initial state: what the program found under the root and used. Which names it
//! will use is known only afterwards, and by then it may have changed or removed them, so
//! record snapshots the root's tree (names, kinds, sizes, link targets, where a sparse
//! file's data lies: `super::holes`) before the command
//! starts and, once the calls are read, keeps the snapshot's entries the calls used: every
//! name a kept call named or read through a descriptor, every directory on the way to one
//! (through symlinks too), and the entries of each directory the program listed. A name the
//! program created is not in the snapshot, so it is never initial.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use super::format::{Initial, Kind};

/// Symlinks followed on one path before giving up (the kernel's own limit).
const MAX_HOPS: usize = 40;

/// The root's tree before the command ran, by relative path.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// The root, absolute (symlink targets that are absolute are read against it).
    root: String,
    entries: HashMap<String, Initial>,
    children: HashMap<String, Vec<String>>,
    /// Directories that could not be read (their contents are not in the snapshot).
    pub unreadable: u64,
    /// Files with more pieces of data than a trace keeps (`holes::MAX_DATA_RANGES`).
    cut: BTreeSet<String>,
}

impl Snapshot {
    /// Walks `root` (canonical), not following symlinks.
    pub fn take(root: &Path) -> std::io::Result<Snapshot> {
        let mut snap = Snapshot {
            root: root.to_string_lossy().trim_end_matches('/').to_string(),
            ..Snapshot::default()
        };
        let mut todo: Vec<(PathBuf, String)> = vec![(root.to_path_buf(), String::new())];
        std::fs::read_dir(root)?;
        while let Some((dir, rel)) = todo.pop() {
            let Ok(listing) = std::fs::read_dir(&dir) else {
                snap.unreadable += 1;
                continue;
            };
            for entry in listing.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                let path = if rel.is_empty() {
                    name
                } else {
                    format!("{rel}/{name}")
                };
                let Ok(meta) = entry.metadata() else { continue };
                let kind = if meta.is_dir() {
                    todo.push((entry.path(), path.clone()));
                    Kind::Dir
                } else if meta.file_type().is_symlink() {
                    Kind::Symlink
                } else {
                    Kind::File
                };
                let target = (kind == Kind::Symlink)
                    .then(|| std::fs::read_link(entry.path()).ok())
                    .flatten()
                    .map(|t| t.to_string_lossy().into_owned());
                let size = (kind == Kind::File).then_some(meta.len());
                let holes = (kind == Kind::File)
                    .then(|| super::holes::find(&entry.path(), &meta))
                    .flatten();
                if holes.as_ref().is_some_and(|h| h.cut) {
                    snap.cut.insert(path.clone());
                }
                snap.children
                    .entry(rel.clone())
                    .or_default()
                    .push(path.clone());
                snap.entries.insert(
                    path.clone(),
                    Initial {
                        path,
                        kind,
                        size,
                        target,
                        data: holes.map(|h| h.data),
                    },
                );
            }
        }
        Ok(snap)
    }

    /// The initial state of a program that used `used` and listed `listed`, parents before
    /// children.
    pub fn initial(&self, used: &BTreeSet<String>, listed: &BTreeSet<String>) -> Vec<Initial> {
        let mut out = BTreeMap::new();
        for dir in listed {
            self.include(dir, &mut out);
            for child in self.children.get(dir).into_iter().flatten() {
                self.include(child, &mut out);
            }
        }
        for path in used {
            self.include(path, &mut out);
        }
        out.into_values().collect()
    }

    /// How many of `initial`'s files had more pieces of data than a trace keeps: the rest of
    /// each is kept as data (the replay lays it down without those holes).
    pub fn cut(&self, initial: &[Initial]) -> u64 {
        initial
            .iter()
            .filter(|e| self.cut.contains(&e.path))
            .count() as u64
    }

    /// `path` and every entry on the way to it, through symlinks that stay under the root.
    fn include(&self, path: &str, out: &mut BTreeMap<String, Initial>) {
        let mut parts: Vec<String> = path.split('/').rev().map(str::to_string).collect();
        let mut here = String::new();
        let mut hops = 0;
        while let Some(part) = parts.pop() {
            let next = join(&here, &part);
            let Some(entry) = self.entries.get(&next) else {
                return;
            };
            out.insert(next.clone(), entry.clone());
            let Some(target) = entry.target.as_deref() else {
                here = next;
                continue;
            };
            hops += 1;
            let base = if let Some(abs) = target.strip_prefix('/') {
                match format!("/{abs}").strip_prefix(&self.root) {
                    Some(rest) if rest.is_empty() || rest.starts_with('/') => rest.to_string(),
                    _ => return,
                }
            } else {
                format!("{here}/{target}")
            };
            let Some(resolved) = fold(&base) else { return };
            if hops > MAX_HOPS {
                return;
            }
            parts.extend(resolved.into_iter().rev());
            here = String::new();
        }
    }
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// A relative path's parts with `.` and `..` folded; `None` when it climbs above the root.
fn fold(path: &str) -> Option<Vec<String>> {
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            name => parts.push(name.to_string()),
        }
    }
    Some(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn used_names_their_parents_symlinks_and_listings_are_initial_created_ones_not() {
        let dir = std::env::temp_dir().join(format!("fsarena-initial-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("d/e")).unwrap();
        std::fs::create_dir_all(dir.join("other")).unwrap();
        std::fs::write(dir.join("d/e/a.txt"), b"hello").unwrap();
        std::fs::write(dir.join("d/b.txt"), b"hi").unwrap();
        std::fs::write(dir.join("other/x"), b"").unwrap();
        std::os::unix::fs::symlink("d/e", dir.join("lnk")).unwrap();
        let root = dir.canonicalize().unwrap();
        let snap = Snapshot::take(&root).unwrap();
        let initial = snap.initial(&set(&["lnk/a.txt", "new/file"]), &set(&["d"]));
        let _ = std::fs::remove_dir_all(&dir);
        let names: Vec<(&str, Kind, Option<u64>)> = initial
            .iter()
            .map(|i| (i.path.as_str(), i.kind, i.size))
            .collect();
        assert_eq!(
            names,
            [
                ("d", Kind::Dir, None),
                ("d/b.txt", Kind::File, Some(2)),
                ("d/e", Kind::Dir, None),
                ("d/e/a.txt", Kind::File, Some(5)),
                ("lnk", Kind::Symlink, None),
            ]
        );
        assert_eq!(initial[4].target.as_deref(), Some("d/e"));
    }

    #[test]
    fn folding_never_climbs_above_the_root() {
        assert_eq!(
            fold("a/./b/../c"),
            Some(vec!["a".to_string(), "c".to_string()])
        );
        assert_eq!(fold("a/../../b"), None);
    }
}
