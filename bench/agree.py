#!/usr/bin/env python3
"""fsarena's % difference against the baseline beside the standard tool's, per file system.

Usage: bench/agree.py DIR THREADS

DIR is a bench/agree.sh output: DIR/fsarena/summary.json (fsarena's report model) and
DIR/tools.txt, one line per timed tool phase: `op fs rep files t0 t1 read_ios write_ios`;
DIR/atime.txt (when there), per timed du and rm: `op fs rep dirs unread_before unread_after`,
how many of the tree's directories a read would give a new access time under relatime.
The first file system in tools.txt is the baseline. For the tools the difference is computed
the way fsarena's report does for positive samples: the ratio of geometric means − 1, with
Welch's 95 % interval on the logarithms; the range beside it is the smallest and largest
ratio of any one tool run to any one baseline run. "Decides" means p < 0.05 (unadjusted:
the tool side is three comparisons per file system, not a family of dozens).
Prints Markdown.
"""
import json
import math
import random
import statistics as st
import sys

OPS = [("create", "create", "fs_mark -S 0 + sync -f"), ("scan", "scan", "du -s, cold, + sync -f"),
       ("delete", "delete", "rm -rf + sync -f")]
SECTION = {"create": ("create", ""), "scan": ("scan", "cold"), "delete": ("delete", "")}


def betacf(a, b, x):
    """Continued fraction of the regularized incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-14:
            break
    return h


def ibeta(a, b, x):
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(ln) * betacf(a, b, x) / a
    return 1.0 - math.exp(ln) * betacf(b, a, 1.0 - x) / b


def t_sf2(t, df):
    """Two-sided p-value of Student's t."""
    return ibeta(df / 2.0, 0.5, df / (df + t * t))


def t_quantile(p, df):
    """The t with upper tail 1 − p (p > 0.5), by bisection."""
    lo, hi = 0.0, 1e3
    for _ in range(200):
        mid = (lo + hi) / 2
        if 1.0 - t_sf2(mid, df) / 2.0 < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def welch_log(x, b):
    """(pct_diff, (low, high), p) of x against b on the log scale; None parts with 1 run."""
    lx, lb = [math.log(v) for v in x], [math.log(v) for v in b]
    diff = st.mean(lx) - st.mean(lb)
    pct = (math.exp(diff) - 1) * 100
    if len(lx) < 2 or len(lb) < 2:
        return pct, None, None
    vx, vb = st.variance(lx) / len(lx), st.variance(lb) / len(lb)
    se = math.sqrt(vx + vb)
    if se == 0:
        return pct, (pct, pct), 0.0
    df = (vx + vb) ** 2 / (vx ** 2 / (len(lx) - 1) + vb ** 2 / (len(lb) - 1))
    q = t_quantile(0.975, df)
    ci = ((math.exp(diff - q * se) - 1) * 100, (math.exp(diff + q * se) - 1) * 100)
    return pct, ci, t_sf2(abs(diff) / se, df)


def gmean_pct(x, b):
    """The ratio of geometric means of x and b, − 1, in percent."""
    return (math.exp(st.mean(map(math.log, x)) - st.mean(map(math.log, b))) - 1) * 100


def gap_interval(ours_x, ours_b, tool_x, tool_b, resamples=4000):
    """The 95 % percentile-bootstrap interval of the gap in points (fsarena's % difference
    minus the tool's), each of the four samples of runs resampled on its own, seeded: is a
    gap beyond ±15 points more than the two sides' run-to-run spread? Crude at 3 runs."""
    if min(map(len, (ours_x, ours_b, tool_x, tool_b))) < 2:
        return None
    rng = random.Random(41)
    draw = lambda xs: [rng.choice(xs) for _ in xs]
    gaps = sorted(gmean_pct(draw(ours_x), draw(ours_b)) - gmean_pct(draw(tool_x), draw(tool_b))
                  for _ in range(resamples))
    return gaps[int(0.025 * resamples)], gaps[int(0.975 * resamples) - 1]


def fmt_pct(v):
    return f"{v:+.1f} %"


def fmt_ci(ci):
    return f"{ci[0]:+.0f} to {ci[1]:+.0f}" if ci else "—"


def load_tools(path):
    rate, ios, order = {}, {}, []
    for line in open(path):
        op, fs, _rep, files, t0, t1, r, w = line.split()
        if fs not in order:
            order.append(fs)
        rate.setdefault((op, fs), []).append(int(files) / (float(t1) - float(t0)))
        ios.setdefault((op, fs), []).append((int(r), int(w)))
    return rate, ios, order


def load_fsarena(path, threads):
    summary = json.load(open(path))
    found = {}
    for s in summary["sections"]:
        if s["threads"] != threads or s["key_metric"] != "files_per_s" or s.get("dataset"):
            continue
        for op, (wl, variant) in SECTION.items():
            if s["workload"] == wl and s["variant"] == variant:
                for row in s["rows"]:
                    found[(op, row["target"])] = row
    return found


