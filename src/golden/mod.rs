//! Golden images: the populated file systems a run builds once per target and data set
//! (and, with `--age`, the aged ones), each copied for every cell that starts from it
//! instead of every cell writing the data set itself.
//!
//! From the bottom up: [`failure`] (why an image could not be made, as a cell records it),
//! [`layout`] (what an image holds, and writing it), [`source`] (what a cell starts from)
//! and [`announce`] (where the builds report), [`aged`] (the `--age` images), then
//! [`populate`] (the run's images, built ahead or on a cell's first need).

pub mod aged;
pub mod announce;
pub mod failure;
pub mod layout;
pub mod populate;
pub mod source;
