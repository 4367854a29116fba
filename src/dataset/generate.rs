//! The seeded layout generator: directories, names, sizes, content ids, planted duplicates
//! and decoys, all drawn from one ChaCha stream in a fixed order.
//!
//! Portability: every draw goes through [`super::draw`] (ChaCha and exactly rounded IEEE
//! arithmetic only), so a seed gives the same tree on any machine and any dependency update.

use std::collections::BTreeSet;

use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use super::content::{self, ContentId, CHUNK};
use super::draw::{below, exp2_det, log2_det, normal, pick_weighted, shuffle, unit, LN2};
use super::error::DatasetError;
use super::manifest::{FileEntry, Manifest};
use super::names::{dir_name, file_stem};
use super::profile::{Shape, SizeDist, MIN_FILE_SIZE};
use super::seed::{key, DOMAIN_LAYOUT};
use super::snapshot::plan_source;
use super::spec::DatasetSpec;

/// Files per 200 that become decoys of each kind (at least one pair of each kind).
const DECOYS_PER_200: u64 = 1;

impl DatasetSpec {
    /// Lays out the tree (dirs, names, sizes, content ids, hashes) without touching the
    /// target. Deterministic: the same spec gives the same manifest on every machine and for
    /// any number of threads.
    ///
    /// For `source_dir`: walks the user's directory and hashes every regular file. Symbolic
    /// links, sockets, FIFOs and device nodes are skipped (they are not data to copy);
    /// [`plan_source`] returns the list of what was skipped.
    pub fn plan(&self) -> Result<Manifest, DatasetError> {
        if let Some(dir) = &self.source_dir {
            return plan_source(dir).map(|(m, _skipped)| m);
        }
        if !(0.0..=0.9).contains(&self.duplicate_fraction) {
            return Err(DatasetError::Invalid(format!(
                "duplicate_fraction must be within 0..=0.9, got {}",
                self.duplicate_fraction
            )));
        }
        if !(0.0..=1.0).contains(&self.compressibility) {
            return Err(DatasetError::Invalid(format!(
                "compressibility must be within 0..=1, got {}",
                self.compressibility
            )));
        }
        // Planning hashes every byte (seconds at the studies' scale), and every cell of a
        // run plans the same spec: the first plan is kept and handed out again.
        let key = serde_json::to_string(self).ok();
        if let Some(m) = key.as_ref().and_then(|k| planned().get(k).cloned()) {
            return Ok(m);
        }
        let shape = super::sizing::shape(self)?;
        let mut manifest = layout(self, &shape);
        hash_all(self, &mut manifest.files);
        if let Some(shared) = self.shared {
            tag_files(&mut manifest, shared.rank);
        }
        if let Some(k) = key {
            let mut kept = planned();
            if kept.len() >= PLANS_KEPT {
                kept.clear();
            }
            kept.insert(k, manifest.clone());
        }
        Ok(manifest)
    }
}

/// How many generated plans a process keeps (a run has one per data set; the studies have
/// four).
const PLANS_KEPT: usize = 8;

/// The plans made so far in this process, by their spec. A generated spec's plan never
/// changes (it is a function of the spec), so handing out a kept one is exact.
fn planned() -> std::sync::MutexGuard<'static, std::collections::HashMap<String, Manifest>> {
    static PLANS: std::sync::OnceLock<
        std::sync::Mutex<std::collections::HashMap<String, Manifest>>,
    > = std::sync::OnceLock::new();
    PLANS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl DatasetSpec {
    /// Every rank's files of a tree all ranks share (`shared`), as one manifest: the common
    /// directories once, each rank's tagged files, sorted. Duplicate groups are dropped:
    /// the ranks' copies of one file are duplicates of each other across ranks.
    /// Without `shared`, the plan itself.
    pub fn plan_all_ranks(&self) -> Result<Manifest, DatasetError> {
        let Some(shared) = self.shared else {
            return self.plan();
        };
        let untagged = DatasetSpec {
            shared: None,
            ..self.clone()
        }
        .plan()?;
        let mut all = Manifest {
            files: Vec::with_capacity(untagged.files.len() * shared.ranks as usize),
            dirs: untagged.dirs.clone(),
            duplicate_groups: Vec::new(),
        };
        for rank in 0..shared.ranks {
            let mut m = untagged.clone();
            tag_files(&mut m, rank);
            all.files.extend(m.files);
        }
        all.files.sort_unstable_by(|a, b| a.path.cmp(&b.path));
        Ok(all)
    }
}

