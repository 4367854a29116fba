//! The commands other than `run`, `tune`, `compare` and `record`: `list`, `doctor`,
//! `cleanup`, `report`, `dataset`, `op`. Their text goes through
//! [`super::output::emit`] (a closed pipe ends them quietly), wrapped to the output width.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;

use super::exit::{EXIT_FAILED, EXIT_OK};
use super::output::{emit, OutputArgs};
use crate::provision::{cleanup, host, workdir};
use crate::report::{output_width, wrap_lines};

/// Where a list entry's text starts: two spaces, an 18-column name, a space.
const LIST_HANG: usize = 19;

/// `fsarena list`: targets (with why not here), workloads, studies.
pub fn list() -> Result<i32> {
    let mut s = String::from("targets:\n");
    for t in crate::plan::catalogue::all() {
        let ok = match host::support(&t) {
            Ok(()) => "".to_string(),
            Err(why) => format!("  (not here: {why})"),
        };
        s.push_str(&format!("  {:<18} {}{ok}\n", t.name, t.description));
    }
    s.push_str("  dir:PATH           an existing directory (any file system, no root needed)\n");
    s.push_str("workloads:\n");
    for w in crate::workload::all() {
        s.push_str(&format!(
            "  {:<18} {}\n",
            w.spec().name,
            w.spec().description
        ));
    }
    s.push_str("studies (fsarena run study:NAME):\n");
    for st in crate::plan::study::all() {
        s.push_str(&format!("  {:<18} {}\n", st.name, st.description));
    }
    emit(&wrap_lines(&s, output_width(), LIST_HANG))?;
    Ok(EXIT_OK)
}

/// `fsarena doctor [--json]`.
pub fn doctor(json: bool) -> Result<i32> {
    let d = crate::doctor::examine(&PathBuf::from(workdir::DEFAULT_ROOT));
    if json {
        emit(&(serde_json::to_string_pretty(&d)? + "\n"))?;
    } else {
        emit(&wrap_lines(&d.render(), output_width(), LIST_HANG))?;
    }
    Ok(EXIT_OK)
}

/// `fsarena cleanup --work-dir DIR`.
/// `fsarena cleanup --after-pid PID`, started by an MPI rank that mpirun is ending: waits
/// (a minute at most) until PID is gone, then cleans `work_dir`, again for a few seconds
/// while the job's other ranks are still ending (their runs are live until then, and a
/// tree the ranks shared may still be written into for a moment). Prints nothing: its
/// rank's output is gone with it.
pub fn cleanup_after(work_dir: &Path, pid: u32) -> i32 {
    use std::time::{Duration, Instant};
    // Gone, or a zombie (it holds nothing any more; its parent reaps it when it can).
    let alive = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit_once(") ")
                .is_some_and(|(_, rest)| !rest.starts_with('Z'))
        })
    };
    let t0 = Instant::now();
    while alive() && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let t1 = Instant::now();
    loop {
        let r = cleanup::cleanup(work_dir);
        if (r.errors.is_empty() && r.live.is_empty()) || t1.elapsed() > Duration::from_secs(10) {
            return if r.errors.is_empty() {
                EXIT_OK
            } else {
                EXIT_FAILED
            };
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

pub fn cleanup(work_dir: &Path) -> Result<i32> {
    let r = cleanup::cleanup(work_dir);
    let mut s = String::new();
    for k in &r.keys {
        s.push_str(&format!("removed the fscrypt key of {k}\n"));
    }
    for p in &r.unmounted {
        s.push_str(&format!("unmounted {}\n", p.display()));
    }
    for p in &r.detached {
        s.push_str(&format!("detached {}\n", p.display()));
    }
    for p in &r.removed {
        s.push_str(&format!("removed {}\n", p.display()));
    }
    for p in &r.live {
        s.push_str(&format!(
            "left alone (its run is still in progress): {}\n",
            p.display()
        ));
    }
    for p in &r.foreign {
        s.push_str(&format!(
            "left alone (not in the run's journal): {}\n",
            p.display()
        ));
    }
    for p in &r.kept {
        s.push_str(&format!(
            "kept, with its run's journal (it holds what the journal does not name; move that \
             and run `fsarena cleanup` again): {}\n",
            p.display()
        ));
    }
    if r.unmounted.is_empty() && r.detached.is_empty() && r.removed.is_empty() {
        s.push_str(&format!("nothing to clean up in {}\n", work_dir.display()));
    }
    for e in &r.errors {
        eprintln!("fsarena: cleanup: {e}");
    }
    // The cleanup is done whatever happens to its listing.
    let _ = emit(&s);
    Ok(if r.errors.is_empty() {
        EXIT_OK
    } else {
        EXIT_FAILED
    })
}

/// `fsarena op NAME SRC [DEST]`.
#[derive(Debug, Args)]
pub struct OpArgs {
    /// The operation.
    #[arg(value_enum)]
    pub name: crate::bench_op::Op,
    /// The tree to work on (copy/sync: the source).
    pub src: PathBuf,
    /// copy: a directory to create and copy into; sync: the mirror to bring in line.
    pub dest: Option<PathBuf>,
    /// Worker threads (default: the CPUs).
    #[arg(long)]
    pub threads: Option<usize>,
    /// search-name: glob on the file name.
    #[arg(long, default_value = "*.jpg")]
    pub pattern: String,
    /// search-size: smallest size in bytes.
    #[arg(long, default_value_t = 0)]
    pub min_size: u64,
    /// search-size: largest size in bytes.
    #[arg(long, default_value_t = u64::MAX)]
    pub max_size: u64,
    /// touch: the modification time to set, in seconds since the epoch.
    #[arg(long, default_value_t = 1_000_000_000)]
    pub time: i64,
    /// chmod: the permission bits to set, in octal.
    #[arg(long, default_value = "640")]
    pub mode: String,
    /// sync: modification times this many seconds apart count as equal (rsync
    /// --modify-window).
    #[arg(long, default_value_t = 0.0)]
    pub modify_window: f64,
    /// Run the op on SRC and on this tree in turn, one pass each, round after round, in
    /// one process, and print a line per pass (repeat for more trees; ops that change
    /// nothing only). For bench/interleave.sh.
    #[arg(long = "in-turn-with", value_name = "DIR")]
    pub in_turn_with: Vec<PathBuf>,
    /// With --in-turn-with: start each round one tree later than the round before, so no
    /// tree always follows the same one.
    #[arg(long, requires = "in_turn_with")]
    pub rotate: bool,
    /// With --in-turn-with: go on for this many seconds (whole rounds).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 10.0,
        requires = "in_turn_with",
        value_parser = seconds_in_turn
    )]
    pub seconds: f64,
}

