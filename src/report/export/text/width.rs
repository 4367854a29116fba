//! How wide the terminal output may be, and word-wrapping of the prose around the tables, so
//! that a report read in an 80-column terminal does not wrap into noise.

use std::io::IsTerminal;

/// The width used when stdout is not a terminal and `COLUMNS` is not set: wide enough for
/// every table without folding, narrow enough for a log viewer or a pasted issue.
pub const DEFAULT_WIDTH: usize = 100;

/// The narrowest width honoured: below it a table cannot hold its protected columns.
pub const MIN_WIDTH: usize = 40;

/// The width the table format fits: `COLUMNS` when set to a number (what shells and `watch`
/// export, and what a user sets to ask for a width), else the terminal's own width when
/// stdout is one, else [`DEFAULT_WIDTH`].
pub fn output_width() -> usize {
    let from_env = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&c| c > 0);
    let w = from_env.unwrap_or_else(|| {
        if std::io::stdout().is_terminal() {
            // comfy-table asks the terminal (TIOCGWINSZ) for a table with no width set.
            comfy_table::Table::new()
                .width()
                .map_or(DEFAULT_WIDTH, usize::from)
        } else {
            DEFAULT_WIDTH
        }
    });
    w.max(MIN_WIDTH)
}

/// Display width of a line: characters, which is what every glyph the reports print
/// (±, µ, ×, —, ✓, ✗) takes in a terminal.
pub fn display_width(s: &str) -> usize {
    s.chars().count()
}

/// Word-wraps `text` (one paragraph) to `width` columns: the first line starts with `first`,
/// the following ones with `rest`. A word longer than a line (a path) is cut rather than
/// let through, so no line ever exceeds `width`.
pub fn wrap(text: &str, width: usize, first: &str, rest: &str) -> String {
    let mut out = String::new();
    let mut line = first.to_string();
    let mut empty = true;
    let mut indent_len = display_width(first);
    // A unit stays with its number: "5 %" never breaks before the "%".
    let mut words: Vec<String> = Vec::new();
    for w in text.split_whitespace() {
        match words.last_mut() {
            Some(last) if w.starts_with('%') => {
                last.push(' ');
                last.push_str(w);
            }
            _ => words.push(w.to_string()),
        }
    }
    for word in &words {
        let word = word.as_str();
        let wl = display_width(word);
        let need = if empty { wl } else { wl + 1 };
        if !empty && display_width(&line) + need > width {
            out.push_str(line.trim_end());
            out.push('\n');
            line = rest.to_string();
            indent_len = display_width(rest);
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        // A word that cannot fit even on a line of its own is cut into pieces.
        let room = width.saturating_sub(indent_len).max(1);
        let chars: Vec<char> = word.chars().collect();
        if chars.len() > room && empty {
            let mut pieces = chars.chunks(room).peekable();
            while let Some(p) = pieces.next() {
                line.extend(p.iter());
                if pieces.peek().is_some() {
                    out.push_str(&line);
                    out.push('\n');
                    line = rest.to_string();
                }
            }
        } else {
            line.push_str(word);
        }
        empty = false;
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out
}

/// Wraps every line of `text` longer than `width`, continuing it under itself indented by
/// its own leading whitespace plus `hang` columns (a list entry continues under its text).
pub fn wrap_lines(text: &str, width: usize, hang: usize) -> String {
    let mut out = String::new();
    for line in text.lines() {
        if display_width(line) <= width {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let lead = line.chars().take_while(|c| c.is_whitespace()).count();
        let rest = " ".repeat(lead + hang);
        // The line's own layout up to where its text starts is kept as it is.
        let head: String = line.chars().take(lead + hang).collect();
        let tail: String = line.chars().skip(lead + hang).collect();
        // A head that ends a word needs the space the split took away.
        let head = if tail.starts_with(char::is_whitespace) {
            format!("{head} ")
        } else {
            head
        };
        out.push_str(&wrap(&tail, width, &head, &rest));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapped_lines_never_exceed_the_width() {
        let words = crate::report::model::format::decision_words(
            5.0,
            crate::stats::Adjustment::BenjaminiHochberg,
            "the matched rows",
        );
        let text = format!("{words}; /a/very/long/path/that/does/not/fit/anywhere/at/all/x");
        for w in [20, 40, 80] {
            let out = wrap(&text, w, "", "  ");
            assert!(out.lines().all(|l| display_width(l) <= w), "{w}:\n{out}");
            let words: Vec<&str> = out.split_whitespace().collect();
            assert!(words.contains(&"Benjamini–Hochberg"));
            assert!(
                !out.lines().any(|l| l.trim_start().starts_with('%')),
                "{out}"
            );
        }
        let listed = wrap_lines("  ext4   a description that goes on and on", 20, 9);
        assert!(listed.lines().all(|l| display_width(l) <= 20), "{listed}");
        assert!(listed.lines().nth(1).unwrap().starts_with("           "));
    }
}
