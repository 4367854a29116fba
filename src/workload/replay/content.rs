//! The bytes a replay writes, from the data set's content generation (`dataset::content`):
//! no user data is needed or kept. A file's kind (text, structured binary, compressed) is
//! its extension's, as in a generated data set, so a compressing file system sees the
//! kind of bytes the program wrote; the seed and compressibility are the run's.

use super::call::{read_len, write_len, Aligned};
use super::script::Script;
use crate::dataset::content::Kind;
use crate::dataset::content::BLOCK;
use crate::dataset::{fill_content, ContentId, DatasetSpec};
use crate::trace::format::Op;

/// The kinds content is generated in, in pool order.
const KINDS: [Kind; 3] = [Kind::Text, Kind::Binary, Kind::Compressed];

/// The kind of bytes a file named `path` holds, by its extension.
fn kind_of(path: &str) -> Kind {
    let name = path.rsplit('/').next().unwrap_or(path);
    let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
    Kind::for_extension(ext)
}

/// The content id of the file at `path`: a stable number from the name, of its kind.
pub fn content_id(path: &str) -> u64 {
    let n = xxhash_rust::xxh3::xxh3_64(path.as_bytes()) % (1 << 40) + 1;
    ContentId::plain(n, kind_of(path))
}

/// The memory a replay of `script` takes for its buffers: the content pools (one per kind
/// a written file has, each the largest write plus a block) and each recorded thread's read
/// buffer (its largest read), so that `options::load` can refuse a trace the host cannot
/// hold before anything is provisioned.
pub fn buffer_bytes(script: &Script) -> u64 {
    let largest_write = largest_write(script) as u64;
    let kinds = script
        .slot_path
        .iter()
        .map(|p| pool_index(p))
        .collect::<std::collections::HashSet<_>>()
        .len() as u64;
    let reads: u64 = script
        .by_thread
        .iter()
        .map(|calls| {
            calls
                .iter()
                .map(|&i| &script.calls[i])
                .filter(|c| matches!(c.op, Op::Read | Op::Getdents | Op::MapRead))
                .map(|c| read_len(c) as u64)
                .max()
                .unwrap_or(0)
        })
        .sum();
    kinds * (largest_write + BLOCK) + reads
}

/// The pool a file named `path` takes its written bytes from.
fn pool_index(path: &str) -> usize {
    let k = kind_of(path);
    KINDS.iter().position(|x| *x == k).unwrap_or(0)
}

fn largest_write(script: &Script) -> usize {
    script
        .calls
        .iter()
        .filter(|c| matches!(c.op, Op::Write | Op::Msync))
        .map(write_len)
        .max()
        .unwrap_or(0)
}

/// One pool of generated content per kind, each as long as the trace's largest write plus
/// a block, and per slot the pool its writes take bytes from. Made before the phase, so a
/// write costs the copy into the kernel and nothing else.
pub fn pools(spec: &DatasetSpec, script: &Script) -> (Vec<Aligned>, Vec<usize>) {
    let len = largest_write(script) + BLOCK as usize;
    let pool_of: Vec<usize> = script.slot_path.iter().map(|p| pool_index(p)).collect();
    let pools = KINDS
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let used = pool_of.contains(&i);
            Aligned::new(if used { len } else { 0 }, |buf| {
                fill_content(spec, ContentId::plain(i as u64 + 1, *k), 0, buf)
            })
        })
        .collect();
    (pools, pool_of)
}
