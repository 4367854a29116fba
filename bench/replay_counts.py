#!/usr/bin/env python3
"""What a corpus program and its replay ask of a file system, counted (issue 56).

Timings on a shared machine swing with the other work on it; counts do not. For one program
of bench/corpus_programs.py and one file system, this runs the real program and the replay of
its trace each once, on a fresh file system made as bench/replay_corpus.py makes it (its
initial state laid down, mounted again, caches dropped), and prints for each:

- its seconds (the program's wall time; the replay's measured phase, `replay_seconds`);
- the requests and 512-byte sectors read from and written to the loop device
  (/sys/block/loopN/stat), counted from the start of the run until a `sync -f` after it;
- on a FUSE target (ntfs), every request the daemon read from /dev/fuse, by operation and by
  the thread that made it (strace -ttt -T of the daemon: its `read`s of /dev/fuse, whose
  header holds the opcode and the requesting thread), with the daemon's time on each kind
  (from a request's read to its next read: ntfs-3g serves one at a time) and its wait for
  each thread's requests (the time on the caller's side). The recorded threads' replays show
  one FUSE thread each; laying down the replay's initial state, its final check and removing
  its directory show as fsarena's other threads.

The replay's device counts include laying down its initial state and removing its directory
(the program's initial state is laid down before counting): they compare with the program's
only for a trace whose initial state is empty (the SQLite programs). Its initial state is
freshly written, so its reads come from the cache: a replay's cold reads are in an fsarena
cell's own `device_read_ios`.

The replay runs with `--target dir:MOUNT`, on the fresh file system this script made, with
`--timing` (think). The program is recorded afresh unless --trace names a trace. `--pin`
places the program, the replay and the mount (so the FUSE daemon) as bench/replay_corpus.py
places the program: a trace of fewer threads than CPUs on the last CPU; `--no-strace` times
without the daemon's strace. `--record-only` records the program on a fresh file system of
`--fs` and prints its calls by system call and each recorded thread's opens, instead: a
program that adapts to its file system (rsync, git) shows what it does on each.

Usage: sudo bench/replay_counts.py --program NAME --fs ext4|xfs|btrfs|ntfs [--trace FILE]
                                   [--size SIZE] [--timing T] [--pin] [--no-strace]
                                   [--record-only]
Needs root and the packages of `./dev deps`. Removes what it made on any exit.
"""

import argparse
import collections
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import replay_fidelity as rf
from corpus_programs import PROGRAMS
from replay_corpus import Corpus, placement

# FUSE opcodes (linux/fuse.h) of the requests a program's file calls make.
OPS = {1: "LOOKUP", 2: "FORGET", 3: "GETATTR", 4: "SETATTR", 5: "READLINK", 6: "SYMLINK",
       8: "MKNOD", 9: "MKDIR", 10: "UNLINK", 11: "RMDIR", 12: "RENAME", 13: "LINK", 14: "OPEN",
       15: "READ", 16: "WRITE", 17: "STATFS", 18: "RELEASE", 20: "FSYNC", 21: "SETXATTR",
       22: "GETXATTR", 23: "LISTXATTR", 24: "REMOVEXATTR", 25: "FLUSH", 26: "INIT",
       27: "OPENDIR", 28: "READDIR", 29: "RELEASEDIR", 30: "FSYNCDIR", 31: "GETLK",
       32: "SETLK", 33: "SETLKW", 34: "ACCESS", 35: "CREATE", 38: "DESTROY", 42: "BATCH_FORGET",
       43: "FALLOCATE", 44: "READDIRPLUS", 45: "RENAME2", 46: "LSEEK", 47: "COPY_FILE_RANGE"}
READ_LINE = re.compile(r'^\d+\s+(\d+\.\d+) read\(\d+, "((?:\\x[0-9a-f]{2})+)".*<(\d+\.\d+)>$')


def device_counts(loop):
    """(read requests, sectors read, write requests, sectors written) of a loop device so
    far."""
    fields = open(f"/sys/block/{os.path.basename(loop)}/stat").read().split()
    return int(fields[0]), int(fields[2]), int(fields[4]), int(fields[6])