/// Renames every file of `m` as rank `rank` names it in a shared tree (contents, sizes and
/// hashes unchanged: they follow the content id, not the name), keeping the files sorted
/// and the duplicate groups pointing at the same files.
fn tag_files(m: &mut Manifest, rank: u32) {
    for f in &mut m.files {
        let (dir, name) = match f.path.rsplit_once('/') {
            Some((d, n)) => (d, n),
            None => ("", f.path.as_str()),
        };
        f.path = join(dir, &super::spec::SharedTree::tag(name, rank));
    }
    let mut order: Vec<usize> = (0..m.files.len()).collect();
    order.sort_by(|&a, &b| m.files[a].path.cmp(&m.files[b].path));
    let mut new_index = vec![0; order.len()];
    for (new, &old) in order.iter().enumerate() {
        new_index[old] = new;
    }
    let old_files = std::mem::take(&mut m.files);
    let mut slots: Vec<Option<FileEntry>> = old_files.into_iter().map(Some).collect();
    m.files = order.iter().filter_map(|&old| slots[old].take()).collect();
    for g in &mut m.duplicate_groups {
        for i in g.iter_mut() {
            *i = new_index[*i];
        }
        g.sort_unstable();
    }
    m.duplicate_groups.sort_unstable();
}

/// A file while the layout is drawn.
struct Draft {
    dir: usize,
    name: String,
    size: u64,
    class: usize,
}

/// Draws the whole layout (everything but the hashes).
fn layout(spec: &DatasetSpec, shape: &Shape) -> Manifest {
    let mut rng = ChaCha8Rng::from_seed(key(spec.seed, 0, DOMAIN_LAYOUT));
    let total: u64 = shape.classes.iter().map(|c| c.count).sum();

    // Directories: a random recursive tree (each new directory hangs under a uniformly
    // chosen earlier one), which gives the few-wide-many-deep shape of real trees.
    let n_dirs = ((total as f64 / shape.files_per_dir).round() as usize).max(1);
    let mut dir_path: Vec<String> = vec![String::new()];
    let mut dir_depth: Vec<u32> = vec![0];
    let mut used: Vec<BTreeSet<String>> = vec![BTreeSet::new()];
    for i in 1..n_dirs {
        let mut parent = 0;
        for _ in 0..8 {
            let p = below(&mut rng, i as u64) as usize;
            if dir_depth[p] < shape.max_depth {
                parent = p;
                break;
            }
        }
        let name = unique(&mut used[parent], dir_name(&mut rng), "");
        let path = join(&dir_path[parent], &name);
        dir_path.push(path);
        dir_depth.push(dir_depth[parent] + 1);
        used.push(BTreeSet::new());
    }

    // Files, class by class.
    let mut drafts = Vec::with_capacity(total as usize);
    for (ci, class) in shape.classes.iter().enumerate() {
        for _ in 0..class.count {
            let size = sample_size(&mut rng, &class.size);
            let ext = pick_weighted(&mut rng, class.exts);
            let dir = below(&mut rng, n_dirs as u64) as usize;
            let stem = file_stem(&mut rng);
            let name = unique(&mut used[dir], stem, ext);
            drafts.push(Draft {
                dir,
                name,
                size,
                class: ci,
            });
        }
    }

    let mut files: Vec<(String, u64, usize)> = drafts
        .into_iter()
        .map(|d| (join(&dir_path[d.dir], &d.name), d.size, d.class))
        .collect();
    files.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut entries: Vec<FileEntry> = files
        .iter()
        .enumerate()
        .map(|(i, (path, size, _))| FileEntry {
            path: path.clone(),
            size: *size,
            content: ContentId::plain(i as u64 + 1, kind_of(spec, path)),
            hash: 0,
        })
        .collect();
    let classes: Vec<usize> = files.iter().map(|f| f.2).collect();

    let mut taken = vec![false; entries.len()];
    let duplicate_groups = plant_duplicates(
        &mut rng,
        &mut entries,
        &classes,
        &mut taken,
        spec.duplicate_fraction,
        shape.classes.len(),
    );
    plant_decoys(&mut rng, &mut entries, &classes, &mut taken, shape);

    let mut dirs: Vec<String> = dir_path.into_iter().skip(1).collect();
    dirs.sort_unstable();
    Manifest {
        files: entries,
        dirs,
        duplicate_groups,
    }
}

/// Plants groups of 2–5 files with equal bytes, within each size class (so a duplicate
/// of a 3 GiB video is another video, and the total stays close to the profile's).
fn plant_duplicates(
    rng: &mut ChaCha8Rng,
    entries: &mut [FileEntry],
    classes: &[usize],
    taken: &mut [bool],
    fraction: f64,
    n_classes: usize,
) -> Vec<Vec<usize>> {
    let mut groups = Vec::new();
    for class in 0..n_classes {
        let mut pool: Vec<usize> = (0..entries.len())
            .filter(|&i| classes[i] == class)
            .collect();
        shuffle(rng, &mut pool);
        let mut remaining = (fraction * pool.len() as f64).round() as usize;
        let mut next = 0;
        while remaining >= 2 {
            let g = group_size(2 + below(rng, 4) as usize, remaining);
            let members = &pool[next..next + g];
            next += g;
            remaining -= g;
            let leader = members[0];
            let (size, content) = (entries[leader].size, entries[leader].content);
            for &m in members {
                entries[m].size = size;
                entries[m].content = content;
                taken[m] = true;
            }
            let mut group = members.to_vec();
            group.sort_unstable();
            groups.push(group);
        }
    }
    groups.sort_unstable();
    groups
}

