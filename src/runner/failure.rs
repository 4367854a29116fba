//! A cell that could not get as far as its points: the failure it records, whichever step
//! (provisioning, the populated image, the team's agreement) it came from.

use crate::provision::ProvisionError;
use crate::results::{Measurement, Status};

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

/// Whether a record is a provisioning failure (the cell never reached its workload).
pub fn is_provision_failure(m: &Measurement) -> bool {
    m.status != Status::Ok
        && m.error.as_deref().is_some_and(|e| {
            e.starts_with("provision: ") || e.starts_with("cannot populate the image: provision: ")
        })
}
