//! The checkers checked on small samples, so a rule cannot pass by reading nothing: test
//! items are left out and nothing else, a brace in a literal or a comment moves no end, and
//! a loop between two siblings is found, and so is one between a folder's own file and a
//! child that takes its items.

use super::loops::{arrow_count, import_loops, Unit};
use super::scan::{fn_lengths, non_test, test_items};
use super::{units, Source};

/// A file with test items in the middle and a test-only brace in every kind of literal.
const WITH_TESTS: &str = r##"fn kept() {}
#[cfg(test)]
mod tests {
    fn inner() { let s = "}"; let c = '{'; let r = r#"}"#; }
    // }
    /* } */
}
#[cfg(test)]
mod fuzz;
#[cfg(test)]
#[path = "x_tests.rs"]
mod other;
#[cfg(test)]
fn helper() -> u32 { 1 }
fn also_kept() { crate::sys::x(); }
"##;

/// Functions whose ends a careless reader would get wrong.
const FUNCTIONS: &str = r##"fn short() { let c = '{'; }
fn three(x: u32) -> u32 {
    let s = "}";
    x
}
fn lifetimes<'a>(s: &'a str) -> &'a str {
    let _ = r#"}"#; // }
    /* { */
    s
}
trait T { fn decl(&self); fn with_body(&self) { let _ = '\''; } }
fn pointer() { let f: fn(u32) -> u32 = g; let b = b'}'; }
"##;

/// The whole of every file is read: the functions of the tree are found, after a
/// `#[cfg(test)]` as well as before it.
pub fn whole_files_are_read(all: &[Source]) {
    let fns: usize = all.iter().map(|f| fn_lengths(&f.code).len()).sum();
    assert!(fns > 1000, "found only {fns} functions outside tests");
    let after_tests = all.iter().any(|f| {
        let first = test_items(&f.text).first().map(|t| t.to);
        let line = first.map(|to| f.text[..to].lines().count());
        line.is_some_and(|l| fn_lengths(&f.code).iter().any(|(_, at, _)| *at > l))
    });
    assert!(after_tests, "no function read after a #[cfg(test)] item");
    assert!(
        arrow_count(&units(all)) > 100,
        "too few arrows between siblings"
    );
}

pub fn test_items_are_left_out() {
    let code = non_test(WITH_TESTS);
    assert_eq!(code.lines().count(), WITH_TESTS.lines().count());
    assert!(code.contains("fn kept()") && code.contains("fn also_kept()"));
    for gone in ["inner", "fuzz", "other", "helper", "x_tests"] {
        assert!(!code.contains(gone), "{gone} is test code: {code}");
    }
    let files: Vec<_> = test_items(WITH_TESTS)
        .into_iter()
        .filter_map(|t| t.module_file)
        .collect();
    assert_eq!(
        files,
        vec![
            ("fuzz".to_string(), None),
            ("other".to_string(), Some("x_tests.rs".to_string()))
        ]
    );
    assert_eq!(
        fn_lengths(&code),
        vec![("kept".to_string(), 1, 1), ("also_kept".to_string(), 15, 1)]
    );
    assert_eq!(super::crate_refs(&code), vec![(15, "sys".to_string())]);
}

pub fn function_lengths_are_measured() {
    let found = fn_lengths(FUNCTIONS);
    let expected = [
        ("short", 1, 1),
        ("three", 2, 4),
        ("lifetimes", 6, 5),
        ("with_body", 11, 1),
        ("pointer", 12, 1),
    ];
    let expected: Vec<(String, usize, usize)> = expected
        .iter()
        .map(|(n, l, len)| (n.to_string(), *l, *len))
        .collect();
    assert_eq!(found, expected);
}

fn unit(module: &str, code: &str) -> Unit {
    Unit {
        module: module.split("::").map(str::to_string).collect(),
        file: module.replace("::", "/"),
        code: code.to_string(),
    }
}

pub fn import_loops_are_found() {
    let sample = [
        unit(
            "k",
            "mod a; mod io; pub use a::X; fn f() { a::g(); }\nuse std::{io::Read};",
        ),
        unit("k::a", "use super::Shared;"),
        unit("k::io", "use super::Shared;"),
        unit("m", "mod a; mod b; mod c;"),
        unit("m::a", "use super::b::Y;\nfn f() { super::c::g(); }"),
        unit("m::b", "use crate::m::{a::{X, self}, c};"),
        unit(
            "m::c",
            "use super::Thing; // super::b\nconst S: &str = \"super::a::X\";",
        ),
        unit("m::d", "use super::c::W;"),
        unit("n::x", "mod p;"),
        unit("n::x::p", "use super::super::y::Q;"),
        unit("n::y", "fn g() -> crate::n::x::p::R { todo!() }"),
    ];
    let found = import_loops(&sample);
    assert_eq!(found.len(), 3, "{found:#?}");
    assert_eq!(
        found[0],
        "module `k`: a <-> mod\n    a -> mod: k/a:1 uses Shared\n    mod -> a: k:1 uses X, g"
    );
    assert_eq!(
        found[1],
        "module `m`: a <-> b\n    a -> b: m/a:1 uses Y\n    b -> a: m/b:1 uses X, a"
    );
    assert_eq!(
        found[2],
        "module `n`: x <-> y\n    x -> y: n/x/p:1 uses Q\n    y -> x: n/y:1 uses p::R"
    );
}
