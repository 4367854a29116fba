use super::*;
use crate::plan::file::parse_plan_file;
use proptest::prelude::*;

fn all(_: &TargetConfig) -> bool {
    true
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Arbitrary text never panics the parser, and every error is one line.
    #[test]
    fn any_text_parses_or_errs_in_one_line(text in "\\PC{0,300}") {
        match parse_plan_file(&text, "p.toml") {
            Ok(f) => { let _ = resolve(Some(f), &Settings::default(), &["scan"], &all); }
            Err(e) => prop_assert!(!e.to_string().contains('\n')),
        }
    }

    /// TOML-shaped input with plan keys and random values never panics resolution.
    #[test]
    fn plan_shaped_text_never_panics(
        runs in prop_oneof![Just("3".to_string()), Just("\"auto\"".to_string()), "-?[0-9]{1,12}".prop_map(|s| s), "\"[a-z]{0,6}\"".prop_map(|s| s)],
        scale in prop_oneof![Just("0.01".to_string()), "-?[0-9]{1,6}\\.[0-9]{0,4}".prop_map(|s| s), Just("nan".to_string()), Just("inf".to_string())],
        threads in proptest::collection::vec(-5i64..2000, 0..4),
        target in "[a-z0-9:@/._-]{0,20}",
        size in "[0-9]{0,12}[KMGTQ]?i?B?",
    ) {
        let text = format!(
            "runs = {runs}\nscale = {scale}\nthreads = {threads:?}\ntargets = [\"{target}\"]\n[[target]]\nname = \"x\"\nbase = \"ext4\"\nsize = \"{size}\"\n"
        );
        if let Ok(f) = parse_plan_file(&text, "p.toml") {
            if let Err(e) = resolve(Some(f), &Settings::default(), &["scan"], &all) {
                prop_assert!(!e.to_string().contains('\n'));
            }
        }
    }
}
