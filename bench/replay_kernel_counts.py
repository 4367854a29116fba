#!/usr/bin/env python3
"""What the kernel did for a corpus program and for its replay, counted (issue 56).

bench/replay_counts.py counts what reached the loop device; this counts what the file system
and the scheduler saw, with a tracefs instance of its own (mounted under its work directory),
for one program of bench/corpus_programs.py on one fresh file system made as
bench/replay_corpus.py makes it:

- the file system's tracepoints by name (btrfs: transaction commits, file syncs and whether
  each was a data sync, ordered extents, COWed blocks, inline and regular extents read, inodes
  made and evicted, tree locks; ext4: file syncs), only those of the file system under test
  (btrfs's name its fsid, ext4's a loop device);
- the requests read from and written to its loop device, how many reads began where the one
  before ended (how much of the tree's reading was sequential), and the device's flushes;
- the system calls of the program's processes (or the replay's threads) by name, the time
  inside them by name, and the time outside them (the program's computing, or the replay's
  own work between calls), so that the calls of the two can be compared kind by kind;
- on xfs, the tracepoints that tell syncs, transactions, timestamp updates and write faults
  on shared mappings apart (`xfs_write_fault`: sqlite's WAL index, stored to through a
  mapping the trace cannot see);
- from the system calls of the program's processes (or the replay's threads): at each rename
  of the thread that renames most (rsync's receiver), how many files the thread that opens
  most besides it (rsync's sender) had read by then: whether the writer stays behind the
  reader, as a pipe or a socket between them makes it.

The real program runs on a fresh file system, its initial state laid down, mounted again and
the caches dropped (as bench/replay_corpus.py runs it), counted from its start to a `sync -f`
after it. The replay runs as an fsarena cell (`fsarena run --target FS`, as the corpus runs
it): counted from its threads' first system call to the end of the harness's `syncfs` after
their last, which writes back what the replay wrote as the program's `sync -f` does (the
device figures are the cell's own, of its measured phase). Counts do not depend on the load
beside the run; the seconds printed do.

Usage: sudo bench/replay_kernel_counts.py --program NAME --fs ext4|xfs|btrfs|ntfs
                                          [--trace FILE] [--what program|replay|both]
                                          [--fsarena BINARY]
Needs root. Removes what it made on any exit.
"""

import argparse
import bisect
import collections
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import replay_fidelity as rf
from corpus_programs import PROGRAMS
from replay_corpus import Corpus

BTRFS = ("btrfs_transaction_commit btrfs_sync_file btrfs_sync_fs btrfs_ordered_extent_add "
         "btrfs_cow_block btrfs_inode_new btrfs_inode_evict btrfs_reserve_extent "
         "btrfs_get_extent_show_fi_inline btrfs_get_extent_show_fi_regular "
         "add_delayed_ref_head btrfs_tree_lock btrfs_tree_read_lock").split()
XFS = "xfs_file_fsync xfs_log_force xfs_trans_commit xfs_update_time xfs_write_fault".split()
EVENTS = ([f"btrfs/{e}" for e in BTRFS] + [f"xfs/{e}" for e in XFS] +
          ["ext4/ext4_sync_file_enter", "block/block_rq_issue",
          "raw_syscalls/sys_enter", "raw_syscalls/sys_exit", "task/task_newtask"])
NR = {"read": 0, "close": 3, "getdents64": 217, "openat": 257, "renameat": 264, "renameat2": 316, "mount": 165,
      "syncfs": 306, "move_mount": 429}
LINE = re.compile(r"^\s*(.+)-(\d+)\s+\[\d+\]\s+\S+\s+([\d.]+): (\w+): (.*)$")


