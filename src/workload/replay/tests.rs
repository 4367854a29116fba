//! Unit tests of the replay's analysis: descriptors, waits between threads, the tree a
//! trace implies, and the comparison of results.

use super::deps::{waits, Wait};
use super::expect::{simulate, Expected};
use super::script::resolve;
use crate::trace::format::{Call, Initial, Kind, Op, Trace};

mod waits;

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
        data: None,
    }
}

fn trace(threads: u32, initial: Vec<Initial>, calls: Vec<Call>) -> Trace {
    Trace::new(vec!["test".into()], threads, 0.1, initial, calls)
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
