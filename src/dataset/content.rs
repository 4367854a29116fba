//! File contents: a pure function of (seed, content id, compressibility, offset).
//!
//! A content id carries the kind of bytes it stands for ([`Kind`]: text, structured binary,
//! or already compressed, chosen from the file's extension when the layout is made), so
//! planted duplicates share their kind with their original. Text and binary come from
//! [`super::typed`]; what follows describes the already-compressed (random) kind.
//!
//! Every byte comes from a ChaCha8 stream keyed by the seed and the content id. ChaCha is
//! specified down to the byte, so the same key gives the same bytes on every machine and
//! every architecture, and any offset can be produced without generating what precedes it
//! (the stream is seekable), which is what lets many threads write one large file in chunks.
//!
//! Compressibility `c` is applied per 4 KiB block: the first `(1 - c) × 4096` bytes of each
//! block come from the stream, the rest repeat a 16-byte pattern that is itself derived from
//! the key. A compressor therefore removes about a fraction `c` of every block, and two
//! different contents never become equal even at `c = 1` (their patterns differ).
//!
//! Writing a planned tree to disk is [`super::materialize`]'s job; this module only says
//! what the bytes are.
//!
//! A content id may carry a "tweak": the bytes of another content with one byte flipped.
//! That is how the generator plants files that differ from another file only in their last
//! byte (decoys for duplicate finders that trust a prefix or a size).

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::seed::{key, DOMAIN_CONTENT};
use super::spec::DatasetSpec;
pub use super::typed::Kind;
use super::typed::{fill_binary, fill_text, Vocabulary};

/// Bytes generated per step when hashing or writing content.
pub const CHUNK: usize = 1 << 20;

/// Size of the block over which compressibility is applied.
pub const BLOCK: u64 = 4096;
/// Length of the repeated pattern in the compressible part of a block.
const PATTERN: usize = 16;

/// Bit layout of a content id: bits 60..=62 the [`Kind`]; a plain id has bit 63 clear and
/// its number in bits 0..=59; a tweaked id has bit 63 set, the base's number in bits
/// 37..=59 and the offset of the flipped byte in bits 0..=36.
const TWEAK_FLAG: u64 = 1 << 63;
const KIND_SHIFT: u32 = 60;
const NUMBER_MASK: u64 = (1 << KIND_SHIFT) - 1;
const TWEAK_OFFSET_BITS: u32 = 37;
const TWEAK_BASE_BITS: u32 = 23;

/// What a content id stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContentId {
    /// Bytes of the stream keyed by this id.
    Plain(u64),
    /// Bytes of `base` with the byte at `offset` inverted.
    Tweaked { base: u64, offset: u64 },
}

impl ContentId {
    /// Decodes a content id as stored in a [`super::manifest::FileEntry`]. A tweak's
    /// `base` is the plain id (kind included) of the content it alters.
    pub fn decode(id: u64) -> ContentId {
        if id & TWEAK_FLAG == 0 {
            return ContentId::Plain(id);
        }
        let kind = id & (0b111 << KIND_SHIFT);
        ContentId::Tweaked {
            base: kind | ((id & NUMBER_MASK) >> TWEAK_OFFSET_BITS),
            offset: id & ((1 << TWEAK_OFFSET_BITS) - 1),
        }
    }

    /// The plain id of content number `n` (from 1) of `kind`.
    pub fn plain(n: u64, kind: Kind) -> u64 {
        (kind.bits() << KIND_SHIFT) | (n & NUMBER_MASK)
    }

    /// The kind of bytes a content id stands for.
    pub fn kind(id: u64) -> Kind {
        Kind::from_bits((id >> KIND_SHIFT) & 0b111)
    }

    /// Encodes a tweak of plain id `base` at `offset`; `None` if either does not fit the
    /// bit layout (content numbers up to 2^23, offsets up to 128 GiB), in which case the
    /// decoy is not planted.
    pub fn tweak(base: u64, offset: u64) -> Option<u64> {
        let n = base & NUMBER_MASK;
        if base & TWEAK_FLAG != 0
            || n == 0
            || n >= (1 << TWEAK_BASE_BITS)
            || offset >= (1 << TWEAK_OFFSET_BITS)
        {
            return None;
        }
        Some(TWEAK_FLAG | (base & !NUMBER_MASK) | (n << TWEAK_OFFSET_BITS) | offset)
    }
}

thread_local! {
    /// The vocabulary of the last seed this thread wrote text for: built once, not per call.
    static VOCABULARY: std::cell::RefCell<Option<(u64, std::rc::Rc<Vocabulary>)>> =
        const { std::cell::RefCell::new(None) };
}

fn vocabulary(seed: u64) -> std::rc::Rc<Vocabulary> {
    VOCABULARY.with(|v| {
        let mut v = v.borrow_mut();
        match &*v {
            Some((s, voc)) if *s == seed => voc.clone(),
            _ => {
                let voc = std::rc::Rc::new(Vocabulary::new(seed));
                *v = Some((seed, voc.clone()));
                voc
            }
        }
    })
}

/// Fills `buf` with the bytes at `offset` of content `content` (deterministic from
/// `spec.seed`, `content` and `spec.compressibility`). Meaningless for a `source_dir` data
/// set, whose bytes come from the user's files.
pub fn fill_content(spec: &DatasetSpec, content: u64, offset: u64, buf: &mut [u8]) {
    let (base, tweak) = match ContentId::decode(content) {
        ContentId::Plain(id) => (id, None),
        ContentId::Tweaked { base, offset } => (base, Some(offset)),
    };
    let k = key(spec.seed, base, DOMAIN_CONTENT);
    match ContentId::kind(base) {
        Kind::Text => fill_text(&vocabulary(spec.seed), k, offset, buf),
        Kind::Binary => fill_binary(k, offset, buf),
        Kind::Compressed => fill_random(spec, k, offset, buf),
    }
    if let Some(t) = tweak {
        if t >= offset && t - offset < buf.len() as u64 {
            buf[(t - offset) as usize] ^= 0xff;
        }
    }
}

