//! The process's exit codes, one meaning each (scripts and CI read them).

/// Exit code: everything measured `ok`.
pub const EXIT_OK: i32 = 0;
/// Exit code: the run finished but some measurement did not end `ok`.
pub const EXIT_FAILED: i32 = 1;
/// Exit code: bad input or a refusal; nothing was measured.
pub const EXIT_BAD_INPUT: i32 = 2;
/// Exit code: `compare --fail-if-worse` found nothing worse but could not decide some
/// comparison at all (too few `ok` runs on a side): neither a pass nor a failure, so a
/// script cannot read it as "fine" (issue 57.7).
pub const EXIT_UNDECIDED: i32 = 3;
