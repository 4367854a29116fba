//! The working set of a mix: where each slot's file lives, what the engine believes each
//! slot holds (its book-keeping), laying the set down unmeasured, and the manifest the
//! final tree must equal.
//!
//! A slot's bytes are always the first `size` bytes of one content stream, keyed by
//! (seed, slot, generation) through [`crate::dataset::content`]: a create or rewrite starts
//! a new generation, an append continues the stream. So the expected tree after any
//! sequence of operations is known exactly, without keeping a copy of it.

use rayon::prelude::*;

use super::spec::MixSpec;
use crate::dataset::content::{hash_content, Kind, CHUNK};
use crate::dataset::{draw, seed::workload_rng, ContentId, DatasetSpec, FileEntry, Manifest};

/// The seed purpose of the working set's layout (which slots start full, their sizes).
const LAYOUT_SALT: u64 = 0x313C_5E70_0000_0001;

/// Bits of a content number that hold the generation; the slot (plus one) sits above.
const GEN_BITS: u32 = 28;

/// One stretch of a file as written by one operation, with the xxh3 of its bytes, so a
/// read checks every byte against what was written without regenerating it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub len: u64,
    pub hash: u64,
}

/// What a slot holds when it holds a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileState {
    pub generation: u32,
    pub size: u64,
    /// The writes that made the file, in order; their lengths sum to `size`.
    pub segments: Vec<Segment>,
}

/// The working set's shape: slot paths and the directories holding them.
pub struct WorkingSet {
    /// Relative path of every slot: the `files` working-set slots, then one log file per
    /// appender.
    pub paths: Vec<String>,
    /// Every directory, parents first.
    pub dirs: Vec<String>,
    /// Working-set slots (the rest are log files).
    pub files: usize,
    pub kind: Kind,
}

impl WorkingSet {
    /// The layout of `spec`'s working set; text content for a typed data set (mail,
    /// documents, logs), the random kind otherwise.
    pub fn new(spec: &MixSpec, data: &DatasetSpec) -> WorkingSet {
        let leaves = spec.leaves().min(spec.files).max(1);
        let width = spec.dir_width;
        let leaf_path = |mut leaf: u64| {
            let mut parts = Vec::with_capacity(spec.dir_depth as usize);
            for _ in 0..spec.dir_depth {
                parts.push(format!("d{:02}", leaf % width));
                leaf /= width;
            }
            parts.reverse();
            parts
        };
        let mut dirs = std::collections::BTreeSet::new();
        let mut paths = Vec::with_capacity(spec.files as usize);
        for slot in 0..spec.files {
            let parts = leaf_path(slot % leaves);
            for i in 1..=parts.len() {
                dirs.insert(parts[..i].join("/"));
            }
            let mut p = parts.join("/");
            if !p.is_empty() {
                p.push('/');
            }
            p.push_str(&format!("f{slot:08}"));
            paths.push(p);
        }
        let appenders = spec.log.as_ref().map_or(0, |l| l.appenders);
        if appenders > 0 {
            dirs.insert("log".into());
        }
        paths.extend((0..appenders).map(|a| format!("log/access-{a}.log")));
        // Sorted by depth then name: parents before children.
        let mut dirs: Vec<String> = dirs.into_iter().collect();
        dirs.sort_by_key(|d| (d.matches('/').count(), d.clone()));
        let kind = match data.content {
            crate::dataset::spec::ContentMix::Typed => Kind::Text,
            crate::dataset::spec::ContentMix::Random => Kind::Compressed,
        };
        WorkingSet {
            paths,
            dirs,
            files: spec.files as usize,
            kind,
        }
    }

    /// The content id of `slot`'s `generation`.
    pub fn content(&self, slot: usize, generation: u32) -> u64 {
        let n = ((slot as u64 + 1) << GEN_BITS) | u64::from(generation) & ((1 << GEN_BITS) - 1);
        ContentId::plain(n, self.kind)
    }

    /// The initial book-keeping: a seeded `prefill` fraction of the slots hold a file of a
    /// drawn size (generation 0); log files start empty. Hashes are filled by
    /// [`WorkingSet::manifest`]'s caller through [`initial_segments`].
    pub fn initial(&self, spec: &MixSpec, seed: u64) -> Vec<Option<FileState>> {
        let mut rng = workload_rng(seed, LAYOUT_SALT);
        let mut order: Vec<usize> = (0..self.files).collect();
        draw::shuffle(&mut rng, &mut order);
        let full = (spec.prefill * self.files as f64).round() as usize;
        let mut filled = vec![false; self.files];
        for &s in &order[..full.min(self.files)] {
            filled[s] = true;
        }
        let mut states: Vec<Option<FileState>> = filled
            .into_iter()
            .map(|f| {
                f.then(|| FileState {
                    generation: 0,
                    size: spec.file_size.draw(&mut rng),
                    segments: Vec::new(),
                })
            })
            .collect();
        states.resize(self.paths.len(), None);
        for s in &mut states[self.files..] {
            *s = Some(FileState {
                generation: 0,
                size: 0,
                segments: Vec::new(),
            });
        }
        states
    }

    /// The manifest of a tree holding `states`: every directory, every held slot with its
    /// size, content id and xxh3 (generated, in parallel, unmeasured).
    pub fn manifest(&self, data: &DatasetSpec, states: &[Option<FileState>]) -> Manifest {
        let mut files: Vec<FileEntry> = states
            .par_iter()
            .enumerate()
            .filter_map(|(slot, s)| {
                let s = s.as_ref()?;
                let content = self.content(slot, s.generation);
                let mut buf = vec![0u8; CHUNK.min(s.size.max(1) as usize)];
                Some(FileEntry {
                    path: self.paths[slot].clone(),
                    size: s.size,
                    content,
                    hash: hash_content(data, content, s.size, &mut buf),
                })
            })
            .collect();
        files.sort_by(|a, b| a.path.cmp(&b.path));
        Manifest {
            files,
            dirs: self.dirs.clone(),
            duplicate_groups: Vec::new(),
        }
    }
}

/// Gives each initially held slot its one segment (the whole file) from `manifest`'s
/// hashes, so the first read of a prefilled file is checked like any other.
pub fn initial_segments(set: &WorkingSet, states: &mut [Option<FileState>], manifest: &Manifest) {
    for (slot, s) in states.iter_mut().enumerate() {
        if let (Some(s), Some(e)) = (s.as_mut(), manifest.file(&set.paths[slot])) {
            if s.size > 0 {
                s.segments = vec![Segment {
                    len: s.size,
                    hash: e.hash,
                }];
            }
        }
    }
}
