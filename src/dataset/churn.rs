//! The seeded churn that ages a file system: an endless, deterministic stream of creates,
//! appends, overwrites, renames and deletes (and the directories they need), a pure function
//! of the seed and the file system's capacity. Applying it and deciding when to stop (the
//! fill level read back from the file system) is `provision::aging`'s job; this module only
//! says what happens next, so two agings of one spec perform the same operations.
//!
//! What it follows:
//! * **Geriatrix** (Kadekodi, Nagarajan, Ganger, Gibson, USENIX ATC '18): age a file system
//!   to a *target fullness* by a churn of creates and deletes, files chosen for deletion by
//!   an age (lifetime) model, so that both the files and the free space left between them
//!   fragment. Here every file gets a lifetime when it is created; a delete removes the
//!   live file whose lifetime ends first. Lifetimes are bimodal, as the file-system studies
//!   Geriatrix fits its profiles to report: half the files are temporary (exponential,
//!   mean [`SHORT_LIFE`] operations), the rest long-lived (Pareto, shape 1).
//! * **Impressions** (Agrawal, Arpaci-Dusseau, Arpaci-Dusseau, USENIX FAST '09): file sizes
//!   from a hybrid distribution, a lognormal body (μ = 9.48, σ = 2.46 in ln bytes) and a
//!   Pareto tail (k = 0.91, x_m = 512 MiB) with weight 0.00006; and a directory tree grown
//!   by the generative model of Agrawal et al. (FAST '07) that Impressions uses: a new
//!   directory goes under an existing one with probability proportional to its
//!   subdirectory count + 2. The parameters are the papers' published defaults as we read
//!   them; no size may exceed [`ChurnSpec::max_file`] (an image of a few hundred MiB has no
//!   room for the 512 MiB tail, and one file must not overshoot the fill level).
//!
//! The operation mix (weights in [`MIX`]) grows the live data by about half of what it
//! writes, so aging to a fill level writes about twice that level: enough churn to scatter
//! free space, cheap enough to age a 1 GiB image in well under a minute on an SSD.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::content::{ContentId, Kind};
use super::draw::{below, exp2_det, log2_det, normal, pick_weighted, unit, LN2};
use super::seed::key;

/// The stream's own key domain (apart from layout, contents and workloads).
const DOMAIN_CHURN: u64 = 4;
/// Content numbers of churn files start here, far above any data set's own.
const CONTENT_BASE: u64 = 1 << 40;
/// Mean lifetime of a temporary file, in operations.
pub const SHORT_LIFE: f64 = 64.0;
/// Deepest directory the tree grows (the root is depth 0).
const MAX_DEPTH: u32 = 8;
/// Impressions' lognormal body, ln bytes.
const LOGN_MU: f64 = 9.48;
const LOGN_SIGMA: f64 = 2.46;
/// Impressions' Pareto tail: shape, scale and weight.
const PARETO_K: f64 = 0.91;
const PARETO_XM: f64 = 512.0 * 1024.0 * 1024.0;
const TAIL_WEIGHT: f64 = 0.000_06;

/// Operation weights (per 100): creates outnumber deletes two to one.
pub const MIX: &[(&str, u32)] = &[
    ("create", 50),
    ("delete", 25),
    ("append", 10),
    ("overwrite", 8),
    ("rename", 7),
];

/// File extensions and their weights: they decide each file's kind of bytes (text,
/// structured binary, already compressed), as the data set's own do.
const EXTENSIONS: &[(&str, u32)] = &[
    ("txt", 14),
    ("log", 10),
    ("c", 8),
    ("html", 6),
    ("csv", 4),
    ("jpg", 14),
    ("mp3", 6),
    ("zip", 6),
    ("gz", 4),
    ("db", 8),
    ("o", 10),
    ("bin", 10),
];

/// What a churn is drawn for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChurnSpec {
    pub seed: u64,
    /// No file (created or appended to) grows beyond this many bytes.
    pub max_file: u64,
    /// Every file holds random (already compressed) bytes instead of bytes by extension.
    pub random_content: bool,
}

impl ChurnSpec {
    /// The spec for a file system of `capacity` bytes: files up to 1/128 of it (so one
    /// file moves the fill level by under 1 %), at least 64 KiB.
    pub fn for_capacity(seed: u64, capacity: u64, random_content: bool) -> ChurnSpec {
        ChurnSpec {
            seed,
            max_file: (capacity / 128).max(64 << 10),
            random_content,
        }
    }
}

