//! Reports from a fixed results set: snapshot tests of the terminal table, CSV and
//! Markdown (review a changed snapshot by eye, then bless it with UPDATE_SNAPSHOTS=1), and
//! the "incomplete" label of an interrupted run.

mod common;

use std::path::Path;

use fsarena::report;
use fsarena::results::store::{self, Store};
use fsarena::results::{HostFacts, Measurement, Status};
use fsarena::stats::Decision;

fn check_snapshot(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(name);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "missing snapshot {}: run with UPDATE_SNAPSHOTS=1 and review it",
            path.display()
        )
    });
    if expected != actual {
        let diff: Vec<String> = expected
            .lines()
            .zip(actual.lines())
            .enumerate()
            .filter(|(_, (e, a))| e != a)
            .take(5)
            .map(|(i, (e, a))| format!("line {}:\n  want: {e}\n  got:  {a}", i + 1))
            .collect();
        panic!("{name} differs from its snapshot:\n{}", diff.join("\n"));
    }
}

fn fixture(complete: bool) -> (tempfile::TempDir, report::Report) {
    let dir = tempfile::tempdir().unwrap();
    common::fixture::write(dir.path(), complete);
    let loaded = store::load(dir.path()).unwrap();
    let r = report::build(&loaded, None);
    (dir, r)
}

#[test]
fn terminal_csv_and_markdown_match_their_snapshots() {
    let (_dir, r) = fixture(true);
    check_snapshot(
        "terminal.txt",
        &report::export::terminal::render_width(&r, false, 80),
    );
    check_snapshot("summary.csv", &report::export::csv::render(&r).unwrap());
    check_snapshot("summary.md", &report::export::markdown::render(&r));
}

#[test]
fn decisions_marks_and_baseline_comparisons_are_right() {
    let (_dir, r) = fixture(true);
    let s = r
        .sections
        .iter()
        .find(|s| s.workload == "create" && s.threads == 1)
        .unwrap();
    assert_eq!(s.key_metric, "files_per_s");
    // ext4 and xfs are 1 % apart with 3 % jitter and 3 runs: neither a real difference nor
    // shown equal within ±5 %, so undecided, with a number of runs that would decide it; no ✓.
    assert!(
        s.decision.contains("ext4 leads xfs")
            && s.decision.contains("undecided")
            && s.decision.contains("more runs per target"),
        "{}",
        s.decision
    );
    let mark = |t: &str| s.rows.iter().find(|r| r.target == t).unwrap().mark;
    assert_eq!(mark("ext4"), None);
    assert_eq!(mark("btrfs"), Some(report::model::section::Mark::Worst));
    let xfs = s.rows.iter().find(|r| r.target == "xfs").unwrap();
    assert!(
        !xfs.metric("files_per_s")
            .unwrap()
            .vs_baseline
            .as_ref()
            .unwrap()
            .significant
    );
    let btrfs = s.rows.iter().find(|r| r.target == "btrfs").unwrap();
    let c = btrfs
        .metric("files_per_s")
        .unwrap()
        .vs_baseline
        .as_ref()
        .unwrap();
    assert!(c.significant && (c.pct_diff + 75.0).abs() < 2.0, "{c:?}");
    assert_eq!(c.verdict.as_ref().unwrap().decision, Decision::Worse);
    let x = xfs.metric("files_per_s").unwrap().vs_baseline.as_ref();
    assert_eq!(
        x.unwrap().verdict.as_ref().unwrap().decision,
        Decision::Undecided
    );
    assert!(r.incomplete.is_none());
}

#[test]
fn an_interrupted_run_is_labelled_incomplete_everywhere() {
    let (dir, r) = fixture(false);
    let why = r.incomplete.clone().expect("incomplete");
    assert!(
        why.contains("2 planned measurement cell(s) missing") && why.contains("1 interrupted"),
        "{why}"
    );
    assert!(report::export::terminal::render(&r, false).starts_with("INCOMPLETE:"));
    assert!(report::export::markdown::render(&r).contains("**Incomplete:**"));
    report::write_files(dir.path(), None).unwrap();
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(html.contains("class=\"incomplete\""));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(json["schema_version"], 2);
    assert!(json["incomplete"].as_str().unwrap().contains("missing"));
}

