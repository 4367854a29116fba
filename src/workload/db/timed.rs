//! Per-file I/O figures of the SQLite engine, the way Jetstress splits them: reads, writes
//! and syncs of the database file apart from those of its log (the `-wal` file).
//!
//! One file system has one set of device counters, so the split cannot come from the
//! device. It comes from the engine instead: a VFS shim, `fsarena-timed`, sits between
//! SQLite and its default `unix` VFS and times every `xRead`, `xWrite` and `xSync` of the
//! files it opens. In the `unix` VFS those are one `pread`, `pwrite` and `fdatasync`/`fsync`
//! each (memory-mapped I/O is off by default and fsarena does not turn it on), so the time
//! is the system call's: a page-cache hit, or the device's latency through the file system.
//! The shim knows each file's kind from the flags SQLite opens it with
//! (`SQLITE_OPEN_MAIN_DB`, `SQLITE_OPEN_WAL`); other files (temporary ones) pass untimed.
//!
//! The counters belong to a database (its canonical path, the `-wal` file counted with it),
//! so two databases open in one process never mix; a confined engine counts in its own
//! child process and reports the difference over its measured phase ([`Snapshot::since`]).

use std::ffi::{c_int, c_void, CStr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, Once};
use std::time::Instant;

use rusqlite::ffi;
use serde::{Deserialize, Serialize};

/// The shim's registered name, passed to `sqlite3_open_v2`.
pub(super) const VFS_NAME: &str = "fsarena-timed";
const VFS_CNAME: &CStr = c"fsarena-timed";

/// Which file an operation was on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Db = 0,
    Wal = 1,
}

/// What was done to it.
#[derive(Clone, Copy)]
enum Op {
    Read = 0,
    Write = 1,
    Sync = 2,
}

/// Count, bytes and nanoseconds of one (file, operation) pair.
#[derive(Debug, Default, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(super) struct Figures {
    pub(super) count: u64,
    pub(super) bytes: u64,
    pub(super) ns: u64,
}

impl Figures {
    /// Mean milliseconds per operation, `None` without one.
    pub(super) fn mean_ms(&self) -> Option<f64> {
        (self.count > 0).then(|| self.ns as f64 / self.count as f64 / 1e6)
    }
    /// Mean bytes per operation, `None` without one.
    pub(super) fn bytes_per_op(&self) -> Option<f64> {
        (self.count > 0).then(|| self.bytes as f64 / self.count as f64)
    }
}

/// Every (file, operation) pair at one moment, indexed `kind * 3 + op`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(super) struct Snapshot([Figures; 6]);

impl Snapshot {
    /// The counters of the database at `path` now (zero before any file of it was opened
    /// through the shim).
    pub(super) fn now(path: &Path) -> Snapshot {
        let mut s = Snapshot::default();
        let c = counters(path);
        for (f, c) in s.0.iter_mut().zip(c.iter()) {
            *f = Figures {
                count: c[0].load(Relaxed),
                bytes: c[1].load(Relaxed),
                ns: c[2].load(Relaxed),
            };
        }
        s
    }
    /// What happened from `self` to `later`.
    pub(super) fn since(&self, later: &Snapshot) -> Snapshot {
        let mut d = Snapshot::default();
        for ((d, a), b) in d.0.iter_mut().zip(self.0.iter()).zip(later.0.iter()) {
            *d = Figures {
                count: b.count.saturating_sub(a.count),
                bytes: b.bytes.saturating_sub(a.bytes),
                ns: b.ns.saturating_sub(a.ns),
            };
        }
        d
    }
    fn get(&self, k: Kind, op: Op) -> Figures {
        self.0[k as usize * 3 + op as usize]
    }
    /// Syncs of the database file and its log together: the phase's fsyncs.
    pub(super) fn syncs(&self) -> u64 {
        self.get(Kind::Db, Op::Sync).count + self.get(Kind::Wal, Op::Sync).count
    }
    /// The figures as metrics, named like `pg`'s where it has the same figure
    /// (`db_read_latency_ms`, `db_read_bytes_per_io`, `wal_write_latency_ms`,
    /// `wal_sync_latency_ms`, `wal_bytes_per_write`).
    pub(super) fn add_metrics(&self, m: &mut std::collections::BTreeMap<String, f64>) {
        for (k, kname) in [(Kind::Db, "db"), (Kind::Wal, "wal")] {
            for (op, oname) in [(Op::Read, "read"), (Op::Write, "write"), (Op::Sync, "sync")] {
                let f = self.get(k, op);
                m.insert(format!("{kname}_{oname}s"), f.count as f64);
                if let Some(ms) = f.mean_ms() {
                    m.insert(format!("{kname}_{oname}_latency_ms"), ms);
                }
            }
        }
        let per = |k, op| self.get(k, op).bytes_per_op();
        for (name, v) in [
            ("db_read_bytes_per_io", per(Kind::Db, Op::Read)),
            ("db_write_bytes_per_io", per(Kind::Db, Op::Write)),
            ("wal_bytes_per_write", per(Kind::Wal, Op::Write)),
        ] {
            if let Some(v) = v {
                m.insert(name.into(), v);
            }
        }
    }
}

