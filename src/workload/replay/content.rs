//! The bytes a replay writes, from the data set's content generation (`dataset::content`):
//! no user data is needed or kept. A file's kind (text, structured binary, compressed) is
//! its extension's, as in a generated data set, so a compressing file system sees the
//! kind of bytes the program wrote; the seed and compressibility are the run's.

use super::call::Aligned;
use super::script::Script;
use crate::dataset::content::Kind;
use crate::dataset::content::BLOCK;
use crate::dataset::{fill_content, ContentId, DatasetSpec};
use crate::trace::bounds::MAX_RW_COUNT;
use crate::trace::format::{Call, Op};

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

/// The bytes a replayed read asks for: what the recorded call moved, rounded up to a page
/// (so an `O_DIRECT` read stays aligned), and never more than it asked. A read that asked
/// for 2^40 bytes and got 12 reads into 4 KiB: the request is the program's, the buffer it
/// needs is what the file held; the kernel clamps a request to [`MAX_RW_COUNT`] anyway.
pub fn read_len(call: &Call) -> usize {
    let asked = call.size.unwrap_or(0).min(MAX_RW_COUNT);
    let got = call.ret.unwrap_or(0).clamp(0, MAX_RW_COUNT as i64) as u64;
    asked.min(got.div_ceil(PAGE).max(1) * PAGE) as usize
}

/// The bytes a replayed write issues: what the recorded write moved (a short write's count,
/// a copy's bytes copied, never `cp`'s 2^63-byte copy_file_range request); a failed write
/// its request, up to [`FAILED_WRITE`].
pub fn write_len(call: &Call) -> usize {
    let asked = call.size.unwrap_or(0);
    let len = match call.ret {
        Some(got) => asked.min(got.max(0) as u64),
        None => asked.min(FAILED_WRITE),
    };
    len.min(MAX_RW_COUNT) as usize
}

/// A page, the alignment of an `O_DIRECT` buffer.
const PAGE: u64 = 4096;

/// The most a failed write's replay issues: it fails as recorded (a bad descriptor, a full
/// file system) without a buffer as large as a request nobody moved.
const FAILED_WRITE: u64 = 1 << 20;

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
                .filter(|c| matches!(c.op, Op::Read | Op::Getdents))
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
        .filter(|c| c.op == Op::Write)
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