/// One operation, with paths relative to the aged tree's root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Mkdir {
        path: String,
    },
    /// A new file of `size` bytes of `content` (a [`ContentId`]).
    Create {
        path: String,
        size: u64,
        content: u64,
    },
    /// `bytes` more bytes of `content` at the end (`offset` is the current size).
    Append {
        path: String,
        offset: u64,
        bytes: u64,
        content: u64,
    },
    /// `bytes` bytes rewritten in place at `offset` with `content`.
    Overwrite {
        path: String,
        offset: u64,
        bytes: u64,
        content: u64,
    },
    Rename {
        from: String,
        to: String,
    },
    Delete {
        path: String,
        size: u64,
    },
}

impl Op {
    /// How much the live data grows (negative: shrinks) by this operation, in bytes.
    pub fn growth(&self) -> i64 {
        match self {
            Op::Create { size, .. } => *size as i64,
            Op::Append { bytes, .. } => *bytes as i64,
            Op::Delete { size, .. } => -(*size as i64),
            _ => 0,
        }
    }

    /// Bytes this operation writes.
    pub fn written(&self) -> u64 {
        match self {
            Op::Create { size, .. } => *size,
            Op::Append { bytes, .. } | Op::Overwrite { bytes, .. } => *bytes,
            _ => 0,
        }
    }
}

#[derive(Debug, Clone)]
struct LiveFile {
    dir: usize,
    name: String,
    size: u64,
}

#[derive(Debug, Clone)]
struct DirNode {
    path: String,
    depth: u32,
    subdirs: u64,
}

/// The stream and the model of the tree it has built so far.
pub struct Churn {
    spec: ChurnSpec,
    rng: ChaCha8Rng,
    tick: u64,
    next_file: u64,
    next_content: u64,
    dirs: Vec<DirNode>,
    files: HashMap<u64, LiveFile>,
    /// Live file ids, for uniform choice (swap-removed; `slot` maps id → index).
    live: Vec<u64>,
    slot: HashMap<u64, usize>,
    /// (death tick, id), earliest first; entries of files already gone are skipped.
    deaths: BinaryHeap<Reverse<(u64, u64)>>,
    live_bytes: u64,
}

impl Churn {
    /// A stream starting on an empty tree.
    pub fn new(spec: ChurnSpec) -> Churn {
        Churn {
            spec,
            rng: ChaCha8Rng::from_seed(key(spec.seed, 0, DOMAIN_CHURN)),
            tick: 0,
            next_file: 0,
            next_content: 0,
            dirs: vec![DirNode {
                path: String::new(),
                depth: 0,
                subdirs: 0,
            }],
            files: HashMap::new(),
            live: Vec::new(),
            slot: HashMap::new(),
            deaths: BinaryHeap::new(),
            live_bytes: 0,
        }
    }

    /// Files alive in the model.
    pub fn live_files(&self) -> usize {
        self.live.len()
    }

    /// Bytes alive in the model (logical).
    pub fn live_bytes(&self) -> u64 {
        self.live_bytes
    }

    /// Directories made so far, the root excluded.
    pub fn dirs(&self) -> usize {
        self.dirs.len() - 1
    }

    /// The next operation.
    pub fn next_op(&mut self) -> Op {
        self.tick += 1;
        // A directory for every ~10 files, as real trees hold (Impressions' files per
        // directory); the first operations lay down a few.
        if self.dirs.len() < 4 || below(&mut self.rng, 100) < 8 {
            if let Some(op) = self.mkdir() {
                return op;
            }
        }
        let what = if self.live.is_empty() {
            "create"
        } else {
            pick_weighted(&mut self.rng, MIX)
        };
        match what {
            "delete" => self.delete(),
            "append" => self.append(),
            "overwrite" => self.overwrite(),
            "rename" => self.rename(),
            _ => self.create(),
        }
    }

    fn path(&self, f: &LiveFile) -> String {
        join(&self.dirs[f.dir].path, &f.name)
    }

    fn content(&mut self, ext: &str) -> u64 {
        self.next_content += 1;
        let kind = if self.spec.random_content {
            Kind::Compressed
        } else {
            Kind::for_extension(ext)
        };
        ContentId::plain(CONTENT_BASE + self.next_content, kind)
    }

    /// A new directory under a parent drawn with weight subdirs + 2 (none past
    /// [`MAX_DEPTH`]).
    fn mkdir(&mut self) -> Option<Op> {
        let weight = |d: &DirNode| {
            if d.depth < MAX_DEPTH {
                d.subdirs + 2
            } else {
                0
            }
        };
        let total: u64 = self.dirs.iter().map(weight).sum();
        if total == 0 {
            return None;
        }
        let mut x = below(&mut self.rng, total);
        let mut parent = 0;
        for (i, d) in self.dirs.iter().enumerate() {
            let w = weight(d);
            if x < w {
                parent = i;
                break;
            }
            x -= w;
        }
        self.dirs[parent].subdirs += 1;
        let path = join(&self.dirs[parent].path, &format!("d{}", self.dirs.len()));
        let depth = self.dirs[parent].depth + 1;
        self.dirs.push(DirNode {
            path: path.clone(),
            depth,
            subdirs: 0,
        });
        Some(Op::Mkdir { path })
    }

