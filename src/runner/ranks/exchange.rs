//! The one way ranks talk: an all-gather of what each says at a labelled step (also a
//! barrier), which ends the job when two ranks are at different steps.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::cluster;
use crate::results::Status;

/// What one rank says at a step.
#[derive(Serialize, Deserialize)]
struct Said<T> {
    step: String,
    what: Result<T, String>,
}

/// Every rank's `what` at `step`, in rank order. Ranks at different steps cannot be put
/// back in step (one of them skipped a phase the others are in): the job ends, on every
/// rank, with one line naming both steps.
pub fn exchange<T: Serialize + DeserializeOwned>(
    step: &str,
    what: Result<T, String>,
) -> Vec<Result<T, String>> {
    let mine = Said {
        step: step.to_string(),
        what,
    };
    let bytes = serde_json::to_vec(&mine).unwrap_or_default();
    let mut out = Vec::new();
    for (rank, b) in cluster::all_gather(&bytes).iter().enumerate() {
        match serde_json::from_slice::<Said<T>>(b) {
            Ok(s) if s.step == step => out.push(s.what),
            Ok(s) => {
                eprintln!(
                    "fsarena: ranks out of step: this rank is at {step}, rank {rank} at {}; ending the job",
                    s.step
                );
                cluster::abort(1);
            }
            Err(e) => {
                eprintln!(
                    "fsarena: rank {rank} sent what this rank cannot read ({e}); ending the job"
                );
                cluster::abort(1);
            }
        }
    }
    out
}

/// The lowest rank that failed, with its error.
pub fn first_failure<T>(all: &[Result<T, String>]) -> Option<(usize, String)> {
    all.iter()
        .enumerate()
        .find_map(|(k, r)| r.as_ref().err().map(|e| (k, e.clone())))
}

/// Status as it travels between ranks.
pub fn status_name(s: Status) -> String {
    serde_json::to_value(s)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "error".into())
}

/// A status back from its travelling name (an unknown one is an error).
pub fn status_from(name: &str) -> Status {
    serde_json::from_value(serde_json::Value::String(name.into())).unwrap_or(Status::Error)
}
