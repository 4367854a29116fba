//! A program's file-system calls, recorded once and replayed on every candidate file system:
//! the versioned `.fstrace` format (`format`: its records, `header` its first line and that line's bounds, reading with every check a trace
//! must pass before anything is provisioned, and writing; `bounds`: what a trace may ask of
//! the host — line length, counts, sizes, times — checked as it is read). `docs/trace-format.md` documents
//! every field; `fsarena record` writes traces and the `replay` workload reads them.
//! Recording: `strace` reads strace's lines into whole calls, `procs` follows each recorded
//! process's descriptors and working directory, `calls` turns calls into trace records,
//! `initial` picks the initial state from a snapshot of the root (`holes`: where each file's data lies), `anonymize` hashes names,
//! `program_time` bounds the program's untraced time from strace's clock, and `record` runs the command under strace and puts the trace together.

pub mod anonymize;
pub mod bounds;
pub mod calls;
pub mod format;
pub mod header;
pub mod holes;
pub mod initial;
pub mod overhead;
pub mod procs;
pub mod program_time;
pub mod record;
pub mod strace;
