use super::*;

fn sample() -> Trace {
    let call = Call {
        thread: 0,
        start: 0.0,
        dur: 0.00001,
        op: Op::Open,
        syscall: "openat".into(),
        path: Some("src/a.c".into()),
        path2: None,
        target: None,
        fd: None,
        source: None,
        flags: vec!["O_RDONLY".into()],
        mode: None,
        owner: None,
        size: None,
        offset: None,
        ret: Some(3),
        err: None,
    };
    Trace::new(
        vec!["cat".into(), "src/a.c".into()],
        1,
        0.01,
        vec![
            Initial {
                path: "src".into(),
                kind: Kind::Dir,
                size: None,
                target: None,
                data: None,
            },
            Initial {
                path: "src/a.c".into(),
                kind: Kind::File,
                size: Some(12),
                target: None,
                data: None,
            },
        ],
        vec![call],
    )
}

fn bytes(trace: &Trace) -> Vec<u8> {
    let mut out = Vec::new();
    write(trace, &mut out).unwrap();
    out
}

#[test]
fn a_written_trace_reads_back_equal() {
    let trace = sample();
    assert_eq!(read(&bytes(&trace)[..]).unwrap(), trace);
}

/// The shipped traces of more than a MB are zstd-compressed; a file is read either way,
/// and the limits bound the text it decompresses to, not the compressed bytes.
#[test]
fn a_trace_compressed_with_zstd_reads_as_written_within_the_limits() {
    let trace = sample();
    let dir = tempfile::tempdir().unwrap();
    let (plain, packed) = (
        dir.path().join("t.fstrace"),
        dir.path().join("t.fstrace.zst"),
    );
    std::fs::write(&plain, bytes(&trace)).unwrap();
    std::fs::write(&packed, zstd::encode_all(&bytes(&trace)[..], 3).unwrap()).unwrap();
    for path in [&plain, &packed] {
        let lines = lines_of(std::fs::File::open(path).unwrap()).unwrap();
        assert_eq!(read(lines).unwrap(), trace);
    }
    let tight = Limits {
        total: 64,
        ..Limits::default()
    };
    let lines = lines_of(std::fs::File::open(&packed).unwrap()).unwrap();
    assert!(read_with(lines, &tight).is_err());
}

#[test]
fn a_cut_trace_is_refused_as_truncated() {
    let text = String::from_utf8(bytes(&sample())).unwrap();
    let cut: String = text.lines().take(2).map(|l| format!("{l}\n")).collect();
    assert!(matches!(
        read(cut.as_bytes()),
        Err(TraceError::Truncated { .. })
    ));
}

#[test]
fn another_version_is_refused_by_its_number() {
    let text = String::from_utf8(bytes(&sample()))
        .unwrap()
        .replace("\"fstrace\":1", "\"fstrace\":9");
    let error = read(text.as_bytes()).unwrap_err();
    assert!(error.to_string().contains("version 9"), "{error}");
}

#[test]
fn paths_outside_the_root_are_refused() {
    for path in ["/etc/passwd", "../up", "a/../../b", ""] {
        let mut trace = sample();
        trace.calls[0].path = Some(path.into());
        let error = read(&bytes(&trace)[..]).unwrap_err();
        assert!(
            matches!(error, TraceError::Invalid { line: 4, .. }),
            "{path}: {error}"
        );
    }
}

#[test]
fn a_call_with_both_or_neither_result_is_refused() {
    let mut trace = sample();
    trace.calls[0].err = Some("ENOENT".into());
    assert!(read(&bytes(&trace)[..]).is_err());
    trace.calls[0].ret = None;
    trace.calls[0].err = None;
    assert!(read(&bytes(&trace)[..]).is_err());
}
