#!/usr/bin/env python3
"""The tables of docs/findings.md, from a study's summary.json (fsarena's own report model).

One table per data set: a row per workload (and variant) × thread count, a column per
target; the baseline's cell is its figure, every other cell the difference against it with
fsarena's decision (▲ better, ▼ worse, = equivalent within the margin, ? undecided), a memory
reference in brackets. Below each table, the "why" lines fsarena gave (what the monitor saw).

Usage: bench/findings_tables.py DIR/STUDY/summary.json [--threads 1,4] [--workloads a,b]
       [--datasets LABEL,...] [--scale-check]
Only reads; prints Markdown on stdout.
"""
import argparse
import json
import sys

MARK = {"better": "▲", "worse": "▼", "equivalent": "=", "undecided": "?"}


def figure(metric, v):
    """The figure as fsarena's tables print it (three significant digits and a unit)."""
    if v is None:
        return "—"
    unit = ""
    if metric == "seconds" or metric.endswith("_seconds") or metric == "seconds_per_pass":
        unit = " s"
    elif metric.endswith("_ms"):
        unit = " ms"
    elif metric == "mb_per_s":
        unit = " MB/s"
    elif metric == "files_per_s":
        unit = " files/s"
    elif metric.endswith("_per_s") or metric == "tps":
        unit = "/s"
    for div, suffix in ((1e6, "M"), (1e3, "k")):
        if abs(v) >= div and unit not in (" s", " ms"):
            return f"{v / div:.3g}{suffix}{unit}"
    return f"{v:.3g}{unit}"


def row_label(sec):
    name = sec["workload"]
    if sec.get("variant"):
        name += f" [{sec['variant']}]"
    return name


def cell(sec, row, baseline):
    key = sec["key_metric"]
    shown = row.get("shown", {}).get(key)
    if row["target"] == baseline:
        return figure(key, shown["value"]) if shown else "failed"
    if not shown:
        return "failed" if row.get("failed") else "—"
    vs = row["metrics"].get(key, {}).get("vs_baseline")
    if not vs:
        return figure(key, shown["value"])
    pct = vs["pct_diff"]
    text = f"{pct:+.1f} %"
    if row.get("reference"):
        return f"({text}, RAM)"
    return f"{text} {MARK.get(vs.get('decision'), '')}".strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("summary")
    ap.add_argument("--threads", default="")
    ap.add_argument("--workloads", default="")
    ap.add_argument("--datasets", default="")
    ap.add_argument("--scale-check", action="store_true")
    a = ap.parse_args()
    s = json.load(open(a.summary))
    base = s["baseline"]
    want_t = {int(t) for t in a.threads.split(",") if t}
    want_w = [w for w in a.workloads.split(",") if w]
    want_d = [d for d in a.datasets.split(",") if d]
    secs = [
        x
        for x in s["sections"]
        if (not want_t or x["threads"] in want_t) and (not want_w or x["workload"] in want_w)
    ]
    datasets = []
    for x in secs:
        d = x.get("dataset") or ""
        if d not in datasets and (not want_d or any(d.startswith(w) for w in want_d)):
            datasets.append(d)
    targets = [r["target"] for r in secs[0]["rows"]] if secs else []
    for d in datasets:
        if d:
            print(f"**{d}**\n")
        print("| operation | threads | " + " | ".join(targets) + " |")
        print("|---|---:|" + "---:|" * len(targets))
        whys = []
        rows = [x for x in secs if (x.get("dataset") or "") == d]
        if want_w:
            rows.sort(key=lambda x: (want_w.index(x["workload"]), x["threads"]))
        for x in rows:
            by = {r["target"]: r for r in x["rows"]}
            cells = [cell(x, by[t], base) if t in by else "—" for t in targets]
            print(f"| {row_label(x)} | {x['threads']} | " + " | ".join(cells) + " |")
            for r in x["rows"]:
                if r.get("why"):
                    whys.append(f"{row_label(x)}, {x['threads']} thread(s): {r['why']}")
        print()
        if whys:
            print("<details><summary>Why, where fsarena could say (what the monitor saw)</summary>\n")
            for w in whys:
                print(f"- {w}")
            print("\n</details>\n")
    if a.scale_check and s.get("scale_check"):
        sc = s["scale_check"]
        print(f"scale check: {sc['holds']} hold, {sc['flips']} flip, {sc['undecided']} undecided")
        for c in sc.get("comparisons", []):
            if c.get("verdict") == "flips":
                print(f"- flips: {c}")


if __name__ == "__main__":
    sys.exit(main())
