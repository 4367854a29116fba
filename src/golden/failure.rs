//! Why an image (or a cell's own file system) could not be made, in the form a cell
//! records it: the images fail the cells that would have copied them.

use crate::provision::ProvisionError;
use crate::results::Status;

/// Why a cell could not start a point: the status to record, the one-line error, and
/// notes kept with the record (a failed tool's whole output, whose error line holds only
/// the part that names the error).
pub type Failure = (Status, String, Vec<String>);

/// A provisioning error as a cell records it.
pub fn provision_failure(e: ProvisionError) -> Failure {
    let notes = e
        .tool_output()
        .map(|o| vec![format!("tool output: {o}")])
        .unwrap_or_default();
    (Status::Error, format!("provision: {e}"), notes)
}
