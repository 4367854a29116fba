#!/usr/bin/env python3
"""Replay fidelity on a corpus of real programs (issue 56, items 2, 3 and 6).

Each program of the corpus (real Debian programs: cp, rsync, git, sqlite3 in WAL and in
rollback-journal mode, PostgreSQL's initdb and pgbench, dpkg, make and gcc, python3) is

1. recorded once with `fsarena record --anonymize` on the host's disk (or, --record-on FS, on a
   fresh file system of that type made as the real runs' are), in a scratch root holding its
   initial state (the trace is kept in the output directory, and reused when the
   script is run again with the same --out);
2. replayed with `fsarena run --workload replay --runs 1` on ext4, xfs, btrfs and one FUSE
   target (ntfs), once per repetition and per replay timing (--timings);
3. run for real, in the same repetition, on a fresh file system of each target made as
   fsarena makes it (a sparse image of --size, `losetup --direct-io=on`, the format and mount
   commands of fsarena's own dry run), its initial state copied in, the file system mounted
   again and the caches dropped, the command alone timed, placed where fsarena places the
   replay's cell (a trace of fewer threads than CPUs: pinned to the CPU fsarena's
   one-thread cells run on, the FUSE daemon too; otherwise anywhere); every real run checks it did its work
   (files and bytes of a copy, rows of a table, commits of a repository).

Before every replay run and every real run the host is left to settle: `sync`, caches
dropped, and a wait (at most 5 s) until the host disk holding the work directory has no
request in flight and wrote under 1 MiB in half a second. Each repetition takes the targets in
an order rotated by its number, the replay's cells and the program's runs alike. Each
repetition's ratio of a file system's time to ext4's is compared between the replay and the
program: a pair's error is the median over repetitions of replay ratio / program ratio - 1,
taken absolute (bench/corpus_report.py, which also prints the ratio of medians).

Usage: sudo bench/replay_corpus.py [--runs N] [--programs a,b] [--timings fast,think,original]
                                   [--fsarena BINARY]
                                   [--timings think,think-without-cpu]
                                   [--size SIZE] [--record-on FS] [--out DIR] [--report]
Resumable: with the same --out it keeps the traces and the repetitions already measured and
measures only what is missing, so a long run can be done in chunks (--programs). --report
prints the table from what --out holds. Needs root and the packages of `./dev deps`. Removes
every image, loop device and mount it made on any exit (after a replay that failed, `fsarena
cleanup` of its own work directory only).
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import replay_fidelity as rf
from corpus_programs import PROGRAMS
from corpus_report import report

DISK_FS = ["ext4", "xfs", "btrfs"]
FUSE_FS = "ntfs"


def settle(work, limit=5.0):
    """Syncs, drops the caches and waits until the disk under `work` is idle; whether it was."""
    rf.sh("sync")
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")
    stat = disk_stat(work)
    end = time.monotonic() + limit
    prev = stat()
    while time.monotonic() < end:
        time.sleep(0.5)
        cur = stat()
        # Fields 5-7 of /sys/block/X/stat: writes, merges, sectors written; 9: in flight.
        # Idle: nothing in flight and under 1 MiB written in the half second (writeback of
        # what the last run left is done; a shared machine's trickle does not count).
        if cur[8] == 0 and cur[6] - prev[6] < 2048:
            return True
        prev = cur
    return False


def disk_stat(path):
    """A reader of /sys/block/DISK/stat for the disk holding `path`."""
    dev = os.stat(path).st_dev
    sys_dev = os.path.realpath(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    if os.path.exists(os.path.join(sys_dev, "partition")):
        sys_dev = os.path.dirname(sys_dev)
    stat_file = os.path.join(sys_dev, "stat")
    return lambda: [int(x) for x in open(stat_file).read().split()]


def why(stderr):
    """The line of a failed run's stderr that says why (a panic's or an abort's message)."""
    lines = [l.strip() for l in stderr.splitlines() if l.strip()]
    said = [l for l in lines if any(w in l for w in ("panicked", "memory allocation", "error"))]
    return (said or lines[-1:] or ["no message"])[0][:300]


def cell_cpu():
    """The CPU fsarena runs a one-thread cell on: the last this process may use."""
    return str(max(os.sched_getaffinity(0)))


def trace_threads(trace):
    """The recorded threads of a trace (its header's `threads`)."""
    with open(trace) as f:
        return json.loads(f.readline())["threads"]


def placement(trace):
    """Where the real program runs: where fsarena runs the replay's cell. A replay of fewer
    threads than CPUs runs on the last CPU with its FUSE daemon (`taskset -c N`); one of as
    many threads or more runs anywhere, and so does the program (an empty prefix). Pinning
    the program alone made its FUSE round trips stay on one CPU while the replay's crossed
    vCPUs: rsync's ntfs/ext4 ratio 2.35 real against 6.26 replayed."""
    if trace_threads(trace) < len(os.sched_getaffinity(0)):
        return ["taskset", "-c", cell_cpu()]
    return []


