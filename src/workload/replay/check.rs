//! The replay's own check: every call ended as it did when recorded, and the tree under the
//! root is the one the trace implies. The first difference is named — thread, call, system
//! call, path, recorded against replayed — and makes the measurement invalid: a replay that
//! did something else than the program did measured something else.

use std::collections::BTreeMap;
use std::path::Path;

use super::call::Returned;
use super::errno;
use super::expect::Expected;
use super::issue::ThreadLog;
use crate::trace::format::{Call, Op, Trace};

/// What a recorded call returned, as said in a divergence.
fn recorded(call: &Call) -> String {
    match (&call.err, call.ret) {
        (Some(e), _) => e.clone(),
        (None, Some(r)) => format!("success ({r})"),
        (None, None) => "nothing".into(),
    }
}

fn replayed(r: &Returned) -> String {
    match r {
        Ok(v) => format!("success ({v})"),
        Err(e) => errno::name(*e),
    }
}

/// Whether the replay's result is the recorded one. Errors must be the same errno; a read
/// or write must move the recorded bytes (a read at the end of a file gets what the file
/// holds, which the trace implies); a descriptor's number, and a directory listing's
/// bytes (it holds only the names the trace knows, in the file system's order), are the
/// replay's own, as are an msync's bytes (the range as far as the file reaches) and a
/// mapping's read (the range as far as the replay's file reaches: the self-check counts
/// its bytes against the trace's, `super::fidelity`). An
/// attribute's get, list or remove may find nothing where the program found its attribute
/// (`super::attrs`: the names are not recorded), so its success and `ENODATA` are alike.
pub fn same(call: &Call, r: &Returned) -> bool {
    if call.op == Op::Lock {
        return super::lock::alike(call, r);
    }
    if (call.ret.is_some() && not_kept(call, r)) || refused_here(call, r) {
        return true;
    }
    if call.op == Op::Clone && clone_refused_there(call) {
        // Refused where it was recorded, a clone may work here (`super::reflink`): a file
        // system that can clone does, where the program's would not.
        return match r {
            Ok(_) => true,
            Err(e) => crate::fsops::copy::is_unsupported(rustix::io::Errno::from_raw_os_error(*e)),
        };
    }
    let by_name = matches!(call.op, Op::Getxattr | Op::Removexattr);
    let no_data = |e: &str| errno::matches(libc::ENODATA, e);
    match (&call.err, call.ret, r) {
        (Some(name), _, Err(code)) if by_name && no_data(name) => {
            errno::matches(*code, name) || *code == libc::ERANGE
        }
        (Some(name), _, Ok(_)) if by_name => no_data(name),
        (None, Some(_), Err(code)) if by_name => matches!(*code, libc::ENODATA | libc::ERANGE),
        (Some(name), _, Err(code)) => errno::matches(*code, name),
        (None, Some(want), Ok(got)) => match call.op {
            Op::Read | Op::Write => want == *got,
            _ => true,
        },
        _ => false,
    }
}

/// Whether a clone failed when recorded because that file system, or that pair of files,
/// could not share extents (ext4: EOPNOTSUPP; two file systems: EXDEV).
fn clone_refused_there(call: &Call) -> bool {
    [
        "EOPNOTSUPP",
        "ENOTSUP",
        "EXDEV",
        "EINVAL",
        "ENOTTY",
        "ENOSYS",
    ]
    .iter()
    .any(|e| call.err.as_deref() == Some(e))
}

/// Whether the target refused an attribute its file system does not keep, where the program
/// succeeded on the one it was recorded on: exFAT has no extended attributes (EOPNOTSUPP) and
/// no owners (a chown to another owner is EPERM). The program would have met the same refusal
/// on that file system and gone on (`cp -a` warns and copies), so the replay does too;
/// the self-check counts these calls (`super::fidelity`).
pub fn not_kept(call: &Call, r: &Returned) -> bool {
    match (call.op, r) {
        (Op::Setxattr | Op::Getxattr | Op::Removexattr, Err(e)) => *e == libc::EOPNOTSUPP,
        (Op::Setattr, Err(e)) => {
            *e == libc::EOPNOTSUPP || (*e == libc::EPERM && call.syscall.contains("chown"))
        }
        _ => false,
    }
}

