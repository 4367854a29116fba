//! A recorded clone (`FICLONE`, `FICLONERANGE`) issued again, with its effect. Where the
//! target can share extents (btrfs, xfs with reflink) it is a clone. Where it cannot (ext4,
//! tmpfs, exFAT and NTFS through FUSE refuse with EOPNOTSUPP, EINVAL or EXDEV) the replay
//! copies the same bytes, because that is what a program that clones does next (`cp`
//! falls back to copy_file_range): the files end as the program's did, and the self-check
//! says how many clones became copies.
//!
//! A clone that failed when recorded (`cp` on ext4, which then copied with
//! copy_file_range) is tried again as it was: it fails again, or, on a file system that can
//! clone, succeeds. Where it succeeds the program would have stopped there: the copies it
//! made only because its clone had failed ([`fallbacks`]: between the same two files, in
//! the same thread, after the clone) are not issued, as `cp` on xfs and btrfs makes none
//! (counted on the corpus's cp -a: 623 FICLONE and no copy_file_range; its replay issued
//! 1,246 copy_file_range besides, 8–10 ms of a 0.06–0.08 s replay on btrfs). Their
//! results are the recorded ones and the self-check counts them apart.

use std::collections::{HashMap, HashSet};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use rustix::io::Errno;

use super::script::Script;
use crate::fsops::copy::is_unsupported;
use crate::fsops::range_copy::{self, KernelCopy, Range};
use crate::trace::format::{Call, Op};

/// What the clones of one replay did, counted as they are issued (the replay's threads
/// share it), and which recorded copies a clone made here instead.
#[derive(Debug, Default)]
pub struct Clones {
    shared: AtomicU64,
    copied: AtomicU64,
    bytes: AtomicU64,
    /// Per fallback copy (its read half's index), the clone whose failure it followed.
    fallbacks: HashMap<usize, usize>,
    /// The clones (by call index) that failed when recorded and succeeded here.
    made: Mutex<HashSet<usize>>,
    /// Fallback copies not issued because their clone succeeded here.
    made_copies: AtomicU64,
}

/// The clones of one measured pass.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Cloned {
    /// Clones the file system made by sharing extents.
    pub shared: u64,
    /// Clones it refused, replayed as copies of the same bytes.
    pub copied: u64,
    /// Bytes cloned or copied for them: their own kind in the self-check, not written bytes.
    pub bytes: u64,
    /// Copies the program made after a clone that failed for it, not issued because the
    /// clone succeeded here.
    pub made_copies: u64,
}

impl Clones {
    /// The clones of `script`, with its fallback copies found (`copies`: `script::copies`).
    pub fn new(script: &Script, copies: &HashMap<usize, usize>) -> Clones {
        Clones {
            fallbacks: fallbacks(script, copies),
            ..Clones::default()
        }
    }

    /// What was counted since the last take, and a fresh count for the next pass.
    pub fn take(&self) -> Cloned {
        self.made.lock().unwrap_or_else(|p| p.into_inner()).clear();
        Cloned {
            shared: self.shared.swap(0, Ordering::SeqCst),
            copied: self.copied.swap(0, Ordering::SeqCst),
            bytes: self.bytes.swap(0, Ordering::SeqCst),
            made_copies: self.made_copies.swap(0, Ordering::SeqCst),
        }
    }

    /// Whether the copy whose read half is call `i` was made here by the clone it fell back
    /// from (which then succeeded): it is not issued, and is counted.
    pub fn made_here(&self, i: usize) -> bool {
        let Some(clone) = self.fallbacks.get(&i) else {
            return false;
        };
        let made = self
            .made
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(clone);
        if made {
            self.made_copies.fetch_add(1, Ordering::SeqCst);
        }
        made
    }
}

