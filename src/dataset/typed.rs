//! Content by file type, as a real tree has it: text for documents, logs and source
//! (words from a Zipf-distributed vocabulary: low byte entropy, so zstd and btrfs's
//! compression heuristic both take it), structured binary for databases, disk images and
//! raw pictures (fixed-size records of small numbers and counters: compresses about 2×),
//! and random bytes for what is already compressed (JPEG, MP3, ZIP, video).
//!
//! Like the random stream, both generators are a pure function of (seed, content, offset)
//! and seekable: each 4 KiB block is made from its own key, so any block can be produced
//! without the ones before it.

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::seed::{key, DOMAIN_CONTENT};

/// What a file's bytes look like.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Already compressed (media, archives): random bytes, `compressibility` applies.
    Compressed,
    /// Words and lines.
    Text,
    /// Records of counters and small numbers.
    Binary,
}

impl Kind {
    pub(crate) fn bits(self) -> u64 {
        match self {
            Kind::Compressed => 0,
            Kind::Text => 1,
            Kind::Binary => 2,
        }
    }
    pub(crate) fn from_bits(b: u64) -> Kind {
        match b {
            1 => Kind::Text,
            2 => Kind::Binary,
            _ => Kind::Compressed,
        }
    }

    /// The kind a file named with extension `ext` holds.
    pub fn for_extension(ext: &str) -> Kind {
        match ext.to_ascii_lowercase().as_str() {
            "jpg" | "jpeg" | "png" | "gif" | "webp" | "mp3" | "flac" | "ogg" | "mp4" | "mkv"
            | "avi" | "mov" | "zip" | "gz" | "xz" | "zst" | "7z" | "docx" | "xlsx" | "pptx"
            | "pdf" | "cr2" => Kind::Compressed,
            "db" | "sqlite" | "iso" | "img" | "vdi" | "vmdk" | "qcow2" | "tif" | "tiff" | "bmp"
            | "wav" | "bin" | "dat" | "o" | "so" | "exe" | "dll" | "class" | "pak" => Kind::Binary,
            _ => Kind::Text,
        }
    }
}

/// Size of the unit each block is generated from.
const BLOCK: usize = 4096;
/// Distinct words in a seed's vocabulary.
const VOCABULARY: usize = 2048;
/// The Zipf exponent: with it and word lengths of 3–11 letters, zstd -3 compresses the text
/// about 3.3× (measured), close to English prose.
const ZIPF: f64 = 1.4;
/// Key id of the vocabulary stream (content ids start at 1, so 0 is free).
const VOCABULARY_ID: u64 = 0;

/// Bytes of text a seed's corpus holds: text blocks are spliced from it.
const CORPUS: usize = 1 << 20;

/// A seed's text corpus: Zipf-drawn words from the seed's vocabulary, made once; blocks are
/// spliced from short runs of it, which keeps its word statistics (and so its
/// compressibility) at the speed of a memory copy.
pub struct Vocabulary {
    corpus: Vec<u8>,
}

impl Vocabulary {
    /// The vocabulary of `seed`: word lengths 3–11 letters, shorter words more frequent.
    pub fn new(seed: u64) -> Vocabulary {
        let mut rng = ChaCha8Rng::from_seed(key(seed, VOCABULARY_ID, DOMAIN_CONTENT));
        let mut words = Vec::with_capacity(VOCABULARY);
        for rank in 0..VOCABULARY {
            // Frequent words are short, as in real language.
            let len = 3 + (rng.next_u32() as usize % (1 + rank * 8 / VOCABULARY));
            let w: Vec<u8> = (0..len)
                .map(|_| b"etaoinshrdlcumwfgypbvkjxqz"[(rng.next_u32() % 26) as usize % 26])
                .collect();
            words.push(w);
        }
        let mut cumulative: Vec<u32> = Vec::with_capacity(VOCABULARY);
        let mut total = 0f64;
        let weights: Vec<f64> = (1..=VOCABULARY).map(|r| (r as f64).powf(-ZIPF)).collect();
        let sum: f64 = weights.iter().sum();
        for w in weights {
            total += w;
            cumulative.push(((total / sum) * f64::from(u32::MAX)) as u32);
        }
        let mut corpus = Vec::with_capacity(CORPUS + 16);
        let mut line = 0;
        while corpus.len() < CORPUS {
            let u = rng.next_u32();
            let w = &words[cumulative.partition_point(|&c| c < u).min(VOCABULARY - 1)];
            corpus.extend_from_slice(w);
            line += w.len() + 1;
            if line > 72 {
                corpus.push(b'\n');
                line = 0;
            } else {
                corpus.push(b' ');
            }
        }
        corpus.truncate(CORPUS);
        Vocabulary { corpus }
    }
}

/// Length range of the runs a text block is spliced from: long enough to keep words
/// whole mostly, short enough that a block never repeats a longer stretch of the corpus.
const RUN_MIN: usize = 24;
const RUN_SPAN: u32 = 48;

