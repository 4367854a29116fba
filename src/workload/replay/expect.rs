//! The tree a replay must leave: the trace's initial state with every call that succeeded
//! when recorded applied to it, in recorded order — names, kinds, file sizes and link
//! targets. Hard links share an inode (a write through one name grows the other), an open
//! file keeps its inode through a rename or unlink, and a descriptor's implicit offset moves
//! by what each read and write moved and to where each seek went, as the kernel's does.

use std::collections::BTreeMap;

use super::script::{has_flag, Script};
use crate::trace::format::{Call, Kind, Op, Trace};

/// One name in the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub kind: Kind,
    /// The inode, for files (shared by hard links); 0 otherwise.
    pub inode: usize,
    /// A symlink's stored text.
    pub target: Option<String>,
}

/// What a name should hold after the replay, as compared with the target's tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expected {
    Dir,
    File { size: u64 },
    Symlink { target: String },
}

/// The simulated tree.
#[derive(Debug, Default)]
pub struct Tree {
    pub names: BTreeMap<String, Node>,
    /// File sizes by inode.
    pub sizes: Vec<u64>,
}

/// An open file description: its inode, implicit offset and `O_APPEND`.
#[derive(Debug, Clone, Copy)]
struct Open {
    inode: Option<usize>,
    offset: u64,
    append: bool,
}

/// fallocate's mode bits the size depends on.
const FALLOC_KEEP_SIZE: u32 = 0x01;
const FALLOC_PUNCH_HOLE: u32 = 0x02;
const FALLOC_COLLAPSE_RANGE: u32 = 0x08;
const FALLOC_INSERT_RANGE: u32 = 0x20;

impl Tree {
    /// The trace's initial state.
    pub fn initial(trace: &Trace) -> Tree {
        let mut tree = Tree::default();
        for e in &trace.initial {
            match e.kind {
                Kind::File => {
                    tree.add_file(&e.path, e.size.unwrap_or(0));
                }
                Kind::Dir | Kind::Symlink => tree.add(&e.path, e.kind, 0, e.target.clone()),
            }
        }
        tree
    }

    fn add(&mut self, path: &str, kind: Kind, inode: usize, target: Option<String>) {
        self.names.insert(
            path.to_string(),
            Node {
                kind,
                inode,
                target,
            },
        );
    }

    fn add_file(&mut self, path: &str, size: u64) -> usize {
        self.sizes.push(size);
        let inode = self.sizes.len() - 1;
        self.add(path, Kind::File, inode, None);
        inode
    }

    /// `path` with final-component symlinks followed, while their targets are relative and
    /// stay inside the root (at most 8 links, as a loop guard).
    pub fn follow(&self, path: &str) -> String {
        let mut path = path.to_string();
        for _ in 0..8 {
            let Some(Node {
                kind: Kind::Symlink,
                target: Some(target),
                ..
            }) = self.names.get(&path)
            else {
                break;
            };
            match join(super::deps::parent(&path), target) {
                Some(p) => path = p,
                None => break,
            }
        }
        path
    }

    /// Every name as the replay must leave it.
    pub fn expected(&self) -> BTreeMap<String, Expected> {
        self.names
            .iter()
            .map(|(p, n)| {
                let e = match n.kind {
                    Kind::Dir => Expected::Dir,
                    Kind::File => Expected::File {
                        size: self.sizes[n.inode],
                    },
                    Kind::Symlink => Expected::Symlink {
                        target: n.target.clone().unwrap_or_default(),
                    },
                };
                (p.clone(), e)
            })
            .collect()
    }

    /// `root` and every name below it.
    fn under(&self, root: &str) -> Vec<String> {
        let below = format!("{root}/");
        self.names
            .keys()
            .filter(|p| *p == root || p.starts_with(&below))
            .cloned()
            .collect()
    }

    /// Swaps `a` and `b` (and what lies under each), as `RENAME_EXCHANGE` does.
    fn exchange(&mut self, a: &str, b: &str) {
        let parked = format!("{a}\u{0}exchange");
        self.rename(a, &parked);
        self.rename(b, a);
        self.rename(&parked, b);
    }

