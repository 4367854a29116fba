//! Directory and file names in the styles real trees are full of (words, camera counters,
//! dates, version suffixes), so name-dependent work (sorting, hashing names, searching)
//! sees realistic lengths and mixes.

use rand_chacha::ChaCha8Rng;

use super::draw::below;

const CONSONANTS: &[u8] = b"bcdfghjklmnprstvwz";
const VOWELS: &[u8] = b"aeiou";
const DIR_NAMES: &[&str] = &[
    "src",
    "lib",
    "docs",
    "assets",
    "images",
    "data",
    "build",
    "test",
    "config",
    "photos",
    "music",
    "backup",
    "archive",
    "2019",
    "2020",
    "2021",
    "2022",
    "2023",
    "misc",
    "old",
    "new",
    "share",
    "include",
    "bin",
    "res",
    "scripts",
    "media",
    "projects",
    "notes",
    "Downloads",
];

fn word(rng: &mut ChaCha8Rng) -> String {
    let syllables = 1 + below(rng, 3);
    let mut w = String::new();
    for _ in 0..syllables {
        w.push(CONSONANTS[below(rng, CONSONANTS.len() as u64) as usize] as char);
        w.push(VOWELS[below(rng, VOWELS.len() as u64) as usize] as char);
        if below(rng, 10) < 3 {
            w.push(CONSONANTS[below(rng, CONSONANTS.len() as u64) as usize] as char);
        }
    }
    w
}

fn capitalize(w: &str) -> String {
    let mut c = w.chars();
    match c.next() {
        Some(f) => f.to_ascii_uppercase().to_string() + c.as_str(),
        None => String::new(),
    }
}

fn digits(rng: &mut ChaCha8Rng, n: u64) -> String {
    (0..n)
        .map(|_| char::from(b'0' + below(rng, 10) as u8))
        .collect()
}

/// A directory name: common names, words, capitalised words, joined words, numbered words.
pub fn dir_name(rng: &mut ChaCha8Rng) -> String {
    match below(rng, 10) {
        0..=3 => DIR_NAMES[below(rng, DIR_NAMES.len() as u64) as usize].to_string(),
        4..=6 => word(rng),
        7 => capitalize(&word(rng)),
        8 => format!("{}_{}", word(rng), word(rng)),
        _ => {
            let n = 1 + below(rng, 3);
            format!("{}-{}", word(rng), digits(rng, n))
        }
    }
}

/// A file stem in one of the styles real trees are full of; lengths mostly 6–30 characters.
pub fn file_stem(rng: &mut ChaCha8Rng) -> String {
    match below(rng, 20) {
        0..=7 => {
            let n = 1 + below(rng, 3);
            let joiner = ["_", "-", "", " "][below(rng, 4) as usize];
            let words: Vec<String> = (0..n)
                .map(|i| {
                    let w = word(rng);
                    if joiner.is_empty() && i > 0 {
                        capitalize(&w)
                    } else {
                        w
                    }
                })
                .collect();
            words.join(joiner)
        }
        8..=10 => {
            let prefix = ["IMG_", "DSC", "PXL_", "VID_"][below(rng, 4) as usize];
            let n = 4 + below(rng, 5);
            format!("{prefix}{}", digits(rng, n))
        }
        11..=14 => {
            let sep = ["_", "-", ""][below(rng, 3) as usize];
            let n = 1 + below(rng, 4);
            format!("{}{sep}{}", word(rng), digits(rng, n))
        }
        15..=17 => format!(
            "20{}-{:02}-{:02}_{}",
            10 + below(rng, 15),
            1 + below(rng, 12),
            1 + below(rng, 28),
            word(rng)
        ),
        _ => {
            let n = 3 + below(rng, 4);
            let words: Vec<String> = (0..n).map(|_| word(rng)).collect();
            capitalize(&words.join("_"))
        }
    }
}
