//! Unit tests of the replay's analysis: descriptors, waits between threads, the tree a
//! trace implies, and the comparison of results.

use super::deps::{waits, Wait};
use super::expect::{simulate, Expected};
use super::script::resolve;
use crate::trace::format::{Call, Initial, Kind, Op, Trace};

/// A call with nothing but its thread, operation and result set.
fn call(thread: u32, op: Op, syscall: &str, ret: i64) -> Call {
    Call {
        thread,
        start: 0.0,
        dur: 0.0,
        op,
        syscall: syscall.into(),
        path: None,
        path2: None,
        target: None,
        fd: None,
        source: None,
        flags: Vec::new(),
        mode: None,
        owner: None,
        size: None,
        offset: None,
        ret: Some(ret),
        err: None,
    }
}

fn open(thread: u32, path: &str, flags: &[&str], fd: i64) -> Call {
    Call {
        path: Some(path.into()),
        flags: flags.iter().map(|f| f.to_string()).collect(),
        ..call(thread, Op::Open, "openat", fd)
    }
}

fn on_fd(thread: u32, op: Op, syscall: &str, fd: i32, size: Option<u64>, ret: i64) -> Call {
    Call {
        fd: Some(fd),
        size,
        ..call(thread, op, syscall, ret)
    }
}

fn on_path(thread: u32, op: Op, syscall: &str, path: &str, path2: Option<&str>) -> Call {
    Call {
        path: Some(path.into()),
        path2: path2.map(str::to_string),
        ..call(thread, op, syscall, 0)
    }
}

fn failed(mut c: Call, err: &str) -> Call {
    c.ret = None;
    c.err = Some(err.into());
    c
}

fn initial(path: &str, kind: Kind, size: Option<u64>) -> Initial {
    Initial {
        path: path.into(),
        kind,
        size,
        target: None,
    }
}

fn trace(threads: u32, initial: Vec<Initial>, calls: Vec<Call>) -> Trace {
    Trace::new(vec!["test".into()], threads, 0.1, initial, calls)
}

/// Thread 0 creates and writes `f`; thread 1 opens and reads it afterwards.
fn writer_then_reader() -> Trace {
    trace(
        2,
        vec![],
        vec![
            open(0, "f", &["O_WRONLY", "O_CREAT", "O_TRUNC"], 3),
            on_fd(0, Op::Write, "write", 3, Some(100), 100),
            on_fd(0, Op::Close, "close", 3, None, 0),
            open(1, "f", &["O_RDONLY"], 3),
            on_fd(1, Op::Read, "read", 3, Some(4096), 100),
            on_fd(1, Op::Close, "close", 3, None, 0),
        ],
    )
}

#[test]
fn a_reader_waits_for_the_write_of_another_thread() {
    let t = writer_then_reader();
    let s = resolve(&t);
    assert_eq!(
        s.slot,
        vec![Some(0), Some(0), Some(0), Some(1), Some(1), Some(1)]
    );
    let w = waits(&s);
    let after_write = vec![Wait { thread: 0, pos: 1 }];
    assert_eq!(w[3], after_write, "the open waits for the write");
    assert_eq!(w[4], after_write, "so does the read");
    assert!(
        w[..3].iter().all(|w| w.is_empty()),
        "thread 0 waits for no one"
    );
}

