//! What a trace may ask of the machine that replays it, checked while it is read and before
//! anything is provisioned. A trace is input: edited by hand, cut, or not a trace at all
//! (`--trace /dev/zero`). Each number in it sizes something the replay makes — a line
//! buffer, a thread per recorded thread, a buffer per call, a sleep — so each is bounded by
//! what a real recording can hold (Linux's own limits) and by the host, and a trace past a
//! bound is refused in one line naming the field and its line, never obeyed until the host
//! runs out of memory or the replay sleeps for ever.

use std::io::{BufRead, Read};

/// The longest line a reader takes. A call's line holds at most two paths and a link's
/// text (`PATH_MAX`, 4 KiB each) and a few numbers; the header holds the recorded command,
/// whose arguments Linux caps at 2 MiB (a quarter of the default 8 MiB stack).
pub const MAX_LINE: usize = 4 << 20;

/// The most bytes one read, write or directory listing moves: Linux clamps every such call
/// to `MAX_RW_COUNT` (`INT_MAX` rounded down to a page), so a trace saying more was edited.
pub const MAX_RW_COUNT: u64 = 0x7fff_f000;

/// The largest file offset or length (`loff_t` is signed 64-bit).
pub const MAX_OFFSET: u64 = i64::MAX as u64;

/// The longest recording a trace may describe, in seconds: 30 days. A program's time is
/// replayed with `--timing original`, so a larger `start` would ask the replay to wait
/// longer than any run of fsarena lasts.
pub const MAX_SECONDS: f64 = 30.0 * 86_400.0;

/// The most recorded threads: the replay runs each on an OS thread of its own, all at once.
pub const MAX_THREADS: u32 = 32_768;

/// The fewest bytes an entry's line takes (`{"call":{…}}` with its required fields is
/// longer): bounds the counts a header may announce by the bytes a reader will take.
pub const MIN_ENTRY_LINE: u64 = 32;

/// Why a trace cannot be replayed; each names the line, for the one-line refusal.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("cannot read the trace: {0}")]
    Io(#[from] std::io::Error),
    #[error("line {line}: not an fstrace record: {message}")]
    Syntax { line: u64, message: String },
    #[error("fstrace version {found} is not one this fsarena reads (it reads version {reads})")]
    Version { found: u32, reads: u32 },
    #[error("the trace is empty: no header line")]
    Empty,
    #[error("the trace is cut short: its header announces {expected} {what}, it holds {found}")]
    Truncated {
        what: &'static str,
        expected: u64,
        found: u64,
    },
    #[error("line {line}: {what}")]
    Invalid { line: u64, what: String },
}

/// How much of a trace a reader takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// The longest line, in bytes.
    pub line: usize,
    /// The most bytes in all (the trace is held in memory whole: a caller bounds it by the
    /// host's memory).
    pub total: u64,
}

impl Default for Limits {
    /// [`MAX_LINE`] per line, no bound on the whole (for a trace this build wrote itself).
    fn default() -> Limits {
        Limits {
            line: MAX_LINE,
            total: u64::MAX,
        }
    }
}

/// Reads lines of at most `limits.line` bytes and `limits.total` in all, so an endless
/// line (`/dev/zero`) or a file larger than the host can hold is refused after reading a
/// bounded amount of it, not after filling memory.
pub struct Lines<R> {
    input: R,
    limits: Limits,
    read: u64,
    /// The number of the line returned last (1-based).
    pub line_no: u64,
}

impl<R: BufRead> Lines<R> {
    pub fn new(input: R, limits: Limits) -> Lines<R> {
        Lines {
            input,
            limits,
            read: 0,
            line_no: 0,
        }
    }

