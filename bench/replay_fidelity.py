#!/usr/bin/env python3
"""Does a replay rank file systems as the real program does? (issue 37, fidelity)

For each program (tar xf of a source tarball, a git add/commit/status cycle, sqlite3
transactions: the three that ship in traces/):

1. records it once with `fsarena record` (on the host's disk, in a scratch root);
2. runs the real program N times on each file system, each time on a fresh one made as
   fsarena makes it (a sparse image of --size, `losetup --direct-io=on`, the mkfs and mount
   commands of fsarena's own `--dry-run --verbose`), its initial state copied in, the file
   system mounted again and the caches dropped, timing the command alone (no sync after it:
   the replay's `replay_seconds` leaves out the harness's final syncfs too); tmpfs as well,
   for the replay's own overhead;
3. replays the trace with `fsarena run --workload replay` on the same targets, N runs;
4. prints, per program and file system, the ratio of geometric-mean times to ext4 for the
   program and for the replay, and how far apart they are (|replay ratio / program ratio - 1|).

Usage: sudo bench/replay_fidelity.py [--runs N] [--size SIZE] [--out DIR]
Needs root, strace, git, sqlite3 (`./dev deps`). Removes every image, loop device and mount
it made on any exit.
"""

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
FSARENA = os.path.join(REPO, "target", "release", "fsarena")
DISK_FS = ["ext4", "xfs", "btrfs"]
# The programs' inputs, larger than the shipped traces' (which the test suite records in
# seconds) so that each run lasts long enough for the file system to show: the shipped
# traces' programs take ~40 ms, where exec and timer noise weigh as much as the file system.
TXNS = 200
SQL = ("PRAGMA journal_mode=DELETE; CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT); "
       + "".join(f"BEGIN; WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i<100) "
                 f"INSERT INTO t(v) SELECT hex(randomblob(40)) FROM n; "
                 f"UPDATE t SET v=lower(v) WHERE k%7={i % 7}; COMMIT; " for i in range(TXNS))
       + "DELETE FROM t WHERE k%5=0; SELECT count(*) FROM t;")
GIT = ("cd proj && git -c init.defaultBranch=main init -q && git add . && "
       "git -c user.name=fsarena -c user.email=fsarena@example.org commit -qm first && "
       "echo more >> linux/acct.h && git status --short")
# The source tree `tar` unpacks and `git` commits: Debian's kernel headers (linux-libc-dev,
# present with build-essential; 8,100 files, 130 MB), the same files on every host of the same
# Debian release with the same packages.
TREE = "/usr/include"


def sh(*args, **kw):
    return subprocess.run(args, check=True, **kw)


def seed(name, root):
    """Lays down program `name`'s initial state under `root`; returns its command."""
    if name == "tar-xf":
        # Files and directories only, as measured in BENCHMARKS.md (its 31 absolute
        # symlinks were refused at replay until the check looked for calls that follow them).
        sh("sh", "-c", f"cd {TREE} && find . \\( -type f -o -type d \\) -print0 | "
                       f"tar cf {os.path.join(root, 'src.tar')} --null --no-recursion -T -")
        return ["tar", "xf", "src.tar"]
    if name == "git-commit":
        proj = os.path.join(root, "proj")
        os.makedirs(proj)
        sh("sh", "-c", f"tar cf - -C {TREE} linux | tar xf - -C {proj}")
        return ["sh", "-c", GIT]
    return ["sqlite3", "app.db", SQL]


def commands(fs, work):
    """fsarena's own mkfs and mount command lines for `fs` (from its dry run)."""
    dry = subprocess.run(
        [FSARENA, "run", "--target", fs, "--workload", "create", "--runs", "1", "--dry-run",
         "--verbose", "--work-dir", work],
        check=True, capture_output=True, text=True, env={**os.environ, "COLUMNS": "1000"},
    ).stdout
    lines = [l.strip() for l in dry.splitlines()]
    # The format command is the line after `losetup` (mkfs.ext4, mkntfs, ...).
    mkfs = lines[next(i for i, l in enumerate(lines) if l.startswith("losetup")) + 1]
    mount = next(l for l in lines if l.startswith("mount "))
    return mkfs.split()[:-1], mount.split(" /dev/loopN ")[0].split()