#[test]
fn readers_do_not_wait_for_each_other_and_a_change_waits_for_readers() {
    let t = trace(
        2,
        vec![initial("d", Kind::Dir, None)],
        vec![
            on_path(0, Op::Stat, "stat", "d/x", None),
            on_path(1, Op::Stat, "stat", "d/x", None),
            open(1, "d/x", &["O_WRONLY", "O_CREAT"], 4),
            on_path(0, Op::Stat, "stat", "d/y", None),
            on_path(0, Op::Rename, "rename", "d", Some("e")),
            on_path(1, Op::Stat, "stat", "e/x", None),
        ],
    );
    let w = waits(&resolve(&t));
    assert!(w[1].is_empty(), "two stats of one path run side by side");
    assert_eq!(
        w[2],
        vec![Wait { thread: 0, pos: 0 }],
        "a creation waits for the lookup"
    );
    assert_eq!(
        w[3],
        vec![Wait { thread: 1, pos: 1 }],
        "a lookup in d waits for its new entry"
    );
    assert_eq!(
        w[4],
        vec![Wait { thread: 1, pos: 1 }],
        "the rename waits for d's readers"
    );
    assert_eq!(
        w[5],
        vec![Wait { thread: 0, pos: 2 }],
        "e/x waits for the rename"
    );
}

#[test]
fn descriptors_resolve_to_their_open_and_unknown_ones_are_skipped() {
    let t = trace(
        2,
        vec![initial("a", Kind::File, Some(10))],
        vec![
            open(0, "a", &["O_RDONLY"], 5),
            // Thread 1 (a child) reads the descriptor thread 0 opened.
            on_fd(1, Op::Read, "read", 5, Some(10), 10),
            on_fd(0, Op::Read, "read", 0, Some(10), 3), // stdin
            on_fd(0, Op::Close, "close", 5, None, 0),
            // The parent closed its copy, the child's is still open.
            on_fd(1, Op::Read, "read", 5, Some(10), 10),
            on_fd(1, Op::Read, "read", 6, Some(10), 10), // no open made it
        ],
    );
    let s = resolve(&t);
    assert_eq!(s.slot[1], Some(0));
    assert_eq!(s.slot[4], Some(0));
    assert_eq!(s.skipped, vec![2, 5]);
}

/// `dd of=out.bin`: open as 3, `dup2(3, 1)`, close 3, write to 1, close 1. Descriptor 1
/// names the open's slot; closing 3 leaves it open, closing 1 closes it.
#[test]
fn a_dup_names_the_same_open_file_until_its_last_name_is_closed() {
    let t = trace(
        1,
        vec![],
        vec![
            open(0, "out.bin", &["O_WRONLY", "O_CREAT"], 3),
            on_fd(0, Op::Dup, "dup2", 3, None, 1),
            on_fd(0, Op::Close, "close", 3, None, 0),
            on_fd(0, Op::Write, "write", 1, Some(4096), 4096),
            on_fd(0, Op::Close, "close", 1, None, 0),
        ],
    );
    let s = resolve(&t);
    assert_eq!(s.slot, vec![Some(0); 5]);
    assert!(s.skipped.is_empty());
    assert_eq!(s.keeps_open, [2].into_iter().collect());
    assert_eq!(
        simulate(&t, &s).expected().get("out.bin"),
        Some(&Expected::File { size: 4096 })
    );
}

