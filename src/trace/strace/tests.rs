use super::*;

fn one(line: &str) -> Syscall {
    let mut joiner = Joiner::default();
    joiner
        .push(line)
        .unwrap_or_else(|| panic!("no call in {line}"))
}

#[test]
fn a_whole_line_gives_its_thread_time_arguments_result_and_duration() {
    let call = one(
        r#"28612 1795729658.035184 openat(AT_FDCWD</tmp/r/d>, "b.txt", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 3</tmp/r/d/b.txt> <0.000055>"#,
    );
    assert_eq!(call.tid, 28612);
    assert!((call.time - 1795729658.035184).abs() < 1e-6);
    assert_eq!(call.name, "openat");
    assert_eq!(call.args.len(), 4);
    let dir = call.args[0].fd().unwrap();
    assert_eq!((dir.num, dir.path.as_deref()), (AT_FDCWD, Some("/tmp/r/d")));
    assert_eq!(call.args[1].string().as_deref(), Some("b.txt"));
    assert_eq!(call.args[2].flags(), ["O_WRONLY", "O_CREAT", "O_TRUNC"]);
    assert_eq!(call.args[3].int(), Some(0o666));
    assert_eq!(call.ret, Ret::Value(3, Some("/tmp/r/d/b.txt".into())));
    assert!((call.dur - 0.000055).abs() < 1e-9);
}

#[test]
fn an_error_gives_the_errno_name() {
    let call = one(
        r#"7 1.5 newfstatat(AT_FDCWD</w>, "/root/go/bin/cat", 0x7ffe7bbfbe80, 0) = -1 ENOENT (No such file or directory) <0.000014>"#,
    );
    assert_eq!(call.ret, Ret::Err("ENOENT".into()));
    assert_eq!(call.args[1].string().as_deref(), Some("/root/go/bin/cat"));
}

