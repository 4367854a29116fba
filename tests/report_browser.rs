//! The HTML report in a real browser: headless Chromium (Debian's `chromium`, installed by
//! `./dev test`) loads it offline at 1280 px with no script error; every chart is drawn and
//! shows ink in its own region of a full-page screenshot; no two level text labels of a
//! chart overlap (the page measures its labels' boxes and writes the count into the DOM);
//! the charts issue 14 asked for are there. Screenshots are kept in
//! target/test-artifacts/report-*.png for a person to look at.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use fsarena::monitor::Sample;
use fsarena::results::store::Store;
use fsarena::results::{Measurement, Status};

const SECTIONS: [&str; 8] = [
    "answer",
    "summary",
    "bars",
    "scaling",
    "curves",
    "series",
    "amplification",
    "provenance",
];
/// Sections whose screenshot must show coloured chart marks, not just text.
const CHARTED: [&str; 5] = ["answer", "bars", "scaling", "curves", "series"];
const WIDTH: u32 = 1280;

fn chromium() -> PathBuf {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .expect("chromium is not installed: ./dev test installs the Debian package `chromium`")
}

fn browser(profile: &Path, width: u32, height: u32) -> Command {
    let mut c = Command::new(chromium());
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
        "--allow-file-access-from-files",
    ])
    .arg(format!("--window-size={width},{height}"))
    .arg(format!("--user-data-dir={}", profile.display()));
    c
}

/// A decoded screenshot: width, height, RGB(A) rows.
struct Png {
    width: usize,
    height: usize,
    channels: usize,
    buf: Vec<u8>,
}

