//! Append-only results store.
