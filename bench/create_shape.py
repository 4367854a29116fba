#!/usr/bin/env python3
"""What makes a `create` figure: the tree's shape or its file sizes? (issue 41, item 4)

fs_mark writes equal-sized files one directory level deep; fsarena's `create` writes the data
set's tree (6 levels, log-normal sizes). This writes the same 20,000 files four ways with one
plain writer (open, write, close; directories first), {flat, deep} × {every file the data set's
mean size, the data set's own sizes}, beside fs_mark itself, each on a fresh 64 GiB sparse image
on a direct-I/O loop device made as bench/agree.sh makes it, then `sync -f`, and records
files/s and the loop device's write I/Os. `ext4-stream` is ext4 with
/sys/fs/ext4/DEV/mb_stream_req raised to 100000, so that no file takes the stream allocator.

Usage: sudo bench/create_shape.py [--runs N] [--scale F] [--fs ext4,ext4-stream,xfs]
                                   [--variants fs_mark,flat-const,flat-sizes,deep-const,deep-sizes]
                                   [--work DIR] [--out FILE.json]
Needs root, fs_mark, and target/release/fsarena (for `fsarena dataset`). Prints one JSON line per
run and, at the end, a Markdown table of medians.
"""
import argparse
import json
import os
import shutil
import statistics as st
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FSARENA = os.path.join(os.path.dirname(HERE), "target", "release", "fsarena")
MKFS = {  # as fsarena's dry run prints them (bench/agree.sh reads them the same way)
    "ext4": ["mkfs.ext4", "-q", "-F", "-E",
             "lazy_itable_init=0,lazy_journal_init=0,assume_storage_prezeroed=1"],
    "xfs": ["mkfs.xfs", "-q", "-f"],
}


def sh(*a):
    return subprocess.run(a, check=True, capture_output=True, text=True).stdout


def manifest(ds):
    """The data set's directories and (path, size) of its files, in sorted walk order."""
    dirs, files = [], []
    for root, ds_, fs in os.walk(ds):
        ds_.sort()
        fs.sort()
        rel = os.path.relpath(root, ds)
        if rel != ".":
            dirs.append(rel)
        for f in fs:
            p = os.path.join(root, f)
            files.append((os.path.relpath(p, ds), os.path.getsize(p)))
    return dirs, files


def write_tree(root, dirs, paths, sizes, buf):
    for d in dirs:
        os.makedirs(os.path.join(root, d), exist_ok=True)
    for p, n in zip(paths, sizes):
        fd = os.open(os.path.join(root, p), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        off = 0
        while off < n:
            off += os.write(fd, buf[: min(n - off, len(buf))])
        os.close(fd)


def device_ios(dev):
    name = os.path.basename(dev)
    for line in open("/proc/diskstats"):
        x = line.split()
        if x[2] == name:
            return int(x[7]), int(x[9])  # writes completed, sectors written
    raise RuntimeError(f"{name} not in /proc/diskstats")


def one(args, work, fs, variant, tree):
    dirs, files, flat_dirs, flat_paths, mean = tree
    img, mnt = os.path.join(work, "img"), os.path.join(work, "mnt")
    sh("truncate", "-s", "64G", img)
    dev = sh("losetup", "--find", "--show", "--direct-io=on", img).strip()
    mounted = False
    try:
        sh(*MKFS["ext4" if fs.startswith("ext4") else fs], dev)
        sh("mount", "-t", "ext4" if fs.startswith("ext4") else fs, dev, mnt)
        mounted = True
        if fs == "ext4-stream":
            with open(f"/sys/fs/ext4/{os.path.basename(dev)}/mb_stream_req", "w") as f:
                f.write("100000")
        os.mkdir(os.path.join(mnt, "t"))
        sh("sync")
        w0, s0 = device_ios(dev)
        t0 = time.perf_counter()
        if variant == "fs_mark":
            per = (len(files) + len(dirs) - 1) // len(dirs)
            sh("env", "-C", mnt, "fs_mark", "-d", "t/fsmark", "-D", str(len(dirs)), "-N", str(per),
               "-n", str(len(files)), "-s", str(mean), "-S", "0", "-k", "-L", "1", "-t", "1",
               "-l", os.path.join(work, "fs_mark.log"))
        else:
            shape, size = variant.split("-")
            deep = shape == "deep"
            sizes = [s for _, s in files] if size == "sizes" else [mean] * len(files)
            write_tree(os.path.join(mnt, "t"), dirs if deep else flat_dirs,
                       [p for p, _ in files] if deep else flat_paths, sizes, args.buf)
        sh("sync", "-f", mnt)
        secs = time.perf_counter() - t0
        w1, s1 = device_ios(dev)
        return dict(fs=fs, variant=variant, seconds=secs, files_per_s=len(files) / secs,
                    write_ios=w1 - w0, kib_per_write=(s1 - s0) / 2 / max(1, w1 - w0))
    finally:
        if mounted:
            subprocess.run(["umount", mnt])
        subprocess.run(["losetup", "-d", dev])
        os.remove(img)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--scale", default="0.08")
    ap.add_argument("--fs", default="ext4,ext4-stream,xfs")
    ap.add_argument("--variants", default="fs_mark,flat-const,flat-sizes,deep-const,deep-sizes")
    ap.add_argument("--work", default="/var/tmp")
    ap.add_argument("--out")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("create_shape.py: run as root (losetup, mkfs, mount)")
    args.buf = os.urandom(1 << 21)
    work = tempfile.mkdtemp(prefix="fsarena-shape.", dir=args.work)
    rows = []
    try:
        ds = os.path.join(work, "ds")
        sh(FSARENA, "dataset", "--scale", args.scale, "--threads", "1", ds)
        dirs, files = manifest(ds)
        shutil.rmtree(ds)
        mean = round(sum(s for _, s in files) / len(files))
        per = (len(files) + len(dirs) - 1) // len(dirs)
        flat_dirs = [f"d{i:03d}" for i in range(len(dirs))]
        flat_paths = [f"d{i // per:03d}/f{i:05d}" + "x" * 30 for i in range(len(files))]
        tree = (dirs, files, flat_dirs, flat_paths, mean)
        os.mkdir(os.path.join(work, "mnt"))
        for rep in range(args.runs):  # interleaved: each repetition runs every cell once
            for fs in args.fs.split(","):
                for v in args.variants.split(","):
                    row = dict(rep=rep, **one(args, work, fs, v, tree))
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.out:
        json.dump(rows, open(args.out, "w"), indent=1)
    print(f"\n{len(files)} files, {len(dirs)} directories, mean size {mean} B; medians of "
          f"{args.runs} runs\n")
    fss = args.fs.split(",")
    print("| writer, tree | " + " | ".join(f"{fs} files/s (write I/Os)" for fs in fss)
          + " | xfs vs ext4 |")
    print("|---|" + "---|" * len(fss) + "---|")
    for v in args.variants.split(","):
        med = {}
        cells = []
        for fs in fss:
            r = [x for x in rows if x["fs"] == fs and x["variant"] == v]
            med[fs] = st.median(x["files_per_s"] for x in r)
            cells.append(f"{med[fs]:,.0f} ({st.median(x['write_ios'] for x in r):,.0f})")
        vs = (f"{(med['xfs'] / med['ext4'] - 1) * 100:+.1f} %"
              if "xfs" in med and "ext4" in med else "—")
        print(f"| {v} | " + " | ".join(cells) + f" | {vs} |")


if __name__ == "__main__":
    main()
