use super::*;
use crate::trace::strace::Joiner;

/// The converter after `lines`, recorded with root `/r` and the command started in `/r`.
fn convert(lines: &[&str]) -> Converter {
    let mut joiner = Joiner::default();
    let mut converter = Converter::new("/r", "/r");
    for line in lines {
        if let Some(call) = joiner.push(line) {
            converter.push(&call);
        }
    }
    assert_eq!(joiner.unreadable, 0);
    converter
}

fn calls(c: &Converter) -> Vec<&Call> {
    c.calls.iter().map(|(_, call)| call).collect()
}

#[test]
fn an_open_write_close_under_the_root_is_kept_relative() {
    let c = convert(&[
        r#"10 1.0 openat(AT_FDCWD</r/d>, "b.txt", O_WRONLY|O_CREAT|O_TRUNC, 0644) = 3</r/d/b.txt> <0.00005>"#,
        r#"10 1.1 write(3</r/d/b.txt>, ""..., 5) = 5 <0.00001>"#,
        r#"10 1.2 close(3</r/d/b.txt>) = 0 <0.00001>"#,
    ]);
    let got = calls(&c);
    assert_eq!(got.len(), 3);
    assert_eq!(got[0].op, Op::Open);
    assert_eq!(got[0].path.as_deref(), Some("d/b.txt"));
    assert_eq!(got[0].flags, ["O_WRONLY", "O_CREAT", "O_TRUNC"]);
    assert_eq!((got[0].mode, got[0].ret), (Some(0o644), Some(3)));
    assert_eq!(
        (got[1].op, got[1].fd, got[1].size, got[1].ret),
        (Op::Write, Some(3), Some(5), Some(5))
    );
    assert_eq!(
        (got[2].op, got[2].fd, got[2].path.as_deref()),
        (Op::Close, Some(3), None)
    );
    assert!(c.used.contains("d/b.txt"));
    assert_eq!(c.threads(), 1);
}

#[test]
fn calls_outside_the_root_are_counted_not_kept() {
    let c = convert(&[
        r#"10 1.0 openat(AT_FDCWD</r>, "/etc/ld.so.cache", O_RDONLY|O_CLOEXEC) = 3</etc/ld.so.cache> <0.00005>"#,
        r#"10 1.1 read(3</etc/ld.so.cache>, ""..., 832) = 832 <0.00001>"#,
        r#"10 1.2 newfstatat(AT_FDCWD</r>, "../rx/y", 0x7ffe, 0) = -1 ENOENT (No such file or directory) <0.00001>"#,
        r#"10 1.3 write(1<pipe:[1234]>, ""..., 5) = 5 <0.00001>"#,
        r#"10 1.4 openat(AT_FDCWD</r>, ".", O_RDONLY|O_DIRECTORY) = 4</r> <0.00001>"#,
        r#"10 1.5 mmap(NULL, 8192, PROT_READ, MAP_PRIVATE, 5</r/lib.so>, 0) = 0x7f00 <0.00001>"#,
        r#"10 1.6 mmap(NULL, 8192, PROT_READ, MAP_PRIVATE, 3</etc/ld.so.cache>, 0) = 0x7f00 <0.00001>"#,
    ]);
    assert!(c.calls.is_empty());
    let counts = Counts {
        outside_root: 3,
        on_root: 1,
        not_files: 1,
        no_result: 0,
        file_mmaps: 1,
    };
    assert_eq!(c.counts, counts);
    assert_eq!(c.threads(), 0);
}

#[test]
fn at_calls_resolve_against_their_directory_and_errors_keep_their_name() {
    let c = convert(&[
        r#"10 1.0 mkdirat(AT_FDCWD</r>, "e", 0777) = 0 <0.00001>"#,
        r#"10 1.1 renameat2(AT_FDCWD</r/d>, "b.txt", 3</r/e>, "b.txt", RENAME_NOREPLACE) = 0 <0.00004>"#,
        r#"10 1.2 unlinkat(AT_FDCWD</r>, "e", AT_REMOVEDIR) = -1 ENOTEMPTY (Directory not empty) <0.00001>"#,
        r#"10 1.3 symlinkat("a.txt", AT_FDCWD</r/d>, "sl") = 0 <0.00006>"#,
        r#"10 1.4 newfstatat(4</r/d/a.txt>, "", {st_mode=S_IFREG|0644, st_size=5, ...}, AT_EMPTY_PATH) = 0 <0.00001>"#,
        r#"10 1.5 statx(AT_FDCWD</r>, "d/../d/a.txt", AT_STATX_SYNC_AS_STAT, STATX_ALL, 0x7ffe) = 0 <0.00001>"#,
    ]);
    let got = calls(&c);
    assert_eq!(
        (got[0].op, got[0].path.as_deref(), got[0].mode),
        (Op::Mkdir, Some("e"), Some(0o777))
    );
    assert_eq!(got[1].op, Op::Rename);
    assert_eq!(
        (got[1].path.as_deref(), got[1].path2.as_deref()),
        (Some("d/b.txt"), Some("e/b.txt"))
    );
    assert_eq!(
        (got[2].op, got[2].err.as_deref(), got[2].ret),
        (Op::Rmdir, Some("ENOTEMPTY"), None)
    );
    assert_eq!(
        (got[3].op, got[3].path.as_deref(), got[3].target.as_deref()),
        (Op::Symlink, Some("d/sl"), Some("a.txt"))
    );
    assert_eq!(
        (got[4].op, got[4].fd, got[4].path.as_deref()),
        (Op::Stat, Some(4), None)
    );
    assert_eq!(got[5].path.as_deref(), Some("d/a.txt"));
}

