//! What a plan will cost before it runs: `--dry-run` prints the estimated wall time of the
//! minimum repetitions (and whether it fits an `auto` budget) and the disk it needs.
//!
//! **The model.** A cell costs what cells of the same target and workload cost in the most
//! recent earlier runs on this host (`cell_seconds` in their results, looked up in the
//! results directory's parent, e.g. `fsarena-results/`), rescaled to this plan's data set:
//! `overhead + (cost − overhead) × files_now / files_then`, where `overhead` is that run's
//! cheapest cell of the target (provisioning and teardown, which do not grow with the data
//! set). Without such history it falls back to a coarse per-file-system model, stated in the
//! output, at the rate the development machine created files (ext4 ~11,000 files/s, btrfs
//! ~3,300, FUSE ~3,500), with weights fitted to the default run's cells: each populated image
//! costs 1.5× creating the data set's files (write, then check and copy), a cell that lays the
//! data set down itself (`create`, a target without images) 0.8 s plus 1.2× that, and a cell
//! on a copy of an image 0.8 s plus 0.4× that. Either way it is an estimate; the progress
//! bar's ETA corrects it as cells are timed.
//!
//! A workload whose time grows with the bytes it moves rather than its files (copy-verify,
//! cold-read: `Workload::byte_passes`) is charged, in the model, each pass over its starting
//! bytes at a rate per file system ([`model::model_bytes`]): a folder of a few large files
//! costs what its bytes cost, which a file count does not see.
//!
//! A phase that repeated its pass to the floor (`passes` > 1) does not grow with the data
//! set: it lasts the floor until one pass alone is longer. Its part of the cell is priced
//! as `max(phase, one pass × files_now / files_then)`, the rest as above.
//!
//! A target's populated images are built once per run, whatever the number of cells that
//! copy them. Runs that record it (`image_seconds` on the cell that built or was charged for
//! an image) have it taken out of that cell and priced once per target, in proportion to the
//! files; older runs leave it inside their first cells.
//!
//! From the bottom up: [`model`] (the coarse per-file-system model), [`history`] (what
//! earlier runs cost, read from their results), [`estimate`] (a plan's cells priced from
//! either). `--dry-run` (the runner's) prints the estimate with the plan it prices.

pub mod estimate;
pub mod history;
pub mod model;
