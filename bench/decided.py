#!/usr/bin/env python3
"""The decided share of a report (issue 41, item 3): how many key-metric comparisons of the disk
targets with the baseline are decided, and which of those whose two sides' runs do not overlap
(every run of one side above every run of the other) are still undecided, with their own
(sequential) p and adjusted p.

Usage: fsarena report DIR >/dev/null; python3 bench/decided.py DIR

Reads DIR/summary.json only (standard library). The reference target (tmpfs) is left out.
"""
import json
import signal
import sys


def main():
    out = sys.argv[1]
    summary = json.load(open(f"{out}/summary.json"))
    base = summary["baseline"]
    total = decided = apart = apart_decided = 0
    open_apart = []
    for sec in summary["sections"]:
        key = sec["key_metric"]
        rows = {r["target"]: r for r in sec["rows"]}
        if base not in rows:
            continue
        raw_b = rows[base]["metrics"][key]["raw"]
        for r in sec["rows"]:
            m = r["metrics"].get(key) or {}
            v = m.get("vs_baseline") or {}
            if r["target"] == base or r.get("reference") or "decision" not in v:
                continue
            total += 1
            ok = v["decision"] != "undecided"
            decided += ok
            raw_c = m["raw"]
            if max(raw_b) < min(raw_c) or max(raw_c) < min(raw_b):
                apart += 1
                apart_decided += ok
                if not ok:
                    name = " ".join(x for x in (sec["workload"], sec["variant"]) if x)
                    open_apart.append(
                        f"{name}, {sec['threads']} thread(s), {r['target']}: "
                        f"{v['pct_diff']:+.1f} %, p {v.get('p_sequential', v['p_value']):.3f}, "
                        f"adjusted {v['p_adjusted']:.3f}")
    print(f"decided {decided} of {total}; runs apart: {apart_decided} of {apart} decided")
    for line in open_apart:
        print("  undecided, runs apart:", line)


if __name__ == "__main__":
    # Piped into `head`, end quietly once the reader has gone, as a command-line tool does
    # (Python ignores SIGPIPE and would print a BrokenPipeError traceback instead).
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    main()