#[test]
fn chdir_forks_threads_and_dups_follow_the_kernel() {
    let c = convert(&[
        r#"10 1.0 chdir("sub") = 0 <0.00001>"#,
        r#"10 1.1 openat(AT_FDCWD, "f", O_RDONLY) = 3 <0.00001>"#,
        r#"10 1.2 dup2(3, 7) = 7 <0.00001>"#,
        r#"10 1.3 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|SIGCHLD, child_tidptr=0x7f) = 11 <0.00001>"#,
        r#"10 1.4 clone3({flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_THREAD, exit_signal=0}, 88) = 12 <0.00001>"#,
        r#"11 1.5 read(7, ""..., 10) = 10 <0.00001>"#,
        r#"12 1.6 newfstatat(AT_FDCWD, "g", 0x7ffe, 0) = 0 <0.00001>"#,
        r#"11 1.7 chdir("/r") = 0 <0.00001>"#,
        r#"12 1.8 newfstatat(AT_FDCWD, "h", 0x7ffe, 0) = 0 <0.00001>"#,
    ]);
    let got = calls(&c);
    assert_eq!(got[0].path.as_deref(), Some("sub/f"));
    // The dup is kept (a replay learns that 7 names what 3 does).
    assert_eq!(
        (got[1].op, got[1].fd, got[1].ret),
        (Op::Dup, Some(3), Some(7))
    );
    // The fork's read of the dup'd descriptor is of sub/f; the thread shares /r/sub.
    assert_eq!((got[2].thread, got[2].fd), (1, Some(7)));
    assert!(c.used.contains("sub/f"));
    assert_eq!((got[3].thread, got[3].path.as_deref()), (2, Some("sub/g")));
    assert_eq!(got[4].path.as_deref(), Some("sub/h"));
    assert_eq!(c.threads(), 3);
}

#[test]
fn vector_positional_and_copy_calls_carry_sizes_and_offsets() {
    let c = convert(&[
        r#"10 1.0 pwrite64(3</r/f>, ""..., 4096, 8192) = 4096 <0.00001>"#,
        r#"10 1.1 writev(3</r/f>, [...], 2) = 30 <0.00001>"#,
        r#"10 1.2 copy_file_range(3</r/f>, [0 => 100], 4</r/g>, NULL, 100, 0) = 100 <0.00001>"#,
        r#"10 1.3 fallocate(3</r/f>, FALLOC_FL_KEEP_SIZE|FALLOC_FL_PUNCH_HOLE, 0, 4096) = 0 <0.00001>"#,
        r#"10 1.4 getdents64(5</r/d>, 0x5622 /* 6 entries */, 32768) = 168 <0.00001>"#,
        r#"10 1.5 read(3</r/f>,  <unfinished ...>"#,
        r#"10 1.6 <... read resumed>"", 10) = ?"#,
    ]);
    let got = calls(&c);
    assert_eq!((got[0].size, got[0].offset), (Some(4096), Some(8192)));
    assert_eq!((got[1].size, got[1].offset), (Some(30), None));
    assert_eq!(
        (got[2].op, got[2].fd, got[2].offset),
        (Op::Read, Some(3), Some(0))
    );
    assert_eq!(
        (got[3].op, got[3].fd, got[3].size),
        (Op::Write, Some(4), Some(100))
    );
    assert_eq!(
        (got[4].mode, got[4].size, got[4].offset),
        (Some(3), Some(4096), Some(0))
    );
    assert_eq!(
        (got[5].op, got[5].size, got[5].ret),
        (Op::Getdents, Some(32768), Some(168))
    );
    assert!(c.listed.contains("d"));
    assert_eq!(got.len(), 6);
    assert_eq!(c.counts.no_result, 1);
}
