//! `report.html`: one self-contained page (inline CSS and SVG, no network fetches): a table
//! of contents, the answer first (the decision matrix and forest plot, then the ranking),
//! then each workload's own figure, and below them, folded, what a reader looks up rather
//! than reads: the per-point tables, the other charts, the warnings' places and the
//! provenance. A study of 720 cells is then a page to scroll, not 180 screens (issue 60).

use std::collections::BTreeMap;
use std::fmt::Write;

use super::exporter::{Destination, ExportError, Exporter};
use crate::report::model::format::{header, legend, row_cells, value, INTERVALS};
use crate::report::model::report::Report;
use crate::report::model::section::Mark;
use crate::results::Measurement;

mod across;
mod answer;
pub mod charts;
pub mod curves;
pub mod escape;
mod figures;
pub mod matrix;
mod series;

use escape::esc;

/// The palette slot of each catalogue target, fixed, so a file system has one colour in
/// every report of a run, a study or a history (issue 60: by position, ntfs was orange in
/// one report and teal in another). The first ten are the targets the default run and the
/// studies compare.
const COLOR_SLOTS: [&str; 19] = [
    "ext4",
    "xfs",
    "btrfs",
    "ntfs",
    "exfat",
    "tmpfs",
    "ext4-bigalloc64k",
    "btrfs-nodatasum",
    "ext4-fscrypt",
    "ext4-nocsum-fscrypt",
    "btrfs-zstd",
    "ext4-nocsum",
    "xfs-noreflink",
    "ext4-journal",
    "ext4-noatime",
    "btrfs-nodesize64k",
    "ntfs-64k",
    "exfat-64k",
    "f2fs",
];

/// Colour index per target: a catalogue target's own slot; any other (a `dir:` or a plan's
/// own target) the first slot no target of this report holds, in order of first appearance.
fn target_colors(r: &Report) -> BTreeMap<String, usize> {
    let names: Vec<&String> = r
        .sections
        .iter()
        .flat_map(|s| &s.rows)
        .map(|row| &row.target)
        .collect();
    let slot = |n: &str| COLOR_SLOTS.iter().position(|s| *s == n);
    let mut m: BTreeMap<String, usize> = names
        .iter()
        .filter_map(|n| slot(n).map(|i| ((*n).clone(), i)))
        .collect();
    for n in names {
        if !m.contains_key(n) {
            let taken: Vec<usize> = m.values().copied().collect();
            let free = (0..charts::PALETTE.len()).find(|i| !taken.contains(i));
            m.insert(n.clone(), free.unwrap_or(m.len()));
        }
    }
    m
}