/// `[count, bytes, ns]` per (file, operation) of one database.
type Counters = [[AtomicU64; 3]; 6];

/// Every database's counters, by canonical path of its main file.
static REGISTRY: Mutex<Vec<(PathBuf, Arc<Counters>)>> = Mutex::new(Vec::new());

/// The counters of the database whose main file is `path` (or, for its WAL, `path-wal`).
fn counters(path: &Path) -> Arc<Counters> {
    let main = match path.to_str().and_then(|p| p.strip_suffix("-wal")) {
        Some(db) => Path::new(db),
        None => path,
    };
    let key = std::fs::canonicalize(main).unwrap_or_else(|_| main.to_path_buf());
    let mut reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, c)) = reg.iter().find(|(p, _)| *p == key) {
        return Arc::clone(c);
    }
    let c: Arc<Counters> = Arc::new([const { [const { AtomicU64::new(0) }; 3] }; 6]);
    reg.push((key, Arc::clone(&c)));
    c
}

fn record(file: *mut TimedFile, op: Op, bytes: u64, t: Instant) {
    // SAFETY: `file` is a live shim file; its counters pointer is null or an Arc it owns.
    let (kind, c) = unsafe { ((*file).kind, (*file).counters) };
    let (Ok(k), false) = (usize::try_from(kind), c.is_null()) else {
        return;
    };
    // SAFETY: see above: the Arc lives until the file is closed.
    let c = unsafe { &(*c)[k * 3 + op as usize] };
    c[0].fetch_add(1, Relaxed);
    c[1].fetch_add(bytes, Relaxed);
    c[2].fetch_add(t.elapsed().as_nanos() as u64, Relaxed);
}

/// Registers the shim once per process (not as the default VFS).
pub(super) fn register() -> Result<(), String> {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: sqlite3_vfs_find only reads SQLite's VFS list; a null name asks for the
        // default, which SQLite's own initialisation (called first) registers.
        let orig = unsafe {
            ffi::sqlite3_initialize();
            ffi::sqlite3_vfs_find(std::ptr::null())
        };
        if orig.is_null() {
            return;
        }
        // SAFETY: `orig` is a live VFS that SQLite never frees; we copy it by value and
        // replace what the shim changes. Every other method ignores which VFS struct it
        // is called with except for fields the copy keeps (mxPathname).
        let mut vfs: ffi::sqlite3_vfs = unsafe { *orig };
        vfs.zName = VFS_CNAME.as_ptr();
        vfs.pNext = std::ptr::null_mut();
        vfs.szOsFile = HEADER as c_int + unsafe { (*orig).szOsFile };
        vfs.xOpen = Some(x_open);
        ORIG.store(orig, Relaxed);
        let leaked: &'static mut ffi::sqlite3_vfs = Box::leak(Box::new(vfs));
        // SAFETY: the struct lives for the rest of the process, as SQLite requires.
        unsafe { ffi::sqlite3_vfs_register(leaked, 0) };
    });
    // SAFETY: a lookup by a valid NUL-terminated name.
    if unsafe { ffi::sqlite3_vfs_find(VFS_CNAME.as_ptr()) }.is_null() {
        return Err("SQLite has no default VFS to time".into());
    }
    Ok(())
}

static ORIG: AtomicPtr<ffi::sqlite3_vfs> = AtomicPtr::new(std::ptr::null_mut());

/// The shim's file: SQLite's base struct, the kind timed (-1: none), and the real file,
/// which lives in the same allocation right after this header.
#[repr(C)]
struct TimedFile {
    base: ffi::sqlite3_file,
    kind: c_int,
    real: *mut ffi::sqlite3_file,
    /// From `Arc::into_raw`, released at close; null for an untimed file.
    counters: *const Counters,
}

const HEADER: usize = std::mem::size_of::<TimedFile>().next_multiple_of(16);

