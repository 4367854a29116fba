//! `fsarena history`: runs kept, imported, listed, checked for regressions, reported and
//! pruned. On results directories made from one of bench/results (no provisioning): three
//! runs of one plan, the third changed or not.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::bin;

/// A small results directory of bench/: create, scan and delete on tmpfs, 5 repetitions.
const SOURCE: &str = "bench/results/mpi-20261123-210300/tmpfs-nompi";

/// `fsarena ARGS` with the history in `db`.
fn history(db: &Path, args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .env("FSARENA_HISTORY", db)
        .output()
        .unwrap()
}

/// A copy of [`SOURCE`] as run number `n` (started `n` days later), each repetition's key
/// metric moved by a deterministic jitter of at most ±1 %, and times `factor` of its
/// level in the metric's better direction (0.7: a 30 % loss); `status` replaces every
/// record's status when given.
fn copy_run(root: &Path, n: usize, factor: f64, status: Option<&str>) -> PathBuf {
    let dir = root.join(format!("run{n}"));
    std::fs::create_dir_all(&dir).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(SOURCE)
        .join("results.jsonl");
    let mut out = String::new();
    for (i, line) in std::fs::read_to_string(src).unwrap().lines().enumerate() {
        let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["record"] == "host" {
            let t = v["started_unix"].as_f64().unwrap();
            v["started_unix"] = (t + 86_400.0 * n as f64).into();
        } else {
            let w = v["workload"].as_str().unwrap().to_string();
            let key = fsarena::report::key_metric(&w).unwrap();
            let jitter = 1.0 + 0.01 * ((i * 7 + n * 13) as f64).sin();
            let f = if key.higher_is_better {
                factor
            } else {
                1.0 / factor
            };
            let x = v["metrics"][&key.name].as_f64().unwrap();
            v["metrics"][&key.name] = (x * f * jitter).into();
            if let Some(s) = status {
                v["status"] = s.into();
            }
        }
        out.push_str(&serde_json::to_string(&v).unwrap());
        out.push('\n');
    }
    std::fs::write(dir.join("results.jsonl"), out).unwrap();
    dir
}

/// Three runs added to a fresh history; the third made with `factor` and `status`.
fn three_runs(factor: f64, status: Option<&str>) -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("h.sqlite");
    let runs: Vec<PathBuf> = (1..=3)
        .map(|n| {
            let (f, s) = if n == 3 {
                (factor, status)
            } else {
                (1.0, None)
            };
            copy_run(t.path(), n, f, s)
        })
        .collect();
    let mut args = vec!["history", "add"];
    args.extend(runs.iter().map(|p| p.to_str().unwrap()));
    let add = history(&db, &args);
    assert_eq!(add.status.code(), Some(0), "{add:?}");
    (t, db)
}