    /// The next line without its newline, `None` at the end.
    pub fn next_line(&mut self) -> Result<Option<String>, TraceError> {
        let mut buf = Vec::new();
        let cap = self.limits.line as u64 + 1;
        let n = self.input.by_ref().take(cap).read_until(b'\n', &mut buf)?;
        if n == 0 {
            return Ok(None);
        }
        self.line_no += 1;
        self.read = self.read.saturating_add(n as u64);
        if buf.last() == Some(&b'\n') {
            buf.pop();
        } else if n as u64 == cap {
            return Err(TraceError::Invalid {
                line: self.line_no,
                what: format!(
                    "the line is longer than {} bytes: this is not a trace (a device or a binary file?)",
                    self.limits.line
                ),
            });
        }
        if self.read > self.limits.total {
            return Err(TraceError::Invalid {
                line: self.line_no,
                what: format!(
                    "the trace is larger than the {} bytes this host can hold in memory",
                    self.limits.total
                ),
            });
        }
        String::from_utf8(buf)
            .map(Some)
            .map_err(|_| TraceError::Syntax {
                line: self.line_no,
                message: "not UTF-8 text".into(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::format::{read, read_with};

    /// A trace of one read: the header's `threads` and `duration_s`, the call's other fields.
    fn text(threads: &str, duration_s: &str, call: &str) -> String {
        format!(
            "{{\"fstrace\":1,\"command\":[\"t\"],\"anonymized\":false,\"threads\":{threads},\
             \"duration_s\":{duration_s},\"initial\":0,\"calls\":1,\"outside_root\":0,\"file_mmaps\":0}}\n\
             {{\"call\":{{\"thread\":0,\"op\":\"read\",\"syscall\":\"read\",\"fd\":3,{call}}}}}\n"
        )
    }

    const FINE: &str = "\"start\":0.0,\"dur\":0.0";

    #[test]
    fn a_sane_trace_passes_every_bound() {
        let call = format!("{FINE},\"size\":1099511627776,\"ret\":12");
        assert!(read(text("1", "0.5", &call).as_bytes()).is_ok());
    }

    /// The program's user CPU time (issue 56) paces a `think` replay: bounded like every
    /// other time, and optional, so a trace recorded before it was kept still reads.
    #[test]
    fn the_program_s_user_cpu_time_is_optional_and_bounded_like_a_duration() {
        let call = format!("{FINE},\"ret\":1");
        let with = |user: &str| text("1", &format!("0.5,\"user_cpu_s\":{user}"), &call);
        let old = read(text("1", "0.5", &call).as_bytes()).unwrap();
        assert_eq!(old.header.user_cpu_s, None);
        let t = read(with("0.25").as_bytes()).unwrap();
        assert_eq!(t.header.user_cpu_s, Some(0.25));
        for bad in ["-0.5", "1e300"] {
            let e = read(with(bad).as_bytes()).unwrap_err().to_string();
            assert!(e.contains("line 1: `user_cpu_s`"), "{bad}: {e}");
        }
    }

    /// What record knows of the program's untraced time (issue 56) is optional, so a trace
    /// recorded before it still reads, bounded like every time, and refused when its
    /// figures could not come from a recording.
    #[test]
    fn the_program_s_time_bracket_is_optional_bounded_and_consistent() {
        let call = format!("{FINE},\"ret\":1");
        let with = |p: &str| text("1", &format!("0.5,\"program_time\":{p}"), &call);
        let fields = |t: f64, s: f64, l: f64, m: f64| {
            format!("{{\"traced_s\":{t},\"strace_s\":{s},\"least_s\":{l},\"most_s\":{m}}}")
        };
        let old = read(text("1", "0.5", &call).as_bytes()).unwrap();
        assert_eq!(old.header.program_time, None);
        let t = read(with(&fields(0.4, 0.3, 0.0, 0.4)).as_bytes()).unwrap();
        assert_eq!(t.header.program_time.map(|p| p.most_s), Some(0.4));
        for (bad, says) in [
            (fields(0.4, -0.3, 0.0, 0.4), "`program_time.strace_s` -0.3"),
            (fields(1e300, 0.3, 0.0, 0.4), "`program_time.traced_s`"),
            (
                fields(0.4, 0.3, 0.3, 0.2),
                "`least_s` is more than `most_s`",
            ),
            (
                fields(0.4, 0.3, 0.0, 0.5),
                "`most_s` is more than `traced_s`",
            ),
        ] {
            let e = read(with(&bad).as_bytes()).unwrap_err().to_string();
            assert!(e.contains("line 1: ") && e.contains(says), "{bad}: {e}");
        }
        let e = read(with("{\"traced_s\":0.4}").as_bytes())
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 1"), "{e}");
    }

    #[test]
    fn an_endless_line_is_refused_after_a_bounded_read() {
        let limits = Limits {
            line: 1 << 16,
            total: u64::MAX,
        };
        let endless = std::io::BufReader::new(std::io::repeat(b'x'));
        let e = read_with(endless, &limits).unwrap_err().to_string();
        assert!(
            e.contains("line 1") && e.contains("longer than 65536"),
            "{e}"
        );
    }

    #[test]
    fn a_trace_larger_than_its_limit_is_refused() {
        let limits = Limits {
            line: MAX_LINE,
            total: 200,
        };
        let t = text("1", "0.5", &format!("{FINE},\"size\":10,\"ret\":10"));
        let e = read_with(t.as_bytes(), &limits).unwrap_err().to_string();
        assert!(e.contains("larger than the 200 bytes"), "{e}");
    }

    #[test]
    fn each_number_past_its_bound_is_refused_naming_its_field_and_line() {
        let cases = [
            (
                "40000",
                "0.5",
                format!("{FINE},\"ret\":1"),
                "line 1: `threads` 40000",
            ),
            (
                "2",
                "0.5",
                format!("{FINE},\"ret\":1"),
                "line 1: `threads` 2",
            ),
            (
                "1",
                "-2.0",
                format!("{FINE},\"ret\":1"),
                "line 1: `duration_s` -2",
            ),
            (
                "1",
                "1e300",
                format!("{FINE},\"ret\":1"),
                "line 1: `duration_s`",
            ),
            (
                "1",
                "0.5",
                "\"start\":1e300,\"dur\":0.0,\"ret\":1".into(),
                "line 2: `start`",
            ),
            (
                "1",
                "0.5",
                "\"start\":0.0,\"dur\":-1.0,\"ret\":1".into(),
                "line 2: `dur`",
            ),
            (
                "1",
                "0.5",
                format!("{FINE},\"size\":9223372036854775808,\"ret\":1"),
                "line 2: `size`",
            ),
            (
                "1",
                "0.5",
                format!("{FINE},\"ret\":3000000000"),
                "line 2: `ret` 3000000000",
            ),
            ("1", "0.5", format!("{FINE},\"ret\":-5"), "line 2: `ret` -5"),
            (
                "1",
                "0.5",
                format!("{FINE},\"offset\":9223372036854775800,\"ret\":100"),
                "line 2: `offset`",
            ),
        ];
        for (threads, duration, call, want) in cases {
            let t = text(threads, duration, &call);
            let e = match read(t.as_bytes()) {
                Ok(_) => panic!("accepted: {t}"),
                Err(e) => e.to_string(),
            };
            assert!(e.contains(want), "{want}: {e}");
        }
    }
}
