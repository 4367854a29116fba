//! A clone image handed back to its master when a cell is done with it, with the byte ranges
//! the cell wrote (from its [`WriteTrace`](super::write_trace::WriteTrace)), so that the next
//! cell's clone is the same file made equal to the master again by copying back only those
//! ranges (`image_copy::restore`) — not a new copy of the whole image.
//!
//! Whatever cannot be vouched for is not reused: a clone whose trace failed, or that never
//! got one, is removed as before, and the next cell copies the master whole (its provenance
//! says why).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// What a clone's write trace found: the ranges written, or why they are not known. Empty
/// until the trace ends.
pub type Found = Arc<Mutex<Option<Result<Vec<(u64, u64)>, String>>>>;

/// A clone image no cell is using, with what the last cell changed in it.
#[derive(Debug)]
pub struct Spare {
    pub path: PathBuf,
    pub written: Vec<(u64, u64)>,
    /// Set when no cell has used it yet: a whole copy made ahead of the run's first cell
    /// (`master::SpareCopy`) or beside the teardown of the file system kept as the image
    /// (`first_copy`), for the provenance of the cell that gets it.
    pub copied: Option<Copied>,
}

/// How a spare no cell has used yet was copied whole, in how many seconds, and what the
/// provenance of the cell that gets it says of that.
#[derive(Debug, Clone, Copy)]
pub struct Copied {
    pub kind: super::image_copy::CopyKind,
    pub seconds: f64,
    pub note: &'static str,
}

/// A master's one spare clone, and why the last clone could not become one.
#[derive(Debug, Default)]
pub struct Reuse {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    spare: Option<Spare>,
    why_not: Option<String>,
}

impl Reuse {
    /// Takes the spare, if there is one, and the reason the last clone was not kept.
    pub fn take(&self) -> (Option<Spare>, Option<String>) {
        match self.state.lock() {
            Ok(mut s) => (s.spare.take(), s.why_not.take()),
            Err(_) => (None, Some("internal: the spare's lock was poisoned".into())),
        }
    }

    /// Offers a clone no cell has used yet (a copy made ahead), or says why there is none.
    pub fn offer(&self, spare: Result<Spare, String>) {
        if let Ok(mut s) = self.state.lock() {
            match spare {
                Ok(spare) => s.spare = Some(spare),
                Err(why) => s.why_not = Some(why),
            }
        }
    }

    /// Hands back the clone at `path` once its device is detached: kept as the spare when
    /// `found` holds its written ranges (returns true), else left for the caller to remove
    /// with the reason remembered for the next clone's provenance.
    pub fn hand_back(&self, path: PathBuf, found: &Found) -> bool {
        let found = found.lock().ok().and_then(|mut f| f.take());
        let Ok(mut s) = self.state.lock() else {
            return false;
        };
        match found {
            Some(Ok(written)) => {
                s.spare = Some(Spare {
                    path,
                    written,
                    copied: None,
                });
                true
            }
            Some(Err(why)) => {
                s.why_not = Some(why);
                false
            }
            None => {
                s.why_not = Some("the clone's writes were not traced".into());
                false
            }
        }
    }
}

/// Records what a trace found (called once, when the trace ends).
pub fn settle(found: &Found, result: Result<Vec<(u64, u64)>, String>) {
    if let Ok(mut f) = found.lock() {
        *f = Some(result);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clone_is_kept_only_with_its_written_ranges() {
        let r = Reuse::default();
        let found: Found = Arc::default();
        assert!(!r.hand_back("/x/a.img".into(), &found), "never traced");
        let (spare, why) = r.take();
        assert!(spare.is_none());
        assert_eq!(why.as_deref(), Some("the clone's writes were not traced"));

        settle(&found, Err("the trace lost 3 events".into()));
        assert!(!r.hand_back("/x/a.img".into(), &found));
        assert_eq!(r.take().1.as_deref(), Some("the trace lost 3 events"));

        settle(&found, Ok(vec![(0, 4096)]));
        assert!(r.hand_back("/x/a.img".into(), &found));
        let (spare, why) = r.take();
        assert!(why.is_none());
        let spare = spare.unwrap();
        assert_eq!(spare.path, PathBuf::from("/x/a.img"));
        assert_eq!(spare.written, vec![(0, 4096)]);
        assert!(r.take().0.is_none(), "taken once");
    }
}