#[test]
fn an_unfinished_call_is_joined_with_its_resumption_at_its_start_time() {
    let mut joiner = Joiner::default();
    assert!(joiner
        .push(r#"11 10.000001 read(3</t/a.txt>,  <unfinished ...>"#)
        .is_none());
    // Another thread's whole call in between is its own.
    let other = joiner
        .push(r#"12 10.000002 close(4</t/b>) = 0 <0.000003>"#)
        .unwrap();
    assert_eq!(other.tid, 12);
    let call = joiner
        .push(r#"11 10.000009 <... read resumed>""..., 4096) = 10 <0.000008>"#)
        .unwrap();
    assert_eq!((call.tid, call.name.as_str()), (11, "read"));
    assert!((call.time - 10.000001).abs() < 1e-9);
    assert_eq!(call.args.len(), 3);
    assert_eq!(call.args[0].fd().unwrap().path.as_deref(), Some("/t/a.txt"));
    assert_eq!(call.args[2].int(), Some(4096));
    assert_eq!(call.ret, Ret::Value(10, None));
}

#[test]
fn a_call_unfinished_before_any_argument_joins_too() {
    let mut joiner = Joiner::default();
    assert!(joiner.push("5 1.0 vfork( <unfinished ...>").is_none());
    let call = joiner
        .push("5 1.1 <... vfork resumed>) = 28613 <0.000724>")
        .unwrap();
    assert_eq!((call.name.as_str(), call.args.len()), ("vfork", 0));
    assert_eq!(call.ret, Ret::Value(28613, None));
}

#[test]
fn a_resumption_without_its_start_is_dropped() {
    let mut joiner = Joiner::default();
    assert!(joiner
        .push("5 1.1 <... execve resumed>) = 0 <0.000495>")
        .is_none());
}

#[test]
fn quoted_paths_and_annotations_lose_their_escapes() {
    let call = one(
        r#"1 2.0 openat(AT_FDCWD</d>, "../we<i>rd \"q\"\nx,y\\z\303\251", O_RDONLY) = 3</we\74i\76rd \"q\"\nx,y\\z\303\251> <0.00002>"#,
    );
    assert_eq!(call.args.len(), 3);
    let name = "we<i>rd \"q\"\nx,y\\zé";
    assert_eq!(call.args[1].string().unwrap(), format!("../{name}"));
    assert_eq!(call.ret, Ret::Value(3, Some(format!("/{name}"))));
}

#[test]
fn commas_inside_structs_arrays_and_paths_do_not_split_arguments() {
    let call = one(
        r#"3 4.0 newfstatat(3</a,b (c)>, "", {st_mode=S_IFREG|0644, st_size=5, ...}, AT_EMPTY_PATH) = 0 <0.000091>"#,
    );
    assert_eq!(call.args.len(), 4);
    assert_eq!(call.args[0].fd().unwrap().path.as_deref(), Some("/a,b (c)"));
    assert_eq!(call.args[1].string().as_deref(), Some(""));
    assert_eq!(call.args[3].0, "AT_EMPTY_PATH");
    let writev = one(
        r#"3 4.0 writev(3</x>, [{iov_base=""..., iov_len=10}, {iov_base=""..., iov_len=20}], 2) = 30 <0.1>"#,
    );
    assert_eq!(writev.args.len(), 3);
}

#[test]
fn struct_fields_offsets_and_deleted_files_are_read() {
    let call = one(
        r#"3 4.0 openat2(AT_FDCWD</d>, "f", {flags=O_RDWR|O_CREAT, mode=0600, resolve=0}, 24) = 4</d/f> <0.1>"#,
    );
    let how = &call.args[2];
    assert_eq!(how.field("flags").unwrap().flags(), ["O_RDWR", "O_CREAT"]);
    assert_eq!(how.field("mode").unwrap().int(), Some(0o600));
    let copy = one(
        r#"3 4.0 copy_file_range(3</d/a>, [0 => 4096], 4</d/b (deleted)>, NULL, 4096, 0) = 4096 <0.1>"#,
    );
    assert_eq!(copy.args[1].offset(), Some(0));
    assert_eq!(copy.args[3].offset(), None);
    assert_eq!(copy.args[2].fd().unwrap().path.as_deref(), Some("/d/b"));
}

#[test]
fn unknown_results_hex_results_and_other_lines() {
    let mut joiner = Joiner::default();
    let call = joiner
        .push("9 1.0 mmap(NULL, 8192, PROT_READ, MAP_PRIVATE, 3</d/lib.so>, 0) = 0x7f4d2f407000 <0.000018>")
        .unwrap();
    assert_eq!(call.ret, Ret::Value(0x7f4d2f407000, None));
    let call = joiner.push("9 1.0 exit_group(0) = ?").unwrap();
    assert_eq!(call.ret, Ret::Unknown);
    assert!(joiner.push("9 1.0 +++ exited with 0 +++").is_none());
    assert!(joiner
        .push("9 1.0 --- SIGCHLD {si_signo=SIGCHLD} ---")
        .is_none());
    assert_eq!(joiner.unreadable, 0);
    assert!(joiner.push("garbage").is_none());
    assert_eq!(joiner.unreadable, 1);
}

#[test]
fn sendfile_s_in_out_offset_gives_its_first_number() {
    // strace 6.1's form for sendfile: `[before] => [after]`.
    let call = one(
        r#"13926 1795912874.010431 sendfile(4</r/c>, 3</r/b>, [0] => [8192], 1099511627776) = 8192 <0.002221>"#,
    );
    assert_eq!(call.args[2].offset(), Some(0));
    assert_eq!(call.args[3].int(), Some(1 << 40));
    assert_eq!(call.ret, Ret::Value(8192, None));
}

#[test]
fn a_call_without_arguments_and_padded_before_its_result_is_read() {
    let call = one("13926 1795912873.970423 sync()          = 0 <0.039559>");
    assert_eq!((call.name.as_str(), call.args.len()), ("sync", 0));
    assert_eq!(call.ret, Ret::Value(0, None));
}
