#!/usr/bin/env python3
"""Where a run's wall time went (issue 61, item 1): the harness's efficiency (measured seconds
÷ the run's wall seconds) and the time split per step, from the records' `harness_seconds`.

Usage: python3 bench/harness_time.py DIR [--wall SECONDS] [--by-target] [--by-repetition]

Reads DIR/results.jsonl only (standard library), or DIR itself when it is a .jsonl file. The
run's wall time is `--wall` when given (e.g. from `/usr/bin/time`), else the run's own: its
`run_end` records (one per invocation, a `--resume` adds one), each from the invocation's
start to the end of its cleanup; the report files written after it are not in it. A file
from before 2026-11-29 has none: give it `--wall`. (The time was once taken from the newest
file in DIR, which a directory unpacked or copied later dates to that day: 1578.7 s for the
296.2-s run of bench/results/default-20261129-s8/quiet.)

Columns, seconds summed over every cell's records, by target:
  measure   the measured phases (`metrics.seconds`, which hold the phase's final syncfs),
            and the baseline's passes measured in turn inside them (`in_turn.metrics.seconds`,
            set aside from the phase's own figures and so taken out of `phase_aside`)
  setup     making a cell's file system: mkfs, a blank's or a clone's copy, losetup, the
            write trace's start, the eviction, mount, the write-back before a clone's phase
            (`writeback`: its own file system and device; `sync`, the whole machine, before
            2026-11-29), the wait for earlier images' removal, the host probe and the monitor's start
  workload  the workload's own work outside its phase: its preparation before it
            (`workload_prepare`), its check of its work after it (`workload_check`), the
            harness's own time around the phase that no step names (`phase_edges`; the three
            were one step, `workload_unmeasured`, before 2026-11-29), and what the phase set
            aside (`phase_aside`: the cache drops between cold passes)
  check     the read-only check after each cell
  teardown  unmount, detach, the trace's end, the image's and the scratch directory's
            removal, handing a clone back
  cells' untimed  each cell's `cell_seconds` (less `image_seconds`) that no step names

Then the wall time is split into before the first cell (data set, the populated images built
ahead and their first copies), the cells, and the rest (between cells: recording; after
them: reports, removal of the images); and the start per populated image, by step
(`image_steps`, recorded since 2026-11-29 on the first cell that copies the image).
"""
import argparse
import json
import os
import signal
from collections import defaultdict

GROUPS = {
    "setup": {"mkfs", "blank_copy", "blank_keep", "clone", "losetup", "trace_start", "evict",
              "mount", "sync", "writeback", "wait_removals", "monitor", "probe"},
    "workload": {"workload_unmeasured", "workload_prepare", "workload_check", "phase_edges",
                 "phase_aside"},
    "check": {"check"},
    "teardown": {"unmount", "detach", "trace_end", "remove_image", "remove_dir", "unclaim",
                 "return_clone", "remove_key"},
}
COLUMNS = ["measure", "setup", "workload", "check", "teardown", "cells' untimed"]


def group_of(step):
    for g, names in GROUPS.items():
        if step in names:
            return g
    return "setup"  # a step this script does not know yet: counted with the provisioning


def read(path):
    host, records, ends = None, [], []
    name = path if path.endswith(".jsonl") else os.path.join(path, "results.jsonl")
    with open(name) as f:
        for line in f:
            r = json.loads(line)
            if r.get("record") == "host":
                host = r
            elif r.get("record") == "measurement":
                records.append(r)
            elif r.get("record") == "run_end":
                ends.append(r)
    return host, records, ends


def cell_key(r):
    return (r["target"], r["workload"], r.get("dataset"), r["threads"], r["repetition"])


def split(records, row_of=lambda key: key[0]):
    """Seconds per column by row (target, unless `row_of` says otherwise), and per step."""
    cols = defaultdict(lambda: defaultdict(float))
    steps = defaultdict(float)
    cells = defaultdict(list)
    for r in records:
        cells[cell_key(r)].append(r)  # a cell's records are appended in order
    for key, rs in cells.items():
        c = cols[row_of(key)]
        named = 0.0
        for r in rs:
            m = (r.get("metrics") or {}).get("seconds", 0.0)
            beside = ((r.get("in_turn") or {}).get("metrics") or {}).get("seconds", 0.0)
            c["measure"] += m + beside
            named += m + beside
            for step, s in (r.get("harness_seconds") or {}).items():
                if step == "phase_aside":
                    s = max(0.0, s - beside)
                c[group_of(step)] += s
                steps[step] += s
                named += s
        # The last record of a cell carries the whole cell's seconds; image_seconds (the
        # populated image's build, charged to the first cell on it) is left out: the images
        # are built before the first cell, several at once, and count in "before".
        last = rs[-1]
        if last.get("cell_seconds") is not None:
            cell = last["cell_seconds"] - (last.get("image_seconds") or 0.0)
            c["cells"] += cell
            c["cells' untimed"] += max(0.0, cell - named)
    return cols, steps


