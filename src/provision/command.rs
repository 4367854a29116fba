//! External commands (mkfs, losetup, mount, fsck): built as data so `--dry-run` can print
//! exactly what would run, and run with their stderr kept for the error message.

use std::process::Stdio;

use super::error::ProvisionError;
use crate::sys::cpus::CpuList;

/// A command line, printable and runnable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cmd {
    pub program: String,
    pub args: Vec<String>,
}

/// What a finished command printed.
#[derive(Debug, Clone)]
pub struct Ran {
    pub success: bool,
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Cmd {
    /// A command running `program` with no arguments yet.
    pub fn new(program: impl Into<String>) -> Self {
        Cmd {
            program: program.into(),
            args: Vec::new(),
        }
    }

    /// Appends one argument.
    pub fn arg(mut self, a: impl Into<String>) -> Self {
        self.args.push(a.into());
        self
    }

    /// Appends several arguments.
    pub fn args<I, S>(mut self, a: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(a.into_iter().map(Into::into));
        self
    }

    /// The command and its arguments as a vector, for provenance.
    pub fn argv(&self) -> Vec<String> {
        std::iter::once(self.program.clone())
            .chain(self.args.iter().cloned())
            .collect()
    }

    /// Runs it and returns what it printed, whatever its exit status.
    pub fn output(&self, package: &str) -> Result<Ran, ProvisionError> {
        self.output_on(package, None)
    }

    /// [`Cmd::output`], the program (and whatever it leaves running: a FUSE daemon) bound
    /// to `cpus` when given.
    fn output_on(&self, package: &str, cpus: Option<&CpuList>) -> Result<Ran, ProvisionError> {
        // A group of its own, dying with fsarena: a terminal's Ctrl-C reaches fsarena
        // alone, so the helper finishes and a first Ctrl-C never turns into a false `error`
        // or a failed check (issue 39); after a kill -9 an orphaned `mount` cannot finish
        // after `fsarena cleanup` looked and leave a mount and a busy loop device behind.
        let mut cmd = crate::sys::helper_command(&self.program);
        cmd.args(&self.args).stdin(Stdio::null());
        if let Some(cpus) = cpus {
            crate::sys::cpus::bind_command(&mut cmd, cpus);
        }
        let out = cmd.output().map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                ProvisionError::MissingTool {
                    program: self.program.clone(),
                    package: package.to_string(),
                }
            } else {
                ProvisionError::io(format!("cannot run {}", self.program), e)
            }
        })?;
        Ok(Ran {
            success: out.status.success(),
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }

    /// Runs it and fails with the last meaningful line of stderr unless it succeeded.
    pub fn run(&self, package: &str) -> Result<Ran, ProvisionError> {
        self.run_on(package, None)
    }

    /// [`Cmd::run`] bound to `cpus` when given ([`Cmd::output_on`]).
    pub fn run_on(&self, package: &str, cpus: Option<&CpuList>) -> Result<Ran, ProvisionError> {
        let ran = self.output_on(package, cpus)?;
        if ran.success {
            Ok(ran)
        } else {
            Err(self.failure(&ran))
        }
    }

    /// The error for a run that failed: the command line, its status and its stderr.
    pub fn failure(&self, ran: &Ran) -> ProvisionError {
        let text = if ran.stderr.trim().is_empty() {
            &ran.stdout
        } else {
            &ran.stderr
        };
        ProvisionError::Tool {
            command: self.to_string(),
            status: ran
                .code
                .map_or("killed by a signal".to_string(), |c| format!("exit {c}")),
            stderr: meaningful(text),
            output: text.trim_end().to_string(),
        }
    }
}

/// The last non-empty line, which is where tools put the reason.
pub fn last_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or("(no output)")
        .to_string()
}

/// The part of a tool's error output that names the error: the lines before its usage
/// text (mkfs.xfs prints the reason first, then 40 lines of usage), preferring those
/// that say what is wrong, at most three, joined into one line.
pub fn meaningful(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .take_while(|l| !l.to_ascii_lowercase().starts_with("usage"))
        .filter(|l| !l.is_empty())
        .collect();
    const SAYS: [&str; 14] = [
        "error",
        "invalid",
        "unknown",
        "too small",
        "too large",
        "cannot",
        "can't",
        "failed",
        "bad ",
        "must",
        "unrecognized",
        "no such",
        "illegal",
        "not ",
    ];
    let saying: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| {
            let low = l.to_ascii_lowercase();
            SAYS.iter().any(|w| low.contains(w))
        })
        .collect();
    let pick = if saying.is_empty() { lines } else { saying };
    if pick.is_empty() {
        return last_line(text);
    }
    pick[pick.len().saturating_sub(3)..].join("; ")
}

impl std::fmt::Display for Cmd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.program)?;
        for a in &self.args {
            if a.is_empty() || a.contains(|c: char| c.is_whitespace() || c == '\'') {
                write!(f, " '{}'", a.replace('\'', "'\\''"))?;
            } else {
                write!(f, " {a}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_quoted() {
        let c = Cmd::new("mount").args(["-o", "a b", "/dev/x"]);
        assert_eq!(c.to_string(), "mount -o 'a b' /dev/x");
    }

    #[test]
    fn failure_carries_last_stderr_line() {
        let c = Cmd::new("sh").args(["-c", "echo one >&2; echo two >&2; exit 3"]);
        let e = c.run("dash").unwrap_err().to_string();
        assert!(e.contains("exit 3") && e.ends_with("two"), "{e}");
        let usage = "Invalid value 3000 for -b size option. Value must be a power of 2.\nUsage: mkfs.xfs\n/* blocksize */\t[-b size=num]\n\t\t\t[-N] [-K] [-V]\n";
        assert_eq!(
            meaningful(usage),
            "Invalid value 3000 for -b size option. Value must be a power of 2."
        );
        let missing = Cmd::new("no-such-tool-xyz").run("pkg").unwrap_err();
        assert!(matches!(missing, ProvisionError::MissingTool { .. }));
    }
}