/// Whether the target refused a call the program had succeed, where refusing it is what this
/// file system does: a lock held by another of the replay's open files, or on a file system
/// that keeps no locks (`super::lock`); a fallocate on one that has none (ntfs-3g and
/// exfat-fuse answer EOPNOTSUPP, even to a punch hole). The program would have met the same
/// refusal there; the self-check counts these calls (`super::fidelity`).
pub fn refused_here(call: &Call, r: &Returned) -> bool {
    let Err(code) = r else { return false };
    let as_recorded = call
        .err
        .as_deref()
        .is_some_and(|name| errno::matches(*code, name));
    match call.op {
        Op::Lock => super::lock::refused(*code) && !as_recorded,
        Op::Fallocate => call.ret.is_some() && errno::unsupported(*code),
        _ => false,
    }
}

/// Whether a `SEEK_DATA` that found no more data for the program (ENXIO) found data here,
/// on a file system that keeps no holes (`super::lay::holes_not_kept`): there every byte
/// of a file is data, as it would have been for the program. Elsewhere it is a divergence:
/// the replay's file lies otherwise than the program's.
pub fn seek_into_hole_not_kept(call: &Call, r: &Returned) -> bool {
    call.op == Op::Seek
        && r.is_ok()
        && call.err.as_deref() == Some("ENXIO")
        && call.flags.iter().any(|f| f == "SEEK_DATA")
}

/// The first call, in recorded order, that did not end as recorded, said in one line;
/// `holes_kept`: whether the target kept the initial files' holes.
pub fn first_divergence(trace: &Trace, logs: &[ThreadLog], holes_kept: bool) -> Option<String> {
    let mut all: Vec<&(usize, Option<Returned>, u64)> =
        logs.iter().flat_map(|l| l.calls.iter()).collect();
    all.sort_by_key(|c| c.0);
    all.into_iter().find_map(|(i, r, _)| {
        let r = r.as_ref()?;
        let call = &trace.calls[*i];
        let alike = same(call, r) || (!holes_kept && seek_into_hole_not_kept(call, r));
        (!alike).then(|| {
            let what = [&call.path, &call.path2]
                .into_iter()
                .flatten()
                .cloned()
                .collect::<Vec<_>>()
                .join(" → ");
            let on = match (what.is_empty(), call.fd) {
                (false, _) => format!(" {what}"),
                (true, Some(fd)) => format!(" on fd {fd}"),
                (true, None) => String::new(),
            };
            format!(
                "thread {}, call {} (trace line {}): {}{on}: recorded {}, replayed {}",
                call.thread,
                i,
                trace.initial.len() + i + 2,
                call.syscall,
                recorded(call),
                replayed(r)
            )
        })
    })
}

/// Every name under `root` (relative, `/`-separated) as a replay left it.
pub fn found(root: &Path) -> std::io::Result<BTreeMap<String, Expected>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![String::new()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(root.join(&dir))? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = if dir.is_empty() {
                name
            } else {
                format!("{dir}/{name}")
            };
            let meta = entry.metadata()?;
            let e = if meta.is_dir() {
                stack.push(rel.clone());
                Expected::Dir
            } else if meta.file_type().is_symlink() {
                let target = std::fs::read_link(entry.path())?;
                Expected::Symlink {
                    target: target.to_string_lossy().into_owned(),
                }
            } else {
                Expected::File { size: meta.len() }
            };
            out.insert(rel, e);
        }
    }
    Ok(out)
}

/// The first name where the tree differs from the expected one, said in one line.
pub fn tree_difference(
    expected: &BTreeMap<String, Expected>,
    found: &BTreeMap<String, Expected>,
) -> Option<String> {
    let show = |e: Option<&Expected>| match e {
        None => "nothing".to_string(),
        Some(Expected::Dir) => "a directory".into(),
        Some(Expected::File { size }) => format!("a file of {size} bytes"),
        Some(Expected::Symlink { target }) => format!("a symlink to {target:?}"),
    };
    let mut names: Vec<&String> = expected.keys().chain(found.keys()).collect();
    names.sort();
    names.dedup();
    names.into_iter().find_map(|n| {
        let (e, f) = (expected.get(n), found.get(n));
        (e != f).then(|| {
            format!(
                "the tree after the replay: {n}: the trace implies {}, the target holds {}",
                show(e),
                show(f)
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A clone refused where it was recorded (cp on ext4) may succeed on a file system that
    /// can clone, or be refused again; any other error is a divergence.
    #[test]
    fn a_refused_clone_may_succeed_or_be_refused_again() {
        let refused = Call {
            fd: Some(4),
            ret: None,
            err: Some("EOPNOTSUPP".into()),
            ..Call::on_path(0, 0.0, 0.0, Op::Clone, "dst")
        };
        assert!(same(&refused, &Ok(100_000)));
        assert!(same(&refused, &Err(libc::EOPNOTSUPP)));
        assert!(!same(&refused, &Err(libc::EBADF)));
    }
}