    /// A file size from Impressions' hybrid distribution, capped at `max_file`.
    fn size(&mut self) -> u64 {
        let x = if unit(&mut self.rng) < TAIL_WEIGHT {
            // Pareto by inversion: x_m · u^(−1/k).
            let u = 1.0 - unit(&mut self.rng);
            PARETO_XM * exp2_det(-log2_det(u) / PARETO_K)
        } else {
            exp2_det((LOGN_MU + LOGN_SIGMA * normal(&mut self.rng)) / LN2)
        };
        (x as u64).clamp(0, self.spec.max_file)
    }

    /// A lifetime in operations: temporary (exponential) or long-lived (Pareto, shape 1).
    fn lifetime(&mut self) -> u64 {
        let u = 1.0 - unit(&mut self.rng); // (0, 1]
        let l = if below(&mut self.rng, 2) == 0 {
            -SHORT_LIFE * log2_det(u) * LN2
        } else {
            SHORT_LIFE * 16.0 / u
        };
        l.min(1e15) as u64 + 1
    }

    fn create(&mut self) -> Op {
        self.next_file += 1;
        let id = self.next_file;
        let ext = pick_weighted(&mut self.rng, EXTENSIONS);
        let dir = below(&mut self.rng, self.dirs.len() as u64) as usize;
        let size = self.size();
        let death = self.tick + self.lifetime();
        let content = self.content(ext);
        let f = LiveFile {
            dir,
            name: format!("f{id}.{ext}"),
            size,
        };
        let path = self.path(&f);
        self.slot.insert(id, self.live.len());
        self.live.push(id);
        self.files.insert(id, f);
        self.deaths.push(Reverse((death, id)));
        self.live_bytes += size;
        Op::Create {
            path,
            size,
            content,
        }
    }

    /// A uniformly chosen live file (there is one: callers ran a create first).
    fn any_live(&mut self) -> u64 {
        self.live[below(&mut self.rng, self.live.len() as u64) as usize]
    }

    fn delete(&mut self) -> Op {
        let id = loop {
            match self.deaths.pop() {
                Some(Reverse((_, id))) if self.files.contains_key(&id) => break id,
                Some(_) => continue,
                // Unreachable while a file lives; fall back to a uniform choice.
                None => break self.any_live(),
            }
        };
        let Some(f) = self.files.remove(&id) else {
            return self.create();
        };
        if let Some(i) = self.slot.remove(&id) {
            self.live.swap_remove(i);
            if let Some(&moved) = self.live.get(i) {
                self.slot.insert(moved, i);
            }
        }
        self.live_bytes -= f.size;
        Op::Delete {
            path: self.path(&f),
            size: f.size,
        }
    }

    fn append(&mut self) -> Op {
        let id = self.any_live();
        // Appends are small: a log line to a few blocks (the lognormal body, shifted down).
        let want = exp2_det((LOGN_MU - 2.0 + 1.5 * normal(&mut self.rng)) / LN2) as u64;
        let content = self.content("bin");
        let max = self.spec.max_file;
        let Some(f) = self.files.get_mut(&id).filter(|f| f.size < max) else {
            // A file at the size cap takes no more: a new file instead.
            return self.create();
        };
        let bytes = want.clamp(1, max - f.size);
        let offset = f.size;
        f.size += bytes;
        self.live_bytes += bytes;
        let path = join(&self.dirs[f.dir].path, &f.name);
        Op::Append {
            path,
            offset,
            bytes,
            content,
        }
    }

    fn overwrite(&mut self) -> Op {
        let id = self.any_live();
        let size = self.files.get(&id).map_or(0, |f| f.size);
        if size == 0 {
            return self.append();
        }
        let blocks = size.div_ceil(4096);
        let offset = below(&mut self.rng, blocks) * 4096;
        let bytes = (below(&mut self.rng, 16) + 1) * 4096;
        let bytes = bytes.min(size - offset);
        let content = self.content("bin");
        let Some(f) = self.files.get(&id) else {
            return self.create();
        };
        Op::Overwrite {
            path: self.path(f),
            offset,
            bytes,
            content,
        }
    }

    fn rename(&mut self) -> Op {
        let id = self.any_live();
        let dir = below(&mut self.rng, self.dirs.len() as u64) as usize;
        let Some(f) = self.files.get(&id).cloned() else {
            return self.create();
        };
        let from = self.path(&f);
        let to = join(&self.dirs[dir].path, &f.name);
        if let Some(f) = self.files.get_mut(&id) {
            f.dir = dir;
        }
        Op::Rename { from, to }
    }
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn spec(seed: u64) -> ChurnSpec {
        ChurnSpec::for_capacity(seed, 1 << 30, false)
    }

