//! Arming the run's trace instance (`clone_trace`) on an instance's loop device, for the
//! undo step that ends it: the record of what was written to the image while it was
//! attached, from which a copy of the image is made equal to it again (`reuse`).

use std::sync::Arc;

use super::clone_trace::CloneTrace;
use super::instance::Instance;
use super::reuse;
use super::undo::Undo;
use super::workdir::WorkDir;

/// Starts tracing the writes to `inst`'s device on the run's idle trace instance (or a new
/// one, named for `name`, the first time), and returns the undo step that ends the trace
/// and leaves what it found in `found`: the caller places it where the trace must end
/// (after the file system's last write, before its device is detached). An error says
/// why the writes cannot be traced; the instance itself is used regardless.
pub(super) fn arm(
    inst: &Instance,
    work: &WorkDir,
    name: &str,
    found: &reuse::Found,
) -> Result<Undo, String> {
    let dev = *inst
        .devices
        .first()
        .ok_or("the file system has no device")?;
    let idle = Arc::clone(&work.idle_traces);
    let kept = idle.lock().ok().and_then(|mut v| v.pop());
    let tracer = match kept {
        Some(t) => t,
        None => CloneTrace::create(&work.journal, &work.id(), name, || work.subdir("mnt"))?,
    };
    match tracer.start(dev) {
        Ok(trace) => Ok(Undo::EndTrace {
            trace,
            found: Arc::clone(found),
            tracer,
            idle,
        }),
        Err(e) => {
            if let Ok(mut v) = idle.lock() {
                v.push(tracer);
            }
            Err(e)
        }
    }
}
