//! The changes `sync` plants in its source before the measured phase: a seed-determined
//! share of the files modified, added, deleted and renamed, and the manifest the source
//! has afterwards — what a correct mirror must end up equal to, and exactly how many
//! copies and deletions a correct comparison makes.

use std::collections::{BTreeSet, HashMap};
use std::io::Write;
use std::path::Path;

use crate::dataset::draw::{below, shuffle};
use crate::dataset::seed::workload_rng as rng_for;
use crate::dataset::{fill_content, DatasetSpec, FileEntry, Manifest};
use crate::workload::error::{IoContext, WorkloadError};

/// Content ids of new bytes start here: plain ids (bit 63 clear) far above the generator's.
const NEW_CONTENT_BASE: u64 = 1 << 62;
const CHANGE_SALT: u64 = 0x5EED_C4A6_E5E7_0001;

/// The changes made to the source before the measured sync.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChangeSet {
    /// New bytes at existing paths (half keep their size, half get another).
    pub modified: Vec<FileEntry>,
    pub added: Vec<FileEntry>,
    pub deleted: Vec<String>,
    /// (old path, new path).
    pub renamed: Vec<(String, String)>,
}

impl ChangeSet {
    /// Files a correct sync copies: every modified, added and renamed file.
    pub fn expected_copies(&self) -> u64 {
        (self.modified.len() + self.added.len() + self.renamed.len()) as u64
    }
    /// Files a correct sync deletes: every deleted file and every rename's old name.
    pub fn expected_deletes(&self) -> u64 {
        (self.deleted.len() + self.renamed.len()) as u64
    }
}

fn hash_new(spec: &DatasetSpec, content: u64, size: u64, buf: &mut [u8]) -> u64 {
    crate::dataset::content::hash_content(spec, content, size, buf)
}

/// Draws the changes for `before` (deterministic from `spec.seed`) and returns them with
/// the manifest the source has afterwards.
pub fn plan_changes(
    before: &Manifest,
    spec: &DatasetSpec,
    fraction: f64,
) -> Result<(ChangeSet, Manifest), WorkloadError> {
    if !(0.0..=1.0).contains(&fraction) {
        return Err(WorkloadError::Option(format!(
            "change_fraction must be within 0..=1, got {fraction}"
        )));
    }
    let n_files = before.files.len();
    let n = (fraction * n_files as f64).round() as usize;
    let (q, r) = (n / 4, n % 4);
    let counts = [
        q + usize::from(r > 0),
        q + usize::from(r > 1),
        q + usize::from(r > 2),
        q,
    ];
    let changes = draw_changes(before, spec, counts);
    let after = manifest_after(before, &changes);
    Ok((changes, after))
}

/// Draws `counts` = [modified, added, deleted, renamed] changes from one seeded stream, in
/// a fixed order (shuffle, modified, added, renamed) so a seed always gives the same set.
fn draw_changes(before: &Manifest, spec: &DatasetSpec, counts: [usize; 4]) -> ChangeSet {
    let [n_mod, n_add, n_del, n_ren] = counts;
    let n_files = before.files.len();
    let mut rng = rng_for(spec.seed, CHANGE_SALT);
    let mut picks: Vec<usize> = (0..n_files).collect();
    shuffle(&mut rng, &mut picks);
    let (mods, rest) = picks.split_at(n_mod.min(n_files));
    let (dels, rest) = rest.split_at(n_del.min(rest.len()));
    let (rens, _) = rest.split_at(n_ren.min(rest.len()));

    let mut paths = FreshPaths::new(before);
    let mut buf = vec![0u8; 1 << 20];
    let mut next_content = NEW_CONTENT_BASE;
    let mut changes = ChangeSet::default();
    for (k, &i) in mods.iter().enumerate() {
        let old = &before.files[i];
        let size = if k % 2 == 0 {
            old.size
        } else {
            before.files[below(&mut rng, n_files as u64) as usize].size
        };
        next_content += 1;
        changes.modified.push(FileEntry {
            path: old.path.clone(),
            size,
            content: next_content,
            hash: hash_new(spec, next_content, size, &mut buf),
        });
    }
    for k in 0..n_add {
        let size = before.files[below(&mut rng, n_files.max(1) as u64) as usize].size;
        let path = paths.fresh(&mut rng, &format!("sync-added-{k}.bin"));
        next_content += 1;
        changes.added.push(FileEntry {
            path,
            size,
            content: next_content,
            hash: hash_new(spec, next_content, size, &mut buf),
        });
    }
    changes.deleted = dels.iter().map(|&i| before.files[i].path.clone()).collect();
    for (k, &i) in rens.iter().enumerate() {
        let old = &before.files[i].path;
        let base = old.rsplit_once('/').map_or(old.as_str(), |(_, b)| b);
        let to = paths.fresh(&mut rng, &format!("renamed-{k}-{base}"));
        changes.renamed.push((old.clone(), to));
    }
    changes
}