#[test]
fn a_corrupted_results_line_is_skipped_and_said() {
    let (dir, _) = fixture(true);
    let path = dir.path().join(store::FILE_NAME);
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("{\"record\":\"measurement\",\"target\":\n");
    std::fs::write(&path, text).unwrap();
    let r = report::build(&store::load(dir.path()).unwrap(), None);
    assert_eq!(r.skipped_lines.len(), 1);
    let out = report::export::terminal::render(&r, false);
    assert!(out.contains("skipped"), "{out}");
    assert!(!r.sections.is_empty());
}

/// The comparison of two results directories as `fsarena compare` prints its table, without
/// colour.
fn compared(a: &Path, b: &Path) -> String {
    let table = report::Format::named("table").unwrap();
    report::compare_text(a, b, None, table, false).unwrap().0
}

#[test]
fn compare_matches_runs_of_the_same_plan() {
    let (a, _) = fixture(true);
    let (b, _) = fixture(true);
    let out = compared(a.path(), b.path());
    // The same data twice: no change is significant, and none may be called better/worse.
    assert!(!out.contains("≈"), "{out}");
    assert!(
        !out.contains("better") || out.contains("better/worse ="),
        "{out}"
    );
    assert!(
        out.contains("equivalent") && out.contains("Benjamini–Hochberg"),
        "{out}"
    );
    assert!(out.contains("ext4") && out.contains("create"));
}

/// One `create` section, files/s per target as given (fs = the name before any `-`), and
/// `ext4` as the baseline, whatever order the targets come in.
fn decided(targets: &[(&str, &str, [f64; 5])], margin: Option<f64>) -> report::Report {
    let dir = tempfile::tempdir().unwrap();
    let plan_targets: Vec<serde_json::Value> = targets
        .iter()
        .map(|(n, fs, _)| serde_json::json!({"name": n, "fs": fs, "mkfs_args": [], "mount_options": [], "location": "loop", "size": null, "description": ""}))
        .collect();
    let host = HostFacts {
        fsarena_version: "0.1.0".into(),
        kernel: "6.1.0-test".into(),
        cpu_model: "Test CPU".into(),
        cpus: 2,
        plan: serde_json::json!({
            "targets": plan_targets, "workloads": ["create"], "threads": [1],
            "runs": {"fixed": 5},
            "dataset": {"profile": "small", "scale": 0.01, "seed": 42, "duplicate_fraction": 0.1, "compressibility": 0.0, "source_dir": null},
            "baseline": "ext4", "timeout": 600.0, "workload_options": {}
        }),
        ..Default::default()
    };
    let mut store = Store::create(dir.path(), &host).unwrap();
    for rep in 0..5u32 {
        for (name, fs, values) in targets {
            let f = values[rep as usize];
            store
                .append(&Measurement {
                    target: name.to_string(),
                    fs: fs.to_string(),
                    workload: "create".into(),
                    repetition: rep,
                    threads: 1,
                    status: Status::Ok,
                    metrics: [
                        ("files_per_s".to_string(), f),
                        ("seconds".to_string(), 1e4 / f),
                    ]
                    .into_iter()
                    .collect(),
                    ..Default::default()
                })
                .unwrap();
        }
    }
    drop(store);
    report::build(&store::load(dir.path()).unwrap(), margin)
}

const EXT4: [f64; 5] = [1000.0, 1010.0, 990.0, 1005.0, 995.0];
const FOUR: [(&str, &str, [f64; 5]); 6] = [
    // A RAM disk, five times faster than anything: a reference, never the winner.
    ("tmpfs", "tmpfs", [5000.0, 5050.0, 4950.0, 5020.0, 4980.0]),
    ("ext4", "ext4", EXT4),
    ("xfs", "xfs", [1200.0, 1210.0, 1190.0, 1205.0, 1195.0]),
    ("btrfs", "btrfs", [600.0, 605.0, 595.0, 602.0, 598.0]),
    // 0.1 % apart, tight: its 90 % interval is well inside ±5 %.
    ("f2fs", "f2fs", [1002.0, 1012.0, 992.0, 1001.0, 998.0]),
    // Same mean as ext4 give or take, but a wide spread: cannot tell yet.
    ("ntfs", "ntfs", [1000.0, 1100.0, 950.0, 1080.0, 920.0]),
];

