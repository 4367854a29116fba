//! What the command line prints: every main command fits an 80-column terminal, a closed
//! pipe ends a command quietly, the machine formats parse, NO_COLOR means no escape codes,
//! `compare --fail-if-worse` gates, and numbers that would mislead are not printed.

mod common;

use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Output, Stdio};

use common::fixture::edit;
use common::{bin, require_root, TestRoot};
use fsarena::report::{self, model::format};
use fsarena::results::store;
use fsarena::stats::warnings::Warning;

/// Runs fsarena with COLUMNS=80 and colour left to its own judgement.
fn fsarena(args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .env("COLUMNS", "80")
        .env_remove("NO_COLOR")
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Every stdout line of `o` is at most 80 characters.
fn fits_80(what: &str, o: &Output) {
    let text = stdout(o);
    assert!(!text.trim().is_empty(), "{what}: no output: {o:?}");
    let long: Vec<String> = text
        .lines()
        .filter(|l| l.chars().count() > 80)
        .map(|l| format!("{} chars: {l}", l.chars().count()))
        .collect();
    assert!(
        long.is_empty(),
        "{what}: lines over 80:\n{}",
        long.join("\n")
    );
}

/// A results directory from the shared fixture (3 targets, create and io-sweep).
fn results(complete: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    common::fixture::write(dir.path(), complete);
    dir
}

#[test]
fn the_main_commands_fit_80_columns() {
    require_root();
    let root = TestRoot::new("output-80");
    let work = root.path.join("work");
    let w = work.to_str().unwrap();
    fits_80("list", &fsarena(&["list"]));
    let doctor = fsarena(&["doctor"]);
    fits_80("doctor", &doctor);
    // The machine's steadiness now, measured (either word: this host's state is not ours).
    let text = stdout(&doctor);
    let line = text
        .lines()
        .find(|l| l.starts_with("host steadiness:"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        (line.contains("steady: a ") || line.contains("UNSTEADY: a "))
            && line.contains(" ms memory walk varied "),
        "{line}"
    );
    // The hypervisor's share of CPU time, measured with every CPU busy (0 on bare metal).
    let steal = text
        .lines()
        .find_map(|l| l.strip_prefix("CPU steal:"))
        .unwrap_or_else(|| panic!("{text}"));
    let pct: f64 = steal
        .split_whitespace()
        .next()
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("{steal}"));
    assert!((0.0..=100.0).contains(&pct), "{steal}");
    assert!(
        steal.contains("% of CPU time kept by the hypervisor"),
        "{steal}"
    );
    fits_80(
        "run --dry-run",
        &fsarena(&["run", "--dry-run", "--work-dir", w]),
    );
    let a = results(true);
    let b = results(true);
    let (pa, pb) = (a.path().to_str().unwrap(), b.path().to_str().unwrap());
    fits_80("report", &fsarena(&["report", pa]));
    fits_80("compare", &fsarena(&["compare", pa, pb]));
    let out = root.path.join("out");
    std::fs::create_dir_all(root.path.join("d")).unwrap();
    let run = fsarena(&[
        "run",
        "--target",
        "ext4",
        "--target",
        &format!("dir:{}", root.path.join("d").display()),
        "--workload",
        "create,scan",
        "--runs",
        "2",
        "--scale",
        "0.001",
        "--work-dir",
        w,
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(run.status.code(), Some(0), "{run:?}");
    fits_80("run", &run);
    // The run's own report prints the same fitted tables.
    let text = stdout(&run);
    assert!(
        text.contains("create, 1 thread") && text.contains("overall"),
        "{text}"
    );
    assert!(text.contains("host: Linux"), "{text}");
}

#[test]
fn a_wide_terminal_keeps_every_column() {
    let a = results(true);
    let narrow = Command::new(bin())
        .args(["report", a.path().to_str().unwrap()])
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    let wide = Command::new(bin())
        .args(["report", a.path().to_str().unwrap()])
        .env("COLUMNS", "250")
        .output()
        .unwrap();
    let (n, w) = (stdout(&narrow), stdout(&wide));
    // At 80 columns something had to go, and the report says what; at 250 nothing does.
    assert!(n.contains("left out to fit 80 columns"), "{n}");
    assert!(!w.contains("left out to fit"), "{w}");
    for protected in ["files/s", "decision", "write amp", "space amp"] {
        assert!(n.contains(protected), "`{protected}` dropped at 80:\n{n}");
    }
    assert!(w.contains("peak cache") && w.contains("CPU sys"), "{w}");
}

/// Runs fsarena with stdout a pipe whose reader is already gone: every write is EPIPE.
fn into_closed_pipe(args: &[&str]) -> Output {
    let mut fds = [0; 2];
    // SAFETY: pipe fills the two descriptors, which are owned here from then on.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    Command::new(bin())
        .args(args)
        .stdout(Stdio::from(write))
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

#[test]
fn a_closed_pipe_ends_every_command_quietly() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path().to_str().unwrap();
    let a = results(true);
    let pa = a.path().to_str().unwrap();
    for args in [
        vec!["list"],
        vec!["run", "--dry-run", "--work-dir", w],
        vec!["run", "--dry-run", "--verbose", "--work-dir", w],
        vec!["report", pa],
        vec!["report", pa, "--format", "json"],
        vec!["compare", pa, pa],
        vec!["doctor"],
        vec!["completions", "bash"],
        vec!["man"],
    ] {
        let o = into_closed_pipe(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
        assert!(err.trim().is_empty(), "{args:?} said: {err}");
    }
}

#[test]
fn machine_formats_parse() {
    let a = results(true);
    let b = results(true);
    let (pa, pb) = (a.path().to_str().unwrap(), b.path().to_str().unwrap());
    let json = fsarena(&["report", pa, "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("report json");
    assert_eq!(v["schema_version"], 2);
    assert!(v["ranking"].as_array().is_some_and(|r| r.len() == 3), "{v}");
    let csv_out = fsarena(&["report", pa, "--format", "csv"]);
    let mut rd = csv::Reader::from_reader(&csv_out.stdout[..]);
    assert_eq!(rd.headers().unwrap().get(0), Some("workload"));
    let rows = rd.records().filter(|r| r.is_ok()).count();
    assert!(rows > 10, "{rows} csv rows");
    // Machine formats are never cut to the terminal: a CSV line may be as long as it is.
    let md = stdout(&fsarena(&["report", pa, "--format", "markdown"]));
    assert!(
        md.starts_with("# fsarena results") && md.contains("| target |"),
        "{md}"
    );
    let cj = fsarena(&["compare", pa, pb, "--format", "json"]);
    let c: serde_json::Value = serde_json::from_slice(&cj.stdout).expect("compare json");
    assert!(c["rows"].as_array().is_some_and(|r| !r.is_empty()), "{c}");
    let cc = fsarena(&["compare", pa, pb, "--format", "csv"]);
    let mut rd = csv::Reader::from_reader(&cc.stdout[..]);
    let columns = rd.headers().map(|h| h.len()).unwrap_or(0);
    assert_eq!(
        columns, 15,
        "compare csv: value_a, value_b and their statistic; the interval of B vs A and its level"
    );
    assert!(rd.records().all(|r| r.is_ok_and(|r| r.len() == columns)));
    let cm = stdout(&fsarena(&["compare", pa, pb, "--format", "markdown"]));
    assert!(cm.contains("| workload |"), "{cm}");
    // Progress and warnings stay on stderr: stdout of a json report is JSON alone.
    assert!(String::from_utf8_lossy(&json.stdout)
        .trim_start()
        .starts_with('{'));
}

#[test]
fn no_color_means_no_escape_codes() {
    let a = results(true);
    let pa = a.path().to_str().unwrap();
    let has_esc = |o: &Output| o.stdout.contains(&0x1b);
    assert!(has_esc(&fsarena(&["report", pa, "--color", "always"])));
    assert!(!has_esc(&fsarena(&["report", pa, "--color", "never"])));
    // auto: not a terminal here, so no colour.
    assert!(!has_esc(&fsarena(&["report", pa])));
    // On a terminal (script(1) gives one), auto colours unless NO_COLOR is set.
    let on_tty = |no_color: bool| {
        let mut c = Command::new("script");
        c.args([
            "-qec",
            &format!("{} report {pa}", bin().display()),
            "/dev/null",
        ])
        .env("COLUMNS", "200");
        if no_color {
            c.env("NO_COLOR", "1");
        } else {
            c.env_remove("NO_COLOR");
        }
        c.output().expect("script(1) from util-linux")
    };
    assert!(has_esc(&on_tty(false)), "no colour on a terminal");
    assert!(!has_esc(&on_tty(true)), "colour despite NO_COLOR");
}

/// `xfs` in a copy of the fixture made `factor` times as fast on every key metric.
fn scaled(factor: f64) -> tempfile::TempDir {
    let d = results(true);
    edit(d.path(), |m| {
        if m["target"] == "xfs" {
            for key in ["files_per_s", "iops"] {
                if let Some(v) = m["metrics"][key].as_f64() {
                    m["metrics"][key] = serde_json::json!(v * factor);
                }
            }
        }
        true
    });
    d
}

#[test]
fn fail_if_worse_exits_1_only_for_a_significant_loss_beyond_pct() {
    let a = results(true);
    let slower = scaled(0.7);
    let (pa, ps) = (a.path().to_str().unwrap(), slower.path().to_str().unwrap());
    let o = fsarena(&["compare", pa, ps, "--fail-if-worse", "10"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("xfs") && err.contains("worse by more than 10 %"),
        "{err}"
    );
    assert!(!err.contains("ext4"), "ext4 did not change: {err}");
    // 30 % slower is not worse by more than 50 %.
    let o = fsarena(&["compare", pa, ps, "--fail-if-worse", "50"]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    // Faster is never a failure, however small the threshold.
    let faster = scaled(1.3);
    let o = fsarena(&[
        "compare",
        pa,
        faster.path().to_str().unwrap(),
        "--fail-if-worse",
        "0",
    ]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    // Without the flag a worse B is still exit 0: compare reports, the gate judges.
    assert_eq!(fsarena(&["compare", pa, ps]).status.code(), Some(0));
    let bad = fsarena(&["compare", pa, ps, "--fail-if-worse", "-3"]);
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
}

/// Defect: the gate dropped the points B lacked or had no `ok` run of, so a B whose
/// workload failed outright passed `--fail-if-worse`. Each such point now fails it, named
/// with why; `--allow-missing` passes them and says so.
#[test]
fn fail_if_worse_fails_when_b_lacks_a_point_or_has_no_ok_run_of_it() {
    let a = results(true);
    let b = results(true);
    edit(b.path(), |m| {
        let create = m["workload"] == "create";
        if create && m["target"] == "xfs" && m["threads"] == 2 {
            m["status"] = serde_json::json!("error");
            m["error"] = serde_json::json!("mkfs.xfs failed");
        }
        // btrfs create at 1 thread never ran in B.
        !(create && m["target"] == "btrfs" && m["threads"] == 1)
    });
    let (pa, pb) = (a.path().to_str().unwrap(), b.path().to_str().unwrap());
    let o = fsarena(&["compare", pa, pb, "--fail-if-worse", "10"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("fsarena: no figure in B: create, 2 threads, xfs: no ok run in B (3 error: mkfs.xfs failed)"),
        "{err}"
    );
    assert!(
        err.contains("fsarena: no figure in B: create, 1 thread, btrfs: missing in B"),
        "{err}"
    );
    assert_eq!(err.matches("no figure in B").count(), 2, "{err}");
    // The table says it too, and JSON carries it.
    assert!(
        stdout(&o).contains("no figure in B: create, 1 thread, btrfs"),
        "{o:?}"
    );
    let json = fsarena(&["compare", pa, pb, "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["missing"].as_array().map(Vec::len), Some(2), "{v}");
    // Opting out passes, and still names what it passed.
    let o = fsarena(&[
        "compare",
        pa,
        pb,
        "--fail-if-worse",
        "10",
        "--allow-missing",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(err.matches("ignored (--allow-missing)").count(), 2, "{err}");
    // A B with every point answered passes as before; without the gate it is only a report.
    assert_eq!(
        fsarena(&["compare", pa, pa, "--fail-if-worse", "10"])
            .status
            .code(),
        Some(0)
    );
    assert_eq!(fsarena(&["compare", pa, pb]).status.code(), Some(0));
    assert_eq!(
        fsarena(&["compare", pa, pb, "--allow-missing"])
            .status
            .code(),
        Some(2)
    );
}

/// The fixture cut to its first `n` repetitions.
fn with_runs(n: u64) -> (tempfile::TempDir, report::Report) {
    let d = results(true);
    edit(d.path(), |m| {
        m["repetition"].as_u64().is_some_and(|r| r < n)
    });
    let r = report::build(&store::load(d.path()).unwrap(), None);
    (d, r)
}

#[test]
fn one_run_shows_a_dash_for_cv_and_said_once_warnings() {
    let (_d, r) = with_runs(1);
    let s = &r.sections[0];
    for row in &s.rows {
        let c = format::row_cells(row, &s.key_metric, &r.baseline);
        assert_eq!(c.cv, "—", "{}", row.target);
        assert!(!c.key.contains('±'), "{}", c.key);
    }
    let text = report::export::terminal::render_width(&r, false, 80);
    // No CV column of zeros: the table leaves out a column with nothing to say.
    let header = text.lines().find(|l| l.starts_with("target")).unwrap();
    assert!(!header.contains("CV"), "{text}");
    // Every row of every table has the same "only 1 successful run" warning: said once.
    assert_eq!(text.matches("only 1 successful run").count(), 1, "{text}");
}

#[test]
fn two_runs_say_the_interval_is_meaningless() {
    let (_d, r) = with_runs(2);
    let s = &r.sections[0];
    let c = format::row_cells(&s.rows[0], &s.key_metric, &r.baseline);
    assert!(c.key.ends_with(format::WIDE_MARK) && c.wide, "{}", c.key);
    let text = report::export::terminal::render_width(&r, false, 80);
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("the 95 % interval is not shown"), "{text}");
}

#[test]
fn a_workload_with_its_own_thread_count_is_headed_by_it() {
    let d = results(true);
    // io-sweep stands in for db here: a workload that ignores --threads and records how
    // many workers it ran.
    edit(d.path(), |m| {
        if m["workload"] == "io-sweep" {
            m["metrics"]["worker_threads"] = serde_json::json!(12.0);
        }
        true
    });
    let r = report::build(&store::load(d.path()).unwrap(), None);
    for s in &r.sections {
        let want = match s.workload.as_str() {
            "io-sweep" => "12 threads",
            _ if s.threads == 1 => "1 thread",
            _ => "2 threads",
        };
        assert!(s.title().ends_with(want), "{}", s.title());
    }
}

#[test]
fn the_overall_ranking_is_a_geometric_mean_with_its_interval() {
    let d = results(true);
    let r = report::build(&store::load(d.path()).unwrap(), None);
    let ext4 = r.ranking.iter().find(|s| s.target == "ext4").unwrap();
    assert!((ext4.geomean - 1.0).abs() < 1e-12);
    // xfs: 0.99 of ext4 on two create points, 0.5 on every io-sweep point.
    let xfs = r.ranking.iter().find(|s| s.target == "xfs").unwrap();
    let logs: Vec<f64> = r
        .sections
        .iter()
        .map(|s| {
            let m = |t: &str| {
                s.rows
                    .iter()
                    .find(|r| r.target == t)
                    .unwrap()
                    .mean(&s.key_metric)
            };
            (m("xfs").unwrap() / m("ext4").unwrap()).ln()
        })
        .collect();
    let want = (logs.iter().sum::<f64>() / logs.len() as f64).exp();
    assert!(
        (xfs.geomean - want).abs() < 1e-9,
        "{} vs {want}",
        xfs.geomean
    );
    let (lo, hi) = xfs.ci95.unwrap();
    assert!(lo < xfs.geomean && xfs.geomean < hi);
    let ranks: Vec<_> = r
        .ranking
        .iter()
        .map(|s| (s.target.as_str(), s.rank))
        .collect();
    assert_eq!(
        ranks,
        [("ext4", Some(1)), ("xfs", Some(2)), ("btrfs", Some(3))]
    );
}

/// The fio study (2026-11-28) ranked exFAT and ntfs-3g above btrfs partly on direct reads
/// their FUSE daemons served from memory, though every such row carried the warning. A
/// result read from memory is now left out of the ranking, and the ranking says how many.
#[test]
fn results_read_from_memory_are_left_out_of_the_ranking() {
    let d = results(true);
    edit(d.path(), |m| {
        if m["workload"] == "io-sweep" && m["target"] == "xfs" {
            m["metrics"]["reads_from_memory"] = serde_json::json!(1.0);
        }
        true
    });
    let r = report::build(&store::load(d.path()).unwrap(), None);
    let io = r
        .sections
        .iter()
        .filter(|s| s.workload == "io-sweep")
        .count();
    let xfs = r.ranking.iter().find(|s| s.target == "xfs").unwrap();
    assert!(io > 0 && xfs.from_memory == io, "{xfs:?}");
    assert_eq!(xfs.sections, r.sections.len() - io);
    // Only the create points are left.
    let logs: Vec<f64> = (r.sections.iter().filter(|s| s.workload != "io-sweep"))
        .map(|s| {
            let row = |t: &str| s.rows.iter().find(|r| r.target == t).unwrap();
            (row("xfs").shown_value(&s.key_metric).unwrap()
                / row("ext4").shown_value(&s.key_metric).unwrap())
            .ln()
        })
        .collect();
    let want = (logs.iter().sum::<f64>() / logs.len() as f64).exp();
    assert!((xfs.geomean - want).abs() < 1e-9, "{xfs:?} vs {want}");
    let btrfs = r.ranking.iter().find(|s| s.target == "btrfs").unwrap();
    assert_eq!(btrfs.from_memory, 0);
    let text = report::export::terminal::render_width(&r, false, 80);
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(&format!("{io} left out: read from memory")),
        "{text}"
    );
}

#[test]
fn dry_run_summarises_without_debug_text_and_lists_cells_only_when_verbose() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path().to_str().unwrap();
    let short = stdout(&fsarena(&["run", "--dry-run", "--work-dir", w]));
    assert!(short.lines().count() < 30, "{short}");
    for debug in ["Small", "Fixed(", "Auto {", "[1]"] {
        assert!(!short.contains(debug), "`{debug}` in:\n{short}");
    }
    assert!(
        short.contains("repetitions =") && short.contains("cells"),
        "{short}"
    );
    assert!(
        short.contains("data set: small") && short.contains("estimate:"),
        "{short}"
    );
    assert!(!short.contains("cell 1:"), "{short}");
    let long = stdout(&fsarena(&[
        "run",
        "--dry-run",
        "--verbose",
        "--work-dir",
        w,
    ]));
    assert!(
        long.contains("cell 1:") && long.lines().count() > 100,
        "{long}"
    );
}

#[test]
fn completions_and_the_man_page_come_from_the_clap_definitions() {
    let bash = stdout(&fsarena(&["completions", "bash"]));
    assert!(
        bash.contains("_fsarena") && bash.contains("--fail-if-worse"),
        "{bash}"
    );
    let man = stdout(&fsarena(&["man"]));
    assert!(
        man.starts_with(".ie") || man.contains(".TH fsarena"),
        "{man}"
    );
    assert!(man.contains("compare"), "{man}");
    let bad = fsarena(&["completions", "cmd.exe"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn a_failing_gate_says_when_the_second_runs_machine_ran_slower() {
    let probes = |d: &tempfile::TempDir, ms: f64| {
        edit(d.path(), |m| {
            m["host_probe_ms"] = serde_json::json!(ms);
            true
        });
    };
    let a = results(true);
    probes(&a, 3.0);
    let slower = scaled(0.7);
    probes(&slower, 3.6);
    let (pa, ps) = (a.path().to_str().unwrap(), slower.path().to_str().unwrap());
    let o = fsarena(&["compare", pa, ps, "--fail-if-worse", "10"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("fsarena: note: B's host ran the same memory walk 20 % slower than A's"),
        "{err}"
    );
    // The gate's verdict is the statistics', the note only says what else moved.
    probes(&slower, 3.0);
    let o = fsarena(&["compare", pa, ps, "--fail-if-worse", "10"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(!err.contains("note:"), "{err}");
}

/// Issue 56 item 4: a replay whose time on the file-system type it was recorded on strayed
/// from the program's own by more than 25 % said so only in a note of the raw record; no
/// output showed it. It is now a warning on the row, in every output that lists warnings.
#[test]
fn a_replay_gap_beyond_a_quarter_of_the_programs_time_is_a_warning_on_its_row() {
    let d = results(true);
    edit(d.path(), |m| {
        if m["workload"] == "create" {
            let gap = if m["target"] == "xfs" { 40.0 } else { 20.0 };
            m["metrics"]["replay_time_gap_pct"] = serde_json::json!(gap);
        }
        true
    });
    let r = report::build(&store::load(d.path()).unwrap(), None);
    let rows = (r.sections.iter().filter(|s| s.workload == "create")).flat_map(|s| &s.rows);
    let mut seen = 0;
    for row in rows {
        let gap = (row.warnings.iter()).find_map(|w| match w {
            Warning::ReplayTimeGap { count, pct } => Some((*count, *pct)),
            _ => None,
        });
        if row.target == "xfs" {
            assert_eq!(gap, Some((row.ok, 40.0)), "{row:?}");
            seen += 1;
        } else {
            assert_eq!(gap, None, "{} within 25 % yet warned", row.target);
        }
    }
    assert!(seen > 0, "no create row of xfs");
    let text = report::export::terminal::render_width(&r, false, 100);
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("strayed from the program's own"), "{text}");
}
