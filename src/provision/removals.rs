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
//! is cleaned up; and a new image of the same name waits for the old one's removal
//! ([`Removals::wait_for`]): the next point of an io sweep numbers its image as the last did.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::journal::{Journal, Kind, Op};
use crate::sys::{ignore_missing, syncfs};

/// The removals in progress of one run's work directory.
#[derive(Debug, Default)]
pub struct Removals {
    /// The images being removed, by path (one entry per removal).
    pending: Mutex<Vec<PathBuf>>,
    done: Condvar,
    /// How many removals have ended, and their seconds in all: what the run's end will
    /// spend on each image it still holds ([`Removals::mean`]).
    took: Mutex<(u32, Duration)>,
}

impl Removals {
    /// Removes the image `img` (journaled under `journal`) on a thread of its own, and
    /// journals its release once it is gone; in line when no thread can be started.
    pub fn remove(self: &Arc<Self>, img: PathBuf, journal: Arc<Journal>) {
        self.begin(&img);
        let (me, path, j) = (Arc::clone(self), img.clone(), Arc::clone(&journal));
        let job = move || {
            me.timed(|| remove_now(&path, &j));
            me.end(&path);
        };
        let spawned = std::thread::Builder::new()
            .name("fsarena-remove".into())
            .spawn(job);
        if spawned.is_err() {
            self.timed(|| remove_now(&img, &journal));
            self.end(&img);
        }
    }

    /// The mean time an image's removal has taken so far (with the work directory's
    /// discards, 0.2–0.5 s for an ntfs or exFAT image here), or `None` before the first.
    pub fn mean(&self) -> Option<Duration> {
        let (n, total) = *self.took.lock().ok()?;
        (n > 0).then(|| total / n)
    }

    /// Runs one removal, counting its time.
    fn timed(&self, remove: impl FnOnce()) {
        let t0 = Instant::now();
        remove();
        if let Ok(mut took) = self.took.lock() {
            took.0 += 1;
            took.1 += t0.elapsed();
        }
    }

    /// Blocks until no removal is in progress.
    pub fn wait(&self) {
        self.wait_while(|p| !p.is_empty());
    }

    /// Blocks until `img` is not being removed: a new image of that name can be created.
    pub fn wait_for(&self, img: &Path) {
        self.wait_while(|p| p.iter().any(|i| i == img));
    }

    /// Blocks while `busy` holds of what is being removed.
    fn wait_while(&self, busy: impl Fn(&[PathBuf]) -> bool) {
        let Ok(mut p) = self.pending.lock() else {
            return;
        };
        while busy(&p) {
            p = match self.done.wait(p) {
                Ok(p) => p,
                Err(_) => return,
            };
        }
    }

    /// Marks `path` as written off the cell's path until the returned guard is dropped (on
    /// the thread doing the work, so a panic there ends it too): the next measured phase
    /// waits for it as for a removal.
    pub(crate) fn beside(self: &Arc<Self>, path: &Path) -> Beside {
        self.begin(path);
        Beside {
            removals: Arc::clone(self),
            path: path.to_path_buf(),
        }
    }

    /// The removal of `img` starts.
    pub(crate) fn begin(&self, img: &Path) {
        self.change(|p| p.push(img.to_path_buf()));
    }

    /// The removal of `img` is over.
    pub(crate) fn end(&self, img: &Path) {
        self.change(|p| {
            if let Some(at) = p.iter().position(|i| i == img) {
                p.swap_remove(at);
            }
        });
    }

    /// Applies `how` to what is being removed and wakes every waiter to look again.
    fn change(&self, how: impl FnOnce(&mut Vec<PathBuf>)) {
        if let Ok(mut p) = self.pending.lock() {
            how(&mut p);
            self.done.notify_all();
        }
    }
}

/// Work on `path` off the cell's path ([`Removals::beside`]), over when dropped.
pub(crate) struct Beside {
    removals: Arc<Removals>,
    path: PathBuf,
}

impl Drop for Beside {
    fn drop(&mut self) {
        self.removals.end(&self.path);
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
        assert!(r.mean().is_some(), "its time is counted");
        let live = journal::live(&journal::read(&dir.path().join("journal.jsonl")).unwrap());
        assert!(live.is_empty(), "its entry is released: {live:?}");
    }

    #[test]
    fn waiting_blocks_until_the_last_removal_is_done() {
        let r: Arc<Removals> = Arc::default();
        let img = PathBuf::from("/w/images/ext4-1.img");
        r.begin(&img);
        let (me, t0) = (Arc::clone(&r), Instant::now());
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            me.end(&img);
        });
        r.wait();
        assert!(t0.elapsed() >= Duration::from_millis(200));
        t.join().unwrap();
        r.wait(); // none in progress: returns at once
    }

    /// Work marked beside the cell's path holds a wait until its guard is dropped, on
    /// whichever thread drops it.
    #[test]
    fn work_beside_the_path_is_waited_for_until_its_guard_is_dropped() {
        let r: Arc<Removals> = Arc::default();
        let busy = r.beside(Path::new("/w/images/ext4-1.clone.img"));
        let t0 = Instant::now();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            drop(busy);
        });
        r.wait();
        assert!(t0.elapsed() >= Duration::from_millis(200));
        t.join().unwrap();
    }

    /// Stop 49's CI: the io sweep's next point created `ext4-1.img` while the last point's
    /// `ext4-1.img` was still being removed, and every later point failed `File exists`.
    #[test]
    fn an_image_name_is_not_reused_while_its_last_image_is_being_removed() {
        let r: Arc<Removals> = Arc::default();
        let (img, other) = (
            PathBuf::from("/w/images/ext4-1.img"),
            PathBuf::from("/w/x.img"),
        );
        r.begin(&img);
        let t0 = Instant::now();
        r.wait_for(&other);
        assert!(
            t0.elapsed() < Duration::from_millis(100),
            "another name waits for nothing"
        );
        let (me, gone) = (Arc::clone(&r), img.clone());
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            me.end(&gone);
        });
        r.wait_for(&img);
        assert!(t0.elapsed() >= Duration::from_millis(200));
        t.join().unwrap();
        r.wait();
    }
}