fn load(path: &Path) -> Png {
    let decoder = png::Decoder::new(std::fs::File::open(path).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    buf.truncate(info.buffer_size());
    Png {
        width: info.width as usize,
        height: info.height as usize,
        channels: info.color_type.samples(),
        buf,
    }
}

impl Png {
    /// (pixels that are not near-white, pixels with strong colour) in a rectangle.
    fn ink(&self, x: usize, y: usize, w: usize, h: usize) -> (usize, usize) {
        let (mut dark, mut colored) = (0, 0);
        for row in y..(y + h).min(self.height) {
            for col in x..(x + w).min(self.width) {
                let i = (row * self.width + col) * self.channels;
                let (r, g, b) = (
                    self.buf[i] as i32,
                    self.buf[i + 1] as i32,
                    self.buf[i + 2] as i32,
                );
                if r.min(g).min(b) < 200 {
                    dark += 1;
                }
                if r.max(g).max(b) - r.min(g).min(b) > 80 {
                    colored += 1;
                }
            }
        }
        (dark, colored)
    }
}

/// io-quick (one queue depth per shape: bars, not curves) and a phase too short to chart,
/// added to the shared fixture.
fn add_measurements(dir: &Path) {
    let (mut store, _) = Store::reopen(dir).unwrap();
    let shapes = [
        ("randread", 4096, 32),
        ("randwrite", 4096, 32),
        ("read", 1 << 20, 8),
        ("write", 1 << 20, 8),
    ];
    for (ti, t) in ["ext4", "xfs", "btrfs"].iter().enumerate() {
        for (si, (rw, bs, qd)) in shapes.iter().enumerate() {
            for rep in 0..3u32 {
                let scale = [1.0, 0.98, 1.03][rep as usize] / (1.0 + ti as f64 * 0.4);
                let iops = [90000.0, 40000.0, 2500.0, 1800.0][si] * scale;
                let mut metrics = BTreeMap::new();
                metrics.insert("iops".to_string(), iops);
                metrics.insert("mb_per_s".to_string(), iops * *bs as f64 / 1e6);
                for (k, f) in [
                    ("lat_p50_us", 1.0),
                    ("lat_p99_us", 3.0),
                    ("lat_p99_9_us", 8.0),
                ] {
                    metrics.insert(k.to_string(), f * *qd as f64 * 1e6 / iops);
                }
                let params: BTreeMap<String, serde_json::Value> = [
                    ("rw", serde_json::json!(rw)),
                    ("bs", serde_json::json!(bs)),
                    ("iodepth", serde_json::json!(qd)),
                    ("numjobs", serde_json::json!(1)),
                    ("size_label", serde_json::json!("small")),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect();
                store
                    .append(&Measurement {
                        target: t.to_string(),
                        fs: t.to_string(),
                        workload: "io-quick".into(),
                        variant: format!("{rw}-qd{qd}"),
                        params,
                        repetition: rep,
                        threads: 1,
                        status: Status::Ok,
                        metrics,
                        started_unix: 1_800_000_100.0 + rep as f64,
                        ..Default::default()
                    })
                    .unwrap();
            }
        }
        let mut metrics = BTreeMap::new();
        metrics.insert("files_per_s".to_string(), 50000.0 / (ti as f64 + 1.0));
        store
            .append(&Measurement {
                target: t.to_string(),
                fs: t.to_string(),
                workload: "delete".into(),
                repetition: 0,
                threads: 1,
                status: Status::Ok,
                metrics,
                series: vec![
                    Sample::default(),
                    Sample {
                        t: 0.04,
                        ..Default::default()
                    },
                ],
                ..Default::default()
            })
            .unwrap();
    }
}

/// The report's self-check attributes on `<body>`, read from a dumped DOM.
struct Dom(String);

impl Dom {
    fn attr(&self, name: &str) -> String {
        let at = self
            .0
            .find(&format!("{name}=\""))
            .unwrap_or_else(|| panic!("no {name} in the DOM"));
        let raw = self.0[at + name.len() + 2..].split('"').next().unwrap();
        raw.replace("&quot;", "\"").replace("&amp;", "&")
    }
    fn number(&self, name: &str) -> usize {
        self.attr(name).parse().unwrap()
    }
    /// Boxes of the visible charts: [index, left, top, width, height] in page pixels.
    fn boxes(&self) -> Vec<[usize; 5]> {
        serde_json::from_str(&self.attr("data-boxes")).unwrap()
    }
}

fn dump(url: &str) -> Dom {
    dump_at(url, WIDTH)
}

fn dump_at(url: &str, width: u32) -> Dom {
    let profile = tempfile::tempdir().unwrap();
    let out = browser(profile.path(), width, 1100)
        .args(["--enable-logging=stderr", "--v=0", "--dump-dom"])
        .arg(url)
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout).into_owned();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "chromium failed: {log}");
    assert!(!dom.contains("data-error"), "a script error: {dom}");
    for line in log.lines().filter(|l| l.contains("CONSOLE")) {
        assert!(
            !line.contains("ERROR") && !line.contains("Uncaught"),
            "console error: {line}"
        );
    }
    let dom = Dom(dom);
    assert_eq!(
        dom.number("data-overlaps"),
        0,
        "{url}: overlapping labels: {}",
        dom.attr("data-overlapping")
    );
    dom
}

fn screenshot(url: &str, path: &Path, height: u32) {
    screenshot_at(url, path, WIDTH, height)
}

