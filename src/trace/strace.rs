//! strace's text, one line at a time: `PID SECONDS NAME(ARGS) = RET <DURATION>` as printed by
//! `strace -f -ttt -T -y -s 0`. Lines a thread could not finish at once (`<unfinished ...>`,
//! then `<... NAME resumed>`) are joined into one [`Syscall`] by [`Joiner`], so the rest of
//! record sees every call whole, stamped with its start. Arguments stay text until asked for
//! as a descriptor, a string, a number or flags: each call reads only the ones it needs.

use std::collections::HashMap;

/// `AT_FDCWD` as the kernel numbers it.
pub const AT_FDCWD: i32 = -100;

/// One finished system call of one thread.
#[derive(Debug, Clone, PartialEq)]
pub struct Syscall {
    pub tid: u32,
    /// Seconds since the epoch when the call started.
    pub time: f64,
    pub name: String,
    pub args: Vec<Arg>,
    pub ret: Ret,
    /// Seconds the call took (0 when strace did not say).
    pub dur: f64,
}

/// How a call ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Ret {
    /// A value, with the path strace's `-y` printed for a returned descriptor.
    Value(i64, Option<String>),
    /// `-1` and the errno's name.
    Err(String),
    /// `?`: the thread ended (or exec'd) inside the call.
    Unknown,
}

/// One argument as strace printed it.
#[derive(Debug, Clone, PartialEq)]
pub struct Arg(pub String);

/// A descriptor argument: its number and the path `-y` printed for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Fd {
    pub num: i32,
    pub path: Option<String>,
}

/// What one line of strace's output holds.
#[derive(Debug, Clone, PartialEq)]
enum Line {
    Whole(Syscall),
    /// A call's start: its name and the text of its arguments so far.
    Unfinished {
        tid: u32,
        time: f64,
        name: String,
        head: String,
    },
    /// A call's end: the rest of its arguments, its result and duration.
    Resumed {
        tid: u32,
        name: String,
        tail: String,
    },
    /// Signals, exits, anything else: no call.
    Other,
}

/// Joins split calls: keeps each thread's unfinished start until its resumption arrives.
#[derive(Debug, Default)]
pub struct Joiner {
    pending: HashMap<u32, (f64, String, String)>,
    /// Lines that looked like calls but could not be read (said in the summary).
    pub unreadable: u64,
}

impl Joiner {
    /// The call a line completes, if any.
    pub fn push(&mut self, line: &str) -> Option<Syscall> {
        match parse_line(line) {
            Some(Line::Whole(call)) => Some(call),
            Some(Line::Unfinished {
                tid,
                time,
                name,
                head,
            }) => {
                self.pending.insert(tid, (time, name, head));
                None
            }
            Some(Line::Resumed { tid, name, tail }) => {
                let (time, started, head) = self.pending.remove(&tid)?;
                if started != name {
                    self.unreadable += 1;
                    return None;
                }
                let whole = join_args(&head, &tail);
                let call = parse_call(tid, time, &format!("{name}({whole}"));
                if call.is_none() {
                    self.unreadable += 1;
                }
                call
            }
            Some(Line::Other) => None,
            None => {
                self.unreadable += 1;
                None
            }
        }
    }
}

/// The unfinished head and the resumed tail, as one argument text.
fn join_args(head: &str, tail: &str) -> String {
    let head = head.trim_end();
    let tail = tail.trim_start();
    if head.is_empty() || head.ends_with(',') || tail.starts_with(')') || tail.starts_with(',') {
        format!("{head}{tail}")
    } else {
        format!("{head} {tail}")
    }
}