    /// Replays a stream into a map path → size, checking every op against the tree.
    fn replay(ops: &[Op]) -> (BTreeMap<String, u64>, usize) {
        let mut files = BTreeMap::new();
        let mut dirs = std::collections::BTreeSet::from([String::new()]);
        let parent = |p: &str| p.rsplit_once('/').map_or(String::new(), |(d, _)| d.into());
        for op in ops {
            match op {
                Op::Mkdir { path } => {
                    assert!(dirs.contains(&parent(path)), "mkdir {path}: no parent");
                    assert!(dirs.insert(path.clone()), "mkdir {path} twice");
                }
                Op::Create { path, size, .. } => {
                    assert!(dirs.contains(&parent(path)), "create {path}: no parent");
                    assert!(files.insert(path.clone(), *size).is_none(), "{path} exists");
                }
                Op::Append {
                    path,
                    offset,
                    bytes,
                    ..
                } => {
                    let s = files.get_mut(path).expect("append to a live file");
                    assert_eq!(*s, *offset);
                    *s += bytes;
                }
                Op::Overwrite {
                    path,
                    offset,
                    bytes,
                    ..
                } => {
                    let s = files[path];
                    assert!(offset + bytes <= s, "overwrite past the end of {path}");
                }
                Op::Rename { from, to } => {
                    let s = files.remove(from).expect("rename a live file");
                    assert!(dirs.contains(&parent(to)));
                    assert!(files.insert(to.clone(), s).is_none() || from == to);
                }
                Op::Delete { path, size } => {
                    assert_eq!(files.remove(path), Some(*size), "delete {path}");
                }
            }
        }
        (files, dirs.len() - 1)
    }

    #[test]
    fn the_same_seed_gives_the_same_stream_and_another_seed_another() {
        let take = |seed| {
            let mut c = Churn::new(spec(seed));
            (0..5000).map(|_| c.next_op()).collect::<Vec<_>>()
        };
        assert_eq!(take(7), take(7));
        assert_ne!(take(7), take(8));
    }

    #[test]
    fn the_stream_is_consistent_and_the_model_matches_it() {
        let mut c = Churn::new(spec(3));
        let ops: Vec<Op> = (0..20_000).map(|_| c.next_op()).collect();
        let (files, dirs) = replay(&ops);
        assert_eq!(files.len(), c.live_files());
        assert_eq!(files.values().sum::<u64>(), c.live_bytes());
        assert_eq!(dirs, c.dirs());
        let growth: i64 = ops.iter().map(Op::growth).sum();
        assert_eq!(growth, c.live_bytes() as i64);
        assert!(files.values().all(|&s| s <= spec(3).max_file));
        // Every kind of operation happens, and the live data grows.
        for kind in ["Mkdir", "Create", "Append", "Overwrite", "Rename", "Delete"] {
            assert!(
                ops.iter().any(|o| format!("{o:?}").starts_with(kind)),
                "no {kind}"
            );
        }
        let written: u64 = ops.iter().map(Op::written).sum();
        assert!(
            written > c.live_bytes() && written < 4 * c.live_bytes(),
            "written {written}, live {}",
            c.live_bytes()
        );
    }

    #[test]
    fn sizes_follow_the_lognormal_body() {
        let mut c = Churn::new(ChurnSpec {
            max_file: u64::MAX,
            ..spec(11)
        });
        let mut ln: Vec<f64> = (0..20_000).map(|_| (c.size().max(1) as f64).ln()).collect();
        ln.sort_by(f64::total_cmp);
        let median = ln[ln.len() / 2];
        assert!((median - LOGN_MU).abs() < 0.1, "median ln size {median}");
        let mean = ln.iter().sum::<f64>() / ln.len() as f64;
        let sd = (ln.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / ln.len() as f64).sqrt();
        assert!((sd - LOGN_SIGMA).abs() < 0.1, "sd of ln size {sd}");
    }

    #[test]
    fn deletes_take_the_file_whose_lifetime_ends_first() {
        let mut c = Churn::new(spec(5));
        let mut deletes = 0;
        for _ in 0..3000 {
            // The live file whose lifetime ends first, from the model's own death list.
            let first = c
                .deaths
                .iter()
                .map(|r| r.0)
                .filter(|(_, id)| c.files.contains_key(id))
                .min()
                .and_then(|(_, id)| c.files.get(&id).map(|f| c.path(f)));
            if let Op::Delete { path, .. } = c.next_op() {
                assert_eq!(Some(&path), first.as_ref(), "not the first to die");
                deletes += 1;
            }
        }
        assert!(deletes > 500, "{deletes} deletes");
    }
}
