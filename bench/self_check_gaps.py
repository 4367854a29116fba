#!/usr/bin/env python3
"""The replay self-check's time warnings on ext4 against the real program (issue 56, item 4).

Reads a directory bench/replay_corpus.py wrote (--out DIR: each program's JSON with the real
runs, its trace, and each replay run's results.jsonl under PROGRAM/TIMING-N/), and, with
--replays DIR, other replay runs of the same programs laid out the same way (DIR/PROGRAM/*/
results.jsonl: the shipped traces replayed with `fsarena run --workload replay --trace T
--target ext4 --runs 3 --out DIR/PROGRAM/think-0`). For every replay run on ext4 it prints the
replay's seconds, its `replay_time_gap_pct` and whether its row was warned, and for the real
program's runs on ext4 of the same sitting whether the same check would have warned the
program itself: a check that warns the replay no more often than the real program is one
that warns only where the program's time is not what the recording says.

    bench/self_check_gaps.py CORPUS_DIR [--replays DIR]
"""

import argparse
import glob
import json
import os
import re

PCT, KNOWN_WITHIN = 25.0, 0.10
PROGRAM_S = re.compile(r"against the program's (\d+\.\d+) s")


def ext4_replays(dirs):
    """(seconds, gap %, warned, the program's time as the note gives it) of each ext4 run."""
    for d in dirs:
        path = os.path.join(d, "results.jsonl")
        for line in open(path) if os.path.exists(path) else []:
            m = json.loads(line)
            if m.get("record") != "measurement" or m["target"] != "ext4" or m["status"] != "ok":
                continue
            note = next(n for n in m["notes"] if n.startswith("self-check"))
            warned = any(n.startswith("fidelity warning: on the file-system") for n in m["notes"])
            known = PROGRAM_S.search(note)
            yield (m["metrics"]["replay_seconds"], m["metrics"].get("replay_time_gap_pct"),
                   warned, float(known.group(1)) if known else None)


def band(program_time, legacy):
    """The times the check lets pass: `trace::program_time` and `replay::time_check`'s rule."""
    if program_time is None:
        return legacy * (1 - PCT / 100), legacy * (1 + PCT / 100)
    p = program_time
    estimate = min(max(p["traced_s"] - p["strace_s"], p["least_s"]), p["most_s"])
    if p["least_s"] >= estimate * (1 - KNOWN_WITHIN) and p["most_s"] <= estimate * (1 + KNOWN_WITHIN):
        least = most = estimate
    else:
        least, most = p["least_s"], p["most_s"]
    return least * (1 - PCT / 100), most * (1 + PCT / 100)


def show(name, runs, program_time, real):
    if not runs:
        return
    legacy = next((r[3] for r in runs if r[3] is not None), None)
    lo, hi = band(program_time, legacy) if (program_time or legacy) else (None, None)
    warned = sum(r[2] for r in runs)
    real_warned = sum(not lo <= t <= hi for t in real) if lo is not None else None
    print(f"  {name}: replay {', '.join(f'{r[0]:.3f}' for r in runs)} s; gap "
          f"{', '.join('-' if r[1] is None else f'{r[1]:+.0f}' for r in runs)} %; warned "
          f"{warned} of {len(runs)}; passes [{lo:.3f}, {hi:.3f}] s; the real program would be "
          f"warned {real_warned} of {len(real)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("corpus")
    ap.add_argument("--replays")
    a = ap.parse_args()
    for path in sorted(glob.glob(os.path.join(a.corpus, "*.json"))):
        name = os.path.basename(path)[:-5]
        state = json.load(open(path))
        if "reps" not in state:
            continue
        real = [r["real"]["ext4"] for r in state["reps"] if "ext4" in r["real"]]
        trace = os.path.join(a.corpus, name + ".fstrace")
        header = json.loads(open(trace).readline()) if os.path.exists(trace) else {}
        print(f"{name}: the real program on ext4 {', '.join(f'{t:.3f}' for t in real)} s; "
              f"program_time {header.get('program_time')}")
        show("recorded here", list(ext4_replays(glob.glob(os.path.join(a.corpus, name, "*")))),
             header.get("program_time"), real)
        if a.replays:
            dirs = glob.glob(os.path.join(a.replays, name, "*"))
            show(os.path.basename(a.replays.rstrip("/")), list(ext4_replays(dirs)), None, real)


if __name__ == "__main__":
    main()
