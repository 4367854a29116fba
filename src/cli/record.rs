//! `fsarena record --out FILE [--root DIR] [--anonymize] -- COMMAND…`: the command line
//! of [`crate::trace::record`], the trace written and read back (a trace that would not
//! replay is not written as a success), and the summary of what was left out.

use std::io::BufWriter;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;

use super::exit::{EXIT_FAILED, EXIT_OK};
use crate::provision::journal::{Kind, Op};
use crate::provision::{cgroup, cleanup, workdir};
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
    /// Where the recording keeps strace's lines and its journal while it runs (a run
    /// directory, as `fsarena run` makes): after a `kill -9`, `fsarena cleanup
    /// --work-dir DIR` stops strace and the program and removes it.
    #[arg(long, value_name = "DIR", default_value = workdir::DEFAULT_ROOT)]
    pub work_dir: PathBuf,
    /// The command to record and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Records, writes, reads back, summarises. Exit 0 when the command exited 0, 1 when it
/// did not (the trace is written: a failing program's calls are its calls too) or when a
/// signal interrupted the recording (nothing is left: no trace, no strace file). The trace
/// is written beside `--out` under a temporary name and renamed over it only once whole,
/// so an interruption, even a `kill -9`, leaves `--out` as it was.
pub fn run(args: RecordArgs) -> Result<i32> {
    let mut options = record::Options {
        root: args.root.clone().unwrap_or_else(|| PathBuf::from(".")),
        anonymize: args.anonymize,
        command: args.command.clone(),
        scratch: None,
        cgroup_procs: None,
        cpu_cgroup: None,
    };
    record::check(&options)?;
    let out = &args.out;
    let run = Journaled::make(&args.work_dir)?;
    let partial = match run.partial(out) {
        Ok(p) => p,
        Err(e) => {
            run.finish();
            return Err(e);
        }
    };
    options.scratch = Some(run.scratch.clone());
    options.cgroup_procs = run.cgroup.as_ref().map(|c| c.procs_file());
    options.cpu_cgroup = run.cpu.as_ref().map(|c| c.path.clone());
    let written = record::record(&options)
        .map_err(RecordFailed::Record)
        .and_then(|r| run.put(r, partial, out).map_err(RecordFailed::Write));
    // Removes the partial file too, unless it was renamed into place.
    run.finish();
    let recorded = match written {
        Ok(r) => r,
        Err(RecordFailed::Record(record::RecordError::Interrupted)) => {
            // Not bad input: exit 1, as an interrupted `run` does.
            eprintln!("fsarena: {}", record::RecordError::Interrupted);
            return Ok(EXIT_FAILED);
        }
        Err(RecordFailed::Record(e)) => return Err(e.into()),
        Err(RecordFailed::Write(e)) => return Err(e),
    };
    eprintln!("{}", summary(&recorded, out));
    Ok(if recorded.exit_code == Some(0) {
        EXIT_OK
    } else {
        EXIT_FAILED
    })
}

/// Why a recording left no trace: the recording itself, or writing its trace.
enum RecordFailed {
    Record(record::RecordError),
    Write(anyhow::Error),
}

/// The trace being written beside `--out`, under a name of the run's own.
struct Partial {
    path: PathBuf,
    file: std::fs::File,
}

/// The run directory a recording journals what it makes in, as `fsarena run` does: the
/// directory strace writes into and the cgroup strace and the program run in. A `kill -9`
/// of fsarena kills strace (its death signal); `fsarena cleanup` then kills what is left
/// in the cgroup (the program, which an older strace lets go on) and removes the rest.
struct Journaled {
    work: workdir::WorkDir,
    scratch: PathBuf,
    /// None where no cgroup can be made (not root, no memory cgroup): strace still dies
    /// with fsarena, and the program with it only where strace has `--kill-on-exit`.
    cgroup: Option<cgroup::MemoryCgroup>,
    /// A cgroup v2 the program alone runs in (strace stays out), for its CPU time
    /// (`record::Options::cpu_cgroup`); None where there is no cgroup v2.
    cpu: Option<cgroup::MemoryCgroup>,
}

impl Journaled {
    fn make(root: &std::path::Path) -> Result<Journaled> {
        let work = workdir::WorkDir::create(root).with_context(|| {
            format!(
                "--work-dir {}: cannot make a run directory there",
                root.display()
            )
        })?;
        let scratch = work.subdir("strace");
        let cgroup = cgroup::parent().ok().and_then(|p| {
            cgroup::MemoryCgroup::holding(&p, "record", Some(work.journal.clone())).ok()
        });
        let cpu = cgroup::accounting_parent().and_then(|p| {
            cgroup::MemoryCgroup::holding(&p, "record-cpu", Some(work.journal.clone())).ok()
        });
        let journaled = Journaled {
            work,
            scratch: PathBuf::new(),
            cgroup,
            cpu,
        };
        let scratch = match scratch {
            Ok(s) => s,
            Err(e) => {
                journaled.finish();
                return Err(e).context("cannot make the recording's directory");
            }
        };
        Ok(Journaled {
            scratch,
            ..journaled
        })
    }