/// The copies a program made only because a whole-file clone had failed for it: per copy
/// (its read half's index, `copies` as `script::copies` pairs them), the clone. A copy is
/// one when it follows, in the same thread, a whole-file clone between the same two open
/// files that failed when recorded, and copies to the same offset it reads from. A copy
/// that moves the files' positions (no offsets, as `cp`'s) is one only if nothing after it
/// reads, writes or seeks from those positions: left out, it would leave them elsewhere.
pub fn fallbacks(script: &Script, copies: &HashMap<usize, usize>) -> HashMap<usize, usize> {
    let calls = script.calls;
    let mut found = HashMap::new();
    for own in &script.by_thread {
        // Per (source slot, destination slot), the last whole-file clone that failed.
        let mut failed: HashMap<(usize, usize), usize> = HashMap::new();
        for &i in own {
            let call = &calls[i];
            let whole = call.source.as_ref().is_some_and(|s| s.offset.is_none());
            if call.op == Op::Clone && call.ret.is_none() && whole {
                if let (Some(&from), Some(to)) = (script.source.get(&i), script.slot[i]) {
                    failed.insert((from, to), i);
                }
            }
            let Some(&j) = copies.get(&i) else { continue };
            let (from, to) = (script.slot[i], script.slot[j]);
            let pair = from.zip(to).and_then(|p| failed.get(&p));
            let same =
                call.offset == calls[j].offset && call.ret.is_some() && calls[j].ret.is_some();
            if let Some(&clone) = pair.filter(|_| same) {
                found.insert(i, clone);
            }
        }
    }
    let halves: HashSet<usize> = found.iter().flat_map(|(&i, _)| [i, copies[&i]]).collect();
    let moved: HashSet<usize> = halves
        .iter()
        .filter(|&&i| calls[i].offset.is_none())
        .filter_map(|&i| script.slot[i])
        .collect();
    // A later call on a moved slot that uses its position keeps that slot's copies issued.
    let first = found.keys().min().copied().unwrap_or(0);
    let positional = |k: usize| {
        let c = &calls[k];
        matches!(c.op, Op::Read | Op::Write | Op::Seek) && c.offset.is_none()
    };
    let kept: HashSet<usize> = (first..calls.len())
        .filter(|k| !halves.contains(k) && positional(*k))
        .filter_map(|k| script.slot[k].filter(|s| moved.contains(s)))
        .collect();
    found.retain(|&i, _| {
        let (from, to) = (script.slot[i], script.slot[copies[&i]]);
        !from.is_some_and(|s| kept.contains(&s)) && !to.is_some_and(|s| kept.contains(&s))
    });
    found
}

/// The range a clone covers: from the source's offset, its length (to the source's end, as
/// it is in the replay, for a whole-file clone or a range of length 0), to the destination's
/// offset.
fn range(call: &Call, src: &OwnedFd) -> Result<Range, i32> {
    let size = rustix::fs::fstat(src)
        .map_err(|e| e.raw_os_error())?
        .st_size;
    let size = u64::try_from(size).unwrap_or(0);
    let src_off = call.source.as_ref().and_then(|s| s.offset).unwrap_or(0);
    let rest = size.saturating_sub(src_off);
    // A range is bounded by the file it reads (a trace's length may say anything).
    let len = match call.size {
        Some(n) if n > 0 => n.min(rest),
        _ => rest,
    };
    Ok(Range::new(src_off, call.offset.unwrap_or(0), len))
}

/// Issues the clone `call` (call `index` of the trace) from `src` to `dst`: the bytes it
/// cloned or copied, or the errno (the shape of `super::call::Returned`, which is issued
/// from there). A whole file's range is read (an fstat) only once it is needed, so a clone
/// that fails as it did for the program costs only its ioctl, as it did.
pub fn issue(
    index: usize,
    call: &Call,
    src: &OwnedFd,
    dst: &OwnedFd,
    clones: &Clones,
) -> Result<i64, i32> {
    let whole = call.source.as_ref().and_then(|s| s.offset).is_none();
    let (attempt, known) = if whole {
        (rustix::fs::ioctl_ficlone(dst, src), None)
    } else {
        let r = range(call, src)?;
        (clone_range(src, dst, call.size.unwrap_or(0), &r), Some(r))
    };
    let range = || known.map_or_else(|| range(call, src), Ok);
    match attempt {
        Ok(()) => {
            let r = range()?;
            if call.ret.is_none() {
                clones
                    .made
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(index);
            }
            clones.shared.fetch_add(1, Ordering::SeqCst);
            clones.bytes.fetch_add(r.len, Ordering::SeqCst);
            Ok(r.len as i64)
        }
        // The program cloned here; this file system cannot: the bytes are copied instead.
        Err(e) if call.ret.is_some() && is_unsupported(e) => {
            let r = range()?;
            let n = copy(src, dst, r).map_err(|e| e.raw_os_error())?;
            clones.copied.fetch_add(1, Ordering::SeqCst);
            clones.bytes.fetch_add(n, Ordering::SeqCst);
            Ok(n as i64)
        }
        Err(e) => Err(e.raw_os_error()),
    }
}