/// A two-column grid of charts at 1280 px (one on a narrow screen); each SVG scales to its
/// cell. The relative-view toggle is pure CSS, so it works with scripts off.
pub const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1240px;padding:0 16px;color:#222}\
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}\
table{border-collapse:collapse;margin:.5em 0 1em;font-size:.9em}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}\
td{white-space:nowrap}td.wrap{white-space:normal}.scroll{overflow-x:auto;max-width:100%}\
.answer{display:flex;flex-wrap:wrap;gap:8px 20px;align-items:flex-start}.matrix-box{flex:0 1 auto;min-width:0;max-width:100%;overflow-x:auto}\
.forest-box{flex:1 1 540px;min-width:0;max-width:760px}.forest-box svg{width:100%;height:auto;display:block}\
.matrix{margin:0 0 .3em}.matrix th{font-weight:600}.matrix th small{font-weight:normal;color:#555}.matrix td.metric{text-align:left;color:#444}\
.matrix td.cell{min-width:4.5em}.matrix .ref1{border-left:3px double #999}\
.matrix th{white-space:nowrap}.matrix .better,.key .better{background:#d6e9f8}.matrix .worse,.key .worse{background:#fbdcc8}.matrix .equivalent,.key .equivalent{background:#e4e4e4}\
.matrix .undecided,.key .undecided{background:#fff;outline:1px dashed #999;outline-offset:-3px}.matrix .untested{color:#666}.matrix td.baseline{background:#f6f6f6;font-style:italic}.matrix .missing{color:#999}\
@media (max-width:600px){.matrix tbody th{white-space:normal;min-width:8em}.matrix td.metric{white-space:normal}}\
.key{font-size:.85em;color:#333;margin:.3em 0}.key span{padding:0 .35em;white-space:nowrap}#compared{font-size:1.05em}\
td:first-child,th:first-child{text-align:left}.best{color:#1a7f37;font-weight:bold}.worst{color:#b42318}\
.incomplete{background:#fff3cd;border:1px solid #e0b000;padding:.6em 1em}\
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(520px,100%),1fr));gap:14px;margin-top:.6em}\
.charts>div{min-width:0}.charts svg{width:100%;height:auto;display:block}\
#relative:checked~.charts .abs,#relative:not(:checked)~.charts .rel{display:none}\
label[for=relative]{margin-left:.3em;cursor:pointer}\
.warn{color:#8a5300;font-size:.85em}#warnings li{margin:.3em 0}#warnings .places{color:#555;font-size:.9em}code{background:#f4f4f4;padding:0 3px}\
nav#contents{position:sticky;top:0;background:#fff;border-bottom:1px solid #ddd;padding:.4em 0;z-index:1;font-size:.9em}nav#contents a{margin:0 .2em}\
details>summary{cursor:pointer;color:#0b5cad;margin:.4em 0}pre.ranking{font-size:.95em;background:#f8f8f8;padding:.5em 1em}#warnings details.places{display:inline}svg{background:#fff;border:1px solid #eee}";

/// Runs in the page: `?only=ID` shows one section (for sharing it, and for the browser
/// test's per-section screenshots), `?view=relative` turns the toggle on. Then a self-check
/// a test can read from the DOM: charts and marks drawn, text labels that overlap (any two
/// level labels of one chart whose boxes intersect), each visible chart's box (none in a
/// closed `<details>`, which Chromium lays out all the same), any script error; where the decision matrix and the forest plot start, and the elements that reach
/// past the viewport's right edge outside a scrolling container (none may, on a phone).
const SCRIPT: &str = "window.addEventListener('error',function(e){document.body.dataset.error=String(e.message)});\
var q=new URLSearchParams(location.search),only=q.get('only');\
if(only){document.querySelectorAll('body>section,body>p,body>h1,body>nav').forEach(function(s){if(s.id!==only)s.style.display='none'});\
document.querySelectorAll('section[id=\"'+only+'\"] details').forEach(function(e){e.open=true})}\
if(q.get('view')==='relative'){document.getElementById('relative').checked=true}\
var d=document.body.dataset,svgs=[].slice.call(document.querySelectorAll('svg.chart'));\
d.charts=svgs.length;d.marks=document.querySelectorAll('svg .bar, svg .line').length;\
var over=[],boxes=[];svgs.forEach(function(svg,k){if(svg.closest('details:not([open])'))return;var b=svg.getBoundingClientRect();if(b.width===0)return;\
boxes.push([k,Math.round(b.left+scrollX),Math.round(b.top+scrollY),Math.round(b.width),Math.round(b.height)]);\
var t=[].slice.call(svg.querySelectorAll('text:not([transform])')).map(function(e){return [e,e.getBoundingClientRect()]}).filter(function(p){return p[1].width>0});\
for(var i=0;i<t.length;i++)for(var j=i+1;j<t.length;j++){var a=t[i][1],c=t[j][1];\
if(a.left<c.right-.5&&c.left<a.right-.5&&a.top<c.bottom-.5&&c.top<a.bottom-.5)over.push(t[i][0].textContent+'|'+t[j][0].textContent)}});\
d.overlaps=over.length;d.overlapping=over.slice(0,5).join(';');d.boxes=JSON.stringify(boxes);\
d.height=document.documentElement.scrollHeight;\
function ptop(q){var e=document.querySelector(q);return e?Math.round(e.getBoundingClientRect().top+scrollY):-1}\
d.matrixtop=ptop('table.matrix');d.foresttop=ptop('svg.forest');\
var vw=document.documentElement.clientWidth,wide=[];document.querySelectorAll('body *').forEach(function(e){if(e.closest('.scroll'))return;\
var b=e.getBoundingClientRect();if(b.width>0&&b.right>vw+1)wide.push(e.tagName+(e.id?'#'+e.id:''))});\
d.viewport=vw;d.overflow=wide.length;d.overflowing=wide.slice(0,5).join(' ');d.scrollwidth=document.documentElement.scrollWidth;";

/// The page's file in a results directory, which the terminal report names at its end.
pub const FILE: &str = "report.html";

/// `report.html`, written into the results directory only.
pub struct Html;

impl Exporter for Html {
    fn name(&self) -> &'static str {
        "html"
    }

    fn file(&self) -> Option<&'static str> {
        Some(FILE)
    }

    fn serialize(&self, r: &Report, _to: Destination) -> Result<String, ExportError> {
        Ok(render(r))
    }
}

/// Renders the page.
pub fn render(r: &Report) -> String {
    let colors = target_colors(r);
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>fsarena report</title><style>{STYLE}</style></head><body>"
    );
    h.push_str("<h1>fsarena report</h1>");
    h.push_str(CONTENTS_MARK);
    answer::render(&mut h, r);
    let _ = write!(h, "<p>Kernel {} · {} CPUs ({}) · {} memory · fsarena {} · baseline <b>{}</b> · {} · {} · {}</p>",
        esc(&r.host.kernel), r.host.cpus, esc(&r.host.cpu_model), value("x_bytes", r.host.mem_total_bytes as f64), esc(&r.host.fsarena_version), esc(&r.baseline), esc(&condition_text(&r.condition)), esc(INTERVALS), esc(&legend(r)));
    if let Some(sizes) = &r.file_systems {
        let _ = write!(h, "<p id=\"file-systems\">{}</p>", esc(sizes));
    }
    if let Some(cpus) = &r.cpus {
        let _ = write!(h, "<p id=\"cpus\">{}</p>", esc(cpus));
    }
    if let Some(why) = &r.incomplete {
        let _ = write!(
            h,
            "<p class=\"incomplete\" id=\"incomplete\"><b>Incomplete:</b> {}</p>",
            esc(why)
        );
    }
    if let Some(size) = crate::report::model::scales::size_line(&r.sizes, r.host.mem_total_bytes) {
        let _ = write!(h, "<p id=\"size\">Data set: {}.</p>", esc(&size));
    }
    if let Some(s) = super::text::notes::steadiness_text(r) {
        let _ = write!(h, "<p id=\"steadiness\">{}.</p>", esc(&s));
    }
    if let Some(s) = &r.set_aside {
        let line = crate::report::model::set_aside::line(s);
        let _ = write!(h, "<p id=\"set-aside\">{}.</p>", esc(&line));
    }
    ranking(&mut h, r);
    let mut rest = String::new();
    super::html::curves::render(&mut rest, &r.measurements, &colors);
    summary(&mut rest, r);
    let mut charts = String::new();
    figures::bar_charts(&mut charts, r, &colors);
    rest.push_str(&fold_large(&charts));
    figures::scaling(&mut rest, r, &colors);
    across::render(&mut rest, r, &colors);
    let mut more = String::new();
    series::render(&mut more, &r.measurements, &colors);
    amplification(&mut more, r);
    rest.push_str(&fold_large(&more));
    warnings(&mut rest, r);
    provenance(&mut rest, r);
    h.push_str(&rest);
    let mut h = h.replacen(CONTENTS_MARK, &contents(&h), 1);
    let _ = write!(h, "<script>{SCRIPT}</script>");
    h.push_str("</body></html>\n");
    h
}

/// Where the table of contents goes, filled in once the page's sections are known.
const CONTENTS_MARK: &str = "<!--contents-->";

/// A section holding more charts than this is folded under its heading: a study's hundreds
/// of bar charts are looked up, not read.
const FOLD_CHARTS: usize = 24;
/// The same for a section's table rows.
const FOLD_ROWS: usize = 40;

/// The table of contents: an in-page link to every section of `page`, by its heading.
fn contents(page: &str) -> String {
    let mut nav = String::from("<nav id=\"contents\"><b>Contents:</b> ");
    let mut first = true;
    for part in page.split("<section id=\"").skip(1) {
        let Some((id, rest)) = part.split_once('"') else {
            continue;
        };
        let title = rest
            .split_once("<h2>")
            .and_then(|(_, t)| t.split_once("</h2>"))
            .map_or(id, |(t, _)| t);
        let title = if id == "answer" { "Answer" } else { title };
        if !std::mem::take(&mut first) {
            nav.push_str(" · ");
        }
        let _ = write!(nav, "<a href=\"#{id}\">{title}</a>");
    }
    nav.push_str("</nav>");
    nav
}

/// The sections of `html` (each `<section id=…><h2>…</h2>…</section>`) that hold more than
/// [`FOLD_CHARTS`] charts or [`FOLD_ROWS`] table rows, folded under their heading in a
/// `<details>` that says what it holds (a fio study's amplification table has 720 rows).
fn fold_large(html: &str) -> String {
    let mut out = String::new();
    for part in html.split_inclusive("</section>") {
        let (svgs, rows) = (part.matches("<svg").count(), part.matches("<tr>").count());
        let what = if svgs > FOLD_CHARTS {
            format!("{svgs} charts")
        } else if rows > FOLD_ROWS {
            format!("a table of {rows} rows")
        } else {
            String::new()
        };
        match (part.split_once("</h2>"), part.strip_suffix("</section>")) {
            (Some((head, _)), Some(body)) if !what.is_empty() => {
                let inner = &body[head.len() + "</h2>".len()..];
                let _ = write!(
                    out,
                    "{head}</h2><details><summary>Show {what}</summary>{inner}</details></section>"
                );
            }
            _ => out.push_str(part),
        }
    }
    out
}

/// The ranking, as the terminal and summary.md end with it (issue 60: the HTML had none):
/// the geometric mean of each target's key-metric ratios to the baseline, best first, in the
/// terminal's own lines.
fn ranking(h: &mut String, r: &Report) {
    let text = super::text::notes::ranking(r, 100_000);
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let Some(head) = lines.next() else {
        return;
    };
    let body: Vec<&str> = lines.collect();
    let _ = write!(
        h,
        "<section id=\"ranking\"><h2>Ranking</h2><p>{}:</p><pre class=\"ranking\">{}</pre></section>",
        esc(head.trim_end_matches(':')),
        esc(&body.join("\n"))
    );
}

fn summary(h: &mut String, r: &Report) {
    h.push_str("<section id=\"summary\"><h2>Decision summary</h2>");
    let long = r.sections.len() > FOLD_CHARTS;
    if long {
        let _ = write!(
            h,
            "<details><summary>Show the decision of each of the {} points</summary>",
            r.sections.len()
        );
    }
    h.push_str("<ul>");
    for s in &r.sections {
        let _ = write!(
            h,
            "<li><b>{}</b>: {}</li>",
            esc(&s.title()),
            esc(&s.decision)
        );
    }
    h.push_str("</ul>");
    if long {
        h.push_str("</details>");
    }
    let _ = write!(
        h,
        "<details><summary>Show the {} per-point tables</summary>",
        r.sections.len()
    );
    for s in &r.sections {
        let key = &s.key_metric;
        let cols: Vec<&String> = s.columns.iter().filter(|c| *c != key).collect();
        let _ = write!(h, "<h3>{}</h3><div class=\"scroll\"><table><tr><th>target</th><th>runs</th><th>{} ({})</th><th>CV</th><th>vs {}</th>",
            esc(&s.title()), esc(&header(key)), if s.higher_is_better { "higher is better" } else { "lower is better" }, esc(&r.baseline));
        for c in &cols {
            let _ = write!(h, "<th>{}</th>", esc(&header(c)));
        }
        h.push_str("</tr>");
        for row in &s.rows {
            let c = row_cells(row, key, &r.baseline);
            // Words, not ✓/✗: the page keeps ✓/✗ for better/worse than the baseline.
            let (cls, mark) = match row.mark {
                Some(Mark::Best) => ("best", " (best)"),
                Some(Mark::Worst) => ("worst", " (worst)"),
                None => ("", ""),
            };
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td><td class=\"{cls}\">{}{}</td><td>{}</td><td>{}</td>",
                esc(&c.target),
                c.runs,
                esc(&c.key),
                mark,
                c.cv,
                esc(&c.vs)
            );
            for c in &cols {
                let _ = write!(
                    h,
                    "<td>{}</td>",
                    esc(&row
                        .shown_value(c)
                        .map(|v| value(c, v))
                        .unwrap_or_else(|| "—".into()))
                );
            }
            h.push_str("</tr>");
        }
        h.push_str("</table></div>");
        for why in s.rows.iter().filter_map(|r| r.why.as_ref()) {
            let _ = write!(h, "<p class=\"why\">why: {}</p>", esc(why));
        }
        if let Some(line) = s.in_turn_line(&r.baseline) {
            let _ = write!(h, "<p class=\"why\">{}</p>", esc(&line));
        }
    }
    h.push_str("</details></section>");
}

/// Every warning once, grouped by kind with how many places it concerns, the places folded
/// under it ([`super::text::notes::warning_groups`], as the terminal and summary.md group
/// them), and every failed repetition. A caution about the plan's own choice is said once,
/// without places.
fn warnings(h: &mut String, r: &Report) {
    use super::text::notes::{add_place, warning_groups};
    let mut groups = warning_groups(r);
    for s in &r.sections {
        for row in &s.rows {
            for (rep, st, err) in &row.failed {
                let text = st.with_error(err.as_deref());
                let place = format!("{} repetition {} in {}", row.target, rep + 1, s.title());
                add_place(&mut groups, text, place);
            }
        }
    }
    if groups.is_empty() {
        return;
    }
    h.push_str("<section id=\"warnings\"><h2>Warnings</h2><ul>");
    for g in groups {
        if g.planned {
            let _ = write!(
                h,
                "<li class=\"warn\">{} <span class=\"places\">({})</span></li>",
                esc(&g.text),
                esc(&g.reach())
            );
            continue;
        }
        let _ = write!(
            h,
            "<li class=\"warn\">{} <details class=\"places\"><summary>{}</summary>{}</details></li>",
            esc(&g.text),
            esc(&g.reach()),
            esc(&g.places.join("; "))
        );
    }
    h.push_str("</ul></section>");
}

fn amplification(h: &mut String, r: &Report) {
    h.push_str("<section id=\"amplification\"><h2>Amplification and memory</h2><p>Write amplification = bytes the device wrote ÷ bytes the workload wrote (the phase ends with syncfs). Space amplification = growth of used space ÷ bytes written.</p><div class=\"scroll\"><table><tr><th>workload</th><th>target</th><th>logical written</th><th>device written</th><th>write amp</th><th>space amp</th><th>peak cache</th><th>peak dirty</th></tr>");
    for s in &r.sections {
        for row in &s.rows {
            let f = |k: &str| {
                row.shown_value(k)
                    .map(|v| value(k, v))
                    .unwrap_or_else(|| "—".into())
            };
            let _ = write!(h, "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&s.title()), esc(&row.target), f("logical_write_bytes"), f("device_write_bytes"), f("write_amplification"), f("space_amplification"), f("peak_cached_bytes"), f("peak_dirty_bytes"));
        }
    }
    h.push_str("</table></div></section>");
}

/// The page's words for how the file systems started.
fn condition_text(condition: &str) -> String {
    if condition == "fresh" {
        "a fresh file system for every repetition".into()
    } else {
        format!("file systems {condition} (one aged image per target, a copy per repetition)")
    }
}

/// One line per aged image of the run: what the aging reached and how fragmented it left
/// the file system (the model's [`Report::aging`], from the records' provenance).
fn aging_lines(r: &Report) -> Vec<String> {
    r.aging
        .iter()
        .map(|a| {
            format!(
                "{}: {}",
                a.target,
                crate::provision::aging::summary(&a.aging)
            )
        })
        .collect()
}

fn provenance(h: &mut String, r: &Report) {
    h.push_str("<section id=\"provenance\"><h2>Provenance</h2><div class=\"scroll\"><table>");
    let hf = &r.host;
    for (k, v) in [
        ("command line", hf.command_line.join(" ")),
        ("fsarena", hf.fsarena_version.clone()),
        ("kernel", hf.kernel.clone()),
        ("CPU", format!("{} × {}", hf.cpus, hf.cpu_model)),
        ("memory", value("x_bytes", hf.mem_total_bytes as f64)),
        ("work device", hf.work_device.clone().unwrap_or_default()),
        ("file systems", {
            let mut t = condition_text(&r.condition);
            for l in aging_lines(r) {
                t.push_str("; ");
                t.push_str(&l);
            }
            t
        }),
        (
            "data set zstd ratio",
            hf.dataset_zstd_ratio
                .map_or("—".into(), |z| format!("{z:.2}× (zstd -3 over a sample)")),
        ),
    ] {
        let _ = write!(
            h,
            "<tr><th>{k}</th><td class=\"wrap\" style=\"text-align:left\"><code>{}</code></td></tr>",
            esc(&v)
        );
    }
    h.push_str("</table></div>");
    for (w, why) in &hf.skipped_workloads {
        let _ = write!(
            h,
            "<p class=\"warn\">workload {} skipped: {}</p>",
            esc(w),
            esc(why)
        );
    }
    for (t, why) in &hf.skipped_targets {
        let _ = write!(
            h,
            "<p class=\"warn\">target {} skipped: {}</p>",
            esc(t),
            esc(why)
        );
    }
    h.push_str("<div class=\"scroll\"><table><tr><th>target</th><th>fs type</th><th>mkfs</th><th>mkfs version</th><th>mount options in effect</th><th>image</th><th>loop direct I/O</th><th>health checks</th></tr>");
    let mut seen: Vec<&str> = Vec::new();
    for m in &r.measurements {
        if seen.contains(&m.target.as_str()) || m.provenance.location.is_empty() {
            continue;
        }
        seen.push(&m.target);
        let p = &m.provenance;
        let checks: Vec<&Measurement> = r
            .measurements
            .iter()
            .filter(|x| x.target == m.target && x.health.is_some())
            .collect();
        let passed = checks
            .iter()
            .filter(|x| x.health.as_ref().is_some_and(|h| h.passed))
            .count();
        let _ = write!(h, "<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{} of {} passed</td></tr>",
            esc(&m.target), esc(&p.fs_type),
            esc(&p.mkfs_command.as_ref().map(|c| c.join(" ")).unwrap_or_else(|| "—".into())),
            esc(p.mkfs_version.as_deref().unwrap_or("—")),
            esc(p.mount_options.as_deref().unwrap_or("—")),
            p.image_bytes.map(|b| value("x_bytes", b as f64)).unwrap_or_else(|| "—".into()),
            p.loop_direct_io.map_or("—", |d| if d { "granted" } else { "refused" }),
            passed, checks.len());
    }
    h.push_str("</table></div></section>");
}