#[test]
fn the_expected_tree_follows_every_recorded_success() {
    let t = trace(
        1,
        vec![
            initial("a", Kind::File, Some(10)),
            initial("d", Kind::Dir, None),
        ],
        vec![
            open(0, "a", &["O_WRONLY", "O_APPEND"], 3),
            on_fd(0, Op::Write, "write", 3, Some(5), 5),
            open(0, "b", &["O_WRONLY", "O_CREAT", "O_TRUNC"], 4),
            Call {
                offset: Some(100),
                ..on_fd(0, Op::Write, "pwrite64", 4, Some(10), 10)
            },
            on_path(0, Op::Rename, "rename", "b", Some("d/c")),
            on_path(0, Op::Link, "link", "a", Some("d/h")),
            on_fd(0, Op::Write, "write", 3, Some(5), 5),
            Call {
                target: Some("a".into()),
                ..on_path(0, Op::Symlink, "symlink", "s", None)
            },
            Call {
                size: Some(7),
                ..on_path(0, Op::Truncate, "truncate", "d/c", None)
            },
            on_path(0, Op::Unlink, "unlink", "a", None),
            on_path(0, Op::Mkdir, "mkdir", "e", None),
            on_path(0, Op::Rmdir, "rmdir", "e", None),
            failed(on_path(0, Op::Mkdir, "mkdir", "d", None), "EEXIST"),
            failed(open(0, "gone", &["O_RDONLY"], 0), "ENOENT"),
            Call {
                offset: Some(0),
                mode: Some(1), // FALLOC_FL_KEEP_SIZE
                ..on_fd(0, Op::Fallocate, "fallocate", 4, Some(1 << 20), 0)
            },
            Call {
                offset: Some(0),
                ..on_fd(0, Op::Fallocate, "fallocate", 4, Some(50), 0)
            },
        ],
    );
    let got = simulate(&t, &resolve(&t)).expected();
    let want: Vec<(&str, Expected)> = vec![
        ("d", Expected::Dir),
        ("d/c", Expected::File { size: 50 }),
        ("d/h", Expected::File { size: 20 }),
        ("s", Expected::Symlink { target: "a".into() }),
    ];
    let want: std::collections::BTreeMap<String, Expected> =
        want.into_iter().map(|(p, e)| (p.to_string(), e)).collect();
    assert_eq!(got, want);
}

#[test]
fn a_result_is_the_same_only_with_the_recorded_errno_or_byte_count() {
    use super::check::same;
    let read = on_fd(0, Op::Read, "read", 3, Some(4096), 100);
    assert!(same(&read, &Ok(100)));
    assert!(!same(&read, &Ok(0)), "a read that found nothing diverged");
    assert!(!same(&read, &Err(libc::EBADF)));
    let missing = failed(open(0, "x", &["O_RDONLY"], 0), "ENOENT");
    assert!(same(&missing, &Err(libc::ENOENT)));
    assert!(!same(&missing, &Err(libc::EACCES)));
    assert!(!same(&missing, &Ok(7)));
    assert!(
        same(&open(0, "x", &["O_RDONLY"], 3), &Ok(9)),
        "descriptor numbers are the replay's own"
    );
}

#[test]
fn symlinks_out_of_the_root_are_refused() {
    use super::options::check_symlinks;
    let link = |path: &str, target: &str| Call {
        target: Some(target.into()),
        ..on_path(0, Op::Symlink, "symlink", path, None)
    };
    for (path, target, fine) in [
        ("a/l", "../x", true),
        ("a/l", "b/../../x", true),
        ("a/l", "../../x", false),
        ("l", "/etc/passwd", false),
        ("a/b/l", "../c/../../y", true),
    ] {
        let through = on_path(0, Op::Stat, "newfstatat", &format!("{path}/f"), None);
        let t = trace(1, vec![], vec![link(path, target), through]);
        assert_eq!(check_symlinks(&t).is_ok(), fine, "{path} -> {target}");
    }
}

/// `tar xf` of a tree with absolute symlinks (Debian's /usr/include has 31) was refused at
/// replay though no call of the trace goes through them: making a link only stores its text.
#[test]
fn an_escaping_symlink_no_call_follows_replays() {
    use super::options::check_symlinks;
    let link = Call {
        target: Some("/etc/alternatives/mpi".into()),
        ..on_path(0, Op::Symlink, "symlinkat", "inc/mpi", None)
    };
    let beside = on_path(0, Op::Stat, "newfstatat", "inc/mpi.h", None);
    let own = Call {
        flags: vec!["AT_SYMLINK_NOFOLLOW".into()],
        ..on_path(0, Op::Stat, "newfstatat", "inc/mpi", None)
    };
    let gone = on_path(0, Op::Unlink, "unlinkat", "inc/mpi", None);
    let t = trace(1, vec![], vec![link.clone(), beside, own, gone]);
    assert!(check_symlinks(&t).is_ok());
    for (follows, what) in [
        (on_path(0, Op::Stat, "newfstatat", "inc/mpi", None), "stat"),
        (on_path(0, Op::Open, "openat", "inc/mpi/x.h", None), "under"),
        (on_path(0, Op::Stat, "stat", "inc/../inc/mpi", None), "dots"),
        (
            on_path(0, Op::Rename, "rename", "inc", Some("elsewhere")),
            "moved",
        ),
    ] {
        let t = trace(1, vec![], vec![link.clone(), follows]);
        let err = check_symlinks(&t).expect_err(what);
        assert!(
            err.contains("inc/mpi") && err.contains("outside"),
            "{what}: {err}"
        );
    }
}

