//! What a cell starts from, as the run's images hand it out: the populated images and the
//! aged ones both answer with this, so the cell need not know which kind it copies.

use super::failure::Failure;
use crate::provision::MasterImage;

/// What a cell gets: no image (it makes its own file system), an image, or the reason the
/// image could not be made.
pub enum Source<'a> {
    Fresh,
    Clone(&'a MasterImage),
    Failed(Failure),
    /// Cancelled while the image was being written.
    Interrupted,
}
