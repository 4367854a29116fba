#!/usr/bin/env python3
"""What a recording's figures say of the program's untraced time (issue 56, item 4).

For each program of the corpus (bench/corpus_programs.py), on the host's own file system,
with the program and strace bound to one CPU as `fsarena record` binds them:

- untraced: the program's wall seconds and its cgroup v2 `cpu.stat` (user, system);
- traced: the same program under strace with `fsarena record`'s flags and call list (read from
  src/trace/record.rs), the program alone in a cgroup v2 (strace outside it): strace's wall
  clock from the first call to the last call's end, the whole wall time, the cgroup's
  `cpu.stat`, how many calls strace printed, and how many of them made a process (clone,
  fork, vfork);
- strace's cost per call on `dd`'s one-byte reads and writes, as `fsarena record` calibrates
  it (traced against untraced).

Each program's figures go to stdout as one JSON line; nothing is written elsewhere but under
--work, which is removed at the end.

    sudo bench/record_timing.py --work DIR [--runs 3] [--programs cp-a,rsync]
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus_programs as cp  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CGROUP2 = "/sys/fs/cgroup/unified"
FLAGS = ["-f", "-qq", "-ttt", "-T", "-y", "-s", "0", "-e", "signal=none", "--seccomp-bpf"]
JOIN = ["sh", "-c", 'echo 0 >"$0"; exec "$@"']
LOOP = 500


def traced_calls():
    """The list of calls `fsarena record` asks strace for, from its source."""
    src = open(os.path.join(HERE, "..", "src", "trace", "record.rs")).read()
    body = re.search(r'const TRACED: &str = "(.*?)";', src, re.S).group(1)
    return re.sub(r"\\\s*", "", body)


def cpu_stat(cg):
    stat = dict(line.split() for line in open(os.path.join(cg, "cpu.stat")))
    return int(stat["user_usec"]) / 1e6, int(stat["system_usec"]) / 1e6


class Cgroup:
    def __init__(self, name):
        self.path = os.path.join(CGROUP2, f"fsarena-timing-{os.getpid()}-{name}")
        os.mkdir(self.path)

    def procs(self):
        return os.path.join(self.path, "cgroup.procs")

    def close(self):
        for _ in range(50):
            try:
                os.rmdir(self.path)
                return
            except OSError:
                time.sleep(0.1)


def one_cpu():
    return ["taskset", "-c", str(os.sched_getaffinity(0).__iter__().__next__())]


def run(prog, work, traced, trace_list):
    """One run of `prog` in a fresh root; its figures."""
    root = os.path.join(work, "root")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    prog.seed(root, work)
    cp.sh("sync")
    cg = Cgroup("t" if traced else "u")
    out = os.path.join(work, "strace.out")
    try:
        cmd = one_cpu()
        if traced:
            cmd += ["strace", *FLAGS, "-e", f"trace={trace_list}", "-o", out, "--"]
        cmd += [*JOIN, cg.procs(), *prog.command(root, work)]
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, cwd=root, env=prog.env(), stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        wall = time.perf_counter() - t0
        user, system = cpu_stat(cg.path)
    finally:
        cg.close()
    fig = {"wall": wall, "user": user, "system": system}
    if traced:
        fig.update(strace_figures(out))
        os.remove(out)
    shutil.rmtree(root, ignore_errors=True)
    return fig


LINE = re.compile(r"^\d+ +(\d+\.\d+) (?:<\.\.\. )?(\w+)")
DUR = re.compile(r"<(\d+\.\d+)>$")


def strace_figures(path):
    starts, ends, calls, forks, durs = [], [], 0, 0, 0.0
    for line in open(path, errors="replace"):
        m = LINE.match(line)
        if not m:
            continue
        t = float(m.group(1))
        if "resumed>" not in line:
            calls += 1
            starts.append(t)
            if m.group(2) in ("clone", "clone3", "fork", "vfork"):
                forks += 1
        d = DUR.search(line.rstrip())
        if d:
            durs += float(d.group(1))
            ends.append(t + float(d.group(1)) if "resumed>" not in line else t)
    span = (max(ends + starts) - min(starts)) if starts else 0.0
    return {"span": span, "calls": calls, "forks": forks, "call_seconds": durs}


def calibration(work):
    """strace's cost per call of dd's one-byte loop: traced less untraced, per call."""
    dd = ["dd", "if=/dev/zero", "of=/dev/null", "bs=1", f"count={LOOP}", "status=none"]

    def timed(cmd):
        t0 = time.perf_counter()
        subprocess.run(one_cpu() + cmd, check=True, stderr=subprocess.DEVNULL)
        return time.perf_counter() - t0

    out = os.path.join(work, "dd.strace")
    traced = min(timed(["strace", *FLAGS, "-e", "trace=read,write", "-o", out, "--", *dd])
                 for _ in range(3))
    os.remove(out)
    plain = min(timed(dd) for _ in range(3))
    return (traced - plain) / (2 * LOOP)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--work", required=True)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--programs", default="")
    a = p.parse_args()
    want = set(filter(None, a.programs.split(",")))
    os.makedirs(a.work, exist_ok=True)
    trace_list = traced_calls()
    per_call = calibration(a.work)
    print(json.dumps({"strace_per_call_s": per_call}), flush=True)
    try:
        for prog in cp.PROGRAMS:
            if want and prog.name not in want:
                continue
            untraced, traced = [], []
            for _ in range(a.runs):
                untraced.append(run(prog, a.work, False, trace_list))
                traced.append(run(prog, a.work, True, trace_list))
            med = lambda rows, k: statistics.median(r[k] for r in rows)  # noqa: E731
            print(json.dumps({
                "program": prog.name,
                "untraced": {k: med(untraced, k) for k in untraced[0]},
                "traced": {k: med(traced, k) for k in traced[0]},
                "runs": {"untraced": untraced, "traced": traced},
            }), flush=True)
    finally:
        shutil.rmtree(a.work, ignore_errors=True)


if __name__ == "__main__":
    main()