class Fresh:
    """A fresh file system of `fs` mounted at `mnt` (tmpfs: a tmpfs mount)."""

    def __init__(self, fs, work, size, cmds, pin=()):
        # `pin` prefixes the mount command (`taskset -c N`): a FUSE daemon then runs on the
        # CPU the program is pinned to, as in fsarena's cells.
        self.fs, self.mnt, self.loop = fs, os.path.join(work, "mnt"), None
        os.makedirs(self.mnt, exist_ok=True)
        if fs == "tmpfs":
            self.mount = ["mount", "-t", "tmpfs", "-o", "size=2G", "tmpfs"]
            sh(*self.mount, self.mnt)
            return
        img = os.path.join(work, f"{fs}.img")
        sh("truncate", "-s", size, img)
        self.img = img
        self.loop = subprocess.run(["losetup", "--find", "--show", "--direct-io=on", img],
                                   check=True, capture_output=True, text=True).stdout.strip()
        mkfs, mount = cmds
        self.mount = [*pin, *mount]
        sh(*mkfs, self.loop, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        sh(*self.mount, self.loop, self.mnt)

    def cold(self):
        if self.loop:
            sh("umount", self.mnt)
            sh(*self.mount, self.loop, self.mnt)
        sh("sync")
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")

    def close(self):
        subprocess.run(["umount", self.mnt], check=False)
        if self.loop:
            subprocess.run(["losetup", "-d", self.loop], check=False)
            os.unlink(self.img)


def real_times(name, fss, runs, work, size, cmds):
    out = {fs: [] for fs in fss}
    for rep in range(runs):
        for fs in fss:  # interleaved, as fsarena's rounds are
            f = Fresh(fs, work, size, cmds.get(fs))
            try:
                cmd = seed(name, f.mnt)
                f.cold()
                t0 = time.perf_counter()
                sh(*cmd, cwd=f.mnt, stdout=subprocess.DEVNULL)
                out[fs].append(time.perf_counter() - t0)
            finally:
                f.close()
    return out


def replay_times(trace, fss, runs, work, size, out, timing):
    args = [FSARENA, "run", "--workload", "replay", "--trace", trace, "--timing", timing,
            "--runs", str(runs),
            "--fs-size", size, "--quiet", "--work-dir", work, "--out", out]
    for fs in fss:
        args += ["--target", fs]
    subprocess.run(args, check=False, stdout=subprocess.DEVNULL)
    times = {fs: [] for fs in fss}
    for line in open(os.path.join(out, "results.jsonl")):
        m = json.loads(line)
        if m.get("record") == "measurement":
            if m["status"] != "ok":
                sys.exit(f"replay_fidelity: {m['target']}: {m['status']}: {m.get('error')}")
            times[m["target"]].append(m["metrics"]["replay_seconds"])
    return times


def gmean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--size", default="64G")
    ap.add_argument("--timing", default="fast", choices=["fast", "original"],
                    help="the replay's timing: as fast as possible, or the recorded gaps kept")
    ap.add_argument("--out", default=os.path.join(
        REPO, "bench", "results", time.strftime("replay-fidelity-%Y%m%d-%H%M%S", time.gmtime())))
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("replay_fidelity: run as root (losetup, mkfs, mount, drop_caches)")
    os.makedirs(a.out)
    work = tempfile.mkdtemp(prefix="fsarena-fidelity-", dir="/var/tmp")
    os.chmod(work, 0o755)
    fss = DISK_FS + ["tmpfs"]
    rows = []
    try:
        cmds = {fs: commands(fs, work) for fs in DISK_FS}
        for name in ["tar-xf", "git-commit", "sqlite3-transactions"]:
            root = os.path.join(work, "record-" + name)
            os.makedirs(root)
            cmd = seed(name, root)
            trace = os.path.join(a.out, name + ".fstrace")
            sh(FSARENA, "record", "--out", trace, "--", *cmd, cwd=root,
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            shutil.rmtree(root)
            real = real_times(name, fss, a.runs, work, a.size, cmds)
            rep = replay_times(trace, fss, a.runs, work, a.size, os.path.join(a.out, name),
                               a.timing)
            rows.append((name, real, rep))
    finally:
        subprocess.run(["umount", os.path.join(work, "mnt")], check=False,
                       stderr=subprocess.DEVNULL)
        shutil.rmtree(work, ignore_errors=True)
    report(rows, a)


def report(rows, a):
    lines = [f"runs {a.runs}, image size {a.size} (sparse, direct-I/O loop), replay timing "
             f"{a.timing}; seconds, geometric means",
             "", "| program | fs | program s | replay s | program vs ext4 | replay vs ext4 | apart |",
             "|---|---|---|---|---|---|---|"]
    gaps = {}
    for name, real, rep in rows:
        for fs in real:
            r, p = gmean(real[fs]), gmean(rep[fs])
            rr, pr = r / gmean(real["ext4"]), p / gmean(rep["ext4"])
            apart = abs(pr / rr - 1) * 100
            if fs in ("xfs", "btrfs"):
                gaps.setdefault(name, []).append(apart)
            lines.append(f"| {name} | {fs} | {r:.4f} | {p:.4f} | {rr:.3f} | {pr:.3f} | "
                         f"{apart:.1f} % |")
    lines.append("")
    for name, g in gaps.items():
        lines.append(f"{name}: ratios apart by {sum(g) / len(g):.1f} % on average (xfs, btrfs)")
    allg = [x for g in gaps.values() for x in g]
    lines.append(f"all programs: {sum(allg) / len(allg):.1f} % on average")
    raw = {name: {"program": real, "replay": rep} for name, real, rep in rows}
    with open(os.path.join(a.out, "times.json"), "w") as f:
        json.dump(raw, f, indent=1)
    text = "\n".join(lines) + "\n"
    with open(os.path.join(a.out, "fidelity.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