def start_split(records):
    """One line per populated image: its steps (`image_steps`, on the first cell that copied
    it) and its first copy (made beside it, in that cell's provenance)."""
    lines, seen = [], set()
    for r in records:
        steps = r.get("image_steps") or {}
        key = (r["target"], r.get("dataset"), r["workload"])
        if not steps or key in seen:
            continue
        seen.add(key)
        clone = (r.get("provenance") or {}).get("clone") or {}
        copy = (f", its first copy {clone['seconds']:.2f} s ({clone['bytes'] / 1e6:.0f} MB)"
                if clone.get("method") == "copy" and clone.get("seconds") is not None else "")
        parts = ", ".join(f"{k} {v:.2f}" for k, v in sorted(steps.items(), key=lambda kv: -kv[1]))
        lines.append(f"{r['target']} (for {r['workload']}): {sum(steps.values()):.2f} s: "
                     f"{parts}{copy}")
    return lines


def wall_of(ends):
    """The run's wall seconds from its own `run_end` records: every invocation's span."""
    return sum(e["finished_unix"] - e["started_unix"] for e in ends)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--wall", type=float, help="the run's wall seconds (default: from DIR)")
    ap.add_argument("--by-target", action="store_true", help="a row per target")
    ap.add_argument("--by-repetition", action="store_true",
                    help="a row per repetition, with the cells' own efficiency (measured / "
                         "their seconds): the first repetition's cells follow the run's start")
    a = ap.parse_args()
    host, records, ends = read(a.dir)
    if host is None:
        raise SystemExit(f"{a.dir}: no host record")
    if a.wall is None and not ends:
        raise SystemExit(f"{a.dir}: no run_end record (a run from before 2026-11-29, or one "
                         "that ended in an error): give --wall")
    wall = a.wall if a.wall is not None else wall_of(ends)
    cols, steps = split(records)
    total = defaultdict(float)
    for c in cols.values():
        for k in COLUMNS + ["cells"]:
            total[k] += c[k]
    # The run began at its first invocation's start (a little before the host record, which
    # follows the plan's checks), or at the host record for a file without one.
    began = min([host["started_unix"]] + [e["started_unix"] for e in ends[:1]])
    first = min((r["started_unix"] for r in records), default=began)
    before = first - began
    after = wall - before - total["cells"]
    print(f"{a.dir}: {len(records)} records, wall {wall:.1f} s, "
          f"measured {total['measure']:.1f} s: efficiency {100 * total['measure'] / wall:.1f} %")
    head = ["target"] + COLUMNS
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    rows = sorted(cols) if a.by_target else []
    for t in rows:
        print("| " + " | ".join([t] + [f"{cols[t][k]:.1f}" for k in COLUMNS]) + " |")
    print("| " + " | ".join(["all"] + [f"{total[k]:.1f}" for k in COLUMNS]) + " |")
    print(f"before the first cell (data set, populated images, their first copies): "
          f"{before:.1f} s; the cells: {total['cells']:.1f} s; after them and between "
          f"(reports, cleanup, bookkeeping): {after:.1f} s")
    if a.by_repetition:
        reps, _ = split(records, lambda key: key[4])
        print("| repetition | measure | cells | measure / cells | " + " | ".join(COLUMNS[1:]) + " |")
        print("|" + "---|" * (3 + len(COLUMNS)))
        for rep in sorted(reps):
            c = reps[rep]
            print(f"| {rep + 1} | {c['measure']:.1f} | {c['cells']:.1f} | "
                  f"{100 * c['measure'] / max(c['cells'], 1e-9):.1f} % | "
                  + " | ".join(f"{c[k]:.1f}" for k in COLUMNS[1:]) + " |")
    shares = [(k, total[k]) for k in COLUMNS] + [("before", before), ("rest", after)]
    print("shares of the wall: " + ", ".join(f"{k} {100 * v / wall:.1f} %" for k, v in shares))
    images = start_split(records)
    if images:
        print("the start, per populated image (its build's own steps, from the first cell on "
              "it; the builds run side by side, so they add up to more than the start):")
        for line in images:
            print("  " + line)
    single = sorted(((s, f"{r['target']} {r['workload']} {r['repetition'] + 1} {step}")
                     for r in records for step, s in (r.get("harness_seconds") or {}).items()),
                    reverse=True)[:5]
    print("largest single steps (target workload repetition step): "
          + ", ".join(f"{name} {s:.1f}" for s, name in single))
    print("steps, largest first: " + ", ".join(
        f"{k} {v:.1f}" for k, v in sorted(steps.items(), key=lambda kv: -kv[1])))


if __name__ == "__main__":
    # Piped into `head`, end quietly once the reader has gone, as a command-line tool does
    # (Python ignores SIGPIPE and would print a BrokenPipeError traceback instead).
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    main()
