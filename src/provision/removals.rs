//! A cell's image removed off the cell's path: on a thread of its own, from the moment its
//! loop device is detached, while the run goes on to check, provision and prepare the next
//! file system; the next measured phase waits for every removal to be done first
//! ([`Removals::wait`], called by the runner's harness before its phase).
//!
//! Why: a sparse 64 GiB image that a file system wrote through a direct-I/O loop device
//! holds thousands of extents (a FUSE file system's scattered writes, mkntfs's `$LogFile`),
//! and freeing them — with the work directory's file system mounted `discard`, one discard
//! each — took 1–4 s per ntfs and exFAT cell (issue 41's measurement, BENCHMARKS.md), in line.
//!
//! What it keeps: the image stays journaled until it is gone, so a `kill -9` leaves it to
//! `fsarena cleanup` as before; the removal ends with a `syncfs` of the work directory's file
//! system, so the frees (and their discards) are on the disk, not in a transaction the next
//! phase's writes would commit; the run's end (and a panic's unwinding, through
//! [`crate::provision::WorkDir`]'s drop) waits for every removal before the work directory
//! is cleaned up.

use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};

use super::journal::{Journal, Kind, Op};
use crate::sys::{ignore_missing, syncfs};

/// The removals in progress of one run's work directory.
#[derive(Debug, Default)]
pub struct Removals {
    pending: Mutex<usize>,
    done: Condvar,
}

impl Removals {
    /// Removes the image `img` (journaled under `journal`) on a thread of its own, and
    /// journals its release once it is gone; in line when no thread can be started.
    pub fn remove(self: &Arc<Self>, img: PathBuf, journal: Arc<Journal>) {
        self.add(1);
        let (me, path, j) = (Arc::clone(self), img.clone(), Arc::clone(&journal));
        let job = move || {
            remove_now(&path, &j);
            me.add(-1);
        };
        let spawned = std::thread::Builder::new()
            .name("fsarena-remove".into())
            .spawn(job);
        if spawned.is_err() {
            remove_now(&img, &journal);
            self.add(-1);
        }
    }

    /// Blocks until no removal is in progress.
    pub fn wait(&self) {
        let Ok(mut n) = self.pending.lock() else {
            return;
        };
        while *n > 0 {
            n = match self.done.wait(n) {
                Ok(n) => n,
                Err(_) => return,
            };
        }
    }

    /// Counts a removal in (`+1`) or out (`-1`), waking the waiters at none.
    pub(crate) fn add(&self, by: isize) {
        if let Ok(mut n) = self.pending.lock() {
            *n = n.saturating_add_signed(by);
            if *n == 0 {
                self.done.notify_all();
            }
        }
    }
}

/// Removes `img`, journals its release, and puts the frees on the disk.
fn remove_now(img: &std::path::Path, journal: &Journal) {
    match std::fs::remove_file(img).or_else(ignore_missing) {
        Ok(()) => {
            let _ = journal.record(Op::Release, Kind::Image, img, None);
        }
        Err(e) => eprintln!("fsarena: cannot remove {}: {e}", img.display()),
    }
    if let Some(dir) = img.parent() {
        let _ = syncfs(dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provision::journal;
    use std::time::{Duration, Instant};

    #[test]
    fn an_image_removed_off_the_path_is_gone_and_released_once_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        let j = Arc::new(Journal::open(&dir.path().join("journal.jsonl")).unwrap());
        let img = dir.path().join("ext4-1.img");
        j.record(Op::Create, Kind::Image, &img, None).unwrap();
        std::fs::write(&img, [1u8; 4096]).unwrap();
        let r: Arc<Removals> = Arc::default();
        r.remove(img.clone(), Arc::clone(&j));
        r.wait();
        assert!(!img.exists());
        let live = journal::live(&journal::read(&dir.path().join("journal.jsonl")).unwrap());
        assert!(live.is_empty(), "its entry is released: {live:?}");
    }

    #[test]
    fn waiting_blocks_until_the_last_removal_is_done() {
        let r: Arc<Removals> = Arc::default();
        r.add(1);
        let (me, t0) = (Arc::clone(&r), Instant::now());
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            me.add(-1);
        });
        r.wait();
        assert!(t0.elapsed() >= Duration::from_millis(200));
        t.join().unwrap();
        r.wait(); // none in progress: returns at once
    }
}