unsafe extern "C" fn x_open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let orig = ORIG.load(Relaxed);
    let t = file.cast::<TimedFile>();
    let real = file.cast::<u8>().add(HEADER).cast::<ffi::sqlite3_file>();
    (*t).base.pMethods = std::ptr::null();
    (*t).real = real;
    (*t).kind = if flags & ffi::SQLITE_OPEN_MAIN_DB != 0 {
        Kind::Db as c_int
    } else if flags & ffi::SQLITE_OPEN_WAL != 0 {
        Kind::Wal as c_int
    } else {
        -1
    };
    (*t).counters = std::ptr::null();
    if (*t).kind >= 0 && !name.is_null() {
        use std::os::unix::ffi::OsStrExt;
        let p = std::ffi::OsStr::from_bytes(CStr::from_ptr(name).to_bytes());
        (*t).counters = Arc::into_raw(counters(Path::new(p)));
    }
    (*real).pMethods = std::ptr::null();
    let Some(open) = (*orig).xOpen else {
        return ffi::SQLITE_CANTOPEN;
    };
    // The real VFS gets its own struct: its open reads its own pAppData.
    let rc = open(orig, name, real, flags, out_flags);
    if !(*real).pMethods.is_null() {
        (*t).base.pMethods = &METHODS;
    } else {
        release(t);
    }
    rc
}

/// Drops the file's reference to its counters.
unsafe fn release(t: *mut TimedFile) {
    if !(*t).counters.is_null() {
        drop(Arc::from_raw((*t).counters));
        (*t).counters = std::ptr::null();
    }
}

/// The real file's methods.
unsafe fn real(
    f: *mut ffi::sqlite3_file,
) -> (
    *mut ffi::sqlite3_file,
    &'static ffi::sqlite3_io_methods,
    *mut TimedFile,
) {
    let t = f.cast::<TimedFile>();
    ((*t).real, &*(*(*t).real).pMethods, t)
}

macro_rules! forward {
    ($name:ident, $field:ident, ($($arg:ident : $ty:ty),*), $ret:ty, $missing:expr) => {
        unsafe extern "C" fn $name(f: *mut ffi::sqlite3_file $(, $arg: $ty)*) -> $ret {
            let (r, m, _) = real(f);
            match m.$field {
                Some(x) => x(r $(, $arg)*),
                None => $missing,
            }
        }
    };
}

unsafe extern "C" fn x_close(f: *mut ffi::sqlite3_file) -> c_int {
    let (r, m, _) = real(f);
    let rc = m.xClose.map_or(ffi::SQLITE_OK, |x| x(r));
    (*f).pMethods = std::ptr::null();
    release(f.cast());
    rc
}

unsafe extern "C" fn x_read(
    f: *mut ffi::sqlite3_file,
    buf: *mut c_void,
    amt: c_int,
    off: ffi::sqlite3_int64,
) -> c_int {
    let (r, m, tf) = real(f);
    let Some(x) = m.xRead else {
        return ffi::SQLITE_IOERR_READ;
    };
    let t = Instant::now();
    let rc = x(r, buf, amt, off);
    record(tf, Op::Read, amt.max(0) as u64, t);
    rc
}

unsafe extern "C" fn x_write(
    f: *mut ffi::sqlite3_file,
    buf: *const c_void,
    amt: c_int,
    off: ffi::sqlite3_int64,
) -> c_int {
    let (r, m, tf) = real(f);
    let Some(x) = m.xWrite else {
        return ffi::SQLITE_IOERR_WRITE;
    };
    let t = Instant::now();
    let rc = x(r, buf, amt, off);
    record(tf, Op::Write, amt.max(0) as u64, t);
    rc
}

unsafe extern "C" fn x_sync(f: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    let (r, m, tf) = real(f);
    let Some(x) = m.xSync else {
        return ffi::SQLITE_IOERR_FSYNC;
    };
    let t = Instant::now();
    let rc = x(r, flags);
    record(tf, Op::Sync, 0, t);
    rc
}