class Tracing:
    """A tracefs instance of our own: its events on from `start` until `stop`."""

    def __init__(self, work, comms):
        self.mnt = os.path.join(work, "tracefs")
        os.makedirs(self.mnt, exist_ok=True)
        rf.sh("mount", "-t", "tracefs", "nodev", self.mnt)
        self.dir = os.path.join(self.mnt, "instances", f"fsarena-counts-{os.getpid()}")
        os.mkdir(self.dir)
        self.put("buffer_size_kb", "65536")
        only = " || ".join(f'comm == "{c}"' for c in comms)
        for e in EVENTS:
            if e.startswith("raw_syscalls"):
                self.put(f"events/{e}/filter", only)
            if os.path.exists(os.path.join(self.dir, "events", e)):
                self.put(f"events/{e}/enable", "1")

    def put(self, name, value):
        with open(os.path.join(self.dir, name), "w") as f:
            f.write(value)

    def start(self):
        self.put("trace", "")
        self.put("tracing_on", "1")

    def stop(self):
        """The events since `start`: (seconds, comm, pid, event, rest)."""
        self.put("tracing_on", "0")
        out = []
        with open(os.path.join(self.dir, "trace")) as f:
            for line in f:
                m = LINE.match(line)
                if m:
                    out.append((float(m.group(3)), m.group(1).strip(), int(m.group(2)),
                                m.group(4), m.group(5)))
        return out

    def close(self):
        for e in EVENTS:
            p = os.path.join(self.dir, "events", e, "enable")
            if os.path.exists(p):
                self.put(f"events/{e}/enable", "0")
        os.rmdir(self.dir)
        subprocess.run(["umount", self.mnt], check=False)


def nr(rest):
    m = re.match(r"NR (-?\d+)", rest)
    return int(m.group(1)) if m else None


def arg0(rest):
    m = re.match(r"NR -?\d+ \(([0-9a-f]+)", rest)
    return int(m.group(1), 16) if m else None


def comm_of(binary):
    """The name the kernel gives a process of `binary` (its file name, cut to 15 bytes):
    another build's binary may be named otherwise than `fsarena`."""
    return os.path.basename(binary)[:15]


def replay_window(evs, comm):
    """The events from the replay threads' first system call to the end of the harness's
    `syncfs` after their last (the replay's writeback, as the program's `sync -f`): the
    threads fsarena (process name `comm`) started in the burst that holds the thread making
    the most calls."""
    calls = collections.Counter(e[2] for e in evs if e[3] == "sys_enter" and e[1] == comm)
    born = {int(re.search(r"pid=(\d+)", e[4]).group(1)): e[0] for e in evs
            if e[3] == "task_newtask" and e[1] == comm}
    busiest = max((t for t in calls if t in born), key=lambda t: calls[t])
    threads = {t for t, at in born.items() if abs(at - born[busiest]) < 0.02 and calls[t] >= 10}
    first = min(e[0] for e in evs if e[2] in threads)
    last = max(e[0] for e in evs if e[2] in threads)
    syncs = [e[0] for e in evs if e[3] == "sys_exit" and nr(e[4]) == NR["syncfs"]]
    end = min([s for s in syncs if s > last] or [last])
    return [e for e in evs if first <= e[0] <= end], threads


def fs_events(evs, fs):
    """The file system's tracepoints by name (btrfs: only the busiest fsid's)."""
    out = collections.Counter()
    fsids = collections.Counter(e[4].split(":")[0] for e in evs if e[3] in BTRFS)
    mine = fsids.most_common(1)[0][0] if fsids else None
    for _, comm, _, ev, rest in evs:
        if ev in BTRFS and rest.split(":")[0] == mine:
            out[ev] += 1
            if ev == "btrfs_sync_file" and "datasync=1" in rest:
                out["btrfs_sync_file (datasync)"] += 1
        elif ev == "ext4_sync_file_enter" and fs == "ext4" and rest.startswith("dev 7,"):
            out[ev] += 1
        elif ev in XFS and fs == "xfs" and rest.startswith("dev 7:"):
            out[ev] += 1
    return out


def syscall_names():
    """System call numbers to names, from the kernel headers (linux-libc-dev)."""
    names = {}
    try:
        with open("/usr/include/x86_64-linux-gnu/asm/unistd_64.h") as f:
            for line in f:
                p = line.split()
                if len(p) == 3 and p[0] == "#define" and p[1].startswith("__NR_"):
                    names[int(p[2])] = p[1][5:]
    except OSError:
        pass
    return names