# A replay "timing" of this script's own: `think` on the same recording with its header's
# `user_cpu_s` taken out, as `think` replayed before the program's computing was measured
# (issue 56): a before/after of that change in one sitting, on one recording.
WITHOUT_CPU = "think-without-cpu"


def without_cpu(trace):
    """A copy of `trace` beside it without the header's `user_cpu_s` (made once)."""
    copy = trace + ".without-cpu"
    if not os.path.exists(copy):
        with open(trace) as f, open(copy + ".part", "w") as out:
            header = json.loads(f.readline())
            header.pop("user_cpu_s", None)
            out.write(json.dumps(header, separators=(",", ":")) + "\n")
            shutil.copyfileobj(f, out)
        os.rename(copy + ".part", copy)
    return copy


class DidNotWork(Exception):
    """A real run left less than the recording did."""


class Corpus:
    """One corpus run: the work directory, the targets' commands, the output directory."""

    def __init__(self, a, work):
        self.a, self.work = a, work
        self.pin = []
        self.cmds = {fs: rf.commands(fs, work) for fs in DISK_FS + [FUSE_FS]}
        self.unsettled = 0

    def settle(self):
        if not settle(self.work):
            self.unsettled += 1

    def targets(self, prog, rep=0):
        """The program's targets, rotated by the repetition's number `rep` (the replay's
        cells and the program's runs alike), as fsarena rotates a run's repetitions: the
        replay's cells of one repetition run back to back in one fsarena run, each after the
        one before without a settle between, so a fixed order put every file system but
        the first behind another's aftermath in every repetition."""
        fss = DISK_FS + ([FUSE_FS] if prog.fuse is True else [])
        k = rep % len(fss)
        return fss[k:] + fss[:k]

    def record(self, prog, trace):
        """Records `prog` once; the check of the recording run is the one every run must match.
        On the host's disk, or (--record-on FS) on a fresh file system of that type made as the
        real runs' are: `cp -a` on btrfs copies with FICLONE, on ext4 with copy_file_range."""
        fresh = None
        if self.a.record_on:
            fs = self.a.record_on
            fresh = rf.Fresh(fs, self.work, self.a.size, self.cmds[fs])
            root = fresh.mnt
        else:
            root = os.path.join(self.work, "record-" + prog.name)
            os.makedirs(root)
        try:
            prog.seed(root, self.work)
            tmp = trace + ".part"
            rf.sh(rf.FSARENA, "record", "--anonymize", "--out", tmp, "--work-dir",
                  os.path.join(self.work, "fsarena"), "--", *prog.command(root, self.work),
                  cwd=root, env=prog.env(), stdout=subprocess.DEVNULL,
                  stderr=subprocess.DEVNULL)
            expect = prog.check(root)
        finally:
            if fresh:
                fresh.close()
            else:
                rf.sh("rm", "-rf", root)
        os.rename(tmp, trace)
        return expect

    def real(self, prog, fs, expect):
        """One run of the real program on a fresh `fs`; its seconds."""
        f = rf.Fresh(fs, self.work, self.a.size, self.cmds[fs], self.pin)
        try:
            prog.seed(f.mnt, self.work)
            f.cold()
            self.settle()
            t0 = time.perf_counter()
            rf.sh(*self.pin, *prog.command(f.mnt, self.work), cwd=f.mnt, env=prog.env(),
                  stdout=subprocess.DEVNULL)
            seconds = time.perf_counter() - t0
            got = prog.check(f.mnt)
            if list(got) != list(expect):
                raise DidNotWork(f"on {fs} it left {got} where the recording left {expect}")
            return seconds
        finally:
            f.close()

    def replay(self, prog, trace, timing, out, rep=0):
        """One replay run on every target; {fs: seconds}, or the reason it failed."""
        work = os.path.join(self.work, "fsarena")
        if timing == WITHOUT_CPU:
            trace, timing = without_cpu(trace), "think"
        args = [rf.FSARENA, "run", "--workload", "replay", "--trace", trace, "--timing", timing,
                "--runs", "1", "--fs-size", self.a.size, "--quiet", "--work-dir", work,
                "--out", out]
        for fs in self.targets(prog, rep):
            args += ["--target", fs]
        run = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            _, stderr = run.communicate()
        except BaseException:
            # Ctrl-C: fsarena's own interruption path tears its run down; then ours goes on.
            run.send_signal(signal.SIGINT)
            run.wait()
            raise
        times, failed = {}, None
        path = os.path.join(out, "results.jsonl")
        for line in open(path) if os.path.exists(path) else []:
            m = json.loads(line)
            if m.get("record") == "measurement":
                if m["status"] != "ok":
                    failed = failed or f"{m['target']}: {m['status']}: {m.get('error')}"
                else:
                    times[m["target"]] = m["metrics"]["replay_seconds"]
        if run.returncode != 0:
            # Only this script's own work directory: nothing of anyone else's.
            subprocess.run([rf.FSARENA, "cleanup", "--work-dir", work],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            failed = failed or f"exit {run.returncode}: {why(stderr)}"
        if failed is None and set(times) != set(self.targets(prog)):
            failed = f"no measurement for {sorted(set(self.targets(prog)) - set(times))}"
        return failed, times

    def program(self, prog):
        """Measures what is missing of `prog` (resumable); its state as saved."""
        path = os.path.join(self.a.out, prog.name + ".json")
        state = json.load(open(path)) if os.path.exists(path) else {"reps": []}
        trace = os.path.join(self.a.out, prog.name + ".fstrace")
        if not os.path.exists(trace) or "expect" not in state:
            try:
                state = {"reps": [], "expect": self.record(prog, trace)}
            except subprocess.CalledProcessError as e:
                sys.exit(f"replay_corpus: recording {prog.name} failed: {e}")
        state["expect"] = list(state["expect"])
        state["fuse"] = prog.fuse
        state["trace_bytes"] = os.path.getsize(trace)
        self.pin = placement(trace)
        state["pinned"] = bool(self.pin)
        while len(state["reps"]) < self.a.runs and "real_failed" not in state:
            rep = {"real": {}, "replay": {}}
            i = len(state["reps"])
            for timing in self.a.timings:
                if state.get("failed", {}).get(timing):
                    continue
                self.settle()
                out = os.path.join(self.a.out, prog.name, f"{timing}-{i}")
                shutil.rmtree(out, ignore_errors=True)  # an interrupted repetition's
                failed, times = self.replay(prog, trace, timing, out, i)
                if failed:
                    state.setdefault("failed", {})[timing] = failed
                else:
                    rep["replay"][timing] = times
            try:
                for fs in self.targets(prog, i):  # interleaved with the replay, as rounds are
                    rep["real"][fs] = self.real(prog, fs, state["expect"])
            except (DidNotWork, subprocess.CalledProcessError) as e:
                state["real_failed"] = str(e)
                print(f"{prog.name}: the real program failed: {e}", file=sys.stderr)
            else:
                state["reps"].append(rep)
            with open(path, "w") as f:
                json.dump(state, f, indent=1)
            print(f"{prog.name}: repetition {i + 1} of {self.a.runs} done", file=sys.stderr)
        return state


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--size", default="64G")
    ap.add_argument("--programs", default=",".join(p.name for p in PROGRAMS),
                    help="which programs, comma-separated (default: all)")
    ap.add_argument("--timings", default="fast,think",
                    help="the replay's timings to measure, comma-separated (fast, think, "
                    f"original, and {WITHOUT_CPU}: think without the program's user CPU time)")
    ap.add_argument("--record-on", choices=DISK_FS + [FUSE_FS],
                    help="record on a fresh file system of this type (default: the host's disk)")
    ap.add_argument("--out", default=os.path.join(rf.REPO, "bench", "results", "replay-corpus"))
    ap.add_argument("--report", action="store_true", help="only print the table from --out")
    ap.add_argument("--fsarena", help="the fsarena binary that records and replays (default: "
                    "this tree's release build; another build's, to compare two back to back "
                    "on the same traces, copied with their .json into a fresh --out)")
    a = ap.parse_args()
    if a.fsarena:
        rf.FSARENA = os.path.abspath(a.fsarena)
    a.timings = [t for t in a.timings.split(",") if t]
    # The replays run in other directories: a relative --out would name another place there.
    a.out = os.path.abspath(a.out)
    chosen = [p for p in PROGRAMS if p.name in a.programs.split(",")]
    os.makedirs(a.out, exist_ok=True)
    load = os.getloadavg()[0]
    if not a.report:
        if os.geteuid() != 0:
            sys.exit("replay_corpus: run as root (losetup, mkfs, mount, drop_caches)")
        chunks_file = os.path.join(a.out, "machine.json")
        chunks = json.load(open(chunks_file)) if os.path.exists(chunks_file) else []
        chunk = {"load_at_start": load, "unsettled": 0, "programs": [p.name for p in chosen],
                 "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
        chunks.append(chunk)
        work = tempfile.mkdtemp(prefix="fsarena-corpus-", dir="/var/tmp")
        os.chmod(work, 0o755)
        try:
            corpus = Corpus(a, work)
            print(f"replay_corpus: quiet: {'yes' if load <= 0.5 else 'no'} (load average "
                  f"{load:.2f} at start)", file=sys.stderr)
            for prog in chosen:
                corpus.program(prog)
                chunk["unsettled"] = corpus.unsettled
                with open(chunks_file, "w") as f:
                    json.dump(chunks, f, indent=1)
        finally:
            subprocess.run(["umount", os.path.join(work, "mnt")], check=False,
                           stderr=subprocess.DEVNULL)
            # What an fsarena run of ours may have left (its own work directory only).
            subprocess.run([rf.FSARENA, "cleanup", "--work-dir", os.path.join(work, "fsarena")],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            shutil.rmtree(work, ignore_errors=True)
    text = report(a.out, PROGRAMS, a.timings)
    with open(os.path.join(a.out, "fidelity.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