forward!(x_truncate, xTruncate, (size: ffi::sqlite3_int64), c_int, ffi::SQLITE_IOERR_TRUNCATE);
forward!(x_file_size, xFileSize, (size: *mut ffi::sqlite3_int64), c_int, ffi::SQLITE_IOERR_FSTAT);
forward!(x_lock, xLock, (l: c_int), c_int, ffi::SQLITE_IOERR_LOCK);
forward!(x_unlock, xUnlock, (l: c_int), c_int, ffi::SQLITE_IOERR_UNLOCK);
forward!(x_check_reserved, xCheckReservedLock, (out: *mut c_int), c_int, ffi::SQLITE_IOERR_CHECKRESERVEDLOCK);
forward!(x_file_control, xFileControl, (op: c_int, arg: *mut c_void), c_int, ffi::SQLITE_NOTFOUND);
forward!(x_sector_size, xSectorSize, (), c_int, 4096);
forward!(x_device_chars, xDeviceCharacteristics, (), c_int, 0);
forward!(x_shm_map, xShmMap, (pg: c_int, size: c_int, extend: c_int, out: *mut *mut c_void), c_int, ffi::SQLITE_IOERR_SHMMAP);
forward!(x_shm_lock, xShmLock, (off: c_int, n: c_int, flags: c_int), c_int, ffi::SQLITE_IOERR_SHMLOCK);
forward!(x_shm_unmap, xShmUnmap, (delete: c_int), c_int, ffi::SQLITE_OK);
forward!(x_fetch, xFetch, (off: ffi::sqlite3_int64, amt: c_int, out: *mut *mut c_void), c_int, {
    *out = std::ptr::null_mut();
    ffi::SQLITE_OK
});
forward!(x_unfetch, xUnfetch, (off: ffi::sqlite3_int64, p: *mut c_void), c_int, ffi::SQLITE_OK);

unsafe extern "C" fn x_shm_barrier(f: *mut ffi::sqlite3_file) {
    let (r, m, _) = real(f);
    if let Some(x) = m.xShmBarrier {
        x(r);
    }
}

static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
    xClose: Some(x_close),
    xRead: Some(x_read),
    xWrite: Some(x_write),
    xTruncate: Some(x_truncate),
    xSync: Some(x_sync),
    xFileSize: Some(x_file_size),
    xLock: Some(x_lock),
    xUnlock: Some(x_unlock),
    xCheckReservedLock: Some(x_check_reserved),
    xFileControl: Some(x_file_control),
    xSectorSize: Some(x_sector_size),
    xDeviceCharacteristics: Some(x_device_chars),
    xShmMap: Some(x_shm_map),
    xShmLock: Some(x_shm_lock),
    xShmBarrier: Some(x_shm_barrier),
    xShmUnmap: Some(x_shm_unmap),
    xFetch: Some(x_fetch),
    xUnfetch: Some(x_unfetch),
};

/// CPU nanoseconds the calling thread has used, for CPU per transaction.
pub(super) fn thread_cpu_ns() -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a pointer to a live local the kernel writes into.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return None;
    }
    Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

#[cfg(test)]
mod tests {
    use super::super::tests::Env;
    use super::super::Db;
    use crate::workload::contract::Workload;
    use crate::workload::harness::PlainHarness;
    use crate::workload::point::Point;

    /// The shim's per-file counts agree with what the kernel counted for the same threads:
    /// the workers write only the WAL, the checkpoint thread writes the database file.
    #[test]
    fn per_file_figures_match_the_kernels_count_of_the_same_writes() {
        let _alone = crate::workload::db::tests::sqlite_alone();
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let env = Env::new(
            "size = \"8m\"\npage_size = 4096\ncache_size = 32\nthreads = 2\nduration = 1\n\
             checkpoint_interval_ms = 200\ncache = \"off\"",
        );
        let out = Db
            .run(
                &env.ctx(dir.path()),
                &Point::default(),
                &mut PlainHarness::default(),
            )
            .unwrap();
        let m = &out.metrics;
        let f = |k: &str| *m.get(k).unwrap_or_else(|| panic!("no {k}: {m:?}"));
        for k in [
            "db_reads",
            "db_writes",
            "wal_writes",
            "wal_syncs",
            "db_read_latency_ms",
            "db_write_latency_ms",
            "wal_write_latency_ms",
            "wal_sync_latency_ms",
            "engine_cpu_ms_per_tx",
        ] {
            assert!(f(k) > 0.0, "{k}: {m:?}");
        }
        // SQLite reads whole pages of the database file (and its 100-byte header at open).
        assert!(f("db_read_bytes_per_io") > 1000.0 && f("db_read_bytes_per_io") <= 4096.0);
        let wal_shim = f("wal_writes") * f("wal_bytes_per_write");
        let db_shim = f("db_writes") * f("db_write_bytes_per_io");
        // /proc/thread-self/io counts the -shm file's 1-byte growth writes too: a few bytes.
        let close = |a: f64, b: f64| (a - b).abs() <= 0.01 * b + 4096.0;
        assert!(close(wal_shim, f("wal_bytes_written")), "{m:?}");
        assert!(close(db_shim, f("checkpoint_bytes_written")), "{m:?}");
    }
}
