//! Text put into the page's HTML and SVG, escaped: one function every part of the page
//! (and every chart) calls, below all of them, so none reaches up to the page for it.

/// `s` with the characters HTML gives a meaning to written as entities.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
