//! What the database-engine workloads (`db` on SQLite, `pg` on PostgreSQL) share, so that
//! neither reaches into the other: the `cache` option and its check against the host
//! ([`cache`]), running an engine's measured phase inside a memory cgroup ([`confined`]),
//! and the search behind `threads = "auto"` ([`auto`]). `db` and `pg` import it; it imports
//! neither.

pub(crate) mod auto;
pub(crate) mod cache;
pub(crate) mod confined;