fn decision_of(r: &report::Report, target: &str) -> Decision {
    let s = &r.sections[0];
    let row = s.rows.iter().find(|r| r.target == target).unwrap();
    let c = row.metric("files_per_s").unwrap().vs_baseline.as_ref();
    c.unwrap().verdict.as_ref().unwrap().decision
}

#[test]
fn every_comparison_is_better_worse_equivalent_or_undecided() {
    let r = decided(&FOUR, None);
    assert_eq!(r.margin_pct, 5.0);
    assert_eq!(decision_of(&r, "xfs"), Decision::Better);
    assert_eq!(decision_of(&r, "btrfs"), Decision::Worse);
    assert_eq!(decision_of(&r, "f2fs"), Decision::Equivalent);
    assert_eq!(decision_of(&r, "ntfs"), Decision::Undecided);
    let s = &r.sections[0];
    let ntfs = s.rows.iter().find(|r| r.target == "ntfs").unwrap();
    let v = ntfs
        .metric("files_per_s")
        .unwrap()
        .vs_baseline
        .as_ref()
        .unwrap();
    let v = v.verdict.as_ref().unwrap();
    assert!(v.runs_to_decide.is_some_and(|n| n > 0), "{v:?}");
    assert!(v.p_adjusted >= 0.05);
    // A tighter margin turns "equivalent" into "undecided": the margin is used.
    let tight = decided(&FOUR, Some(0.5));
    assert_eq!(tight.margin_pct, 0.5);
    assert_eq!(decision_of(&tight, "f2fs"), Decision::Undecided);
    // Every output says the words, and none says "≈".
    let term = report::export::terminal::render(&r, false);
    let md = report::export::markdown::render(&r);
    let csv = report::export::csv::render(&r).unwrap();
    let html = report::export::html::render(&r);
    for out in [&term, &md, &csv, &html] {
        for word in ["better", "worse", "equivalent", "undecided"] {
            assert!(out.contains(word), "`{word}` missing from:\n{out}");
        }
        assert!(!out.contains('≈'), "{out}");
    }
    assert!(
        term.contains("false discovery rate")
            && md.contains("false discovery rate")
            && html.contains("false discovery rate")
    );
    let json = serde_json::to_value(&r).unwrap();
    let row = |t: &str| {
        json["sections"][0]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["target"] == t)
            .unwrap()["metrics"]["files_per_s"]["vs_baseline"]
            .clone()
    };
    assert_eq!(row("f2fs")["decision"], "equivalent");
    assert_eq!(row("xfs")["decision"], "better");
    assert_eq!(row("xfs")["margin_pct"], 5.0);
    assert!(row("ntfs")["p_adjusted"].as_f64().unwrap() >= 0.05);
    assert_eq!(row("f2fs")["pct_ci90"].as_array().unwrap().len(), 2);
}

#[test]
fn tmpfs_is_a_reference_never_the_winner() {
    let r = decided(&FOUR, None);
    let s = &r.sections[0];
    let tmpfs = s.rows.iter().find(|r| r.target == "tmpfs").unwrap();
    assert!(tmpfs.reference);
    assert_eq!(tmpfs.mark, None, "tmpfs marked");
    assert!(!s.decision.contains("tmpfs"), "{}", s.decision);
    assert!(s.decision.starts_with("xfs wins"), "{}", s.decision);
    let mark = |t: &str| s.rows.iter().find(|r| r.target == t).unwrap().mark;
    assert_eq!(mark("xfs"), Some(report::model::section::Mark::Best));
    assert_eq!(mark("btrfs"), Some(report::model::section::Mark::Worst));
    let term = report::export::terminal::render_width(&r, false, 80);
    assert!(
        term.contains("tmpfs (RAM)") && term.contains("never ranked"),
        "{term}"
    );
    // The overall ranking: a RAM disk is listed, five times faster, and never ranked.
    let place = |t: &str| r.ranking.iter().find(|s| s.target == t).unwrap();
    assert_eq!(place("tmpfs").rank, None);
    assert!(place("tmpfs").geomean > 4.0);
    assert_eq!(place("xfs").rank, Some(1));
    assert_eq!(place("btrfs").rank, Some(r.ranking.len() - 1));
    let (lo, hi) = place("xfs").ci95.unwrap();
    assert!(lo < 1.2 && 1.2 < hi && lo > 1.0, "{lo} {hi}");
    assert!(term.contains(" 1. xfs "), "{term}");
    // tmpfs alone beside one disk target: the disk target is the only one measured.
    let r = decided(&[FOUR[0], FOUR[1]], None);
    assert_eq!(r.sections[0].decision, "only ext4 was measured");
    assert!(r.sections[0].rows.iter().all(|r| r.mark.is_none()));
}

