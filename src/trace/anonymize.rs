//! `--anonymize`: every name in a trace replaced by a stable hash, so a production trace can
//! be shared. Each path component is hashed on its own (the same name anywhere gives the same
//! hash, so the tree's shape and a replay's dependencies survive); a short extension is kept
//! (`.c`, `.sqlite`: what kind of file it is matters to a file system's behaviour only through
//! sizes and calls, but it helps a reader); `.`, `..` and a leading `/` stay. The hash is
//! xxh3, not a secret keyed one: common names (`Makefile`, `.git`) can be guessed by hashing
//! guesses, which the docs say.

use xxhash_rust::xxh3::xxh3_64;

use super::format::Trace;

/// Longest extension kept, in bytes.
const MAX_EXTENSION: usize = 8;

/// One component: `report.pdf` → `3f…9a.pdf`; a leading dot kept (`.git` → `.5c…`).
pub fn name(component: &str) -> String {
    if component.is_empty() || component == "." || component == ".." {
        return component.to_string();
    }
    let dots = component.len() - component.trim_start_matches('.').len();
    let (lead, rest) = component.split_at(dots);
    let (stem, extension) = match rest.rsplit_once('.') {
        Some((stem, ext))
            if !stem.is_empty()
                && (1..=MAX_EXTENSION).contains(&ext.len())
                && ext.bytes().all(|b| b.is_ascii_alphanumeric()) =>
        {
            (stem, format!(".{ext}"))
        }
        _ => (rest, String::new()),
    };
    format!("{lead}{:016x}{extension}", xxh3_64(stem.as_bytes()))
}

/// Every component of a `/`-separated path.
pub fn path(p: &str) -> String {
    p.split('/').map(name).collect::<Vec<_>>().join("/")
}

/// A command line: the program's name kept, options kept up to an `=` (what follows it is
/// hashed as a path), every other argument hashed as a path.
pub fn command(args: &[String]) -> Vec<String> {
    args.iter()
        .enumerate()
        .map(|(i, a)| {
            if i == 0 {
                a.rsplit('/').next().unwrap_or(a).to_string()
            } else if a.starts_with('-') {
                match a.split_once('=') {
                    Some((flag, value)) => format!("{flag}={}", path(value)),
                    None => a.clone(),
                }
            } else {
                path(a)
            }
        })
        .collect()
}

/// The whole trace: paths, symlink targets, the command line.
pub fn trace(trace: &mut Trace) {
    trace.header.anonymized = true;
    trace.header.command = command(&trace.header.command);
    for initial in &mut trace.initial {
        initial.path = path(&initial.path);
        initial.target = initial.target.as_deref().map(path);
    }
    for call in &mut trace.calls {
        for p in [&mut call.path, &mut call.path2, &mut call.target] {
            *p = p.as_deref().map(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_name_gives_the_same_hash_and_extensions_stay() {
        let a = name("report.pdf");
        assert!(a.ends_with(".pdf") && !a.contains("report"), "{a}");
        assert_eq!(a, name("report.pdf"));
        assert_eq!(path("x/report.pdf"), format!("{}/{a}", name("x")));
        assert_ne!(name("report"), name("other"));
        assert!(name(".git").starts_with('.'));
        assert!(!name("a.verylongextension").contains("verylong"));
        assert_eq!(
            path("../a/./b"),
            format!("../{}/./{}", name("a"), name("b"))
        );
        assert!(path("/etc/passwd").starts_with('/'));
    }

    #[test]
    fn a_command_keeps_its_program_and_options() {
        let args: Vec<String> = ["/usr/bin/tar", "-x", "--file=src.tar", "src/a.c"]
            .map(String::from)
            .to_vec();
        let got = command(&args);
        assert_eq!(got[0], "tar");
        assert_eq!(got[1], "-x");
        assert_eq!(got[2], format!("--file={}", name("src.tar")));
        assert_eq!(got[3], path("src/a.c"));
    }
}
