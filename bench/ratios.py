#!/usr/bin/env python3
"""Turns the hyperfine JSON files of a bench run into the ratio table.

Usage: bench/ratios.py DIR

Every DIR/<fs>-<op>.json (hyperfine --export-json) holds one benchmark group; the command
named `fsarena` is compared with the fastest other command (by mean). Prints Markdown: one
summary row per (op, file system) with fsarena/best-peer (below 1: fsarena is faster), then
every command's mean ± σ, min and max.
"""
import json
import pathlib
import sys


def fmt(s):
    """Seconds in a readable unit."""
    return f"{s * 1000:.1f} ms" if s < 10 else f"{s:.2f} s"


def load(path):
    with open(path) as f:
        results = json.load(f)["results"]
    return {r["command"]: r for r in results}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    d = pathlib.Path(sys.argv[1])
    files = sorted(d.glob("*-*.json"))
    if not files:
        sys.exit(f"no hyperfine JSON in {d}")
    rows, details = [], []
    for p in files:
        fs, op = p.stem.split("-", 1)
        res = load(p)
        ours = res.get("fsarena")
        peers = {k: v for k, v in res.items() if k != "fsarena"}
        if ours is None or not peers:
            continue
        best_name, best = min(peers.items(), key=lambda kv: kv[1]["mean"])
        ratio = ours["mean"] / best["mean"]
        rows.append((op, fs, ours, best_name, best, ratio))
        for name, r in sorted(res.items(), key=lambda kv: kv[1]["mean"]):
            details.append(
                f"| {op} | {fs} | {name} | {fmt(r['mean'])} ± {fmt(r['stddev'] or 0)} "
                f"| {fmt(r['min'])} | {fmt(r['max'])} | {len(r['times'])} |"
            )
    print("| op | fs | fsarena (mean ± σ) | best peer | best peer (mean ± σ) | fsarena / best |")
    print("|---|---|---|---|---|---|")
    for op, fs, ours, best_name, best, ratio in rows:
        mark = " ⚠" if ratio > 1.05 else ""
        print(
            f"| {op} | {fs} | {fmt(ours['mean'])} ± {fmt(ours['stddev'] or 0)} | {best_name} "
            f"| {fmt(best['mean'])} ± {fmt(best['stddev'] or 0)} | {ratio:.2f}{mark} |"
        )
    print()
    print("| op | fs | command | mean ± σ | min | max | runs |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(details))


if __name__ == "__main__":
    main()