    /// The file beside `out` the trace is written to, journaled before it is made (so
    /// `fsarena cleanup` removes it after a `kill -9`) and made new (never someone's file).
    fn partial(&self, out: &Path) -> Result<Partial> {
        let name = out.file_name().unwrap_or(out.as_os_str()).to_string_lossy();
        let path = out.with_file_name(format!(".{name}.{}.partial", self.work.id()));
        let cannot = || format!("--out {}: cannot write it", out.display());
        self.work
            .journal
            .record(Op::Create, Kind::Partial, &path, None)
            .with_context(cannot)?;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .with_context(cannot)?;
        Ok(Partial { path, file })
    }

    /// Writes the trace to `partial`, makes it durable, reads it back (a trace that would
    /// not replay is not written as a success), and renames it over `out`.
    fn put(&self, r: record::Recorded, partial: Partial, out: &Path) -> Result<record::Recorded> {
        let Partial { path, file } = partial;
        let mut w = BufWriter::new(file);
        format::write(&r.trace, &mut w).with_context(|| format!("writing {}", out.display()))?;
        let file = w.into_inner().map_err(|e| e.into_error());
        file.and_then(|f| f.sync_all())
            .with_context(|| format!("writing {}", out.display()))?;
        let reread = std::fs::File::open(&path).map_err(format::TraceError::Io);
        reread
            .and_then(|f| format::read(std::io::BufReader::new(f)))
            .with_context(|| format!("{} does not read back as a trace", out.display()))?;
        std::fs::rename(&path, out).with_context(|| format!("writing {}", out.display()))?;
        let _ = self
            .work
            .journal
            .record(Op::Release, Kind::Partial, &path, None);
        Ok(r)
    }

    /// Kills what is left in the cgroup (the program's processes that outlived an
    /// interruption) and removes everything the journal names, then the run directory.
    fn finish(self) {
        for cg in [self.cgroup, self.cpu].into_iter().flatten() {
            let _ = cg.remove();
        }
        cleanup::cleanup_run(&self.work.run, &mut cleanup::CleanupReport::default());
    }
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
    // One figure for the untraced time: the bracket's estimate where the recording made one
    // (the trace's clock, strace's cost taken out stop by stop, is what `--timing original`
    // replays, and says less of the program's time).
    let untraced = h.program_time.map_or(h.duration_s, |p| p.estimate_s());
    let mut s = format!(
        "fsarena record: `{}` {ended} after {:.3} s under strace (~{:.3} s without it)\n  kept: {} calls of {} thread{}, {} initial entries → {}\n  \
left out: {} calls outside the root, {} making, removing or renaming the root itself, {} on pipes, sockets or unnamed descriptors, {} cut by the thread's end",
        h.command.join(" "),
        r.traced_s,
        untraced,
        h.calls,
        h.threads,
        if h.threads == 1 { "" } else { "s" },
        h.initial,
        out.display(),
        c.outside_root,
        c.on_root,
        c.not_files,
        c.no_result,
    );
    if let Some(p) = h.program_time {
        s.push_str(&format!(
            "\n  the program's own time, untraced: {:.3} s estimated, between {:.3} and {:.3} s (strace's calibrated cost over the run: {:.3} s, known to ±{:.0} %)",
            p.estimate_s(),
            p.least_s,
            p.most_s,
            p.strace_s,
            crate::trace::program_time::COST_UNCERTAINTY * 100.0
        ));
    }
    if let Some(user) = h.user_cpu_s {
        s.push_str(&format!(
            "\n  the program's own computing: {user:.3} s of user CPU (the kernel's count, outside strace), which `--timing think` replays between its calls"
        ));
    }
    if let Some(mapped) = crate::trace::calls::mapped_io_text(&r.trace) {
        s.push_str(&format!("\n  {mapped}"));
    }
    if !h.unseen.is_empty() {
        s.push_str(&format!(
            "\n  I/O strace cannot see, not replayed (every replay warns of it): {}",
            crate::trace::calls::unseen_text(&h.unseen)
        ));
    }
    if r.holes_cut > 0 {
        s.push_str(&format!(
            "\n  {} initial files hold more than {} pieces of data: each keeps its first ones, the rest of it kept as data (the replay lays it down without those holes)",
            r.holes_cut,
            crate::trace::holes::MAX_DATA_RANGES
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