#[test]
fn a_read_or_write_moves_what_it_returned_not_what_it_asked() {
    use super::call::issued_len;
    // cp's copy_file_range as main's record wrote it: 2^62 asked, 8192 copied.
    let copy = on_fd(0, Op::Write, "copy_file_range", 4, Some(1 << 62), 8192);
    assert_eq!(issued_len(&copy), 8192);
    // A read at the end of a file asks for a block around what it got, never more than
    // it asked; one that got nothing still asks (and finds the end).
    let read = |asked, got| issued_len(&on_fd(0, Op::Read, "read", 3, Some(asked), got));
    assert_eq!(read(1 << 40, 12), 4096);
    assert_eq!(read(131_072, 0), 4096);
    assert_eq!(read(100, 50), 100);
    assert_eq!(read(1 << 20, 8192), 8192);
    let failed_write = failed(on_fd(0, Op::Write, "write", 3, Some(1 << 50), 0), "EBADF");
    assert_eq!(issued_len(&failed_write), 4096);
}

#[test]
fn a_sync_waits_for_every_earlier_call_of_the_other_threads() {
    let t = trace(
        3,
        vec![],
        vec![
            open(0, "a", &["O_WRONLY", "O_CREAT"], 3),
            on_fd(0, Op::Write, "write", 3, Some(10), 10),
            open(1, "b", &["O_WRONLY", "O_CREAT"], 3),
            call(2, Op::Sync, "sync", 0),
            on_fd(1, Op::Write, "write", 3, Some(10), 10),
        ],
    );
    let script = resolve(&t);
    let w = waits(&script);
    assert_eq!(
        w[3],
        [Wait { thread: 0, pos: 1 }, Wait { thread: 1, pos: 0 }]
    );
    // A lock is an ordering point: the next call on its file waits for it.
    let t = trace(
        2,
        vec![],
        vec![
            open(0, "db", &["O_RDWR"], 3),
            on_fd(0, Op::Lock, "flock", 3, None, 0),
            open(1, "db", &["O_RDWR"], 3),
            on_fd(1, Op::Lock, "flock", 3, None, 0),
        ],
    );
    let script = resolve(&t);
    assert_eq!(waits(&script)[3], [Wait { thread: 0, pos: 1 }]);
}

#[test]
fn rename_exchange_swaps_and_whiteout_leaves_a_node() {
    let mut exchange = on_path(0, Op::Rename, "renameat2", "a", Some("d/b"));
    exchange.flags = vec!["RENAME_EXCHANGE".into()];
    let mut whiteout = on_path(0, Op::Rename, "renameat2", "c", Some("e"));
    whiteout.flags = vec!["RENAME_WHITEOUT".into()];
    let t = trace(
        1,
        vec![
            initial("a", Kind::File, Some(1)),
            initial("d", Kind::Dir, None),
            initial("d/b", Kind::File, Some(2)),
            initial("c", Kind::File, Some(3)),
        ],
        vec![exchange, whiteout],
    );
    let e = simulate(&t, &resolve(&t)).expected();
    assert_eq!(e["a"], Expected::File { size: 2 });
    assert_eq!(e["d/b"], Expected::File { size: 1 });
    assert_eq!(e["e"], Expected::File { size: 3 });
    assert_eq!(e["c"], Expected::File { size: 0 });
}

