//! Thread pools of an exact size. A benchmark's `threads` must mean that many workers, not
//! rayon's global pool (sized to the machine), so every parallel stage builds its own.

use std::path::Path;

use super::error::FsError;

/// Builds a rayon pool of exactly `threads` threads (at least one).
pub fn pool(threads: usize) -> Result<rayon::ThreadPool, FsError> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .thread_name(|i| format!("fsarena-{i}"))
        .build()
        .map_err(|e| FsError::new("start thread pool", Path::new(""), std::io::Error::other(e)))
}