/// `ioctl(dst, FICLONERANGE, {src, …})` with the recorded length (0: to the source's end).
fn clone_range(src: &OwnedFd, dst: &OwnedFd, len: u64, r: &Range) -> rustix::io::Result<()> {
    let arg = libc::file_clone_range {
        src_fd: i64::from(src.as_raw_fd()),
        src_offset: r.src_off,
        src_length: len.min(r.len),
        dest_offset: r.dst_off,
    };
    // SAFETY: two open descriptors and a struct the kernel only reads.
    let rc = unsafe { libc::ioctl(dst.as_fd().as_raw_fd(), libc::FICLONERANGE, &arg) };
    if rc < 0 {
        Err(Errno::from_io_error(&std::io::Error::last_os_error()).unwrap_or(Errno::IO))
    } else {
        Ok(())
    }
}

/// The range copied as a program that cannot clone copies it: copy_file_range where the
/// file system takes it (the bytes it moved, short where it stopped early), else through a
/// buffer a MiB at a time (FUSE file systems that take no copy_file_range). Returns the
/// bytes copied.
fn copy(src: &OwnedFd, dst: &OwnedFd, r: Range) -> rustix::io::Result<u64> {
    match range_copy::by_kernel(src.as_fd(), dst.as_fd(), r)? {
        KernelCopy::Moved(n) => Ok(n),
        KernelCopy::Refused(_) => {
            let mut buf = vec![0u8; (1 << 20).min(r.len as usize)];
            range_copy::by_buffer(src.as_fd(), dst.as_fd(), r, &mut buf, None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::replay::script::{copies, resolve};

    /// One file of the corpus's `cp -a`, as recorded on ext4 (the trace's own lines,
    /// anonymized): the source opened, the destination created, FICLONE refused, then
    /// copy_file_range until it returns 0, the times set, both closed. `after` goes between
    /// the copy and the closes; `clone_ret` is what the clone returned.
    fn cp_one_file(clone_ret: &str, after: &[&str]) -> crate::trace::format::Trace {
        let calls = [
            r#"{"call":{"thread":0,"start":0.003898,"dur":0.0,"op":"open","syscall":"openat","path":"s/a.h","flags":["O_RDONLY","O_NOFOLLOW"],"ret":3}}"#,
            r#"{"call":{"thread":0,"start":0.003902,"dur":0.0,"op":"stat","syscall":"newfstatat","fd":3,"ret":0}}"#,
            r#"{"call":{"thread":0,"start":0.003902,"dur":1e-6,"op":"open","syscall":"openat","path":"d/a.h","flags":["O_WRONLY","O_CREAT","O_EXCL"],"mode":384,"ret":4}}"#,
            &format!(
                r#"{{"call":{{"thread":0,"start":0.003906,"dur":0.0,"op":"clone","syscall":"ioctl","fd":4,"source":{{"fd":3}},{clone_ret}}}}}"#
            ),
            r#"{"call":{"thread":0,"start":0.003906,"dur":0.0,"op":"stat","syscall":"newfstatat","fd":4,"ret":0}}"#,
            r#"{"call":{"thread":0,"start":0.003906,"dur":0.0,"op":"read","syscall":"copy_file_range","fd":3,"size":3285,"ret":3285}}"#,
            r#"{"call":{"thread":0,"start":0.003906,"dur":0.0,"op":"write","syscall":"copy_file_range","fd":4,"size":3285,"ret":3285}}"#,
            r#"{"call":{"thread":0,"start":0.003907,"dur":0.0,"op":"read","syscall":"copy_file_range","fd":3,"size":0,"ret":0}}"#,
            r#"{"call":{"thread":0,"start":0.003907,"dur":0.0,"op":"write","syscall":"copy_file_range","fd":4,"size":0,"ret":0}}"#,
        ];
        let tail = [
            r#"{"call":{"thread":0,"start":0.003908,"dur":0.0,"op":"setattr","syscall":"utimensat","fd":4,"ret":0}}"#,
            r#"{"call":{"thread":0,"start":0.003908,"dur":0.0,"op":"close","syscall":"close","fd":4,"ret":0}}"#,
            r#"{"call":{"thread":0,"start":0.003908,"dur":0.0,"op":"close","syscall":"close","fd":3,"ret":0}}"#,
        ];
        let all: Vec<&str> = calls
            .iter()
            .copied()
            .chain(after.iter().copied())
            .chain(tail)
            .collect();
        let text = format!(
            "{{\"fstrace\":1,\"command\":[\"cp\",\"-a\",\"s\",\"d\"],\"anonymized\":true,\"threads\":1,\"duration_s\":0.004,\"initial\":3,\"calls\":{},\"outside_root\":0,\"file_mmaps\":0}}\n{}\n{}\n{}\n{}\n",
            all.len(),
            r#"{"initial":{"path":"s","kind":"dir"}}"#,
            r#"{"initial":{"path":"s/a.h","kind":"file","size":3285}}"#,
            r#"{"initial":{"path":"d","kind":"dir"}}"#,
            all.join("\n")
        );
        crate::trace::format::read(text.as_bytes()).unwrap()
    }

    fn fallbacks_of(t: &crate::trace::format::Trace) -> HashMap<usize, usize> {
        let s = resolve(t);
        fallbacks(&s, &copies(&s))
    }

    /// Defect (issue 56): `cp` recorded on ext4 tries FICLONE, is refused, and copies with
    /// copy_file_range. Replayed on xfs or btrfs the clone succeeds, and the replay went on
    /// to issue the copy as well (1,246 copy_file_range for the corpus's cp -a, 8-10 ms of a
    /// 0.06-0.08 s replay on btrfs), where `cp` on those file systems copies nothing after
    /// its clone. Both copies of the file (the bytes, then the one that returned 0) are the
    /// clone's fallback; a clone that succeeded for the program has none.
    #[test]
    fn cp_s_copy_after_a_refused_clone_is_not_issued_where_the_clone_succeeds() {
        let refused = cp_one_file(r#""err":"EOPNOTSUPP""#, &[]);
        assert_eq!(fallbacks_of(&refused), HashMap::from([(5, 3), (7, 3)]));
        let cloned = cp_one_file(r#""ret":0"#, &[]);
        assert!(fallbacks_of(&cloned).is_empty());
    }

    /// A copy without offsets moves both files' positions: where a later call writes from
    /// the destination's position, leaving the copy out would move that write, so the copy
    /// is issued; a later write at its own offset does not depend on it.
    #[test]
    fn a_fallback_copy_is_issued_when_a_later_call_uses_the_position_it_moved() {
        let at_position = r#"{"call":{"thread":0,"start":0.003908,"dur":0.0,"op":"write","syscall":"write","fd":4,"size":10,"ret":10}}"#;
        let t = cp_one_file(r#""err":"EOPNOTSUPP""#, &[at_position]);
        assert!(fallbacks_of(&t).is_empty());
        let at_offset = r#"{"call":{"thread":0,"start":0.003908,"dur":0.0,"op":"write","syscall":"pwrite64","fd":4,"size":10,"offset":0,"ret":10}}"#;
        let t = cp_one_file(r#""err":"EOPNOTSUPP""#, &[at_offset]);
        assert_eq!(fallbacks_of(&t).len(), 2);
    }
}
