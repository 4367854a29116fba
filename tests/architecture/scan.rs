//! Reading Rust source well enough for the architecture rules: which text is code (not a
//! comment, a string or a character literal), which items are test-only, where each
//! function starts and ends, and which `crate::`/`super::`/`self::` paths a file names.
//!
//! Every function here keeps byte offsets and line numbers of the text it was given: what it
//! leaves out is blanked to spaces (line breaks kept), never cut, so a finding's line is the
//! line in the file.

/// The attribute that marks an item as test-only.
const CFG_TEST: &str = "#[cfg(test)]";

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

/// Spaces over `bytes[range]`, line breaks kept. Ranges always start and end on an ASCII
/// delimiter, so what is left stays UTF-8.
fn blank(bytes: &mut [u8], from: usize, to: usize) {
    let to = to.min(bytes.len());
    for b in &mut bytes[from..to] {
        if *b != b'\n' {
            *b = b' ';
        }
    }
}

/// The end (exclusive) of a quoted string starting at `bytes[start] == b'"'`: escapes skipped.
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut j = start + 1;
    while j < bytes.len() {
        match bytes[j] {
            b'\\' => j += 2,
            b'"' => return j + 1,
            _ => j += 1,
        }
    }
    bytes.len()
}

/// If a raw string (`r"…"`, `r#"…"#`, `br#"…"#`) starts at `i`, its end (exclusive).
fn raw_string_end(bytes: &[u8], i: usize) -> Option<usize> {
    let mut k = i;
    if matches!(bytes.get(k), Some(b'b' | b'c')) {
        k += 1;
    }
    if bytes.get(k) != Some(&b'r') {
        return None;
    }
    k += 1;
    let hashes = bytes[k..].iter().take_while(|b| **b == b'#').count();
    k += hashes;
    if bytes.get(k) != Some(&b'"') {
        return None;
    }
    let mut j = k + 1;
    while j < bytes.len() {
        if bytes[j] == b'"' && bytes[j + 1..].iter().take(hashes).all(|b| *b == b'#') {
            let end = j + 1 + hashes;
            if end <= bytes.len() {
                return Some(end);
            }
        }
        j += 1;
    }
    Some(bytes.len())
}

/// If a character literal (not a lifetime or label) starts at `bytes[i] == b'\''`, its end.
fn char_end(text: &str, i: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    if bytes.get(i + 1) == Some(&b'\\') {
        // `'\''`, `'\n'`, `'\u{7b}'`: the closing quote after the escaped character.
        let from = i + 3;
        return bytes[from.min(bytes.len())..]
            .iter()
            .position(|b| *b == b'\'' || *b == b'\n')
            .map(|p| from + p + 1);
    }
    let c = text.get(i + 1..)?.chars().next()?;
    let after = i + 1 + c.len_utf8();
    (c != '\'' && bytes.get(after) == Some(&b'\'')).then_some(after + 1)
}