#[test]
fn an_attribute_get_or_remove_takes_success_or_enodata_alike() {
    use super::check::same;
    let get = on_path(0, Op::Getxattr, "getxattr", "a", None);
    assert!(same(&get, &Ok(5)));
    assert!(same(&get, &Err(libc::ENODATA)));
    assert!(!same(&get, &Err(libc::ENOENT)));
    let missing = failed(get.clone(), "ENODATA");
    assert!(same(&missing, &Ok(12)));
    // A set the target's file system refuses as not kept (exFAT) is the program's own
    // refusal there (`check::not_kept`); any other failure is a divergence.
    let set = on_path(0, Op::Setxattr, "setxattr", "a", None);
    assert!(same(&set, &Err(libc::EOPNOTSUPP)));
    assert!(!same(&set, &Err(libc::ENOENT)));
    let chown = Call {
        owner: Some([1000, 1000]),
        ..on_path(0, Op::Setattr, "fchownat", "a", None)
    };
    assert!(same(&chown, &Err(libc::EPERM)));
    let chmod = on_path(0, Op::Setattr, "fchmodat", "a", None);
    assert!(!same(&chmod, &Err(libc::EPERM)));
}

/// Defect (#56): the tree a trace implies ignored lseek, so `make` of a C project was called
/// diverged at its end ("the trace implies a file of 49998 bytes, the target holds 36200"):
/// GNU as writes its object file, seeks back and rewrites parts of it, and the simulation
/// kept appending where the last write had ended. The calls are the assembler's own (strace of
/// `gcc -c`, `m0.o`): a seek past the end, a write there, a seek back to the header's end.
#[test]
fn the_expected_tree_follows_a_seek_back_as_the_assembler_makes_it() {
    let seek = |to: i64, whence: &str| Call {
        flags: vec![whence.into()],
        ..on_fd(0, Op::Seek, "lseek", 3, None, to)
    };
    let t = trace(
        1,
        vec![],
        vec![
            open(0, "m0.o", &["O_RDWR", "O_CREAT", "O_TRUNC"], 3),
            seek(20480, "SEEK_SET"),
            on_fd(0, Op::Read, "read", 3, Some(1024), 0),
            seek(21504, "SEEK_CUR"),
            on_fd(0, Op::Write, "write", 3, Some(362), 362),
            seek(0, "SEEK_SET"),
            on_fd(0, Op::Read, "read", 3, Some(4096), 4096),
            seek(64, "SEEK_CUR"),
            on_fd(0, Op::Write, "write", 3, Some(4032), 4032),
            seek(0, "SEEK_SET"),
            on_fd(0, Op::Write, "write", 3, Some(64), 64),
        ],
    );
    assert_eq!(
        simulate(&t, &resolve(&t)).expected().get("m0.o"),
        Some(&Expected::File { size: 21504 + 362 })
    );
}

/// Defect (#56): `dpkg --unpack` did not replay (EBADF): `dpkg-deb` opens the package as
/// descriptor 3 and forks `tar`-like children that read it; the parent closed its copy while
/// a child went on reading its own, and the replay, taking the parent's close for the file's
/// last, closed the one file both used (or, later, skipped the child's reads). The calls are
/// the recorded ones (threads 5 and 6 of the corpus's trace, calls 124-136).
#[test]
fn a_descriptor_a_child_inherited_outlives_its_parent_s_close() {
    let t = trace(
        2,
        vec![initial("headers.deb", Kind::File, Some(1 << 20))],
        vec![
            open(0, "headers.deb", &["O_RDONLY"], 3),
            on_fd(0, Op::Read, "read", 3, Some(60), 60),
            on_fd(1, Op::Read, "read", 3, Some(32768), 32768),
            on_fd(0, Op::Close, "close", 3, None, 0),
            on_fd(1, Op::Read, "read", 3, Some(32768), 32768),
            on_fd(1, Op::Read, "read", 3, Some(32768), 32768),
        ],
    );
    let s = resolve(&t);
    assert_eq!(s.slot, vec![Some(0); 6]);
    assert!(s.skipped.is_empty());
    assert_eq!(s.keeps_open, [3].into_iter().collect());
    // The child's first read waits for the parent's open (the fast replay had it read a
    // descriptor not yet opened: EBADF).
    assert_eq!(waits(&s)[2], [Wait { thread: 0, pos: 0 }]);
}

