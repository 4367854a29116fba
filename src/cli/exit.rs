//! The process's exit codes, one meaning each (scripts and CI read them).

/// Exit code: everything measured `ok`.
pub const EXIT_OK: i32 = 0;
/// Exit code: the run finished but some measurement did not end `ok`.
pub const EXIT_FAILED: i32 = 1;
/// Exit code: bad input or a refusal; nothing was measured.
pub const EXIT_BAD_INPUT: i32 = 2;