/// The text with every comment, string literal (raw ones too) and character literal blanked:
/// what is left is code, where a brace is a brace.
pub fn blank_literals(text: &str) -> String {
    let src = text.as_bytes();
    let mut out = src.to_vec();
    let mut i = 0;
    while i < src.len() {
        let b = src[i];
        let next = src.get(i + 1).copied();
        if b == b'/' && next == Some(b'/') {
            let end = src[i..]
                .iter()
                .position(|c| *c == b'\n')
                .map_or(src.len(), |p| i + p);
            blank(&mut out, i, end);
            i = end;
        } else if b == b'/' && next == Some(b'*') {
            let (mut depth, mut j) = (1, i + 2);
            while j < src.len() && depth > 0 {
                if src[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if src[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if b == b'"' {
            let end = string_end(src, i);
            blank(&mut out, i, end);
            i = end;
        } else if b == b'\'' {
            match char_end(text, i) {
                Some(end) => {
                    blank(&mut out, i, end);
                    i = end;
                }
                None => i += 1,
            }
        } else if is_ident(b) {
            if let Some(end) = raw_string_end(src, i) {
                blank(&mut out, i, end);
                i = end;
            } else {
                i += src[i..].iter().take_while(|c| is_ident(**c)).count();
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).expect("blanking replaces whole characters")
}

/// The position of the bracket that closes the one opened at `code[open]` (`{`, `(` or `[`),
/// in code whose literals are blanked.
fn matching(code: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (j, b) in code.iter().enumerate().skip(open) {
        match b {
            b'{' | b'(' | b'[' => depth += 1,
            b'}' | b')' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
    }
    None
}

/// The end (exclusive) of the item that starts at `code[from]`: its first `;` outside
/// brackets, the close of its first `{ … }` block, or the bracket that closes what holds it.
fn item_end(code: &[u8], from: usize) -> usize {
    let mut j = from;
    while j < code.len() {
        match code[j] {
            b';' => return j + 1,
            b'{' => return matching(code, j).map_or(code.len(), |k| k + 1),
            b'(' | b'[' => j = matching(code, j).map_or(code.len(), |k| k + 1),
            b'}' | b')' | b']' => return j,
            _ => j += 1,
        }
    }
    code.len()
}

/// One item under `#[cfg(test)]`: its byte range (attribute included) and, if it is a
/// `mod NAME;` kept in a file of its own, that name and its `#[path]` if one is given.
pub struct TestItem {
    pub from: usize,
    pub to: usize,
    pub module_file: Option<(String, Option<String>)>,
}

/// The items of a file that exist only under `#[cfg(test)]`.
pub fn test_items(text: &str) -> Vec<TestItem> {
    let code = blank_literals(text);
    let bytes = code.as_bytes();
    let mut items = Vec::new();
    let mut at = 0;
    while let Some(p) = code[at..].find(CFG_TEST) {
        let from = at + p;
        let mut start = from + CFG_TEST.len();
        let mut path = None;
        // Further attributes on the same item, `#[path = "…"]` among them.
        loop {
            start += bytes[start..]
                .iter()
                .take_while(|b| b.is_ascii_whitespace())
                .count();
            if !code[start..].starts_with("#[") {
                break;
            }
            let close = matching(bytes, start + 1).unwrap_or(bytes.len() - 1);
            let attr = &text[start..=close];
            if let Some(rest) = attr.strip_prefix("#[path") {
                path = rest.split('"').nth(1).map(str::to_string);
            }
            start = close + 1;
        }
        let to = item_end(bytes, start);
        let words: Vec<&str> = code[start..to]
            .trim_end_matches(';')
            .split_whitespace()
            .collect();
        let module_file = match words.as_slice() {
            [.., "mod", name] if !text[start..to].contains('{') => {
                Some(((*name).to_string(), path))
            }
            _ => None,
        };
        items.push(TestItem {
            from,
            to,
            module_file,
        });
        at = to.max(from + 1);
    }
    items
}

/// The text with its test-only items blanked (`#[cfg(test)] mod tests { … }`,
/// `#[cfg(test)] mod tests;`, a single test-only function or import): what the rules are
/// about. Comments and literals outside them are kept.
pub fn non_test(text: &str) -> String {
    let mut out = text.as_bytes().to_vec();
    for item in test_items(text) {
        blank(&mut out, item.from, item.to);
    }
    String::from_utf8(out).expect("blanking replaces whole characters")
}

/// The line (1-based) that holds each byte offset, by a table of line starts.
fn line_of(starts: &[usize], pos: usize) -> usize {
    starts.partition_point(|s| *s <= pos)
}

fn line_starts(code: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(code.match_indices('\n').map(|(i, _)| i + 1))
        .collect()
}

/// Every function with a body in `code`: its name, the line of its `fn` and its length in
/// lines from that line to its closing brace. Literals and comments are skipped, so a `'{'`
/// or a `"}"` does not move the end.
pub fn fn_lengths(code: &str) -> Vec<(String, usize, usize)> {
    let code = blank_literals(code);
    let bytes = code.as_bytes();
    let starts = line_starts(&code);
    let mut out = Vec::new();
    for (at, _) in code.match_indices("fn") {
        let before = at.checked_sub(1).map(|i| bytes[i]);
        if before.is_some_and(is_ident) || bytes.get(at + 2).is_some_and(|b| is_ident(*b)) {
            continue;
        }
        let rest = code[at + 2..].trim_start();
        let name: String = rest
            .bytes()
            .take_while(|b| is_ident(*b))
            .map(char::from)
            .collect();
        if name.is_empty() {
            continue; // a `fn(…)` pointer type
        }
        let mut j = code.len() - rest.len() + name.len();
        while j < bytes.len() && !matches!(bytes[j], b'{' | b';') {
            j = match bytes[j] {
                b'(' | b'[' => matching(bytes, j).map_or(bytes.len(), |k| k + 1),
                _ => j + 1,
            };
        }
        if bytes.get(j) != Some(&b'{') {
            continue; // a declaration without a body
        }
        if let Some(close) = matching(bytes, j) {
            let first = line_of(&starts, at);
            out.push((name, first, line_of(&starts, close) - first + 1));
        }
    }
    out
}

/// One token of a path: a word, `::`, or one punctuation byte.
fn tokens(code: &str) -> Vec<(usize, &str)> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let len = if is_ident(bytes[i]) {
            bytes[i..].iter().take_while(|b| is_ident(**b)).count()
        } else if code[i..].starts_with("::") {
            2
        } else if bytes[i].is_ascii_whitespace() {
            i += 1;
            continue;
        } else {
            1
        };
        out.push((i, &code[i..i + len]));
        i += len;
    }
    out
}

/// Reads the path (or `use` tree) starting at `toks[i]` under `prefix`, pushing every full
/// path it spells; returns the index after it.
fn read_tree(
    toks: &[(usize, &str)],
    mut i: usize,
    prefix: &[String],
    out: &mut Vec<Vec<String>>,
) -> usize {
    let mut segs = prefix.to_vec();
    loop {
        match toks.get(i).map(|t| t.1) {
            Some("{") => {
                i += 1;
                while toks.get(i).is_some_and(|t| t.1 != "}") {
                    let j = read_tree(toks, i, &segs, out);
                    i = if toks.get(j).is_some_and(|t| t.1 == ",") || j == i {
                        j + 1
                    } else {
                        j
                    };
                }
                return i + 1;
            }
            Some("*") => {
                out.push(segs);
                return i + 1;
            }
            Some(w) if w.bytes().all(is_ident) => {
                segs.push(w.to_string());
                if toks.get(i + 1).map(|t| t.1) == Some("::")
                    && toks
                        .get(i + 2)
                        .is_some_and(|t| t.1 == "{" || t.1 == "*" || t.1.bytes().all(is_ident))
                {
                    i += 2;
                    continue;
                }
                out.push(segs);
                // `use super::a as b`: the alias names nothing.
                let alias = toks.get(i + 1).is_some_and(|t| t.1 == "as");
                return if alias { i + 3 } else { i + 1 };
            }
            _ => {
                if segs.len() > prefix.len() {
                    out.push(segs);
                }
                return i;
            }
        }
    }
}

/// Every path in the code that starts at `crate`, `super` or `self` (imports and paths in
/// expressions alike, `use` trees spelled out), with its line. Comments and literals are
/// skipped. `use super::{a::X, b}` gives `super::a::X` and `super::b`.
pub fn paths(code: &str) -> Vec<(usize, Vec<String>)> {
    paths_from(code, &[])
}

/// [`paths`], and also the relative paths whose first segment is one of `roots` (a parent
/// file's child modules: `create::Create` in `workload/mod.rs`). Every path is read whole
/// before its first segment is looked at, so the `io` of `use std::{io::Write}` is part of
/// a path from `std`, never a path from a child named `io`.
pub fn paths_from(code: &str, roots: &[&str]) -> Vec<(usize, Vec<String>)> {
    let code = blank_literals(code);
    let starts = line_starts(&code);
    let toks = tokens(&code);
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let (pos, word) = toks[i];
        let starts_path = word.bytes().all(is_ident)
            && toks.get(i + 1).is_some_and(|t| t.1 == "::")
            && (i == 0 || toks[i - 1].1 != "::");
        if !starts_path {
            i += 1;
            continue;
        }
        let mut found = Vec::new();
        i = read_tree(&toks, i, &[], &mut found).max(i + 1);
        let kept = matches!(word, "crate" | "super" | "self") || roots.contains(&word);
        if kept {
            let line = line_of(&starts, pos);
            out.extend(found.into_iter().map(|p| (line, p)));
        }
    }
    out
}
