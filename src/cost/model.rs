//! The coarse model: what a cell or a populated image costs on a file system when no
//! earlier run here timed it, from the rate the development machine created files, with
//! weights fitted to the default run's cells.

use crate::plan::FsKind;

/// What the coarse model charges every cell: attaching, mounting, checking and restoring its
/// file system around a short phase. With the weights below it prices the default plan's
/// minimum (198 cells and 10 images at scale 0.01) at ~220 s, what it took on 2026-11-25
/// (212 s of cells and 8 s of images a run, two runs; per kind of cell within 0.8–1.3×).
const MODEL_CELL_S: f64 = 0.8;
/// Creating the data set's files, as a share of what a cell that lays it down itself adds.
const MODEL_LAYS_DOWN: f64 = 1.2;
/// The same for a cell on a copy of an image (its phase walks or changes the files).
const MODEL_ON_COPY: f64 = 0.4;
/// The same for building one populated image (write, check, first copy).
const MODEL_IMAGE: f64 = 1.5;

/// The coarse model for one cell on `kind` with `files` files: the fixed part, plus a share
/// of creating the files, larger where the cell lays the data set down itself (`lays_down`:
/// `create`, or a target without populated images) than on a copy of an image (whose
/// building [`model_image`] prices, once).
pub fn model_cell(kind: FsKind, files: f64, lays_down: bool) -> f64 {
    let share = if lays_down {
        MODEL_LAYS_DOWN
    } else {
        MODEL_ON_COPY
    };
    MODEL_CELL_S + share * files / kind.create_rate()
}

/// The coarse model for one populated image: creating the data set's files, then its check
/// and first copy.
pub fn model_image(kind: FsKind, files: f64) -> f64 {
    MODEL_IMAGE * files / kind.create_rate()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_grows_with_the_files_and_is_slower_on_fuse() {
        assert!(model_cell(FsKind::Ext4, 0.0, true) == MODEL_CELL_S);
        for lays_down in [true, false] {
            let ntfs = model_cell(FsKind::Ntfs, 10_000.0, lays_down);
            assert!(ntfs > model_cell(FsKind::Ext4, 10_000.0, lays_down));
        }
    }
}