#[test]
fn the_hosts_steadiness_is_said_in_every_report_and_warned_when_unsteady() {
    let dir = tempfile::tempdir().unwrap();
    common::fixture::write(dir.path(), true);
    let mut loaded = store::load(dir.path()).unwrap();
    // Results from before the probe: nothing is said.
    let r = report::build(&loaded, None);
    assert!(r.steadiness.is_none());
    assert!(!report::export::terminal::render_width(&r, false, 80).contains("host st"));

    // The same walk at 2.6–3.9 ms: a robust CV of 17 %, far above the 5 % line.
    let unsteady = [3.0, 3.4, 2.7, 3.6, 2.8, 3.2, 2.6, 3.9];
    for (m, ms) in loaded.measurements.iter_mut().zip(unsteady.iter().cycle()) {
        m.host_probe_ms = Some(*ms);
    }
    let r = report::build(&loaded, None);
    let s = r.steadiness.clone().expect("probes were recorded");
    assert_eq!(s.probes, loaded.measurements.len());
    assert!(s.unsteady && s.cv > 0.1, "{s:?}");
    let text = report::export::terminal::render_width(&r, false, 80);
    assert!(text.contains("host unsteady:"), "{text}");
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    assert!(report::export::markdown::render(&r).contains("host unsteady:"));
    assert!(report::export::html::render(&r).contains("<p id=\"steadiness\">host unsteady:"));
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["steadiness"]["unsteady"], true);

    // Within 1 % of 3 ms: steady, said without the warning.
    for (i, m) in loaded.measurements.iter_mut().enumerate() {
        m.host_probe_ms = Some(3.0 + 0.01 * (i % 3) as f64);
    }
    let r = report::build(&loaded, None);
    let text = report::export::terminal::render_width(&r, false, 80);
    assert!(
        text.contains("host steady:") && !text.contains("unsteady"),
        "{text}"
    );
    assert!(!text.contains("hypervisor"), "no steal recorded: {text}");

    // On a VM whose hypervisor ran other work: each phase busy 30 % of the machine and kept
    // waiting 10 % (a quarter of what it asked for), one phase 30 % (half): said, with both.
    for (i, m) in loaded.measurements.iter_mut().enumerate() {
        let steal = if i == 0 { 30.0 } else { 10.0 };
        m.metrics.insert("cpu_user_pct".into(), 10.0);
        m.metrics.insert("cpu_system_pct".into(), 20.0);
        m.metrics.insert("cpu_steal_pct".into(), steal);
    }
    let r = report::build(&loaded, None);
    let s = r.steadiness.clone().unwrap();
    assert_eq!(
        (s.stolen_median_pct, s.stolen_max_pct),
        (Some(25.0), Some(50.0))
    );
    let text = report::export::terminal::render_width(&r, false, 80);
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("the hypervisor kept 25 % of the CPU time a phase asked for")
            && flat.contains("up to 50 % in one phase"),
        "{text}"
    );
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    assert!(report::export::markdown::render(&r).contains("the hypervisor kept 25 %"));
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["steadiness"]["stolen_median_pct"], 25.0);
    // Under 1 % stolen is tick rounding, or bare metal: not said.
    for m in loaded.measurements.iter_mut() {
        m.metrics.insert("cpu_steal_pct".into(), 0.1);
    }
    let r = report::build(&loaded, None);
    assert!(!report::export::terminal::render_width(&r, false, 80).contains("hypervisor"));
}