/// The already-compressed kind: the random stream, with `compressibility` applied.
fn fill_random(spec: &DatasetSpec, k: [u8; 32], offset: u64, buf: &mut [u8]) {
    let mut rng = ChaCha8Rng::from_seed(k);
    let random_per_block = random_bytes_per_block(spec.compressibility);
    if random_per_block == BLOCK {
        fill_stream(&mut rng, offset, buf);
    } else {
        // The pattern lives on stream 1, the random bytes on stream 0.
        let mut pattern = [0u8; PATTERN];
        rng.set_stream(1);
        rng.fill_bytes(&mut pattern);
        rng.set_stream(0);
        let mut pos = 0usize;
        while pos < buf.len() {
            let at = offset + pos as u64;
            let in_block = at % BLOCK;
            let (len, random) = if in_block < random_per_block {
                (random_per_block - in_block, true)
            } else {
                (BLOCK - in_block, false)
            };
            let end = buf.len().min(pos + len as usize);
            if random {
                fill_stream(&mut rng, at, &mut buf[pos..end]);
            } else {
                for (i, b) in buf[pos..end].iter_mut().enumerate() {
                    *b = pattern[((at as usize) + i) % PATTERN];
                }
            }
            pos = end;
        }
    }
}

/// How many bytes of every 4 KiB block come from the random stream.
fn random_bytes_per_block(compressibility: f64) -> u64 {
    let c = if compressibility.is_finite() {
        compressibility.clamp(0.0, 1.0)
    } else {
        0.0
    };
    ((1.0 - c) * BLOCK as f64).round() as u64
}

/// Fills `buf` with stream bytes `offset..offset + buf.len()`.
fn fill_stream(rng: &mut ChaCha8Rng, offset: u64, buf: &mut [u8]) {
    rng.set_word_pos(u128::from(offset / 4));
    let skip = (offset % 4) as usize;
    if skip == 0 {
        rng.fill_bytes(buf);
        return;
    }
    let mut head = [0u8; 4];
    rng.fill_bytes(&mut head);
    let n = (4 - skip).min(buf.len());
    buf[..n].copy_from_slice(&head[skip..skip + n]);
    if buf.len() > n {
        rng.fill_bytes(&mut buf[n..]);
    }
}

/// xxh3-64 of the first `size` bytes of `content`, generated through `buf` (any length ≥ 1).
pub fn hash_content(spec: &DatasetSpec, content: u64, size: u64, buf: &mut [u8]) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3Default::new();
    let mut off = 0u64;
    while off < size {
        let n = buf.len().min((size - off) as usize);
        fill_content(spec, content, off, &mut buf[..n]);
        h.update(&buf[..n]);
        off += n as u64;
    }
    h.digest()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(c: f64) -> DatasetSpec {
        DatasetSpec {
            compressibility: c,
            ..DatasetSpec::default()
        }
    }

    #[test]
    fn any_offset_matches_the_whole_stream() {
        for c in [0.0, 0.5, 1.0] {
            let s = spec(c);
            let mut whole = vec![0u8; 20_000];
            fill_content(&s, 7, 0, &mut whole);
            for (off, len) in [(0usize, 1usize), (1, 3), (3, 4097), (4095, 2), (8191, 5000)] {
                let mut part = vec![0u8; len];
                fill_content(&s, 7, off as u64, &mut part);
                assert_eq!(part, whole[off..off + len], "c={c} off={off}");
            }
        }
    }

    #[test]
    fn different_ids_and_seeds_differ_even_when_fully_compressible() {
        let mut a = [0u8; 64];
        let mut b = [0u8; 64];
        fill_content(&spec(1.0), 1, 0, &mut a);
        fill_content(&spec(1.0), 2, 0, &mut b);
        assert_ne!(a, b);
        let other_seed = DatasetSpec {
            seed: 43,
            ..DatasetSpec::default()
        };
        fill_content(&DatasetSpec::default(), 1, 0, &mut a);
        fill_content(&other_seed, 1, 0, &mut b);
        assert_ne!(a, b);
    }

    #[test]
    fn compressibility_repeats_a_pattern_in_each_block() {
        let mut buf = vec![0u8; 8192];
        fill_content(&spec(0.5), 3, 0, &mut buf);
        let tail = &buf[2048..4096];
        assert!(tail.chunks(16).all(|c| c == &tail[..16]));
        assert_ne!(&buf[0..16], &buf[16..32]);
    }

    #[test]
    fn tweak_flips_exactly_one_byte() {
        let s = spec(0.0);
        let id = ContentId::tweak(5, 99).unwrap();
        assert_eq!(
            ContentId::decode(id),
            ContentId::Tweaked {
                base: 5,
                offset: 99
            }
        );
        let mut a = vec![0u8; 100];
        let mut b = vec![0u8; 100];
        fill_content(&s, 5, 0, &mut a);
        fill_content(&s, id, 0, &mut b);
        assert_eq!(a[..99], b[..99]);
        assert_ne!(a[99], b[99]);
        assert_eq!(ContentId::tweak(0, 1), None);
        assert_eq!(ContentId::tweak(1 << 23, 1), None);
    }
}
