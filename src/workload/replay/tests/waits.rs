//! Unit tests of the waits between threads: which calls of one thread wait for which of
//! another's (the same file, the same directory, a sync, a process's end, the recorded
//! order of calls a millisecond or more apart).

use super::*;

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