#[test]
fn a_30_pct_loss_in_the_third_run_is_flagged() {
    let (_t, db) = three_runs(0.7, None);
    let out = history(&db, &["history", "check"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    // Every workload point lost 30 %: each is named, with its target and size.
    for w in ["create", "scan", "delete"] {
        assert!(
            text.lines()
                .any(|l| l.starts_with(&format!("regression: {w}")) && l.contains("tmpfs")),
            "{w}: {text}"
        );
    }
    assert!(
        text.contains("-30.") || text.contains("-29.") || text.contains("-31."),
        "{text}"
    );
}

#[test]
fn an_unchanged_third_run_passes() {
    let (_t, db) = three_runs(1.0, None);
    let out = history(&db, &["history", "check"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("0 regressions"), "{text}");
}

#[test]
fn a_third_run_that_measured_nothing_exits_125_for_git_bisect() {
    let (_t, db) = three_runs(1.0, Some("eio"));
    let out = history(&db, &["history", "check"]);
    assert_eq!(out.status.code(), Some(125), "{out:?}");
}

#[test]
fn the_gate_lets_a_loss_smaller_than_pct_pass() {
    let (_t, db) = three_runs(0.7, None);
    let out = history(&db, &["history", "check", "--fail-if-worse", "40"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

#[test]
fn adding_the_same_run_twice_keeps_one_and_labels_filter() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("h.sqlite");
    let run = copy_run(t.path(), 1, 1.0, None);
    let r = run.to_str().unwrap();
    assert!(history(&db, &["history", "add", r, "--label", "kernel=a"])
        .status
        .success());
    let again = history(&db, &["history", "add", r]);
    assert!(String::from_utf8_lossy(&again.stdout).contains("0 added, 1 already kept"));
    let list = history(&db, &["history", "list", "--label", "kernel=a", "--json"]);
    let runs: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(runs.as_array().unwrap().len(), 1, "{runs}");
    let none = history(&db, &["history", "--label", "kernel=b", "--json"]);
    let runs: serde_json::Value = serde_json::from_slice(&none.stdout).unwrap();
    assert_eq!(runs.as_array().unwrap().len(), 0);
}

#[test]
fn the_trend_report_writes_html_json_and_csv_and_outlives_the_results() {
    let (t, db) = three_runs(0.7, None);
    // Retention: the results directories go, the history keeps what the report reads.
    for n in 1..=3 {
        std::fs::remove_dir_all(t.path().join(format!("run{n}"))).unwrap();
    }
    let out = t.path().join("report");
    let r = history(
        &db,
        &[
            "history",
            "report",
            "--out",
            out.to_str().unwrap(),
            "--by",
            "date",
        ],
    );
    assert_eq!(r.status.code(), Some(0), "{r:?}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("history.json")).unwrap()).unwrap();
    // create, delete, and scan's cold and warm points.
    let points = json["plans"][0]["points"].as_array().unwrap().len();
    assert_eq!(points, 4, "{json}");
    let html = std::fs::read_to_string(out.join("history.html")).unwrap();
    assert!(html.contains("<nav id=\"contents\">"), "{html}");
    assert_eq!(
        html.matches("<h3 id=").count(),
        points,
        "one row per workload point"
    );
    assert_eq!(
        html.matches("<svg").count(),
        points,
        "one chart per point and host"
    );
    let csv = std::fs::read_to_string(out.join("history.csv")).unwrap();
    // A header, then each point × 1 target × 3 dates.
    assert_eq!(csv.lines().count(), 1 + points * 3, "{csv}");
}

#[test]
fn prune_keeps_the_newest_runs() {
    let (_t, db) = three_runs(1.0, None);
    let p = history(&db, &["history", "prune", "--keep-last", "1"]);
    assert!(
        String::from_utf8_lossy(&p.stdout).contains("2 of 3 runs removed"),
        "{p:?}"
    );
    let list = history(&db, &["history", "--json"]);
    let runs: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(runs.as_array().unwrap().len(), 1);
    let none = history(&db, &["history", "prune"]);
    assert_eq!(none.status.code(), Some(2), "a rule is required");
}

/// The same three runs in an SQLite file and on a PostgreSQL server (started as the pg
/// workload starts its own, and stopped when the test ends, however it ends): every
/// answer the history gives is the same.
#[test]
fn the_sqlite_and_postgresql_stores_give_the_same_answers() {
    use std::os::unix::fs::PermissionsExt;

    use fsarena::workload::pg::{install, server};
    common::require_root();
    let pg = install::locate().expect("this test needs PostgreSQL (./dev deps)");
    let env = common::Env::new();
    // The server's user must reach its data directory and socket.
    for d in [env.root.path(), env.scratch.path()] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let user = server::ensure_user().unwrap();
    let data = env.root.path().join("data");
    server::initdb(&env.ctx(), &pg, &data, None, user).unwrap();
    let sock = env.scratch.path().join("sock");
    let srv = server::Server::start(&pg, &data, &sock, &[], user, None, None)
        .unwrap()
        .ready(&env.ctx())
        .unwrap();
    let url = format!(
        "postgresql:///postgres?host={}&user={}",
        sock.display(),
        server::ROLE
    );
    let t = tempfile::tempdir().unwrap();
    let file = t.path().join("h.sqlite");
    let runs: Vec<PathBuf> = (1..=3)
        .map(|n| copy_run(t.path(), n, if n == 3 { 0.7 } else { 1.0 }, None))
        .collect();
    let report = t.path().join("report");
    let answers = |place: &Path| -> Vec<(Option<i32>, String)> {
        let mut add = vec!["history", "add", "--label", "k=v"];
        add.extend(runs.iter().map(|p| p.to_str().unwrap()));
        let out = report.to_str().unwrap();
        let commands: [&[&str]; 4] = [
            &add,
            &["history", "list", "--json"],
            &["history", "check", "--json"],
            &["history", "report", "--out", out, "--by", "label:k"],
        ];
        let mut got: Vec<(Option<i32>, String)> = commands
            .iter()
            .map(|args| {
                let o = history(place, args);
                // The location is the one thing that differs.
                let text =
                    String::from_utf8_lossy(&o.stdout).replace(place.to_str().unwrap(), "HISTORY");
                (o.status.code(), text)
            })
            .collect();
        got.push((
            None,
            std::fs::read_to_string(report.join("history.json")).unwrap(),
        ));
        got
    };
    let in_file = answers(&file);
    let on_server = answers(Path::new(&url));
    srv.stop().unwrap();
    assert_eq!(in_file[2].0, Some(1), "the loss is found: {:?}", in_file[2]);
    for (a, b) in in_file.iter().zip(&on_server) {
        assert_eq!(a, b);
    }
}

/// Tests never write the user's history: every process cargo starts has its history under
/// target/ (`.cargo/config.toml`), whatever the developer's environment names.
#[test]
fn tests_keep_their_history_under_target() {
    for var in ["XDG_DATA_HOME", "FSARENA_HISTORY"] {
        let v = std::env::var(var).unwrap_or_default();
        assert!(
            v.starts_with(env!("CARGO_MANIFEST_DIR")) && v.contains("/target/test-data"),
            "{var}={v}"
        );
    }
}