    /// Moves `from` (and, for a directory, everything under it) to `to`, replacing `to`.
    fn rename(&mut self, from: &str, to: &str) {
        if from == to {
            return;
        }
        for p in self.under(to) {
            self.names.remove(&p);
        }
        for p in self.under(from) {
            if let Some(node) = self.names.remove(&p) {
                self.names.insert(format!("{to}{}", &p[from.len()..]), node);
            }
        }
    }
}

/// `rel` resolved against directory `dir`, or `None` when it is absolute or leaves the root.
fn join(dir: &str, rel: &str) -> Option<String> {
    if rel.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    for part in rel.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// The tree the trace implies: its initial state with every recorded success applied.
pub fn simulate(trace: &Trace, script: &Script) -> Tree {
    let mut tree = Tree::initial(trace);
    let mut opens: Vec<Open> = Vec::with_capacity(script.slot_path.len());
    for (i, call) in trace.calls.iter().enumerate() {
        if call.ret.is_none() {
            continue; // a failed call changed nothing
        }
        let slot = script.slot[i];
        match call.op {
            Op::Open => opens.push(open(&mut tree, call)),
            Op::Read | Op::Write => {
                if let Some(o) = slot.and_then(|s| opens.get_mut(s)) {
                    moved(&mut tree, o, call);
                }
            }
            // The replay seeks to the position the call returned: the writes after it
            // land there, not where the last read or write ended.
            Op::Seek => {
                if let (Some(o), Some(pos)) = (slot.and_then(|s| opens.get_mut(s)), call.ret) {
                    o.offset = pos.max(0) as u64;
                }
            }
            Op::Clone => {
                let inode = |s: Option<usize>| s.and_then(|s| opens.get(s)).and_then(|o| o.inode);
                let from = inode(script.source.get(&i).copied());
                if let (Some(src), Some(dst)) = (from, inode(slot)) {
                    tree.sizes[dst] = cloned(tree.sizes[src], tree.sizes[dst], call);
                }
            }
            Op::Truncate | Op::Fallocate => {
                let inode = match slot {
                    Some(s) => opens.get(s).and_then(|o| o.inode),
                    None => call.path.as_deref().and_then(|p| file_inode(&tree, p)),
                };
                if let Some(ino) = inode {
                    tree.sizes[ino] = resized(tree.sizes[ino], call);
                }
            }
            _ => namespace(&mut tree, call),
        }
    }
    tree
}

/// Applies a successful open: `O_CREAT` makes a missing file, `O_TRUNC` empties it.
fn open(tree: &mut Tree, call: &Call) -> Open {
    let path = tree.follow(call.path.as_deref().unwrap_or_default());
    let mut inode = file_inode(tree, &path);
    if inode.is_none() && has_flag(call, "O_CREAT") && !has_flag(call, "O_TMPFILE") {
        inode = Some(tree.add_file(&path, 0));
    }
    let writes = has_flag(call, "O_WRONLY") || has_flag(call, "O_RDWR");
    if let (Some(ino), true) = (inode, has_flag(call, "O_TRUNC") && writes) {
        tree.sizes[ino] = 0;
    }
    Open {
        inode,
        offset: 0,
        append: has_flag(call, "O_APPEND"),
    }
}

/// Applies a read's or a write's recorded byte count to the offset and the file's size.
fn moved(tree: &mut Tree, o: &mut Open, call: &Call) {
    let n = call.ret.unwrap_or(0).max(0) as u64;
    let at = match (call.offset, call.op, o.append, o.inode) {
        (Some(off), _, _, _) => off,
        (None, Op::Write, true, Some(ino)) => tree.sizes[ino],
        _ => o.offset,
    };
    if call.op == Op::Write {
        if let Some(ino) = o.inode {
            tree.sizes[ino] = tree.sizes[ino].max(at + n);
        }
    }
    if call.offset.is_none() {
        o.offset = at + n;
    }
}

/// The destination's size after a clone from a source of `src` bytes: the cloned range's
/// end if that is past the destination's (a whole-file clone, or a range of length 0, runs
/// to the source's end).
fn cloned(src: u64, dst: u64, call: &Call) -> u64 {
    let src_off = call.source.as_ref().and_then(|s| s.offset).unwrap_or(0);
    let rest = src.saturating_sub(src_off);
    let len = match call.size {
        Some(n) if n > 0 => n.min(rest),
        _ => rest,
    };
    dst.max(call.offset.unwrap_or(0).saturating_add(len))
}

/// A file's size after a truncate or fallocate.
fn resized(size: u64, call: &Call) -> u64 {
    let len = call.size.unwrap_or(0);
    if call.op == Op::Truncate {
        return len;
    }
    let end = call.offset.unwrap_or(0) + len;
    let mode = call.mode.unwrap_or(0);
    if mode & FALLOC_COLLAPSE_RANGE != 0 {
        size.saturating_sub(len)
    } else if mode & FALLOC_INSERT_RANGE != 0 {
        size + len
    } else if mode & (FALLOC_KEEP_SIZE | FALLOC_PUNCH_HOLE) != 0 {
        size
    } else {
        size.max(end)
    }
}

fn file_inode(tree: &Tree, path: &str) -> Option<usize> {
    match tree.names.get(&tree.follow(path)) {
        Some(n) if n.kind == Kind::File => Some(n.inode),
        _ => None,
    }
}

/// Applies a successful mkdir, rmdir, unlink, rename, link or symlink.
fn namespace(tree: &mut Tree, call: &Call) {
    let (Some(path), path2) = (call.path.as_deref(), call.path2.as_deref()) else {
        return;
    };
    match (call.op, path2) {
        (Op::Mkdir, _) => tree.add(path, Kind::Dir, 0, None),
        (Op::Rmdir | Op::Unlink, _) => {
            tree.names.remove(path);
        }
        (Op::Rename, Some(to)) if has_flag(call, "RENAME_EXCHANGE") => tree.exchange(path, to),
        (Op::Rename, Some(to)) => {
            tree.rename(path, to);
            // A whiteout (an overlay's "deleted here") is a device node left at the old
            // name: the replay's tree reads it as an empty file.
            if has_flag(call, "RENAME_WHITEOUT") {
                tree.add_file(path, 0);
            }
        }
        (Op::Link, Some(new)) => {
            if let Some(node) = tree.names.get(path).cloned() {
                tree.names.insert(new.to_string(), node);
            }
        }
        (Op::Symlink, _) => tree.add(path, Kind::Symlink, 0, call.target.clone()),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::format::{Initial, Source};

    /// A clone, as `cp -a` on btrfs makes one, gives its destination the source's size (so
    /// a replay that cloned or copied nothing diverges); a range clone ends where its range
    /// does.
    #[test]
    fn a_clone_gives_its_destination_the_source_s_bytes() {
        let open = |path: &str, fd: i64| Call {
            flags: vec!["O_RDWR".into(), "O_CREAT".into()],
            ret: Some(fd),
            ..Call::on_path(0, 0.0, 0.0, Op::Open, path)
        };
        let clone = |fd: i32, range: Option<(u64, u64, u64)>| Call {
            path: None,
            fd: Some(fd),
            source: Some(Box::new(Source {
                fd: 3,
                offset: range.map(|r| r.0),
            })),
            size: range.map(|r| r.1),
            offset: range.map(|r| r.2),
            ..Call::on_path(0, 0.0, 0.0, Op::Clone, "")
        };
        let src = Initial {
            path: "src".into(),
            kind: Kind::File,
            size: Some(100_000),
            target: None,
            data: None,
        };
        let calls = vec![
            open("src", 3),
            open("dst", 4),
            clone(4, None),
            open("part", 5),
            clone(5, Some((4096, 8192, 65536))),
        ];
        let t = Trace::new(vec!["cp".into()], 1, 0.1, vec![src], calls);
        let script = super::super::script::resolve(&t);
        assert_eq!(script.source.get(&2), Some(&0));
        let got = simulate(&t, &script).expected();
        assert_eq!(got.get("dst"), Some(&Expected::File { size: 100_000 }));
        assert_eq!(got.get("part"), Some(&Expected::File { size: 73_728 }));
    }
}
