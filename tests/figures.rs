//! Figures that agree (issue 40): one small real run whose terminal, summary.md, summary.json
//! and study.md print the same value, the same % and the same `±?` for one point; the
//! Markdown files open with what was compared and the ranking; the terminal ends with it.

mod common;

use std::process::Command;

use common::{bin, require_root, run_quiet, TestRoot};
use fsarena::report::model::format::{pct_text, value, vs_baseline, WIDE_MARK};

/// A table row, never a headline: a section's headline also starts with a target's name
/// ("xfs leads ext4 by 3.1 %") when that target leads, which is why the row must hold a `|`.
fn row_line<'a>(text: &'a str, starts: &str) -> &'a str {
    text.lines()
        .find(|l| {
            let cells = l.trim_start_matches(['|', ' ', '│']);
            cells.starts_with(starts) && cells.contains('|')
        })
        .unwrap_or_else(|| panic!("no line for {starts}:\n{text}"))
}

/// CI of 2026-11-27 failed when xfs happened to lead: `row_line` took summary.md's headline
/// "xfs leads ext4 by 3.1 %" for xfs's row.
#[test]
fn row_line_skips_a_headline_that_starts_with_the_target() {
    let md = "xfs leads ext4 by 3.1 %, undecided\n\n| target | runs |\n| xfs | 2 |\n";
    assert_eq!(row_line(md, "xfs"), "| xfs | 2 |");
    let terminal = "xfs leads ext4 by 3.1 %\nxfs    |    2 | 4358\n";
    assert_eq!(row_line(terminal, "xfs"), "xfs    |    2 | 4358");
}

/// The default run of 2026-11-26 printed ntfs's copy-verify as "+444.1 % ±?" in the terminal
/// and "(±114.4)" in summary.md: summary.md's writer never applied the `±?` rule. With two
/// runs of xfs every output now writes its difference as the terminal does, and the key
/// metric's value is the geometric mean its % compares (a table once printed an arithmetic
/// 179.7k against 178.4k beside "-21.9 %"); the cache column is the median everywhere.
#[test]
fn every_output_prints_the_same_value_percent_and_plus_minus_for_a_point() {
    require_root();
    let root = TestRoot::new("figures");
    let (out, work) = root.out_work();
    let args = [
        "--target",
        "ext4",
        "--target",
        "xfs",
        "--workload",
        "create",
        "--runs",
        "2",
        "--scale",
        "0.001",
    ];
    let run = run_quiet(&args, &out, &work);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let report = Command::new(bin())
        .args(["report"])
        .arg(&out)
        .env("COLUMNS", "250")
        .output()
        .unwrap();
    let terminal = String::from_utf8_lossy(&report.stdout).into_owned();
    let read = |name: &str| std::fs::read_to_string(out.join(name)).unwrap();
    let (summary, study) = (read("summary.md"), read("study.md"));
    let json: serde_json::Value = serde_json::from_str(&read("summary.json")).unwrap();
    let section = &json["sections"][0];
    let xfs = section["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["target"] == "xfs")
        .unwrap();
    let shown = &xfs["shown"]["files_per_s"];
    assert_eq!(shown["statistic"], "geometric_mean");
    let raw: Vec<f64> =
        serde_json::from_value(xfs["metrics"]["files_per_s"]["raw"].clone()).unwrap();
    let geomean = (raw.iter().map(|x| x.ln()).sum::<f64>() / raw.len() as f64).exp();
    assert!((shown["value"].as_f64().unwrap() / geomean - 1.0).abs() < 1e-9);
    let model = fsarena::report::build(&fsarena::results::store::load(&out).unwrap(), None);
    let comparison = model.sections[0]
        .rows
        .iter()
        .find(|r| r.target == "xfs")
        .and_then(|r| r.metric("files_per_s")?.vs_baseline.clone())
        .unwrap();
    let json_pct = xfs["metrics"]["files_per_s"]["vs_baseline"]["pct_diff"].as_f64();
    assert!((json_pct.unwrap() - comparison.pct_diff).abs() < 1e-9);
    let pct = pct_text(&comparison, 2);
    assert!(pct.ends_with(WIDE_MARK), "two runs: {pct}");
    let figure = format!("{} {WIDE_MARK}", value("files_per_s", geomean));
    let cache = xfs["shown"]["peak_cached_bytes"].clone();
    assert_eq!(cache["statistic"], "median");
    let cache = value("peak_cached_bytes", cache["value"].as_f64().unwrap());
    for (name, line) in [
        ("terminal", row_line(&terminal, "xfs")),
        ("summary.md", row_line(&summary, "xfs")),
    ] {
        assert!(line.contains(&figure), "{name}: {figure} not in {line}");
        assert!(line.contains(&pct), "{name}: {pct} not in {line}");
        assert!(line.contains(&cache), "{name}: {cache} not in {line}");
    }
    assert!(summary.contains(&vs_baseline(Some(&comparison), 2)));
    let key = row_line(&study, "files/s");
    let cell = key.split('|').nth(3).unwrap();
    assert!(
        cell.contains(&figure) && cell.contains(&format!("({pct}")),
        "study.md: {key}"
    );
    assert!(row_line(&study, "peak cache").contains(&cache), "{study}");
    // What was compared, the ranking and the warnings open both Markdown files; the
    // terminal's last word (before the report's path) is the ranking.
    for (name, md) in [("summary.md", &summary), ("study.md", &study)] {
        let head = md.split("\n## create").next().unwrap();
        for said in [
            "Compared: ext4 (baseline), xfs",
            "Data set: ",
            "Host: Linux ",
            "Date: ",
            "Command: `fsarena run --target ext4",
            "overall: ",
            "## Warnings",
        ] {
            assert!(head.contains(said), "{name} lacks {said:?}:\n{head}");
        }
    }
    let last: Vec<&str> = terminal.trim_end().lines().rev().take(4).collect();
    assert!(
        last.iter().any(|l| l.contains(" xfs ")) && last.iter().any(|l| l.contains(" ext4 ")),
        "the terminal does not end with the ranking:\n{terminal}"
    );
}

/// A difference whose interval is wider than ±100 % reads "±?" in every output's writer,
/// with three runs as with two (summary.md's "(±114.4)").
#[test]
fn an_interval_wider_than_the_difference_is_plus_minus_question_in_every_writer() {
    let base = [10.0, 10.5, 9.5];
    let cand = [20.0, 80.0, 60.0];
    let c = fsarena::stats::compare(&base, &cand, 0.05).unwrap();
    let (lo, hi) = c.pct_ci95.unwrap();
    assert!((hi - lo) / 2.0 >= 100.0, "{c:?}");
    assert!(pct_text(&c, 3).ends_with(WIDE_MARK));
    assert!(
        vs_baseline(Some(&c), 3).contains(WIDE_MARK),
        "{}",
        vs_baseline(Some(&c), 3)
    );
}
