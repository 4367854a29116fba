//! `fsarena record --out FILE [--root DIR] [--anonymize] -- COMMAND…`: the command line
//! of [`crate::trace::record`], the trace written and read back (a trace that would not
//! replay is not written as a success), and the summary of what was left out.

use std::io::BufWriter;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

use super::exit::{EXIT_FAILED, EXIT_OK};
use crate::trace::{format, record};

#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Where to write the trace (the .fstrace format, docs/trace-format.md).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Paths are made relative to DIR; calls outside it are counted and left out
    /// [default: the working directory].
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Replace every name (paths, link targets, the command's arguments) by a stable
    /// hash, extensions kept, so the trace can be shared.
    #[arg(long)]
    pub anonymize: bool,
    /// The command to record and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Records, writes, reads back, summarises. Exit 0 when the command exited 0, 1 when it
/// did not (the trace is written: a failing program's calls are its calls too) or when a
/// signal interrupted the recording (nothing is left: no trace, no strace file).
pub fn run(args: RecordArgs) -> Result<i32> {
    let options = record::Options {
        root: args.root.clone().unwrap_or_else(|| PathBuf::from(".")),
        anonymize: args.anonymize,
        command: args.command.clone(),
    };
    record::check(&options)?;
    let out = &args.out;
    let file = std::fs::File::create(out)
        .with_context(|| format!("--out {}: cannot write it", out.display()))?;
    let recorded = match record::record(&options) {
        Ok(r) => r,
        Err(e) => {
            let _ = std::fs::remove_file(out);
            if matches!(e, record::RecordError::Interrupted) {
                // Not bad input: exit 1, as an interrupted `run` does.
                eprintln!("fsarena: {e}");
                return Ok(EXIT_FAILED);
            }
            return Err(e.into());
        }
    };
    format::write(&recorded.trace, BufWriter::new(file))
        .with_context(|| format!("writing {}", out.display()))?;
    let reread = std::fs::File::open(out).map_err(format::TraceError::Io);
    reread
        .and_then(|f| format::read(std::io::BufReader::new(f)))
        .with_context(|| format!("{} does not read back as a trace", out.display()))?;
    eprintln!("{}", summary(&recorded, out));
    Ok(if recorded.exit_code == Some(0) {
        EXIT_OK
    } else {
        EXIT_FAILED
    })
}

/// What was recorded and what was left out, in a few lines.
fn summary(r: &record::Recorded, out: &std::path::Path) -> String {
    let h = &r.trace.header;
    let ended = match r.exit_code {
        Some(0) => "exited 0".to_string(),
        Some(code) => format!("exited {code} (recorded all the same)"),
        None => "was ended by a signal (recorded all the same)".to_string(),
    };
    let c = &r.counts;
    let mut s = format!(
        "fsarena record: `{}` {ended} after {:.3} s under strace (~{:.3} s without it)\n  kept: {} calls of {} threads, {} initial entries → {}\n  \
left out: {} calls outside the root, {} on the root directory itself, {} on pipes, sockets or unnamed descriptors, {} cut by the thread's end",
        h.command.join(" "),
        r.traced_s,
        h.duration_s,
        h.calls,
        h.threads,
        h.initial,
        out.display(),
        c.outside_root,
        c.on_root,
        c.not_files,
        c.no_result,
    );
    if c.file_mmaps > 0 {
        s.push_str(&format!(
            "\n  {} mmaps of files under the root: their I/O is invisible to strace, not replayed",
            c.file_mmaps
        ));
    }
    if r.unreadable_lines > 0 || r.unreadable_dirs > 0 {
        s.push_str(&format!(
            "\n  not read: {} strace lines, {} directories of the root's snapshot",
            r.unreadable_lines, r.unreadable_dirs
        ));
    }
    s
}
