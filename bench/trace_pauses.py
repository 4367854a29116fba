#!/usr/bin/env python3
"""How a trace's time between calls is spread: its `duration_s`, `user_cpu_s`, and the sums of
the pauses of 1 ms or more and of the shorter ones (docs/replay-timing.md).

A call's pause is its start less the end of its anchor, the latest-ending call that ended
before it started and came before it in the trace (`replay::pace::anchors`). Reads plain
.fstrace files (decompress shipped ones with `zstd -d` first).

Usage: bench/trace_pauses.py TRACE.fstrace...
"""

import json
import sys

THINK_MIN = 1e-3  # replay::pace::THINK_MIN


def pauses(path):
    """(header, long pauses' sum, short pauses' sum, how many short pauses)."""
    with open(path) as f:
        header = json.loads(f.readline())
        calls = [e["call"] for e in map(json.loads, f) if "call" in e]
    by_end = sorted(range(len(calls)), key=lambda i: (calls[i]["start"] + calls[i]["dur"], i))
    long_sum = short_sum = 0.0
    short_n = ended = 0
    for i, call in enumerate(calls):
        while ended < len(by_end) and (calls[by_end[ended]]["start"]
                                       + calls[by_end[ended]]["dur"]) <= call["start"]:
            ended += 1
        anchor = next((j for j in reversed(by_end[:ended]) if j < i), None)
        if anchor is None:
            continue
        think = max(0.0, call["start"] - calls[anchor]["start"] - calls[anchor]["dur"])
        if think >= THINK_MIN:
            long_sum += think
        else:
            short_sum += think
            short_n += 1
    return header, long_sum, short_sum, short_n


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    print("| trace | duration_s | user_cpu_s | long pauses | short pauses (n) |")
    print("|---|---|---|---|---|")
    for path in sys.argv[1:]:
        h, long_sum, short_sum, short_n = pauses(path)
        user = h.get("user_cpu_s")
        print(f"| {path.rsplit('/', 1)[-1]} | {h['duration_s']:.3f} | "
              f"{'—' if user is None else f'{user:.3f}'} | {long_sum:.3f} | "
              f"{short_sum:.3f} ({short_n:,}) |")


if __name__ == "__main__":
    main()