def daemon_of(mnt):
    """The pid of the FUSE daemon serving `mnt` (its command line names the mount point)."""
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
            except OSError:
                continue
            if mnt.encode() in cmd and any(b"ntfs-3g" in c for c in cmd[:1]):
                return int(pid)
    return None


class Fuse:
    """What a FUSE daemon was asked, from strace's `-ttt -T` log of its reads of /dev/fuse.

    `by_thread`: {requesting thread: Counter(opcode name)}. `busy`: {requesting thread:
    {opcode name: seconds the daemon spent on such requests}}, each request's time from its read's return to the
    daemon's next read (a one-thread daemon such as ntfs-3g serves one request at a time, so
    this is its service time, strace's cost on it included, alike for a program and its
    replay). `idle`: {requesting thread: seconds the daemon waited in its reads for that
    thread's next request}, the time spent on the other side of /dev/fuse (the caller, the
    kernel, the scheduler)."""

    def __init__(self, log):
        self.by_thread = collections.defaultdict(collections.Counter)
        self.busy = collections.defaultdict(collections.Counter)
        self.idle = collections.Counter()
        reads = collections.defaultdict(list)  # daemon thread: [(start, seconds, opcode)]
        for line in open(log):
            m = READ_LINE.match(line)
            if not m:
                continue
            raw = bytes(int(h, 16) for h in re.findall(r"\\x([0-9a-f]{2})", m.group(2)))
            if len(raw) < 36:
                continue
            # struct fuse_in_header: len, opcode, unique (8), nodeid (8), uid, gid, pid.
            opcode, = struct.unpack_from("<I", raw, 4)
            thread, = struct.unpack_from("<I", raw, 32)
            name = OPS.get(opcode, str(opcode))
            self.by_thread[thread][name] += 1
            reads[line.split()[0]].append((float(m.group(1)), float(m.group(3)), name, thread))
        for rs in reads.values():
            for (t, dur, name, thread), (nxt, _, _, _) in zip(rs, rs[1:]):
                self.busy[thread][name] += max(0.0, nxt - t - dur)
            # The first read's wait began before the run: only the waits between requests,
            # each counted to the thread whose request ended it.
            for _, dur, _, thread in rs[1:]:
                self.idle[thread] += dur


def one_run(a, prog, trace, what, work):
    """Runs the program or its replay on a fresh file system: (seconds, device counts, what
    the FUSE daemon was asked or None)."""
    pin = placement(trace) if a.pin else []
    f = rf.Fresh(a.fs, work, a.size, rf.commands(a.fs, work), pin)
    strace = None
    try:
        prog.seed(f.mnt, work)
        f.cold()
        log = os.path.join(work, "fuse.log")
        pid = daemon_of(f.mnt) if a.fs == "ntfs" and not a.no_strace else None
        if pid:
            strace = subprocess.Popen(["strace", "-f", "-qq", "-ttt", "-T", "-p", str(pid),
                                       "-e", "trace=read", "-s", "40", "-xx", "-o", log])
            time.sleep(0.5)  # attached before the first request of the run
        before = device_counts(f.loop)
        out = os.path.join(work, "out")
        shutil.rmtree(out, ignore_errors=True)
        t0 = time.perf_counter()
        if what == "program":
            rf.sh(*pin, *prog.command(f.mnt, work), cwd=f.mnt, env=prog.env(),
                  stdout=subprocess.DEVNULL)
        else:
            rf.sh(*pin, rf.FSARENA, "run", "--workload", "replay", "--trace", trace,
                  "--timing", a.timing, "--runs", "1", "--quiet",
                  "--work-dir", os.path.join(work, "fsarena"), "--out", out,
                  "--history", "off", "--target", "dir:" + f.mnt,
                  stdout=subprocess.DEVNULL)
        seconds = time.perf_counter() - t0
        subprocess.run(["sync", "-f", f.mnt], check=True)
        after = device_counts(f.loop)
        if strace:
            strace.terminate()
            strace.wait()
            strace = None
        if what == "replay":
            seconds = replay_seconds(out)
        return seconds, [x - y for x, y in zip(after, before)], (
            Fuse(log) if pid else None)
    finally:
        if strace:
            strace.terminate()
            strace.wait()
        f.close()