/// Fills `buf` with bytes `offset..` of text content `base` (`key` = its content key).
pub fn fill_text(vocab: &Vocabulary, key: [u8; 32], offset: u64, buf: &mut [u8]) {
    let corpus = &vocab.corpus;
    let starts = (corpus.len() - RUN_MIN - RUN_SPAN as usize) as u32;
    fill_blocks(key, offset, buf, |rng, block| {
        let mut pos = 0;
        while pos < BLOCK {
            let r = rng.next_u64();
            let start = ((r as u32) % starts) as usize;
            let len = (RUN_MIN + ((r >> 32) as u32 % RUN_SPAN) as usize).min(BLOCK - pos);
            block[pos..pos + len].copy_from_slice(&corpus[start..start + len]);
            pos += len;
        }
    });
}

/// Fills `buf` with bytes `offset..` of binary content: 32-byte records of a record
/// number, a timestamp-like counter, a few small numbers and a random field.
pub fn fill_binary(key: [u8; 32], offset: u64, buf: &mut [u8]) {
    fill_blocks(key, offset, buf, |rng, block| {
        let first = rng.next_u64() % 1_000_000;
        for (i, rec) in block.chunks_exact_mut(32).enumerate() {
            rec[0..8].copy_from_slice(&(first + i as u64).to_le_bytes());
            rec[8..16].copy_from_slice(&(1_700_000_000 + first * 7 + i as u64 * 3).to_le_bytes());
            for f in rec[16..28].chunks_exact_mut(4) {
                f.copy_from_slice(&(rng.next_u32() % 100).to_le_bytes());
            }
            rec[28..32].copy_from_slice(&rng.next_u32().to_le_bytes());
        }
    });
}

/// Runs `make` for every 4 KiB block `buf` overlaps (each from its own stream of `key`)
/// and copies the overlapping part.
fn fill_blocks(
    key: [u8; 32],
    offset: u64,
    buf: &mut [u8],
    mut make: impl FnMut(&mut ChaCha8Rng, &mut [u8; BLOCK]),
) {
    let mut rng = ChaCha8Rng::from_seed(key);
    let mut block = [0u8; BLOCK];
    let mut pos = 0usize;
    while pos < buf.len() {
        let at = offset + pos as u64;
        let index = at / BLOCK as u64;
        let within = (at % BLOCK as u64) as usize;
        // Stream 2.. per block: streams 0 and 1 belong to the random content.
        rng.set_stream(index + 2);
        rng.set_word_pos(0);
        make(&mut rng, &mut block);
        let n = (BLOCK - within).min(buf.len() - pos);
        buf[pos..pos + n].copy_from_slice(&block[within..within + n]);
        pos += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::content::{fill_content, ContentId};
    use crate::dataset::DatasetSpec;

    fn bytes(kind: Kind, n: u64, len: usize) -> Vec<u8> {
        let mut b = vec![0u8; len];
        fill_content(
            &DatasetSpec::default(),
            ContentId::plain(n, kind),
            0,
            &mut b,
        );
        b
    }

    #[test]
    fn each_kind_compresses_as_its_files_do() {
        let ratio = |b: &[u8]| b.len() as f64 / zstd::bulk::compress(b, 3).unwrap().len() as f64;
        let text = ratio(&bytes(Kind::Text, 1, 1 << 20));
        let binary = ratio(&bytes(Kind::Binary, 2, 1 << 20));
        let packed = ratio(&bytes(Kind::Compressed, 3, 1 << 20));
        assert!(text > 2.8, "text {text}");
        assert!((1.5..text).contains(&binary), "binary {binary}");
        assert!(packed < 1.01, "compressed {packed}");
    }

    #[test]
    fn typed_content_is_seekable_across_blocks() {
        for kind in [Kind::Text, Kind::Binary] {
            let whole = bytes(kind, 9, 20_000);
            for (off, len) in [
                (0usize, 1usize),
                (1, 3),
                (4095, 2),
                (4000, 9000),
                (12_289, 7000),
            ] {
                let mut part = vec![0u8; len];
                fill_content(
                    &DatasetSpec::default(),
                    ContentId::plain(9, kind),
                    off as u64,
                    &mut part,
                );
                assert_eq!(part, whole[off..off + len], "{kind:?} off={off}");
            }
        }
    }

    #[test]
    fn a_tweak_keeps_the_kind_of_its_base() {
        let base = ContentId::plain(5, Kind::Text);
        let id = ContentId::tweak(base, 99).unwrap();
        assert_eq!(
            ContentId::decode(id),
            ContentId::Tweaked { base, offset: 99 }
        );
        let a = bytes(Kind::Text, 5, 100);
        let mut b = vec![0u8; 100];
        fill_content(&DatasetSpec::default(), id, 0, &mut b);
        assert_eq!(a[..99], b[..99]);
        assert_ne!(a[99], b[99]);
    }

    #[test]
    fn extensions_choose_kinds() {
        assert_eq!(Kind::for_extension("txt"), Kind::Text);
        assert_eq!(Kind::for_extension("RS"), Kind::Text);
        assert_eq!(Kind::for_extension("jpg"), Kind::Compressed);
        assert_eq!(Kind::for_extension("vdi"), Kind::Binary);
    }
}