/// One line; `None` when it is not in the expected shape at all.
fn parse_line(line: &str) -> Option<Line> {
    let (tid, rest) = line.trim_end().split_once(' ')?;
    let tid: u32 = tid.parse().ok()?;
    let (time, body) = rest.trim_start().split_once(' ')?;
    let time: f64 = time.parse().ok()?;
    if body.starts_with("---") || body.starts_with("+++") {
        return Some(Line::Other);
    }
    if let Some(after) = body.strip_prefix("<... ") {
        let (name, tail) = after.split_once(" resumed>")?;
        return Some(Line::Resumed {
            tid,
            name: name.to_string(),
            tail: tail.to_string(),
        });
    }
    if let Some(head) = body.strip_suffix("<unfinished ...>") {
        let (name, args) = head.split_once('(')?;
        return Some(Line::Unfinished {
            tid,
            time,
            name: name.to_string(),
            head: args.to_string(),
        });
    }
    parse_call(tid, time, body).map(Line::Whole)
}

/// `NAME(ARGS) = RET <DUR>` into a call.
fn parse_call(tid: u32, time: f64, body: &str) -> Option<Syscall> {
    let (name, rest) = body.split_once('(')?;
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return None;
    }
    let (args, close) = split_args(rest)?;
    let after = rest[close + 1..].trim_start();
    let result = after.strip_prefix('=')?.trim();
    let (result, dur) = match result.rsplit_once(" <") {
        Some((r, d)) if d.ends_with('>') => (r.trim(), d[..d.len() - 1].parse().unwrap_or(0.0)),
        _ => (result, 0.0),
    };
    Some(Syscall {
        tid,
        time,
        name: name.to_string(),
        args,
        ret: parse_ret(result)?,
        dur,
    })
}

/// `-1 ENOENT (No such file…)`, `3</path>`, `0x7f…`, `0 (Timeout)`, `?`.
fn parse_ret(text: &str) -> Option<Ret> {
    if text.starts_with('?') {
        return Some(Ret::Unknown);
    }
    if let Some(err) = text.strip_prefix("-1 ") {
        if let Some(name) = err.split_whitespace().next().filter(|n| n.starts_with('E')) {
            return Some(Ret::Err(name.to_string()));
        }
    }
    if let Some(open) = text
        .find('<')
        .filter(|&i| i > 0 && is_fd_end(text.as_bytes()[i - 1]))
    {
        let close = skip_quoted(text.as_bytes(), open + 1, b'>')?;
        let fd = Arg(text[..=close].to_string()).fd()?;
        return Some(Ret::Value(i64::from(fd.num), fd.path));
    }
    parse_int(text.split_whitespace().next()?).map(|v| Ret::Value(v, None))
}