def syscalls(evs, threads):
    """The followed threads' system calls by name, the milliseconds inside them by name
    (each enter paired with its thread's next exit), and the seconds outside them between
    their first call and their last."""
    names, calls, inside, pending = syscall_names(), collections.Counter(), collections.Counter(), {}
    first = last = None
    for t, _, pid, ev, rest in evs:
        if pid not in threads or ev not in ("sys_enter", "sys_exit"):
            continue
        if ev == "sys_enter":
            name = names.get(nr(rest), str(nr(rest)))
            calls[name] += 1
            pending[pid] = (name, t)
            first = t if first is None else first
        elif pid in pending:
            name, t0 = pending.pop(pid)
            inside[name] += t - t0
            last = t
    if first is None or last is None:
        return None
    return {"calls": sum(calls.values()), "by_name": dict(calls.most_common()),
            "inside_ms": {k: round(v * 1000, 1) for k, v in inside.most_common(12)},
            "outside_s": round(last - first - sum(inside.values()), 4)}


def device_reads(evs):
    """Read requests on the busiest loop device, and how many began where the last ended."""
    reads = collections.defaultdict(list)
    for e in evs:
        if e[3] == "block_rq_issue":
            m = re.match(r"7,(\d+) (\S+) \d+ \(.*?\) (\d+) \+ (\d+)", e[4])
            if m and "R" in m.group(2):
                reads[m.group(1)].append((int(m.group(3)), int(m.group(4))))
    if not reads:
        return 0, 0
    r = max(reads.values(), key=len)
    return len(r), sum(1 for a, b in zip(r, r[1:]) if b[0] == a[0] + a[1])


def coupling(evs, threads):
    """At each rename of the thread that renames most, the files the thread that opens most
    besides it had read by then, less the renames before it (median, least, most)."""
    enters = [e for e in evs if e[2] in threads and e[3] in ("sys_enter", "sys_exit")]
    renames = collections.Counter(e[2] for e in enters if e[3] == "sys_enter"
                                  and nr(e[4]) in (NR["renameat"], NR["renameat2"]))
    if not renames:
        return None
    writer = renames.most_common(1)[0][0]
    opens = collections.Counter(e[2] for e in enters if e[3] == "sys_enter" and e[2] != writer
                                and nr(e[4]) == NR["openat"])
    if not opens:
        return None  # one thread renames and opens alike (python's writer): no coupling
    reader = opens.most_common(1)[0][0]
    # The reader's reads of descriptors its openat returned (not its socket's), once it has
    # begun listing the tree (before, a program reads its libraries and configuration).
    files, pending, reads, walking = set(), None, [], False
    for t, _, pid, ev, rest in enters:
        if pid != reader:
            continue
        n = nr(rest)
        walking = walking or n == NR["getdents64"]
        if ev == "sys_enter":
            pending = (n, arg0(rest), t)
            if n == NR["close"]:
                files.discard(arg0(rest))
        elif pending and pending[0] == n:
            ret = int(rest.split("= ")[1]) if "= " in rest else -1
            if n == NR["openat"] and ret >= 0:
                files.add(ret)
            if n == NR["read"] and pending[1] in files and ret > 0 and walking:
                reads.append(t)
            pending = None
    at = sorted(e[0] for e in enters if e[2] == writer and e[3] == "sys_enter"
                and nr(e[4]) in (NR["renameat"], NR["renameat2"]))
    ahead = [bisect.bisect(reads, t) - k for k, t in enumerate(at)]
    return {"renames": len(at), "reader_file_reads": len(reads),
            "reads_ahead_median": statistics.median(ahead), "least": min(ahead),
            "most": max(ahead)}


def device(loop):
    x = open(f"/sys/block/{os.path.basename(loop)}/stat").read().split()
    return {"read_ios": int(x[0]), "write_ios": int(x[4]), "sectors_written": int(x[6]),
            "flushes": int(x[15])}


def program_comms(prog):
    """The process names of a program's processes: its own command's, and the programs a
    shell command starts (git's `sh -c "git clone … && git commit …"` is mostly git's)."""
    return [prog.command("", "")[0]] + list(getattr(prog, "comms", []))