def record_on(a, prog, work):
    """Records the program on a fresh file system of `a.fs` (not the host's disk, where the
    corpus records): the path of its trace. A program that asks the file system what it
    supports makes other calls on another file system; the traces show which."""
    f = rf.Fresh(a.fs, work, a.size, rf.commands(a.fs, work))
    trace = os.path.join(work, f"{prog.name}-on-{a.fs}.fstrace")
    try:
        prog.seed(f.mnt, work)
        f.cold()
        rf.sh(rf.FSARENA, "record", "--out", trace, "--work-dir",
              os.path.join(work, "fsarena"), "--", *prog.command(f.mnt, work), cwd=f.mnt,
              env=prog.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return trace
    finally:
        f.close()


def show_trace(trace):
    """The calls of a trace by system call, and each recorded thread's opens."""
    calls, opens = collections.Counter(), collections.Counter()
    with open(trace) as f:
        header = json.loads(f.readline())
        for line in f:
            c = json.loads(line).get("call")
            if c:
                calls[c["syscall"]] += 1
                if c["op"] == "open":
                    opens[c["thread"]] += 1
    print(f"  recorded on {header.get('fs_type')}: {sum(calls.values())} calls: "
          + ", ".join(f"{k} {n}" for k, n in calls.most_common()))
    print("  opens by recorded thread: "
          + ", ".join(f"{t}: {n}" for t, n in sorted(opens.items())))


def replay_seconds(out):
    """The measured phase's seconds of the replay whose results are in `out`."""
    for line in open(os.path.join(out, "results.jsonl")):
        m = json.loads(line)
        if m.get("record") == "measurement":
            return m["metrics"]["replay_seconds"]
    return float("nan")


def show(fuse):
    """The FUSE requests of each requesting thread, most first, with the daemon's time."""
    for thread, ops in sorted(fuse.by_thread.items(), key=lambda kv: -sum(kv[1].values())):
        busy = fuse.busy[thread]
        print(f"  FUSE thread {thread}: {sum(ops.values())} requests, daemon busy "
              f"{sum(busy.values()) * 1e3:.0f} ms, idle before them "
              f"{fuse.idle[thread] * 1e3:.0f} ms: "
              + ", ".join(f"{op} {n} ({busy[op] * 1e3:.0f} ms)" for op, n in ops.most_common()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--program", required=True, choices=[p.name for p in PROGRAMS])
    ap.add_argument("--fs", required=True, choices=["ext4", "xfs", "btrfs", "ntfs"])
    ap.add_argument("--trace", help="replay this trace instead of recording the program")
    ap.add_argument("--size", default="64G")
    ap.add_argument("--timing", default="think", help="the replay's --timing (think)")
    ap.add_argument("--pin", action="store_true",
                    help="place the program, the replay and the FUSE daemon as "
                         "bench/replay_corpus.py does (one CPU for a trace of fewer threads)")
    ap.add_argument("--no-strace", action="store_true",
                    help="time only: no strace of the FUSE daemon")
    ap.add_argument("--record-only", action="store_true",
                    help="record the program on a fresh --fs and print its calls by system "
                         "call, instead of running it and its replay")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("replay_counts: run as root (losetup, mkfs, mount, strace)")
    prog = next(p for p in PROGRAMS if p.name == a.program)
    work = tempfile.mkdtemp(prefix="fsarena-counts-", dir="/var/tmp")
    os.chmod(work, 0o755)
    try:
        if a.record_only:
            show_trace(record_on(a, prog, work))
            return
        trace = a.trace and os.path.abspath(a.trace)
        if not trace:
            trace = os.path.join(work, prog.name + ".fstrace")
            corpus = Corpus.__new__(Corpus)
            corpus.a, corpus.work = argparse.Namespace(size=a.size), work
            corpus.record(prog, trace)
        for what in ("program", "replay"):
            seconds, (reads, read, writes, written), fuse = one_run(a, prog, trace, what, work)
            print(f"{prog.name} on {a.fs}, {what}: {seconds:.3f} s; device: {reads} read "
                  f"requests, {read} sectors read, {writes} write requests, {written} sectors "
                  "written")
            if fuse:
                show(fuse)
    finally:
        subprocess.run([rf.FSARENA, "cleanup", "--work-dir", os.path.join(work, "fsarena")],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