/// Sets the host probes of the measurements under `dir` to `ms`, in turn.
fn with_probes(dir: &Path, ms: &[f64]) {
    let next = std::cell::Cell::new(0);
    common::fixture::edit(dir, |m| {
        m["host_probe_ms"] = serde_json::json!(ms[next.get() % ms.len()]);
        next.set(next.get() + 1);
        true
    });
}

#[test]
fn compare_says_when_the_second_runs_machine_was_slower() {
    let (a, _) = fixture(true);
    let (b, _) = fixture(true);
    let steady = [3.0, 3.01, 2.99, 3.02, 2.98];
    with_probes(a.path(), &steady);
    with_probes(b.path(), &steady);
    let out = compared(a.path(), b.path());
    assert!(!out.contains("note:"), "{out}");

    // The same data, but B's machine ran the walk 20 % slower: said, with both medians.
    with_probes(b.path(), &steady.map(|x| x * 1.2));
    let c = report::model::compare::build(a.path(), b.path(), None).unwrap();
    assert!((c.host_shift_pct().unwrap() - 20.0).abs() < 1e-9);
    let out = report::export::terminal::render_comparison(&c, false, 80);
    assert!(
        out.contains("B's host ran the same memory walk 20 % slower than A's (median 3.60 vs"),
        "{out}"
    );
    assert!(out.lines().all(|l| l.chars().count() <= 80), "{out}");
    assert!(report::export::markdown::render_comparison(&c)
        .contains("> B's host ran the same memory walk"));
    let json = serde_json::to_value(&c).unwrap();
    assert_eq!(json["steadiness_b"]["unsteady"], false);

    // B's VM lost a fifth of its phases' CPU time to the hypervisor: said; A's none.
    common::fixture::edit(b.path(), |m| {
        m["metrics"]["cpu_user_pct"] = serde_json::json!(30.0);
        m["metrics"]["cpu_system_pct"] = serde_json::json!(10.0);
        m["metrics"]["cpu_steal_pct"] = serde_json::json!(10.0);
        true
    });
    let c = report::model::compare::build(a.path(), b.path(), None).unwrap();
    let notes = c.host_notes().join("\n");
    assert!(
        notes.contains("B's hypervisor kept 20 % of the CPU time a phase asked for")
            && !notes.contains("A's hypervisor"),
        "{notes}"
    );
    let out = report::export::terminal::render_comparison(&c, false, 80);
    assert!(out.lines().all(|l| l.chars().count() <= 80), "{out}");
}

/// The time budget's open questions are the report's undecided key-metric comparisons of
/// the disk targets with the baseline, read from the same decisions (stats::verdicts).
#[test]
fn the_budget_asks_exactly_what_the_report_leaves_undecided() {
    let (dir, r) = fixture(true);
    let loaded = store::load(dir.path()).unwrap();
    let mut undecided = Vec::new();
    for s in &r.sections {
        for row in s.rows.iter().filter(|r| !r.reference) {
            let v = row
                .metric(&s.key_metric)
                .and_then(|m| m.vs_baseline.as_ref())
                .and_then(|c| c.verdict.as_ref());
            if let Some(v) = v.filter(|v| v.decision == Decision::Undecided) {
                undecided.push((
                    row.target.clone(),
                    s.workload.clone(),
                    s.threads,
                    s.variant.clone(),
                    v.runs_to_decide,
                ));
            }
        }
    }
    let open: Vec<_> = fsarena::runner::budget::open_questions(&loaded, r.margin_pct)
        .unwrap()
        .into_iter()
        .map(|o| {
            let g = o.group;
            (g.target, g.workload, g.threads, o.variant, o.runs_to_decide)
        })
        .collect();
    assert!(!open.is_empty());
    assert_eq!(open, undecided);
}