def run_program(a, prog, work):
    comms = program_comms(prog)
    tracing = Tracing(work, comms)
    f = rf.Fresh(a.fs, work, a.size, rf.commands(a.fs, work))
    try:
        prog.seed(f.mnt, work)
        f.cold()
        before = device(f.loop)
        tracing.start()
        t0 = time.perf_counter()
        rf.sh(*prog.command(f.mnt, work), cwd=f.mnt, env=prog.env(), stdout=subprocess.DEVNULL)
        seconds = time.perf_counter() - t0
        subprocess.run(["sync", "-f", f.mnt], check=True)
        evs = tracing.stop()
        dev = {k: v - before[k] for k, v in device(f.loop).items()}
        procs = {e[2] for e in evs if e[1] in comms}
        return seconds, evs, procs, dev
    finally:
        f.close()
        tracing.close()


def run_replay(a, trace, work):
    tracing = Tracing(work, [comm_of(a.fsarena)])
    out = os.path.join(work, "out")
    try:
        tracing.start()
        rf.sh(a.fsarena, "run", "--workload", "replay", "--trace", trace, "--timing", "think",
              "--runs", "1", "--fs-size", a.size, "--quiet", "--history", "off",
              "--work-dir", os.path.join(work, "fsarena"), "--out", out, "--target", a.fs,
              stdout=subprocess.DEVNULL)
        evs, threads = replay_window(tracing.stop(), comm_of(a.fsarena))
    finally:
        tracing.close()
    for line in open(os.path.join(out, "results.jsonl")):
        m = json.loads(line)
        if m.get("record") == "measurement":
            k = m["metrics"]
            dev = {"read_ios": k.get("device_read_ios"), "write_ios": k.get("device_write_ios"),
                   "sectors_written": k.get("device_write_bytes", 0) / 512,
                   "flushes": k.get("device_flushes")}
            return k.get("replay_seconds", float("nan")), evs, threads, dev
    sys.exit("replay_kernel_counts: the replay left no measurement")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--program", required=True, choices=[p.name for p in PROGRAMS])
    ap.add_argument("--fs", required=True, choices=["ext4", "xfs", "btrfs", "ntfs"])
    ap.add_argument("--trace", help="replay this trace instead of recording the program")
    ap.add_argument("--what", default="both", choices=["program", "replay", "both"])
    ap.add_argument("--size", default="64G")
    ap.add_argument("--fsarena", default=rf.FSARENA,
                    help="the fsarena binary that replays (another build's, to compare)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("replay_kernel_counts: run as root (losetup, mkfs, mount, tracefs)")
    prog = next(p for p in PROGRAMS if p.name == a.program)
    work = tempfile.mkdtemp(prefix="fsarena-kcounts-", dir="/var/tmp")
    os.chmod(work, 0o755)
    try:
        trace = a.trace and os.path.abspath(a.trace)
        if not trace and a.what != "program":
            trace = os.path.join(work, prog.name + ".fstrace")
            corpus = Corpus.__new__(Corpus)
            corpus.a, corpus.work = argparse.Namespace(size=a.size, record_on=None), work
            corpus.record(prog, trace)
        for what in (["program", "replay"] if a.what == "both" else [a.what]):
            if what == "program":
                seconds, evs, threads, dev = run_program(a, prog, work)
            else:
                seconds, evs, threads, dev = run_replay(a, trace, work)
            reads, contiguous = device_reads(evs)
            print(json.dumps({"program": prog.name, "fs": a.fs, "what": what,
                              "seconds": round(seconds, 4), "device": dev,
                              "device_reads_traced": reads, "contiguous_reads": contiguous,
                              "events": dict(sorted(fs_events(evs, a.fs).items())),
                              "syscalls": syscalls(evs, threads),
                              "writer_behind_reader": coupling(evs, threads)}))
            shutil.rmtree(os.path.join(work, "out"), ignore_errors=True)
    finally:
        subprocess.run([a.fsarena, "cleanup", "--work-dir", os.path.join(work, "fsarena")],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
