//! Fast file-system primitives shared by the data-set generator and the workloads, so that
//! workloads measure the file system and not fsarena: reading a directory with
//! `getdents64`/`statx` ([`dir`]), a parallel walker over it ([`walk`], [`list`]), xxh3
//! hashing over large reusable buffers ([`hash`]), file copies ([`copy`]) and the byte
//! ranges they move between explicit offsets ([`range_copy`]), a file's extents
//! from FIEMAP ([`extents`]), whether a file is all in the page cache ([`cached`]), cheap
//! per-operation latency logs ([`latency`]), exact-size pools ([`pool`]), per-worker
//! totals that add up ([`totals`]) and removing a tree in parallel ([`remove`]).
//!
//! The bottom layer: it imports nothing of the crate but [`crate::sys`]-level code and its
//! own [`FsError`]; callers convert that error into theirs.

pub mod cached;
pub mod copy;
pub mod dir;
mod error;
pub mod extents;
pub mod hash;
pub mod latency;
pub mod list;
pub mod pool;
pub mod range_copy;
pub mod remove;
pub mod totals;
pub mod walk;

pub use dir::{ext_of, is_empty_dir, Dir, Dirent, Kind, Meta, Need, WalkStats};
pub use error::FsError;
pub use hash::{
    hash_at, hash_fd, hash_path, hash_unseen_at, hash_unseen_path, open_unseen, Hashed, HASH_BUF,
};
pub use latency::{percentile, LatencyLog};
pub use list::{list, Entry};
pub use pool::pool;
pub use remove::remove_tree;
pub use totals::Totals;
pub use walk::{walk, walk_with, WalkOptions};