/// Issue 41 item 3's leftover: the run's family moved to the adaptive two-stage step-up,
/// yet the legend still said "significant after Benjamini–Hochberg control" and every
/// headline "Benjamini–Hochberg p = …". The verdicts now carry the procedure that adjusted
/// them, the report names that one, and this checks it against the adjusted p-values
/// themselves: they are the two-stage step-up's (not BH's) over the run's family, and no
/// output of the run says Benjamini–Hochberg; `compare`, which keeps plain BH, says so.
#[test]
fn the_legend_names_the_procedure_the_decisions_came_from() {
    use fsarena::stats::decision::{benjamini_hochberg, two_stage};
    use fsarena::stats::{verdicts, Adjustment};
    let r = decided(&FOUR, None);
    // The run's family, as the report's verdicts were made: every key-metric comparison
    // with the baseline, and the ranking pairs that are not one of those.
    let key = |w: &str| report::key_metric(w);
    let looks = fsarena::stats::sequential::Looks::fixed();
    let points = verdicts::decide(&r.measurements, "ext4", r.margin_pct, &looks, &key);
    let mut members = Vec::new();
    for p in &points {
        for g in &p.groups {
            let c = g
                .metrics
                .get(&p.key.name)
                .and_then(|m| m.vs_baseline.as_ref());
            let Some((c, v)) = c.and_then(|c| Some((c, c.verdict.clone()?))) else {
                continue;
            };
            // docs/statistics.md: a called difference shows an interval that leaves 0 out.
            if matches!(v.decision, Decision::Better | Decision::Worse) {
                let (lo, hi) = c.pct_ci95.unwrap();
                assert!(lo > 0.0 || hi < 0.0, "{c:?}");
            }
            members.push(v);
        }
        // A pair with the baseline in it is that comparison again, one member of the family.
        let target = |i: usize| p.groups[i].key.target.as_str();
        let own = |w: usize, n: usize| target(w) != "ext4" && target(n) != "ext4";
        for pair in p.pairs.iter().filter(|pair| own(pair.win, pair.next)) {
            members.extend(pair.cmp.as_ref().and_then(|c| c.verdict.clone()));
        }
    }
    let raw: Vec<f64> = members.iter().map(|v| v.p_sequential.unwrap()).collect();
    let (adaptive, plain) = (two_stage(&raw, 0.05).adjusted, benjamini_hochberg(&raw));
    assert!(members.len() >= 5 && adaptive != plain, "{raw:?}");
    for (v, want) in members.iter().zip(&adaptive) {
        assert!((v.p_adjusted - want).abs() < 1e-12, "{v:?} against {want}");
        assert_eq!(v.adjustment, Adjustment::TwoStage);
    }
    assert_eq!(r.adjustment, Adjustment::TwoStage);
    let name = Adjustment::TwoStage.name();
    let term = report::export::terminal::render_width(&r, false, 10_000);
    let md = report::export::markdown::render(&r);
    let html = report::export::html::render(&r);
    for out in [&term, &md, &html] {
        let named = out.contains(name) || out.contains(&name.replace('&', "&amp;"));
        assert!(named, "the procedure is not named:\n{out}");
        assert!(!out.contains("Benjamini–Hochberg"), "{out}");
        assert!(out.contains("adjusted p"), "{out}");
    }
    // compare adjusts its own family with plain BH, and says so.
    let (a, _) = fixture(true);
    let (b, _) = fixture(true);
    let c = report::model::compare::build(a.path(), b.path(), None).unwrap();
    assert_eq!(c.adjustment, Adjustment::BenjaminiHochberg);
    let out = report::export::terminal::render_comparison(&c, false, 10_000);
    assert!(
        out.contains(Adjustment::BenjaminiHochberg.name())
            && out.contains("compare keeps plain BH"),
        "{out}"
    );
}

