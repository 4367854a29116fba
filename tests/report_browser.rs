//! The HTML report in a real browser: headless Chromium (Debian's `chromium`, installed by
//! `./dev test`) loads it offline with no script error, every chart is drawn, and a
//! screenshot of each section shows ink and colour. Screenshots are kept in
//! target/report-screenshots/ for a person to look at.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

const SECTIONS: [&str; 7] = [
    "summary",
    "bars",
    "scaling",
    "curves",
    "series",
    "amplification",
    "provenance",
];
/// Sections whose screenshot must show coloured chart marks, not just text.
const CHARTED: [&str; 4] = ["bars", "scaling", "curves", "series"];

fn chromium() -> PathBuf {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .expect("chromium is not installed: ./dev test installs the Debian package `chromium`")
}

fn browser(profile: &Path) -> Command {
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
        "--window-size=1280,1100",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    c
}

/// (pixels that are not near-white, pixels with strong colour) of a PNG.
fn ink(png_path: &Path) -> (usize, usize) {
    let decoder = png::Decoder::new(std::fs::File::open(png_path).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    let (mut dark, mut colored) = (0, 0);
    for px in buf[..info.buffer_size()].chunks(channels) {
        let (r, g, b) = (px[0] as i32, px[1] as i32, px[2] as i32);
        if r.min(g).min(b) < 200 {
            dark += 1;
        }
        if r.max(g).max(b) - r.min(g).min(b) > 80 {
            colored += 1;
        }
    }
    (dark, colored)
}

#[test]
fn report_loads_offline_without_errors_and_draws_every_section() {
    let dir = tempfile::tempdir().unwrap();
    common::fixture::write(dir.path(), true);
    fsarena::report::write_files(dir.path(), None).unwrap();
    let html_path = dir.path().join("report.html");
    let html = std::fs::read_to_string(&html_path).unwrap();
    // Self-contained: nothing to fetch (the SVG namespace URI is a name, not a fetch).
    for needle in ["src=\"http", "href=\"http", "@import", "url(http"] {
        assert!(!html.contains(needle), "report.html would fetch `{needle}`");
    }
    let url = format!("file://{}", html_path.display());

    // Load it, let scripts run, read the DOM back.
    let profile = tempfile::tempdir().unwrap();
    let out = browser(profile.path())
        .args(["--enable-logging=stderr", "--v=0", "--dump-dom"])
        .arg(&url)
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "chromium failed: {log}");
    assert!(!dom.contains("data-error"), "a script error: {dom}");
    for line in log.lines().filter(|l| l.contains("CONSOLE")) {
        assert!(
            !line.contains("ERROR") && !line.contains("Uncaught"),
            "console error: {line}"
        );
    }
    let attr = |name: &str| -> usize {
        let at = dom
            .find(&format!("{name}=\""))
            .unwrap_or_else(|| panic!("no {name} in the DOM"));
        dom[at + name.len() + 2..]
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    // The fixture has 2 + 3 bar charts, 1 scaling chart, 2 curve charts, 4 series charts.
    assert!(
        attr("data-charts") >= 12,
        "charts drawn: {}",
        attr("data-charts")
    );
    assert!(
        attr("data-marks") >= 30,
        "bars and lines drawn: {}",
        attr("data-marks")
    );

    // One screenshot per section.
    let shots = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/report-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    for section in SECTIONS {
        let png_path = shots.join(format!("{section}.png"));
        let _ = std::fs::remove_file(&png_path);
        let profile = tempfile::tempdir().unwrap();
        let out = browser(profile.path())
            .arg(format!("--screenshot={}", png_path.display()))
            .arg(format!("{url}?only={section}"))
            .output()
            .unwrap();
        assert!(
            png_path.exists(),
            "{section}: no screenshot: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (dark, colored) = ink(&png_path);
        assert!(
            dark > 3000,
            "{section}: the screenshot is (nearly) blank ({dark} dark pixels)"
        );
        if CHARTED.contains(&section) {
            assert!(
                colored > 1500,
                "{section}: no charts drawn ({colored} coloured pixels)"
            );
        }
    }
}