def side(rows, fs, base):
    """fsarena's figures for one file system: (raw rates, pct, ci, decision, p_adjusted)."""
    row = rows.get(fs)
    if row is None:
        return None
    m = row["metrics"].get("files_per_s", {})
    vs = m.get("vs_baseline") or {}
    return (m.get("raw", []), vs.get("pct_diff"), vs.get("pct_ci95"), vs.get("decision"),
            vs.get("p_adjusted"), row["metrics"])


def direction(pct, decided):
    if not decided or pct is None:
        return None
    return "better" if pct > 0 else "worse"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    out, threads = sys.argv[1], int(sys.argv[2])
    rate, ios, order = load_tools(f"{out}/tools.txt")
    ours = load_fsarena(f"{out}/fsarena/summary.json", threads)
    base = order[0]
    for fs in order:
        print(f"\n### {fs}" + (" (the baseline)" if fs == base else f" against {base}") + "\n")
        if fs == base:
            print("| op | fsarena files/s (runs) | tool | tool files/s (runs) |")
            print("|---|---|---|---|")
        else:
            print("| op | fsarena vs ext4 (95 % CI; decision) | tool | tool vs ext4 (95 % CI; Welch p) "
                  "| tool range | gap, points (95 % bootstrap CI) | agree |")
            print("|---|---|---|---|---|---|---|")
        for op, _, tool in OPS:
            by_op = {t: r for (o, t), r in ours.items() if o == op}
            f = side(by_op, fs, base)
            t = rate.get((op, fs), [])
            if fs == base:
                raw = ", ".join(f"{v:,.0f}" for v in (f[0] if f else []))
                print(f"| {op} | {raw} | {tool} | {', '.join(f'{v:,.0f}' for v in t)} |")
                continue
            tb = rate.get((op, base), [])
            if not f or f[1] is None or not t or not tb:
                print(f"| {op} | — | {tool} | — | — | — | no data |")
                continue
            pct, ci, p = welch_log(t, tb)
            lo = (min(t) / max(tb) - 1) * 100
            hi = (max(t) / min(tb) - 1) * 100
            gap = f[1] - pct
            fb = side(by_op, base, base)
            gci = gap_interval(f[0], fb[0] if fb else [], t, tb)
            ours_dir = direction(f[1], f[3] in ("better", "worse"))
            tool_dir = direction(pct, p is not None and p < 0.05)
            if ours_dir and tool_dir and ours_dir != tool_dir:
                verdict = "**opposite directions**"
            elif abs(gap) <= 15:
                verdict = "yes (within ±15)"
            elif gci and gci[0] <= 15 and gci[1] >= -15:
                verdict = f"{abs(gap):.0f} points apart, within the runs' spread (interval reaches ±15)"
            else:
                verdict = f"**no: {abs(gap):.0f} points apart**"
            print(f"| {op} | {fmt_pct(f[1])} ({fmt_ci(f[2])}; {f[3]}, BH p = {f[4]:.3f}) | {tool} "
                  f"| {fmt_pct(pct)} ({fmt_ci(ci)}; p = {p:.3f}) | {lo:+.0f} to {hi:+.0f} % "
                  f"| {gap:+.1f} ({fmt_ci(gci)}) | {verdict} |")
    print("\n### Raw figures (files/s per run; device I/Os of each phase: reads/writes)\n")
    print("| op | fs | fsarena files/s | fsarena device I/Os | tool files/s | tool device I/Os |")
    print("|---|---|---|---|---|---|")
    for op, _, _tool in OPS:
        by_op = {t: r for (o, t), r in ours.items() if o == op}
        for fs in order:
            f = side(by_op, fs, base)
            raw = ", ".join(f"{v:,.0f}" for v in (f[0] if f else []))
            rio = (f[5].get("device_read_ios") or {}).get("raw", []) if f else []
            wio = (f[5].get("device_write_ios") or {}).get("raw", []) if f else []
            ours_io = ", ".join(f"{r:.0f}/{w:.0f}" for r, w in zip(rio, wio))
            t = ", ".join(f"{v:,.0f}" for v in rate.get((op, fs), []))
            d = ", ".join(f"{r}/{w}" for r, w in ios.get((op, fs), []))
            print(f"| {op} | {fs} | {raw} | {ours_io} | {t} | {d} |")

    print_atime(f"{out}/atime.txt")


def print_atime(path):
    """The access-time state of the tree before (and after) each timed tool walk."""
    try:
        lines = [ln.split() for ln in open(path) if not ln.startswith("#")]
    except FileNotFoundError:
        return
    rows = {}
    for op, fs, _rep, dirs, before, after in lines:
        rows.setdefault((op, fs, dirs), []).append((before, after))
    print("\n### Directories a read would give a new access time (relatime), per tool run\n")
    print("| op | fs | directories | before the timed walk | after it |")
    print("|---|---|---|---|---|")
    for (op, fs, dirs), v in rows.items():
        print(f"| {op} | {fs} | {dirs} | {', '.join(b for b, _ in v)} "
              f"| {', '.join(a for _, a in v)} |")


if __name__ == "__main__":
    main()