/// Threads of one process share their descriptors: after one closes a number and opens
/// another file under it, a thread that used the first file through that number reaches the
/// second, not the one it inherited.
#[test]
fn a_number_opened_again_names_the_new_file_for_every_thread() {
    let t = trace(
        2,
        vec![],
        vec![
            open(0, "a", &["O_RDONLY"], 3),
            on_fd(1, Op::Read, "read", 3, Some(10), 10),
            on_fd(0, Op::Close, "close", 3, None, 0),
            open(0, "b", &["O_RDONLY"], 3),
            on_fd(1, Op::Read, "read", 3, Some(10), 10),
        ],
    );
    let s = resolve(&t);
    assert_eq!(s.slot, vec![Some(0), Some(0), Some(0), Some(1), Some(1)]);
}

/// The root's own calls (issue 56: SQLite's sync of the directory holding its database)
/// replay on the root: a sync of it waits for the names another thread made in it, and it
/// adds nothing to the tree the replay must leave.
#[test]
fn a_sync_of_the_root_waits_for_the_names_made_in_it() {
    use crate::trace::format::ROOT;
    let t = trace(
        2,
        vec![],
        vec![
            open(0, "db-journal", &["O_RDWR", "O_CREAT"], 3),
            open(1, ROOT, &["O_RDONLY"], 4),
            on_fd(1, Op::Fdatasync, "fdatasync", 4, None, 0),
            on_fd(1, Op::Close, "close", 4, None, 0),
        ],
    );
    let s = resolve(&t);
    assert_eq!(s.slot_path, ["db-journal", ROOT]);
    let w = waits(&s);
    assert_eq!(w[1], [Wait { thread: 0, pos: 0 }]);
    let names: Vec<String> = simulate(&t, &s).expected().into_keys().collect();
    assert_eq!(names, ["db-journal"]);
}

/// Defect (issue 56): `sh -c "git clone … && cd work && echo … >> f && git commit -a"`
/// replayed the commit while the clone was still writing (on ntfs the commit's first calls
/// came 0.16 s before the clone's last): the shell's wait for the clone is no file call, and
/// the commit's first calls touch nothing the clone changed last. A thread's call that
/// started after another thread's last call ended waits for it; threads that overlapped do
/// not.
#[test]
fn a_process_that_started_after_another_ended_waits_for_its_end() {
    let at = |c: Call, start: f64| Call {
        start,
        dur: 0.001,
        ..c
    };
    let t = trace(
        3,
        vec![],
        vec![
            at(on_path(0, Op::Mkdir, "mkdir", "clone", None), 0.0),
            at(on_path(2, Op::Stat, "newfstatat", "other", None), 0.0005),
            at(on_path(0, Op::Mkdir, "mkdir", "clone/last", None), 0.0012),
            at(on_path(2, Op::Stat, "newfstatat", "other", None), 0.0018),
            at(on_path(1, Op::Stat, "newfstatat", "config", None), 2.0),
            at(on_path(1, Op::Stat, "newfstatat", "config", None), 2.1),
        ],
    );
    let w = waits(&resolve(&t));
    // The commit's first call waits for the clone's and the other thread's ends.
    assert_eq!(
        w[4],
        [Wait { thread: 0, pos: 1 }, Wait { thread: 2, pos: 1 }]
    );
    assert!(w[5].is_empty(), "its next call follows it in its own order");
    // Threads 0 and 2 overlapped, their calls under a millisecond apart: neither waits for
    // the other.
    assert!(w[..4].iter().all(|w| w.is_empty()), "{w:?}");
}