/// Names for added and renamed files: in a seed-drawn existing directory, never one a
/// file or directory of the source already has (nor one given out before).
struct FreshPaths<'a> {
    /// The source's directories, `""` (the root) first.
    dirs: Vec<&'a str>,
    taken: BTreeSet<String>,
}

impl<'a> FreshPaths<'a> {
    fn new(before: &'a Manifest) -> FreshPaths<'a> {
        let mut taken: BTreeSet<String> = before.files.iter().map(|f| f.path.clone()).collect();
        taken.extend(before.dirs.iter().cloned());
        let mut dirs: Vec<&str> = vec![""];
        dirs.extend(before.dirs.iter().map(String::as_str));
        FreshPaths { dirs, taken }
    }

    /// `stem` in a drawn directory, with `-1`, `-2`, … appended until the path is free.
    fn fresh(&mut self, rng: &mut rand_chacha::ChaCha8Rng, stem: &str) -> String {
        let d = self.dirs[below(rng, self.dirs.len() as u64) as usize];
        let mut k = 0u32;
        loop {
            let name = if k == 0 {
                stem.to_string()
            } else {
                format!("{stem}-{k}")
            };
            let p = if d.is_empty() {
                name
            } else {
                format!("{d}/{name}")
            };
            if self.taken.insert(p.clone()) {
                return p;
            }
            k += 1;
        }
    }
}

/// The source's manifest after `changes`: what a correct mirror must equal, its files
/// sorted by path and its duplicate groups recomputed (new content joins no group).
fn manifest_after(before: &Manifest, changes: &ChangeSet) -> Manifest {
    let gone: BTreeSet<&str> = changes
        .deleted
        .iter()
        .map(String::as_str)
        .chain(changes.renamed.iter().map(|(from, _)| from.as_str()))
        .collect();
    let modified: HashMap<&str, &FileEntry> = changes
        .modified
        .iter()
        .map(|f| (f.path.as_str(), f))
        .collect();
    let mut files: Vec<FileEntry> = Vec::with_capacity(before.files.len() + changes.added.len());
    for f in &before.files {
        if gone.contains(f.path.as_str()) {
            continue;
        }
        files.push(
            modified
                .get(f.path.as_str())
                .map_or_else(|| f.clone(), |m| (*m).clone()),
        );
    }
    for (from, to) in &changes.renamed {
        if let Some(f) = before
            .file(from)
            .or_else(|| before.files.iter().find(|f| &f.path == from))
        {
            files.push(FileEntry {
                path: to.clone(),
                ..f.clone()
            });
        }
    }
    files.extend(changes.added.iter().cloned());
    files.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    let duplicate_groups = duplicate_groups(&files);
    Manifest {
        files,
        dirs: before.dirs.clone(),
        duplicate_groups,
    }
}

/// Indices of non-empty files sharing a content id, two or more to a group, each group
/// sorted and the groups sorted among themselves (the manifest's order).
fn duplicate_groups(files: &[FileEntry]) -> Vec<Vec<usize>> {
    let mut by_content: HashMap<u64, Vec<usize>> = HashMap::new();
    for (i, f) in files.iter().enumerate() {
        if f.size > 0 {
            by_content.entry(f.content).or_default().push(i);
        }
    }
    let mut groups: Vec<Vec<usize>> = by_content.into_values().filter(|g| g.len() >= 2).collect();
    groups.iter_mut().for_each(|g| g.sort_unstable());
    groups.sort_unstable();
    groups
}

/// Writes the changes into the source tree at `root` (unmeasured). Modified and added
/// files get the current time as mtime, years after the dated originals.
pub fn apply_changes(root: &Path, spec: &DatasetSpec, c: &ChangeSet) -> Result<(), WorkloadError> {
    for p in &c.deleted {
        let path = root.join(p);
        std::fs::remove_file(&path).ctx(|| format!("deleting {}", path.display()))?;
    }
    for (from, to) in &c.renamed {
        let (a, b) = (root.join(from), root.join(to));
        std::fs::rename(&a, &b).ctx(|| format!("renaming {} to {}", a.display(), b.display()))?;
    }
    let mut buf = vec![0u8; 1 << 20];
    for f in c.modified.iter().chain(&c.added) {
        let path = root.join(&f.path);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .ctx(|| format!("writing {}", path.display()))?;
        let mut off = 0u64;
        while off < f.size {
            let n = buf.len().min((f.size - off) as usize);
            fill_content(spec, f.content, off, &mut buf[..n]);
            file.write_all(&buf[..n])
                .ctx(|| format!("writing {}", path.display()))?;
            off += n as u64;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::sync::testenv::Env;
    use crate::workload::verify;

    #[test]
    fn plan_changes_splits_the_fraction_four_ways_deterministically() {
        let env = Env::new();
        let before = env.spec.plan().unwrap();
        let n_files = before.files.len();
        assert!(n_files >= 40, "{n_files} files: too few to split");
        let (c, after) = plan_changes(&before, &env.spec, 0.1).unwrap();
        let n = (0.1 * n_files as f64).round() as usize;
        let counts = [
            c.modified.len(),
            c.added.len(),
            c.deleted.len(),
            c.renamed.len(),
        ];
        assert_eq!(counts.iter().sum::<usize>(), n, "{counts:?}");
        assert!(counts.iter().max().unwrap() - counts.iter().min().unwrap() <= 1);
        assert_eq!(
            c.expected_copies() as usize,
            counts[0] + counts[1] + counts[3]
        );
        assert_eq!(c.expected_deletes() as usize, counts[2] + counts[3]);

        // The manifest afterwards: added in, deleted and renamed-from out, modified rehashed.
        assert_eq!(after.files.len(), n_files + c.added.len() - c.deleted.len());
        for p in &c.deleted {
            assert!(after.file(p).is_none(), "{p} still there");
        }
        for (from, to) in &c.renamed {
            assert!(after.file(from).is_none(), "{from} still there");
            let moved = after.file(to).expect("renamed file present");
            assert_eq!(moved.hash, before.file(from).unwrap().hash);
        }
        for m in &c.modified {
            assert_ne!(
                after.file(&m.path).unwrap().hash,
                before.file(&m.path).unwrap().hash
            );
        }

        // Fixed by the seed, different for another seed.
        assert_eq!(plan_changes(&before, &env.spec, 0.1).unwrap().0, c);
        let mut other = env.spec.clone();
        other.seed ^= 1;
        assert_ne!(plan_changes(&before, &other, 0.1).unwrap().0, c);
        assert!(plan_changes(&before, &env.spec, 1.5).is_err());
    }

    #[test]
    fn apply_changes_turns_the_tree_into_the_planned_manifest() {
        let env = Env::new();
        let before = env.spec.plan().unwrap();
        crate::dataset::materialize(&env.spec, &before, env.root.path(), 2).unwrap();
        let (c, after) = plan_changes(&before, &env.spec, 0.2).unwrap();
        apply_changes(env.root.path(), &env.spec, &c).unwrap();
        verify::tree(env.root.path(), &after, 2).unwrap();
        assert!(verify::tree(env.root.path(), &before, 2).is_err());
    }
}