/// The size of the next planted group: `drawn` (2–5) when that leaves 0 or ≥ 2 files to
/// plant; else one more or one fewer, so that no file is left alone. A single leftover
/// would otherwise be planted as a "group" of one, which no finder reports (`dupes` then
/// fails its check on every target).
fn group_size(drawn: usize, remaining: usize) -> usize {
    let g = drawn.min(remaining);
    match remaining - g {
        1 if g < 5 => g + 1,
        1 => g - 1,
        _ => g,
    }
}

/// Plants files that a careless duplicate finder would group: pairs with equal sizes but
/// different bytes, and pairs that differ only in their last byte. Drawn from the class
/// with the smallest files, which is where real collisions of size happen.
fn plant_decoys(
    rng: &mut ChaCha8Rng,
    entries: &mut [FileEntry],
    classes: &[usize],
    taken: &mut [bool],
    shape: &Shape,
) {
    let smallest = (0..shape.classes.len())
        .min_by(|&a, &b| {
            let (ma, mb) = (shape.classes[a].size.mean(), shape.classes[b].size.mean());
            ma.partial_cmp(&mb).unwrap_or(std::cmp::Ordering::Equal)
        })
        .unwrap_or(0);
    let mut pool: Vec<usize> = (0..entries.len())
        .filter(|&i| classes[i] == smallest && !taken[i])
        .collect();
    shuffle(rng, &mut pool);
    let pairs = (entries.len() as u64).div_ceil(200).max(1) * DECOYS_PER_200;
    let mut it = pool.chunks_exact(2);
    for kind in [0, 1] {
        for _ in 0..pairs {
            let Some(pair) = it.next() else { return };
            let (a, b) = (pair[0], pair[1]);
            entries[b].size = entries[a].size;
            if kind == 1 {
                // Same bytes as `a` except the last one; skipped if the id does not fit.
                if let Some(id) = ContentId::tweak(entries[a].content, entries[a].size - 1) {
                    entries[b].content = id;
                }
            }
            taken[a] = true;
            taken[b] = true;
        }
    }
}

/// Computes every distinct content's hash once, in parallel. The result does not depend
/// on the thread count: each hash is a pure function of (content, size).
fn hash_all(spec: &DatasetSpec, files: &mut [FileEntry]) {
    let mut unique: Vec<(u64, u64)> = files.iter().map(|f| (f.content, f.size)).collect();
    unique.sort_unstable();
    unique.dedup();
    let hashes: Vec<u64> = unique
        .par_iter()
        .map_init(
            || vec![0u8; CHUNK],
            |buf, &(content, size)| {
                let n = (size as usize).clamp(1, CHUNK);
                content::hash_content(spec, content, size, &mut buf[..n])
            },
        )
        .collect();
    for f in files.iter_mut() {
        if let Ok(i) = unique.binary_search(&(f.content, f.size)) {
            f.hash = hashes[i];
        }
    }
}

/// The kind of bytes a file holds: by its extension, unless the data set asks for random
/// bytes throughout.
fn kind_of(spec: &DatasetSpec, path: &str) -> content::Kind {
    if spec.content == super::spec::ContentMix::Random {
        return content::Kind::Compressed;
    }
    let name = path.rsplit('/').next().unwrap_or(path);
    let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
    content::Kind::for_extension(ext)
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// Makes `stem.ext` unique in a directory, case-insensitively (exFAT and NTFS fold case),
/// by appending `-2`, `-3`, … to the stem.
fn unique(used: &mut BTreeSet<String>, stem: String, ext: &str) -> String {
    let with_ext = |s: &str| {
        if ext.is_empty() {
            s.to_string()
        } else {
            format!("{s}.{ext}")
        }
    };
    let mut name = with_ext(&stem);
    let mut k = 2;
    while !used.insert(name.to_lowercase()) {
        name = with_ext(&format!("{stem}-{k}"));
        k += 1;
    }
    name
}

fn sample_size(rng: &mut ChaCha8Rng, dist: &SizeDist) -> u64 {
    let (bytes, min, max) = match *dist {
        SizeDist::LogNormal {
            mean,
            sigma,
            min,
            max,
        } => {
            // ln X ~ N(mu, sigma²) with mean e^(mu + sigma²/2) = `mean`.
            let log2_median = log2_det(mean) - sigma * sigma / (2.0 * LN2);
            (exp2_det(log2_median + sigma / LN2 * normal(rng)), min, max)
        }
        SizeDist::LogUniform { min, max } => {
            let (a, b) = (log2_det(min), log2_det(max));
            (exp2_det(a + (b - a) * unit(rng)), min, max)
        }
    };
    (bytes.clamp(min, max).round() as u64).max(MIN_FILE_SIZE)
}

#[cfg(test)]
mod tests;
