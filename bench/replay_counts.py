#!/usr/bin/env python3
"""What a corpus program and its replay ask of a file system, counted (issue 56).

Timings on a shared machine swing with the other work on it; counts do not. For one program
of bench/corpus_programs.py and one file system, this runs the real program and the replay of
its trace each once, on a fresh file system made as bench/replay_corpus.py makes it (its
initial state laid down, mounted again, caches dropped), and prints for each:

- the requests and 512-byte sectors written to the loop device (/sys/block/loopN/stat),
  counted from the start of the run until a `sync -f` after it;
- on a FUSE target (ntfs), every request the daemon read from /dev/fuse, by operation and by
  the thread that made it (strace of the daemon: its `read`s of /dev/fuse, whose header holds
  the opcode and the requesting thread). The recorded threads' replays show one FUSE thread
  each; laying down the replay's initial state, its final check and removing its directory
  show as fsarena's other threads.

The replay's device counts include laying down its initial state and removing its directory
(the program's initial state is laid down before counting): they compare with the program's
only for a trace whose initial state is empty (the SQLite programs).

The replay runs with `--target dir:MOUNT`, on the fresh file system this script made, with the
replay's default timing. The program is recorded afresh unless --trace names a trace.

Usage: sudo bench/replay_counts.py --program NAME --fs ext4|xfs|btrfs|ntfs [--trace FILE]
                                   [--size SIZE]
Needs root and the packages of `./dev deps`. Removes what it made on any exit.
"""

import argparse
import collections
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
from replay_corpus import Corpus

# FUSE opcodes (linux/fuse.h) of the requests a program's file calls make.
OPS = {1: "LOOKUP", 2: "FORGET", 3: "GETATTR", 4: "SETATTR", 5: "READLINK", 6: "SYMLINK",
       8: "MKNOD", 9: "MKDIR", 10: "UNLINK", 11: "RMDIR", 12: "RENAME", 13: "LINK", 14: "OPEN",
       15: "READ", 16: "WRITE", 17: "STATFS", 18: "RELEASE", 20: "FSYNC", 21: "SETXATTR",
       22: "GETXATTR", 23: "LISTXATTR", 24: "REMOVEXATTR", 25: "FLUSH", 26: "INIT",
       27: "OPENDIR", 28: "READDIR", 29: "RELEASEDIR", 30: "FSYNCDIR", 31: "GETLK",
       32: "SETLK", 33: "SETLKW", 34: "ACCESS", 35: "CREATE", 38: "DESTROY", 42: "BATCH_FORGET",
       43: "FALLOCATE", 44: "READDIRPLUS", 45: "RENAME2", 46: "LSEEK", 47: "COPY_FILE_RANGE"}
READ_LINE = re.compile(r'^\d+\s+read\(\d+, "((?:\\x[0-9a-f]{2})+)"')


def device_counts(loop):
    """(write requests, sectors written) of a loop device so far."""
    fields = open(f"/sys/block/{os.path.basename(loop)}/stat").read().split()
    return int(fields[4]), int(fields[6])


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


def fuse_requests(log):
    """{thread: Counter(opcode name)} from strace's `read`s of /dev/fuse in `log`."""
    by_thread = collections.defaultdict(collections.Counter)
    for line in open(log):
        m = READ_LINE.match(line)
        if not m:
            continue
        raw = bytes(int(h, 16) for h in re.findall(r"\\x([0-9a-f]{2})", m.group(1)))
        if len(raw) < 36:
            continue
        # struct fuse_in_header: len, opcode, unique (8), nodeid (8), uid, gid, pid.
        opcode, = struct.unpack_from("<I", raw, 4)
        thread, = struct.unpack_from("<I", raw, 32)
        by_thread[thread][OPS.get(opcode, str(opcode))] += 1
    return by_thread


def one_run(a, prog, trace, what, work):
    """Runs the program or its replay on a fresh file system; its counts."""
    f = rf.Fresh(a.fs, work, a.size, rf.commands(a.fs, work))
    strace = None
    try:
        prog.seed(f.mnt, work)
        f.cold()
        log = os.path.join(work, "fuse.log")
        pid = daemon_of(f.mnt) if a.fs == "ntfs" else None
        if pid:
            strace = subprocess.Popen(["strace", "-f", "-qq", "-p", str(pid), "-e", "trace=read",
                                       "-s", "40", "-xx", "-o", log])
            time.sleep(0.5)  # attached before the first request of the run
        before = device_counts(f.loop)
        if what == "program":
            rf.sh(*prog.command(f.mnt, work), cwd=f.mnt, env=prog.env(),
                  stdout=subprocess.DEVNULL)
        else:
            rf.sh(rf.FSARENA, "run", "--workload", "replay", "--trace", trace, "--runs", "1",
                  "--quiet", "--work-dir", os.path.join(work, "fsarena"),
                  "--out", os.path.join(work, "out"), "--history", "off",
                  "--target", "dir:" + f.mnt,
                  stdout=subprocess.DEVNULL)
        subprocess.run(["sync", "-f", f.mnt], check=True)
        after = device_counts(f.loop)
        if strace:
            strace.terminate()
            strace.wait()
            strace = None
        return [after[0] - before[0], after[1] - before[1]], (
            fuse_requests(log) if pid else {})
    finally:
        if strace:
            strace.terminate()
            strace.wait()
        f.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--program", required=True, choices=[p.name for p in PROGRAMS])
    ap.add_argument("--fs", required=True, choices=["ext4", "xfs", "btrfs", "ntfs"])
    ap.add_argument("--trace", help="replay this trace instead of recording the program")
    ap.add_argument("--size", default="64G")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("replay_counts: run as root (losetup, mkfs, mount, strace)")
    prog = next(p for p in PROGRAMS if p.name == a.program)
    work = tempfile.mkdtemp(prefix="fsarena-counts-", dir="/var/tmp")
    os.chmod(work, 0o755)
    try:
        trace = a.trace and os.path.abspath(a.trace)
        if not trace:
            trace = os.path.join(work, prog.name + ".fstrace")
            corpus = Corpus.__new__(Corpus)
            corpus.a, corpus.work = argparse.Namespace(size=a.size), work
            corpus.record(prog, trace)
        for what in ("program", "replay"):
            (writes, sectors), fuse = one_run(a, prog, trace, what, work)
            print(f"{prog.name} on {a.fs}, {what}: {writes} write requests, "
                  f"{sectors} sectors written")
            for thread, ops in sorted(fuse.items(), key=lambda kv: -sum(kv[1].values())):
                print(f"  FUSE thread {thread}: {sum(ops.values())} requests: "
                      + ", ".join(f"{op} {n}" for op, n in ops.most_common()))
    finally:
        subprocess.run([rf.FSARENA, "cleanup", "--work-dir", os.path.join(work, "fsarena")],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