/// `--seconds`: above zero and at most a day.
fn seconds_in_turn(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 86_400.0 => Ok(v),
        _ => Err("a number of seconds above 0 and at most 86400, e.g. 120".into()),
    }
}

/// `fsarena op`: one workload's core operation on an existing tree, for bench/.
pub fn op(a: OpArgs) -> Result<i32> {
    let mode = u32::from_str_radix(&a.mode, 8)
        .ok()
        .filter(|m| *m <= 0o7777)
        .ok_or_else(|| anyhow::anyhow!("--mode takes octal permission bits, e.g. 640"))?;
    let threads = a
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let args = crate::bench_op::OpArgs {
        name: a.name,
        src: a.src,
        dest: a.dest,
        threads,
        pattern: a.pattern,
        min_size: a.min_size,
        max_size: a.max_size,
        time: a.time,
        mode,
        modify_window_s: a.modify_window,
    };
    if !a.in_turn_with.is_empty() {
        let lasting = std::time::Duration::from_secs_f64(a.seconds);
        // A line that cannot be written (the reader has gone) ends the run, and its error
        // is the command's.
        let mut unwritten = None;
        let mut print = |turn: &crate::bench_op::in_turn::Turn| {
            let line = format!("{}\n", turn.line(args.name));
            match emit(&line) {
                Ok(()) => std::ops::ControlFlow::Continue(()),
                Err(e) => {
                    unwritten = Some(e);
                    std::ops::ControlFlow::Break(())
                }
            }
        };
        crate::bench_op::in_turn::run_in_turn(
            &args,
            &a.in_turn_with,
            lasting,
            a.rotate,
            &mut print,
        )?;
        return unwritten.map_or(Ok(EXIT_OK), Err);
    }
    let report = crate::bench_op::run(&args)?;
    emit(&format!("{}\n", report.line(args.name)))?;
    Ok(EXIT_OK)
}

/// `fsarena report DIR`.
pub fn report(dir: &Path, margin: Option<f64>, output: &OutputArgs) -> Result<i32> {
    let text = crate::report::report_text(dir, margin, output.format(), output.color())?;
    emit(&text)?;
    Ok(EXIT_OK)
}

/// `fsarena dataset DIR`: the generated data set written into a new or empty `dir`, and
/// its manifest digest printed.
pub fn dataset(spec: &crate::dataset::DatasetSpec, dir: &Path, threads: usize) -> Result<i32> {
    let manifest = spec.plan()?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    if std::fs::read_dir(dir)?.next().is_some() {
        anyhow::bail!(
            "{} is not empty: name a new or empty directory",
            dir.display()
        );
    }
    let bytes = crate::dataset::materialize(spec, &manifest, dir, threads.max(1))?;
    emit(&format!(
        "{} files, {} directories, {} bytes, {} planted duplicate groups, digest {}\n",
        manifest.files.len(),
        manifest.dirs.len(),
        bytes,
        manifest.duplicate_groups.len(),
        manifest.digest()
    ))?;
    Ok(EXIT_OK)
}