/// A copy between two files is one call in the replay; a copy with a pipe end (only its
/// file's half recorded), or one whose source no recorded open made, stays a plain read or
/// write, and so do a read and a write of other calls side by side.
#[test]
fn only_a_copy_between_two_recorded_files_is_paired() {
    use super::script::copies;
    let t = trace(
        1,
        vec![initial("a", Kind::File, Some(100))],
        vec![
            open(0, "a", &["O_RDONLY"], 3),
            open(0, "b", &["O_WRONLY", "O_CREAT"], 4),
            on_fd(0, Op::Read, "copy_file_range", 3, Some(100), 100),
            on_fd(0, Op::Write, "copy_file_range", 4, Some(100), 100),
            // splice from a pipe: only the file's end.
            on_fd(0, Op::Write, "splice", 4, Some(10), 10),
            // stdin's descriptor: no recorded open made it.
            on_fd(0, Op::Read, "sendfile", 0, Some(10), 10),
            on_fd(0, Op::Write, "sendfile", 4, Some(10), 10),
            on_fd(0, Op::Read, "read", 3, Some(10), 0),
            on_fd(0, Op::Write, "write", 4, Some(10), 10),
        ],
    );
    let script = resolve(&t);
    let pairs: Vec<(usize, usize)> = copies(&script).into_iter().collect();
    assert_eq!(pairs, vec![(2, 3)]);
}

/// Defect (issue 56): rsync's receiver writes a file only after its sender has read it and
/// sent it over their socket, which no file call shows. Its replay's receiver waited for
/// nothing of the sender's and ran up to 91-125 files ahead of it, where the program's is
/// never ahead. A call now waits for what other threads had finished a
/// millisecond or more before it started, as recorded; calls closer than that do not.
#[test]
fn rsync_s_receiver_does_not_run_ahead_of_its_sender() {
    let at = |c: Call, start: f64| Call {
        start,
        dur: 0.0001,
        ..c
    };
    // From rsync -a src/ dst/ recorded: the sender (0) reads src/a and src/b; the receiver
    // (1) creates dst/.a.X 0.6 ms after the read of src/a, dst/.b.X 2 ms after that of b.
    let t = trace(
        2,
        vec![
            initial("src/a", Kind::File, Some(10)),
            initial("src/b", Kind::File, Some(10)),
            initial("dst", Kind::Dir, None),
        ],
        vec![
            at(open(0, "src/a", &["O_RDONLY"], 3), 0.0),
            at(on_fd(0, Op::Read, "read", 3, Some(10), 10), 0.0002),
            at(on_fd(0, Op::Close, "close", 3, None, 0), 0.0004),
            at(
                open(1, "dst/.a.X", &["O_RDWR", "O_CREAT", "O_EXCL"], 3),
                0.0010,
            ),
            at(open(0, "src/b", &["O_RDONLY"], 3), 0.0020),
            at(on_fd(0, Op::Read, "read", 3, Some(10), 10), 0.0030),
            at(on_fd(0, Op::Close, "close", 3, None, 0), 0.0032),
            at(
                open(1, "dst/.b.X", &["O_RDWR", "O_CREAT", "O_EXCL"], 3),
                0.0060,
            ),
        ],
    );
    let w = waits(&resolve(&t));
    assert!(
        w[3].is_empty(),
        "0.6 ms after the read: too close to order, {w:?}"
    );
    // Everything the sender had done by 5 ms: its read of src/b and the close after it.
    assert_eq!(w[7], [Wait { thread: 0, pos: 5 }], "{w:?}");
    // Both ways: the sender's read of b, 1.9 ms after the receiver's create, waits for it.
    assert_eq!(w[5], [Wait { thread: 1, pos: 0 }], "{w:?}");
    assert!(w[..3].iter().all(|w| w.is_empty()), "{w:?}");
    assert!(w[4].is_empty() && w[6].is_empty(), "{w:?}");
}