fn screenshot_at(url: &str, path: &Path, width: u32, height: u32) {
    let _ = std::fs::remove_file(path);
    let profile = tempfile::tempdir().unwrap();
    let out = browser(profile.path(), width, height)
        .arg(format!("--screenshot={}", path.display()))
        .arg(url)
        .output()
        .unwrap();
    assert!(
        path.exists(),
        "{url}: no screenshot: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!("screenshot: {}", path.display());
}

/// Every visible chart's region of a full-page screenshot shows ink and colour.
fn every_chart_has_ink(dom: &Dom, url: &str, png: &Path, what: &str) {
    let height = dom.number("data-height").min(16000) as u32;
    screenshot(url, png, height);
    let img = load(png);
    let boxes = dom.boxes();
    assert!(!boxes.is_empty(), "{what}: no visible chart");
    for [k, x, y, w, h] in boxes {
        assert!(w >= 400, "{what}: chart {k} is {w} px wide");
        let (dark, colored) = img.ink(x + 2, y + 2, w.saturating_sub(4), h.saturating_sub(4));
        assert!(
            dark > 1500,
            "{what}: chart {k} at ({x},{y}) is (nearly) blank: {dark}"
        );
        assert!(
            colored > 150,
            "{what}: chart {k} at ({x},{y}) has no coloured marks: {colored}"
        );
    }
}

/// The shared fixture with [`add_measurements`], reported: its directory, report.html's path
/// and text.
fn fixture_report() -> (tempfile::TempDir, PathBuf, String) {
    let dir = tempfile::tempdir().unwrap();
    common::fixture::write(dir.path(), true);
    add_measurements(dir.path());
    fsarena::report::write_files(dir.path(), None).unwrap();
    let html_path = dir.path().join("report.html");
    let html = std::fs::read_to_string(&html_path).unwrap();
    (dir, html_path, html)
}

#[test]
fn report_loads_offline_without_errors_and_draws_every_section() {
    let (_dir, html_path, html) = fixture_report();
    // Self-contained: nothing to fetch (the SVG namespace URI is a name, not a fetch).
    for needle in [
        "src=\"http",
        "href=\"http",
        "@import",
        "url(http",
        "<script src",
        "<link",
    ] {
        assert!(!html.contains(needle), "report.html would fetch `{needle}`");
    }
    let url = format!("file://{}", html_path.display());
    let arts = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-artifacts");
    std::fs::create_dir_all(&arts).unwrap();

    let dom = dump(&url);
    let count = |needle: &str| dom.0.matches(needle).count();
    // 2 + 3 + 4 + 1 sections with a bar chart each and one in % of the baseline, 1 scaling
    // chart, 2 io-sweep curves × 1 group, 2 io-quick point charts, 4 series charts.
    assert!(
        dom.number("data-charts") >= 29,
        "charts: {}",
        dom.number("data-charts")
    );
    assert!(
        dom.number("data-marks") >= 60,
        "marks: {}",
        dom.number("data-marks")
    );
    // Values over bars, every repetition as a dot, intervals, the relative view.
    assert!(
        count("class=\"val\"") >= 2 * 30,
        "value labels: {}",
        count("class=\"val\"")
    );
    assert!(
        count("class=\"rep\"") >= 2 * 90,
        "repetition dots: {}",
        count("class=\"rep\"")
    );
    assert!(count("class=\"errbar\"") >= 2 * 30);
    assert_eq!(
        count("<div class=\"rel\">"),
        10,
        "one relative chart per section"
    );
    assert!(count("class=\"reference\"") >= 10, "the 100 % line");
    // io-sweep's curves and io-quick's bars at the depth measured, with latency percentiles.
    for title in [
        "io-sweep: IOPS</title>",
        "io-sweep: p99 lat</title>",
        "io-quick: IOPS at the queue depth (pending I/Os) measured</title>",
        "io-quick: p99 lat at the queue depth (pending I/Os) measured</title>",
    ] {
        assert!(dom.0.contains(title), "no chart `{title}`");
    }
    for col in ["<th>p50 lat</th>", "<th>p99 lat</th>", "<th>p99.9 lat</th>"] {
        assert!(dom.0.contains(col), "no column {col}");
    }
    // Monitor series: the fixture's 12 samples are charted from 0 s; the 2-sample phase is not.
    assert!(dom
        .0
        .contains("delete: phase too short to chart (2 samples"));
    assert!(!dom.0.contains("delete: device writes"));

    let page_height = |d: &Dom| d.number("data-height");
    assert!(page_height(&dom) > 1000);
    every_chart_has_ink(&dom, &url, &arts.join("report-full.png"), "absolute view");
    let rel_url = format!("{url}?view=relative");
    let rel = dump(&rel_url);
    assert_eq!(
        rel.boxes().len(),
        dom.boxes().len(),
        "the toggle swaps charts one for one"
    );
    every_chart_has_ink(
        &rel,
        &rel_url,
        &arts.join("report-full-relative.png"),
        "relative view",
    );

    // One screenshot per section (1280 × 1100), and the bars in % of the baseline.
    let mut shots: Vec<(String, String)> = SECTIONS
        .iter()
        .map(|s| (s.to_string(), format!("{url}?only={s}")))
        .collect();
    shots.push((
        "bars-relative".into(),
        format!("{url}?only=bars&view=relative"),
    ));
    for (name, u) in shots {
        let png_path = arts.join(format!("report-{name}.png"));
        screenshot(&u, &png_path, 1100);
        let img = load(&png_path);
        let (dark, colored) = img.ink(0, 0, img.width, img.height);
        assert!(
            dark > 3000,
            "{name}: the screenshot is (nearly) blank ({dark} dark pixels)"
        );
        if CHARTED.iter().any(|c| name.starts_with(c)) {
            assert!(
                colored > 1500,
                "{name}: no charts drawn ({colored} coloured pixels)"
            );
        }
    }
}

/// Issue 40: the first screen is the answer. At 1280 px the decision matrix and the forest
/// plot start within the first 900 px, before the legend and the warnings; at a phone's
/// 390 px nothing reaches past the right edge except inside the tables' scrolling
/// containers. Warnings are listed once, not under every table. Screenshots at both widths
/// are kept under the system's temporary directory for a person to look at.
#[test]
fn the_first_screen_is_the_answer_at_1280_and_a_phone_scrolls_only_tables() {
    let (dir, html_path, html) = fixture_report();
    assert!(
        html.contains("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">")
    );
    // The answer comes before any legend or warning; warnings are one list.
    let at = |needle: &str| html.find(needle).unwrap_or_else(|| panic!("no {needle}"));
    assert!(at("id=\"compared\"") < at("class=\"matrix\""));
    assert!(at("class=\"chart forest\"") < at("false discovery rate"));
    let summary = &html[at("id=\"summary\"")..at("id=\"bars\"")];
    assert!(
        !summary.contains("class=\"warn\""),
        "a warning under a table"
    );
    assert!(html.matches("id=\"warnings\"").count() <= 1);
    // The fixture's decisions: btrfs clearly worse than ext4, in its decision colour.
    assert!(html.contains("class=\"cell worse \""), "no worse cell");
    assert!(html.contains("<small>baseline</small>"));

    let url = format!("file://{}", html_path.display());
    let shots = std::env::temp_dir().join("fsarena-report-browser");
    std::fs::create_dir_all(&shots).unwrap();
    let wide = dump_at(&url, WIDTH);
    let (matrix, forest) = (wide.number("data-matrixtop"), wide.number("data-foresttop"));
    assert!(matrix < 900, "the matrix starts at {matrix} px");
    assert!(forest < 900, "the forest plot starts at {forest} px");
    assert_eq!(
        wide.number("data-overflow"),
        0,
        "{}",
        wide.attr("data-overflowing")
    );
    screenshot_at(&url, &shots.join("first-screen-1280.png"), WIDTH, 900);
    let img = load(&shots.join("first-screen-1280.png"));
    let (_, colored) = img.ink(0, 0, img.width, img.height);
    assert!(
        colored > 1500,
        "no decision colours on the first screen: {colored}"
    );

    // Chromium's window is at least 500 px wide: the phone is a 390 px frame, whose
    // self-check the page around it copies out (file pages may read each other only with
    // --allow-file-access-from-files).
    let phone_page = dir.path().join("phone.html");
    std::fs::write(
        &phone_page,
        "<!DOCTYPE html><html><body style=\"margin:0\"><iframe id=\"f\" src=\"report.html\" \
         style=\"width:390px;height:1400px;border:0\"></iframe><script>\
         var f=document.getElementById('f');f.addEventListener('load',function(){\
         var d=f.contentDocument.body.dataset;for(var k in d)document.body.dataset[k]=d[k]})\
         </script></body></html>",
    )
    .unwrap();
    let phone_url = format!("file://{}", phone_page.display());
    let phone = dump_at(&phone_url, 500);
    assert_eq!(phone.number("data-viewport"), 390);
    assert_eq!(
        phone.number("data-overflow"),
        0,
        "past the right edge at 390 px: {}",
        phone.attr("data-overflowing")
    );
    assert!(phone.number("data-scrollwidth") <= 390);
    assert!(phone.number("data-matrixtop") < phone.number("data-foresttop"));
    screenshot_at(&phone_url, &shots.join("first-screen-390.png"), 500, 1400);
    let img = load(&shots.join("first-screen-390.png"));
    let (_, colored) = img.ink(0, 0, 390, 1400);
    assert!(colored > 500, "no decision colours on the phone: {colored}");
}