/// Issue 40 item 3: `fsarena compare` printed each side's geometric mean in its table but
/// wrote the arithmetic mean into its JSON and CSV (`mean_a`, `mean_b`), so a script read
/// another figure than the run's own report. Both now carry the figure the report prints
/// for the key metric, and say which statistic it is.
#[test]
fn compare_shows_the_figure_the_report_shows() {
    let (a, ra) = fixture(true);
    let (b, _) = fixture(true);
    let c = report::model::compare::build(a.path(), b.path(), None).unwrap();
    assert!(!c.rows.is_empty());
    for row in &c.rows {
        let section = ra
            .sections
            .iter()
            .find(|s| {
                s.workload == row.workload
                    && s.point_label() == row.variant
                    && s.worker_threads() == row.threads
            })
            .unwrap();
        let r = section
            .rows
            .iter()
            .find(|r| r.target == row.target)
            .unwrap();
        let shown = &r.shown[&section.key_metric];
        assert_eq!(row.statistic, shown.statistic, "{row:?}");
        assert!(
            (row.value_a - shown.value).abs() <= 1e-9 * shown.value.abs(),
            "{row:?}"
        );
        let m = r.metric(&section.key_metric).unwrap();
        if m.raw.iter().any(|&x| x != m.raw[0]) {
            assert!(
                (row.value_a - m.summary.mean).abs() > 0.0,
                "not the arithmetic mean"
            );
        }
    }
    let json = serde_json::to_value(&c).unwrap();
    let row = &json["rows"][0];
    assert!(row.get("mean_a").is_none() && row["statistic"] == "geometric_mean");
    let csv = report::export::csv::render_comparison(&c).unwrap();
    assert!(csv
        .lines()
        .next()
        .unwrap()
        .contains("value_a,value_b,statistic"));
    assert!(csv.contains("geometric mean"));
}

/// On a VM whose hypervisor stole a varying share of the CPU, the comparisons are tested at
/// equal steal (`stats::steal`): summary.json marks each one adjusted, with its slope, and
/// the legend says how many; the same records without steal figures are judged as before,
/// and nothing is said.
#[test]
fn differences_adjusted_for_cpu_steal_are_marked_in_the_legend_and_summary() {
    let dir = tempfile::tempdir().unwrap();
    common::fixture::write(dir.path(), true);
    let mut loaded = store::load(dir.path()).unwrap();
    let marked = |r: &report::Report| -> Vec<f64> {
        let json = serde_json::to_value(r).unwrap();
        let mut slopes = Vec::new();
        for s in json["sections"].as_array().unwrap() {
            let key = s["key_metric"].as_str().unwrap();
            for row in s["rows"].as_array().unwrap() {
                let vs = &row["metrics"][key]["vs_baseline"];
                if vs["steal_adjusted"] == true {
                    slopes.push(vs["steal_slope"].as_f64().unwrap());
                }
            }
        }
        slopes
    };
    let key_verdicts = |r: &report::Report| -> Vec<serde_json::Value> {
        let json = serde_json::to_value(r).unwrap();
        let sections = json["sections"].as_array().unwrap().clone();
        sections
            .iter()
            .flat_map(|s| {
                let key = s["key_metric"].as_str().unwrap().to_string();
                let rows = s["rows"].as_array().unwrap().clone();
                rows.into_iter()
                    .map(move |row| row["metrics"][&key]["vs_baseline"].clone())
            })
            .collect()
    };
    let plain = report::build(&loaded, None);
    assert!(marked(&plain).is_empty());
    assert!(!report::export::markdown::render(&plain).contains("stole"));
    // Bare metal: a steal figure on every record, always 0, changes no verdict.
    for m in loaded.measurements.iter_mut() {
        m.metrics.insert("cpu_steal_pct".into(), 0.0);
    }
    let bare = report::build(&loaded, None);
    assert_eq!(key_verdicts(&bare), key_verdicts(&plain));
    assert!(marked(&bare).is_empty());

    let steal = [2.0, 25.0, 4.0, 1.0, 30.0, 3.0, 0.5];
    for (i, m) in loaded.measurements.iter_mut().enumerate() {
        m.metrics
            .insert("cpu_steal_pct".into(), steal[i % steal.len()]);
    }
    let r = report::build(&loaded, None);
    let slopes = marked(&r);
    assert!(!slopes.is_empty() && slopes.iter().all(|b| b.is_finite()));
    let md = report::export::markdown::render(&r);
    let at = md
        .find("differences adjusted for the CPU time the hypervisor stole")
        .unwrap_or_else(|| panic!("no legend line: {md}"));
    let count = format!("; {} of ", slopes.len());
    assert!(md[..at].rfind(&count).is_some_and(|c| at - c < 12), "{md}");
}