/// The top-level arguments of `rest` (the text after the call's `(`) and the index of the
/// `)` that closes them. Commas inside strings, structs, arrays, calls like `makedev(…)`
/// and `-y` paths (`3</a,b>`, whose `<`/`>` strace escapes inside) do not split.
fn split_args(rest: &str) -> Option<(Vec<Arg>, usize)> {
    let bytes = rest.as_bytes();
    let mut args = Vec::new();
    let (mut depth, mut start, mut i) = (0usize, 0usize, 0usize);
    while i < bytes.len() {
        match bytes[i] {
            b'"' => i = skip_quoted(bytes, i + 1, b'"')?,
            b'<' if i > 0 && is_fd_end(bytes[i - 1]) => i = skip_quoted(bytes, i + 1, b'>')?,
            b'(' | b'{' | b'[' => depth += 1,
            b']' | b'}' => depth = depth.checked_sub(1)?,
            b')' if depth == 0 => {
                push_arg(&mut args, &rest[start..i]);
                return Some((args, i));
            }
            b')' => depth -= 1,
            b',' if depth == 0 => {
                push_arg(&mut args, &rest[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Whether a `<` after this byte opens a `-y` path (after a descriptor's digits or `AT_FDCWD`).
fn is_fd_end(b: u8) -> bool {
    b.is_ascii_digit() || b == b'D'
}

/// The index of the unescaped `end` that closes text starting at `i`.
fn skip_quoted(bytes: &[u8], mut i: usize, end: u8) -> Option<usize> {
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b if b == end => return Some(i),
            _ => i += 1,
        }
    }
    None
}

fn push_arg(args: &mut Vec<Arg>, text: &str) {
    let text = text.trim();
    if !text.is_empty() {
        args.push(Arg(text.to_string()));
    }
}

impl Arg {
    /// A descriptor: `3`, `3</path>`, `AT_FDCWD</cwd>`; a deleted file's ` (deleted)` dropped.
    pub fn fd(&self) -> Option<Fd> {
        let text = self.0.as_str();
        let (head, path) = match text.split_once('<') {
            Some((head, rest)) => (head, Some(unescape(rest.strip_suffix('>')?))),
            None => (text, None),
        };
        let num = if head == "AT_FDCWD" {
            AT_FDCWD
        } else {
            head.parse().ok()?
        };
        let path = path.map(|p| {
            p.strip_suffix(" (deleted)")
                .map(str::to_string)
                .unwrap_or(p)
        });
        Some(Fd { num, path })
    }

    /// A quoted string, its escapes undone (`None` when it is not one, e.g. an address).
    pub fn string(&self) -> Option<String> {
        let text = self.0.strip_suffix("...").unwrap_or(&self.0);
        let inner = text.strip_prefix('"')?.strip_suffix('"')?;
        Some(unescape(inner))
    }

    /// A number: decimal, `0x` hexadecimal, or `0`-led octal (a mode).
    pub fn int(&self) -> Option<i64> {
        parse_int(&self.0)
    }

    /// `O_WRONLY|O_CREAT|0x…` as its parts.
    pub fn flags(&self) -> Vec<String> {
        self.0
            .split('|')
            .map(|f| f.trim().to_string())
            .filter(|f| !f.is_empty())
            .collect()
    }

    /// A field of a printed struct, `{flags=O_RDONLY, mode=0644, …}` → `mode` → `0644`.
    pub fn field(&self, name: &str) -> Option<Arg> {
        let inner = self.0.strip_prefix('{')?.strip_suffix('}')?;
        let (fields, _) = split_args(&format!("{inner})"))?;
        fields.into_iter().find_map(|f| {
            let (key, value) = f.0.split_once('=')?;
            (key.trim() == name).then(|| Arg(value.trim().to_string()))
        })
    }

    /// The first number of an in/out offset: `[4096]`, `[0 => 4096]` (copy_file_range),
    /// `[0] => [8192]` (sendfile); `None` for `NULL`.
    pub fn offset(&self) -> Option<u64> {
        let inner = self.0.strip_prefix('[')?;
        let end = inner.find([']', ' '])?;
        parse_int(&inner[..end])?.try_into().ok()
    }
}

fn parse_int(text: &str) -> Option<i64> {
    if let Some(hex) = text.strip_prefix("0x") {
        return u64::from_str_radix(hex, 16).ok().map(|v| v as i64);
    }
    if text.len() > 1 && text.starts_with('0') && text.bytes().all(|b| b.is_ascii_digit()) {
        return i64::from_str_radix(&text[1..], 8).ok();
    }
    text.parse().ok()
}

/// strace's C escapes undone: `\n`, `\t`, `\"`, `\\`, octal `\74`, hexadecimal `\x3c`.
/// Bytes that are not UTF-8 become U+FFFD (a trace's paths are JSON strings).
pub fn unescape(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' || i + 1 == bytes.len() {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        let c = bytes[i + 1];
        i += 2;
        match c {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'v' => out.push(0x0b),
            b'f' => out.push(0x0c),
            b'x' => {
                let end = (i..bytes.len().min(i + 2))
                    .take_while(|&j| bytes[j].is_ascii_hexdigit())
                    .last()
                    .map_or(i, |j| j + 1);
                out.push(u8::from_str_radix(&text[i..end], 16).unwrap_or(b'?'));
                i = end;
            }
            b'0'..=b'7' => {
                let start = i - 1;
                let end = (start..bytes.len().min(start + 3))
                    .take_while(|&j| (b'0'..=b'7').contains(&bytes[j]))
                    .last()
                    .map_or(start + 1, |j| j + 1);
                out.push(u8::from_str_radix(&text[start..end], 8).unwrap_or(b'?'));
                i = end;
            }
            other => out.push(other),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests;
