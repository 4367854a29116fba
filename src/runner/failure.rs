//! A cell that could not get as far as its points: the failure it records, whichever step
//! (provisioning, the populated image, the team's agreement) it came from. The type itself
//! lives with the golden images, which fail the cells that would have copied them.

use crate::results::{Measurement, Status};

pub use crate::golden::failure::{provision_failure, Failure};

/// Whether a record is a provisioning failure (the cell never reached its workload).
pub fn is_provision_failure(m: &Measurement) -> bool {
    m.status != Status::Ok
        && m.error.as_deref().is_some_and(|e| {
            e.starts_with("provision: ") || e.starts_with("cannot populate the image: provision: ")
        })
}
