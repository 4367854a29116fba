//! A program's file-system calls, recorded once and replayed on every candidate file system:
//! the versioned `.fstrace` format (`format`: its records, reading with every check a trace
//! must pass before anything is provisioned, and writing). `docs/trace-format.md` documents
//! every field; `fsarena record` writes traces and the `replay` workload reads them.

pub mod format;
